// @ts-nocheck
// The floor page: opens /live, captures the microphone with a minimal AudioWorklet posting 10 ms
// PCM16 frames (the product page's length) straight to the socket, and plays each reply chunk as soon as it arrives (one
// AudioBufferSourceNode per chunk, back to back, no lead), and stops them all when the vendor
// hears the person speak. floor.dry counts the chunks that came after what was scheduled had
// run out (each reply's first, and each underrun). It is what a browser allows with the least code; the benchmark
// compares the product page against it.
const floor = (window.floor = { ready: false, framesSent: 0, chunks: 0, dry: 0 });
const state = document.getElementById('state');

document.getElementById('start').addEventListener('click', () => {
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/live');
  ws.binaryType = 'arraybuffer';
  let player = null;
  let next = 0;
  const playing = new Set();
  ws.onmessage = async (e) => {
    if (typeof e.data !== 'string') {
      if (!player) return;
      const view = new DataView(e.data);
      const n = e.data.byteLength >> 1;
      const buf = player.createBuffer(1, n, player.rate);
      const ch = buf.getChannelData(0);
      for (let i = 0; i < n; i++) ch[i] = view.getInt16(i * 2, true) / 32768;
      const src = player.createBufferSource();
      src.buffer = buf;
      src.connect(player.destination);
      if (next < player.currentTime) floor.dry++;
      next = Math.max(next, player.currentTime);
      src.start(next);
      playing.add(src);
      src.onended = () => playing.delete(src);
      next += n / player.rate;
      floor.chunks++;
      return;
    }
    const f = JSON.parse(e.data);
    if (f.type === 'state') {
      state.textContent = f.state;
      if (f.state === 'ready') floor.ready = true;
      if (f.state === 'interrupted') {
        for (const src of playing) src.stop();
        playing.clear();
        next = 0;
      }
    }
    if (f.type !== 'rate') return;
    player = new AudioContext({ sampleRate: f.outputRate });
    player.rate = f.outputRate;
    const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1 } });
    const ctx = new AudioContext({ sampleRate: f.inputRate });
    await ctx.audioWorklet.addModule('/live-floor-capture.js');
    const node = new AudioWorkletNode(ctx, 'floor-capture', { processorOptions: { frame: f.inputRate / 100 } });
    node.port.onmessage = (m) => { ws.send(m.data); floor.framesSent++; };
    const mute = ctx.createGain();
    mute.gain.value = 0;
    ctx.createMediaStreamSource(stream).connect(node).connect(mute).connect(ctx.destination);
    await Promise.all([ctx.resume(), player.resume()]);
  };
});
