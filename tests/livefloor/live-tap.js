// @ts-nocheck
// The benchmark's ear: an AudioWorklet fed by whatever the page connects to its context's
// destination. It posts the context time (seconds) of each onset it renders: a sample above
// ONSET after at least QUIET seconds below it.
const ONSET = 0.05;
const QUIET = 0.05;

class BenchTap extends AudioWorkletProcessor {
  constructor() {
    super();
    this.quiet = 0; // samples below ONSET in a row
  }

  process(inputs) {
    const ch = inputs[0] && inputs[0][0];
    if (!ch) {
      this.quiet += 128; // nothing connected: a render quantum of silence
      return true;
    }
    for (let i = 0; i < ch.length; i++) {
      if (Math.abs(ch[i]) < ONSET) {
        this.quiet++;
        continue;
      }
      if (this.quiet >= QUIET * sampleRate) this.port.postMessage((currentFrame + i) / sampleRate);
      this.quiet = 0;
    }
    return true;
  }
}
registerProcessor('bench-tap', BenchTap);
