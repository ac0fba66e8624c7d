// @ts-nocheck
// The worker floor's player: PCM16 chunks (from the port it is handed) played back to back as
// they come, no lead; 'stop' drops what is queued. Each time the queue runs dry after playing
// (an underrun, or a reply's end) it posts {dry: n}, the count so far, on its node's port.
class FloorPlayer extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = [];
    this.at = 0;
    this.dry = 0;
    this.sounding = false;
    const on = (e) => {
      const m = e.data;
      if (m instanceof MessagePort) m.onmessage = on;
      else if (m === 'stop') {
        this.queue = [];
        this.at = 0;
        this.sounding = false;
      } else this.queue.push(new Int16Array(m));
    };
    this.port.onmessage = on;
  }

  process(_inputs, outputs) {
    const out = outputs[0][0];
    for (let i = 0; i < out.length && this.queue.length > 0; i++) {
      const c = this.queue[0];
      out[i] = c[this.at++] / 32768;
      if (this.at === c.length) {
        this.queue.shift();
        this.at = 0;
      }
      this.sounding = true;
    }
    if (this.sounding && this.queue.length === 0) {
      this.sounding = false;
      this.port.postMessage({ dry: ++this.dry });
    }
    return true;
  }
}
registerProcessor('floor-player', FloorPlayer);
