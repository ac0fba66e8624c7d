// @ts-check
// The microphone's AudioWorklet: it turns the context's float samples into PCM16 little-endian
// mono at the rate the relay announced, posted as transferred ArrayBuffers on the MessagePort the
// page sends it, {type: 'port', port}: the worker that owns the session's socket
// (live-worker.js), so no frame waits for the page's main thread. A frame is what one process()
// call made (one render quantum: 128 samples, 5.3 ms at 24 kHz), and at most frameMs
// (processorOptions): no sample waits in the worklet for a later quantum to fill its frame.
// Frames made before the port arrives are held (at most HELD_FRAMES) and posted when it does.
// {type: 'stop'} (or 'stop') ends the worklet. When the browser gave the context another rate
// than the one asked for, it resamples through the windowed-sinc low-pass of resampler.js (shared
// with the reply's worklet), so what lies above the lower rate's Nyquist frequency is filtered
// out instead of folding back into speech; the filter delays the audio by about 1.7 ms at 16 kHz.
// Samples are clamped to [-1, 1] before scaling, so a loud input never wraps around.
import { Resampler } from './resampler.js';

/**
 * HELD_FRAMES is how many frames wait for the port at most (half a second of render quanta at
 * 24 kHz); older ones are dropped.
 */
const HELD_FRAMES = 100;
/** DEFAULT_FRAME_MS is the longest frame when the page names none. */
const DEFAULT_FRAME_MS = 20;

class VoiceboxCapture extends AudioWorkletProcessor {
  /** @param {{processorOptions: {targetRate: number, frameMs?: number}}} options */
  constructor(options) {
    super();
    const target = options.processorOptions.targetRate;
    this.step = sampleRate / target; // input samples per output sample
    this.frameSamples = Math.round(target * (options.processorOptions.frameMs || DEFAULT_FRAME_MS) / 1000);
    /** frame holds the samples made since the last frame was posted; flush posts a copy. */
    this.frame = new DataView(new ArrayBuffer(this.frameSamples * 2));
    this.n = 0;
    /** @type {Resampler | null} from the context's rate to the target's, when they differ */
    this.rs = this.step === 1 ? null : new Resampler(sampleRate, target);
    /** delay is how late the resampled audio is, in output samples. */
    this.delay = this.rs ? this.rs.delay : 0;
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
    if (++this.n === this.frameSamples) this.flush();
  }

  // flush posts the samples made so far as one frame (to the port, or held for it). process()
  // calls it at the end of each call, so a frame is at most one render quantum late.
  flush() {
    if (this.n === 0) return;
    const buf = this.frame.buffer.slice(0, this.n * 2);
    if (this.out) this.out.postMessage(buf, [buf]);
    else if (this.held.push(buf) > HELD_FRAMES) this.held.shift();
    this.n = 0;
  }

  /** @param {Float32Array[][]} inputs */
  process(inputs) {
    if (this.stopped) return false;
    const ch = inputs[0] && inputs[0][0];
    if (!ch || ch.length === 0) return true;
    const rs = this.rs;
    if (!rs) {
      for (let i = 0; i < ch.length; i++) this.emit(ch[i]);
    } else {
      for (let i = 0; i < ch.length; i++) {
        rs.write(ch[i]);
        while (rs.ready()) this.emit(rs.read());
      }
    }
    this.flush();
    return true;
  }
}

registerProcessor('voicebox-capture', VoiceboxCapture);
