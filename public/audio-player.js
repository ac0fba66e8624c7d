// @ts-check
// The reply's AudioWorklet: it plays the model's PCM16 chunks back to back from a queue on the
// audio thread, so a busy main thread never delays a sample already received. A reply starts
// `lead` seconds after its first chunk arrived (at once when the reply is known to have ended):
// the lead is a cushion in time, so under a vendor streaming at real time each chunk arrives
// about `lead` before the queue would run dry, however long the chunks. When the queue runs dry
// before the reply ended, that is an underrun: it is counted, the lead doubles (up to leadMax)
// and the reply resumes the new lead after its audio comes again; after shrinkAfter seconds played
// without one, the lead halves back towards leadStart. The silence an underrun puts inside a
// reply (from running dry until it plays again) is counted: lateMs, the reply's audio heard that
// much later than it would have been. When the context runs at another rate than the reply's,
// the samples go through the windowed-sinc low-pass of resampler.js (shared with the
// microphone's worklet). Messages in: {type: 'push', pcm: ArrayBuffer}, {type: 'end'} (the reply
// has no more audio), {type: 'stop'} (drop everything queued), {type: 'port', port} (a
// MessagePort to the worker that owns the session's socket, live-worker.js: from then on
// messages come on it too and go out on it only). Messages out: progress (pos: samples taken
// from the queue, played or dropped; played: samples played; playing; leadMs; lateMs; drained),
// underrun (leadMs), stopped (pos, played).
import { Resampler } from './resampler.js';

/** PROGRESS_QUANTA is how many render quanta pass between two progress messages. */
const PROGRESS_QUANTA = 4;

class VoiceboxPlayer extends AudioWorkletProcessor {
  /** @param {{processorOptions: {rate: number, leadStart: number, leadMax: number, shrinkAfter: number}}} options */
  constructor(options) {
    super();
    const o = options.processorOptions;
    this.rate = o.rate;
    /** @type {Resampler | null} from the reply's rate to the context's, when they differ */
    this.rs = o.rate === sampleRate ? null : new Resampler(o.rate, sampleRate);
    this.leadStart = o.leadStart;
    this.leadMax = o.leadMax;
    this.shrinkAfter = o.shrinkAfter * o.rate;
    this.lead = o.leadStart;
    /** @type {Int16Array[]} */
    this.chunks = [];
    this.at = 0; // the next sample's index in chunks[0]
    this.buffered = 0;
    this.playing = false;
    this.waitingSince = -1; // context time the queued audio started waiting for the lead
    this.ended = false;
    this.drained = false;
    this.pos = 0;
    this.played = 0;
    this.sinceUnderrun = 0;
    this.starved = false; // the reply ran dry before its end and has not played since
    this.late = 0; // output samples of silence inside replies, in all
    this.quanta = 0;
    /** @type {MessagePort} where messages out go: the node's port, or the worker's once given */
    this.out = this.port;
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  /** @param {object} m */
  post(m) {
    this.out.postMessage(m);
  }

  /** @param {{type: string, pcm?: ArrayBuffer, port?: MessagePort}} m */
  onMessage(m) {
    switch (m.type) {
      case 'port':
        if (!m.port) return;
        this.out = m.port;
        this.out.onmessage = (e) => this.onMessage(e.data);
        break;
      case 'push': {
        const c = new Int16Array(/** @type {ArrayBuffer} */ (m.pcm));
        if (c.length === 0) return;
        this.chunks.push(c);
        this.buffered += c.length;
        if (!this.playing && this.waitingSince < 0) this.waitingSince = currentTime;
        break;
      }
      case 'end':
        // A turn with no audio still queued ends nothing: the next reply starts fresh.
        if (this.playing || this.buffered > 0) this.ended = true;
        break;
      case 'stop':
        this.pos += this.buffered;
        this.chunks = [];
        this.at = this.buffered = 0;
        this.playing = this.ended = this.starved = false;
        this.waitingSince = -1;
        if (this.rs) this.rs.reset();
        this.post({ type: 'stopped', pos: this.pos, played: this.played });
        break;
    }
  }

  /** take returns the next queued sample as a float. */
  take() {
    const c = this.chunks[0];
    const v = c[this.at++] / 32768;
    if (this.at === c.length) {
      this.chunks.shift();
      this.at = 0;
    }
    this.buffered--;
    this.pos++;
    this.played++;
    return v;
  }

  /**
   * next returns the next output sample, or undefined when there is none yet: the queue ran dry
   * (with the resampler, what it holds of the reply's end comes out first).
   * @returns {number | undefined}
   */
  next() {
    const rs = this.rs;
    if (!rs) return this.buffered > 0 ? this.take() : undefined;
    while (!rs.ready() && this.buffered > 0) rs.write(this.take());
    if (rs.ready() || (this.ended && rs.flush())) return rs.read();
    return undefined;
  }

  /**
   * @param {Float32Array[][]} _inputs
   * @param {Float32Array[][]} outputs
   */
  process(_inputs, outputs) {
    const out = outputs[0][0];
    const before = this.played;
    let i = 0;
    while (i < out.length) {
      if (!this.playing) {
        if (this.buffered === 0) break;
        if (!this.ended && currentTime - this.waitingSince < this.lead) break;
        this.playing = true;
        this.starved = false;
        this.waitingSince = -1;
      }
      const v = this.next();
      if (v === undefined) {
        this.playing = false;
        if (this.ended) {
          this.ended = false;
          this.drained = true;
          if (this.rs) this.rs.reset();
        } else {
          this.lead = Math.min(this.leadMax, this.lead * 2);
          this.sinceUnderrun = 0;
          this.starved = true;
          this.post({ type: 'underrun', leadMs: this.lead * 1000 });
        }
        break;
      }
      out[i++] = v;
    }
    out.fill(0, i);
    if (this.starved) this.late += out.length - i;
    for (let c = 1; c < outputs[0].length; c++) outputs[0][c].set(out);
    this.sinceUnderrun += this.played - before;
    if (this.sinceUnderrun >= this.shrinkAfter && this.lead > this.leadStart) {
      this.lead = Math.max(this.leadStart, this.lead / 2);
      this.sinceUnderrun = 0;
    }
    if (++this.quanta % PROGRESS_QUANTA === 0 || this.drained) {
      this.post({ type: 'progress', pos: this.pos, played: this.played, playing: this.playing, leadMs: this.lead * 1000, lateMs: this.late / sampleRate * 1000, drained: this.drained });
      this.drained = false;
    }
    return true;
  }
}

registerProcessor('voicebox-player', VoiceboxPlayer);
