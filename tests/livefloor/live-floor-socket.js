// @ts-nocheck
// The worker floor's worker: owns /live, sends the capture port's frames on it, hands reply
// chunks to the player port, and stops the player when the vendor hears the person speak.
let ws = null;
let player = null;
const pending = [];
const stats = { ready: false, framesSent: 0, chunks: 0 };

onmessage = (e) => {
  const m = e.data;
  if (m.url) {
    ws = new WebSocket(m.url);
    ws.binaryType = 'arraybuffer';
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') {
        stats.chunks++;
        if (player) player.postMessage(ev.data, [ev.data]);
        else pending.push(ev.data);
        return;
      }
      const f = JSON.parse(ev.data);
      if (f.type === 'rate') postMessage({ type: 'rate', inputRate: f.inputRate, outputRate: f.outputRate });
      if (f.type === 'state' && f.state === 'ready') {
        stats.ready = true;
        postMessage({ type: 'stats', stats });
      }
      if (f.type === 'state' && f.state === 'interrupted' && player) player.postMessage('stop');
    };
  }
  if (m.capture) {
    m.capture.onmessage = (ev) => {
      ws.send(ev.data);
      if (++stats.framesSent % 10 === 0) postMessage({ type: 'stats', stats });
    };
  }
  if (m.player) {
    player = m.player;
    for (const b of pending) player.postMessage(b, [b]);
    pending.length = 0;
  }
};
