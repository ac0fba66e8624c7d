// @ts-check
// The resampler both AudioWorklets share (the microphone's, audio-worklet.js, and the reply's,
// audio-player.js), for when the browser gave an AudioContext another rate than the one asked
// for: a windowed-sinc low-pass (a Kaiser window) evaluated at each output sample's position
// among the input samples, so what lies above the lower rate's Nyquist frequency is filtered out
// instead of folding back into the band. The filter delays the audio by its half length
// (HALF_ZEROS samples of the lower rate: about 1.7 ms at 16 kHz, 1.1 ms at 24 kHz).

/** CUTOFF is the low-pass's middle, as a fraction of the lower rate (its Nyquist is 0.5). */
const CUTOFF = 0.46;
/**
 * HALF_ZEROS is the filter's half length in samples of the lower rate: with KAISER_BETA it passes
 * up to 0.42 of the lower rate and rejects from 0.5 by 70 dB.
 */
const HALF_ZEROS = 27;
/** KAISER_BETA shapes the window for a 70 dB stopband. */
const KAISER_BETA = 6.76;
/** KERNEL_STEPS is how many kernel values the table holds per input sample (interpolated between). */
const KERNEL_STEPS = 256;
/** RING_SLACK is the input samples the ring holds beyond the filter's length (one render quantum's worth, and more). */
const RING_SLACK = 512;

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

/**
 * Resampler turns samples at one rate into samples at another. Input samples are written one at a
 * time; an output sample can be read once the input it needs (half the filter past its position)
 * has been written. Before the first input sample is silence.
 */
export class Resampler {
  /**
   * @param {number} inRate
   * @param {number} outRate
   */
  constructor(inRate, outRate) {
    /** step is how many input samples lie between two output samples. */
    this.step = inRate / outRate;
    const ratio = Math.max(1, this.step); // input samples per sample of the lower rate
    this.half = Math.ceil(HALF_ZEROS * ratio);
    this.kernel = lowPass(CUTOFF / ratio, this.half);
    let size = 1;
    while (size < 4 * this.half + RING_SLACK) size *= 2;
    this.ring = new Float32Array(size);
    this.mask = size - 1;
    /** delay is how late the output is, in output samples. */
    this.delay = this.half / this.step;
    this.received = 0; // input samples written, silence after the input included
    this.real = 0; // input samples written by write
    // t is the next output's position among the input samples, half the filter late so the
    // filter has what follows it.
    this.t = 0;
  }

  /** reset forgets every sample written: what comes next starts from silence. */
  reset() {
    this.ring.fill(0);
    this.received = this.real = this.t = 0;
  }

  /**
   * write appends one input sample.
   * @param {number} v
   */
  write(v) {
    this.ring[this.received++ & this.mask] = v;
    this.real = this.received;
  }

  /** ready tells whether the next output sample can be read. */
  ready() {
    return this.t <= this.received - 1;
  }

  /**
   * flush appends silence after the input, as much as the next output sample needs, when that
   * sample still holds some of the input (the end of a stream); it tells whether it does.
   */
  flush() {
    if (this.t - this.half > this.real - 1) return false;
    while (!this.ready()) this.ring[this.received++ & this.mask] = 0;
    return true;
  }

  /** read returns the next output sample (ready must be true) and moves on to the one after. */
  read() {
    const p = this.t - this.half, half = this.half, k = this.kernel, ring = this.ring, mask = this.mask;
    let acc = 0;
    for (let n = Math.max(0, Math.ceil(p - half)), hi = Math.floor(p + half); n <= hi; n++) {
      const u = (p - n + half) * KERNEL_STEPS;
      const j = u | 0;
      acc += ring[n & mask] * (k[j] + (k[j + 1] - k[j]) * (u - j));
    }
    this.t += this.step;
    return acc;
  }
}
