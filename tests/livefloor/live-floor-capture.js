// @ts-nocheck
// The floor page's capture worklet: the context runs at the socket's rate, so each sample is
// clamped and written as PCM16; a full frame is posted (transferred) at once.
class FloorCapture extends AudioWorkletProcessor {
  constructor(options) {
    super();
    this.size = options.processorOptions.frame;
    this.buf = new Int16Array(this.size);
    this.n = 0;
    // The worker floor hands it a port to its worker; the main-thread floor listens here.
    this.out = this.port;
    this.port.onmessage = (e) => { this.out = e.data; };
  }

  process(inputs) {
    const ch = inputs[0] && inputs[0][0];
    if (!ch) return true;
    for (let i = 0; i < ch.length; i++) {
      const s = Math.max(-1, Math.min(1, ch[i]));
      this.buf[this.n++] = s < 0 ? s * 0x8000 : s * 0x7fff;
      if (this.n === this.size) {
        this.out.postMessage(this.buf.buffer, [this.buf.buffer]);
        this.buf = new Int16Array(this.size);
        this.n = 0;
      }
    }
    return true;
  }
}
registerProcessor('floor-capture', FloorCapture);
