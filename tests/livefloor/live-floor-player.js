// @ts-nocheck
// The worker floor's player: PCM16 chunks (from the port it is handed) played back to back as
// they come, no lead; 'stop' drops what is queued.
class FloorPlayer extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = [];
    this.at = 0;
    const on = (e) => {
      const m = e.data;
      if (m instanceof MessagePort) m.onmessage = on;
      else if (m === 'stop') {
        this.queue = [];
        this.at = 0;
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
    }
    return true;
  }
}
registerProcessor('floor-player', FloorPlayer);
