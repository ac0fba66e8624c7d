// @ts-nocheck
// The benchmark's ear: an AudioWorklet fed by whatever the page connects to its context's
// destination. It posts the context time (seconds) of each onset it renders, {on: t}: a sample
// above LEVEL after at least QUIET seconds below it; and of each end of sound, {off: t}: the
// first of OFF seconds in a row below LEVEL after sound.
const LEVEL = 0.05;
const QUIET = 0.05;
const OFF = 0.005;

class BenchTap extends AudioWorkletProcessor {
  constructor() {
    super();
    this.quiet = 0; // samples below LEVEL in a row
    this.loud = false;
  }

  process(inputs) {
    // The benchmark's probe of the capture path (live_hops_test.go) leaves its stamps here when
    // this context is the capture worklet's; they go to the page.
    const hops = globalThis.__benchHops;
    if (hops && hops.length) this.port.postMessage({ hops: hops.splice(0) });
    const ch = inputs[0] && inputs[0][0];
    if (!ch) {
      this.still(128, currentFrame); // nothing connected: a render quantum of silence
      return true;
    }
    for (let i = 0; i < ch.length; i++) {
      if (Math.abs(ch[i]) < LEVEL) {
        this.still(1, currentFrame + i);
        continue;
      }
      if (this.quiet >= QUIET * sampleRate) this.port.postMessage({ on: (currentFrame + i) / sampleRate });
      this.quiet = 0;
      this.loud = true;
    }
    return true;
  }

  // still counts n quiet samples from frame on.
  still(n, frame) {
    const before = this.quiet;
    this.quiet += n;
    if (this.loud && this.quiet >= OFF * sampleRate) {
      this.loud = false;
      this.port.postMessage({ off: (frame - before) / sampleRate });
    }
  }
}
registerProcessor('bench-tap', BenchTap);
