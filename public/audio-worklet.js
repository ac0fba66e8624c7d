// @ts-check
// The microphone's AudioWorklet: it turns the context's float samples into PCM16 little-endian
// mono at the rate the relay announced, in frames of frameMs (processorOptions) posted as
// transferred ArrayBuffers on the MessagePort the page sends it, {type: 'port', port}: the worker
// that owns the session's socket (live-worker.js), so no frame waits for the page's main thread.
// Frames made before the port arrives are held (at most HELD_FRAMES) and posted when it does.
// {type: 'stop'} (or 'stop') ends the worklet. When the browser gave the context another rate than the one asked for, it
// resamples through a windowed-sinc low-pass (a Kaiser window), so what lies above the lower
// rate's Nyquist frequency is filtered out instead of folding back into speech; the filter delays
// the audio by its half length (HALF_ZEROS samples of the lower rate, about 1.7 ms). Samples are
// clamped to [-1, 1] before scaling, so a loud input never wraps around.
'use strict';

/** CUTOFF is the low-pass's middle, as a fraction of the lower rate (its Nyquist is 0.5). */
const CUTOFF = 0.46;
/**
 * HALF_ZEROS is the filter's half length in samples of the lower rate: with KAISER_BETA it passes
 * up to 0.42 of the lower rate and rejects from 0.5 by 70 dB.
 */
const HALF_ZEROS = 27;
/** KAISER_BETA shapes the window for a 70 dB stopband. */
const KAISER_BETA = 6.76;
/** HELD_FRAMES is how many frames wait for the port at most; older ones are dropped. */
const HELD_FRAMES = 50;
/** DEFAULT_FRAME_MS is the frame length when the page names none. */
const DEFAULT_FRAME_MS = 20;
/** KERNEL_STEPS is how many kernel values the table holds per input sample (interpolated between). */
const KERNEL_STEPS = 256;

/**
 * besselI0 is the modified Bessel function of order 0, by its series.
 * @param {number} x
 */
function besselI0(x) {
  let sum = 1, term = 1;
  for (let k = 1; k < 50 && term > 1e-12 * sum; k++) {
    term *= (x / (2 * k)) * (x / (2 * k));
    sum += term;
  }
  return sum;
}

/**
 * lowPass returns the windowed-sinc kernel for a cutoff fc (cycles per input sample) and a half
 * length of half input samples, tabulated KERNEL_STEPS times per sample from -half to half.
 * @param {number} fc
 * @param {number} half
 */
function lowPass(fc, half) {
  const n = 2 * half * KERNEL_STEPS + 2;
  const k = new Float32Array(n);
  const i0 = besselI0(KAISER_BETA);
  for (let j = 0; j < n; j++) {
    const x = j / KERNEL_STEPS - half;
    const r = x / half;
    if (Math.abs(r) > 1) continue;
    const sinc = x === 0 ? 1 : Math.sin(2 * Math.PI * fc * x) / (2 * Math.PI * fc * x);
    k[j] = 2 * fc * sinc * besselI0(KAISER_BETA * Math.sqrt(1 - r * r)) / i0;
  }
  return k;
}

class VoiceboxCapture extends AudioWorkletProcessor {
  /** @param {{processorOptions: {targetRate: number, frameMs?: number}}} options */
  constructor(options) {
    super();
    const target = options.processorOptions.targetRate;
    this.step = sampleRate / target; // input samples per output sample
    this.frameSamples = Math.round(target * (options.processorOptions.frameMs || DEFAULT_FRAME_MS) / 1000);
    this.frame = new DataView(new ArrayBuffer(this.frameSamples * 2));
    this.n = 0;
    // Resampling: every input sample goes into a ring; t is the next output's position among
    // all input samples so far, computed half samples late so the filter has what follows it.
    const ratio = Math.max(1, this.step); // input samples per sample of the lower rate
    this.half = Math.ceil(HALF_ZEROS * ratio);
    this.kernel = lowPass(CUTOFF / ratio, this.half);
    let size = 1;
    while (size < 4 * this.half + 512) size *= 2;
    this.ring = new Float32Array(size);
    this.mask = size - 1;
    this.received = 0;
    this.t = 0;
    /** delay is how late the resampled audio is, in output samples. */
    this.delay = this.step === 1 ? 0 : this.half / this.step;
    this.stopped = false;
    /** @type {MessagePort | null} */
    this.out = null;
    /** @type {ArrayBuffer[]} frames made before the port arrived */
    this.held = [];
    this.port.onmessage = (e) => {
      const m = e.data;
      if (m === 'stop' || m?.type === 'stop') this.stopped = true;
      else if (m?.type === 'port' && m.port && !this.out) {
        const out = this.out = /** @type {MessagePort} */ (m.port);
        for (const buf of this.held) out.postMessage(buf, [buf]);
        this.held = [];
      }
    };
  }

  /** @param {number} v */
  emit(v) {
    const s = v > 1 ? 1 : v < -1 ? -1 : v;
    this.frame.setInt16(this.n * 2, Math.round(s < 0 ? s * 0x8000 : s * 0x7fff), true);
    if (++this.n === this.frameSamples) {
      const buf = this.frame.buffer;
      if (this.out) this.out.postMessage(buf, [buf]);
      else if (this.held.push(buf) > HELD_FRAMES) this.held.shift();
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
    for (let i = 0; i < ch.length; i++) this.ring[(this.received + i) & this.mask] = ch[i];
    this.received += ch.length;
    while (this.t <= this.received - 1) {
      this.emit(this.filtered(this.t - this.half));
      this.t += this.step;
    }
    return true;
  }

  /**
   * filtered is the low-passed input at position p (in input samples; before 0 is silence).
   * @param {number} p
   */
  filtered(p) {
    const half = this.half, k = this.kernel, ring = this.ring, mask = this.mask;
    let acc = 0;
    for (let n = Math.max(0, Math.ceil(p - half)), hi = Math.floor(p + half); n <= hi; n++) {
      const u = (p - n + half) * KERNEL_STEPS;
      const j = u | 0;
      acc += ring[n & mask] * (k[j] + (k[j + 1] - k[j]) * (u - j));
    }
    return acc;
  }
}

registerProcessor('voicebox-capture', VoiceboxCapture);
