// @ts-check
// The microphone's AudioWorklet: it turns the context's float samples into PCM16 little-endian
// mono at the rate the relay announced, in 20 ms frames posted to the main thread (as transferred
// ArrayBuffers). When the browser gave the context another rate than the one asked for, it
// resamples by linear interpolation; samples are clamped to [-1, 1] before scaling, so a loud
// input never wraps around.
'use strict';

class VoiceboxCapture extends AudioWorkletProcessor {
  /** @param {{processorOptions: {targetRate: number}}} options */
  constructor(options) {
    super();
    const target = options.processorOptions.targetRate;
    this.step = sampleRate / target; // input samples per output sample
    this.frameSamples = Math.round(target / 50);
    this.frame = new DataView(new ArrayBuffer(this.frameSamples * 2));
    this.n = 0;
    // t is the next output's position in [prev, ...block]: index 0 is the previous block's last
    // sample, so interpolation runs across block edges.
    this.t = 1;
    this.prev = 0;
    this.stopped = false;
    this.port.onmessage = (e) => { if (e.data === 'stop') this.stopped = true; };
  }

  /** @param {number} v */
  emit(v) {
    const s = v > 1 ? 1 : v < -1 ? -1 : v;
    this.frame.setInt16(this.n * 2, Math.round(s < 0 ? s * 0x8000 : s * 0x7fff), true);
    if (++this.n === this.frameSamples) {
      const buf = this.frame.buffer;
      this.port.postMessage(buf, [buf]);
      this.frame = new DataView(new ArrayBuffer(this.frameSamples * 2));
      this.n = 0;
    }
  }

  /** @param {Float32Array[][]} inputs */
  process(inputs) {
    if (this.stopped) return false;
    const ch = inputs[0] && inputs[0][0];
    if (!ch || ch.length === 0) return true;
    if (this.step === 1) {
      for (let i = 0; i < ch.length; i++) this.emit(ch[i]);
      return true;
    }
    const len = ch.length;
    let t = this.t;
    while (t <= len) {
      const i = Math.floor(t);
      const f = t - i;
      const a = i === 0 ? this.prev : ch[i - 1];
      const b = i === len ? a : ch[i];
      this.emit(a + (b - a) * f);
      t += this.step;
    }
    this.t = t - len;
    this.prev = ch[len - 1];
    return true;
  }
}

registerProcessor('voicebox-capture', VoiceboxCapture);
