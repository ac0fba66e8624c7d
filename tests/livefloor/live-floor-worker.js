// @ts-nocheck
// The worker floor page: the same job as live-floor.js with the /live socket in a worker
// (live-floor-socket.js). The page builds the two audio graphs and hands their worklets' ports to
// the worker: the capture worklet's frames go straight to it, and it feeds the player worklet
// (live-floor-player.js: chunks back to back, no lead) and stops it on "interrupted".
const floor = (window.floor = { ready: false, framesSent: 0, chunks: 0, dry: 0 });

document.getElementById('start').addEventListener('click', () => {
  const w = new Worker('/live-floor-socket.js');
  w.postMessage({ url: (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/live' });
  w.onmessage = async (e) => {
    const m = e.data;
    if (m.type === 'stats') {
      Object.assign(floor, m.stats);
      return;
    }
    if (m.type !== 'rate') return;
    const player = new AudioContext({ sampleRate: m.outputRate });
    await player.audioWorklet.addModule('/live-floor-player.js');
    const out = new AudioWorkletNode(player, 'floor-player', { numberOfInputs: 0, outputChannelCount: [1] });
    const toPlayer = new MessageChannel();
    out.port.postMessage(toPlayer.port1, [toPlayer.port1]);
    out.port.onmessage = (ev) => { floor.dry = ev.data.dry; };
    w.postMessage({ player: toPlayer.port2 }, [toPlayer.port2]);
    out.connect(player.destination);
    const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1 } });
    const ctx = new AudioContext({ sampleRate: m.inputRate });
    await ctx.audioWorklet.addModule('/live-floor-capture.js');
    const node = new AudioWorkletNode(ctx, 'floor-capture', { processorOptions: { frame: m.inputRate / 100 } });
    const fromMic = new MessageChannel();
    node.port.postMessage(fromMic.port1, [fromMic.port1]);
    w.postMessage({ capture: fromMic.port2 }, [fromMic.port2]);
    const mute = ctx.createGain();
    mute.gain.value = 0;
    ctx.createMediaStreamSource(stream).connect(node).connect(mute).connect(ctx.destination);
    await Promise.all([ctx.resume(), player.resume()]);
  };
});
