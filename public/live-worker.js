// @ts-check
// The live voice session's audio path, off the page's main thread: this dedicated worker owns the
// relay's /live WebSocket, and the page hands it the two AudioWorklets' ports. It is a module
// worker (started with {type: 'module'}): the relay's bounds and rule ids come from rules.js. The microphone's
// frames go worklet -> here -> socket, the reply's chunks socket -> here -> the player worklet,
// and the vendor's "interrupted" (the person barged in) stops the player from here, so a busy
// page (a long list drawn, a mini-app's burst) delays neither. The page (live.js) gets only what
// it shows: the relay's other frames, when the reply starts and ends being heard, and the stats.
//
// Messages in, from the page that started it (anything else is answered with a refusal):
//   {type: 'open', url}           open the socket (once);
//   {type: 'capture', port}       the capture worklet's port: it posts PCM16 frames (ArrayBuffers);
//   {type: 'player', port, rate}  the player worklet's port (audio-player.js);
//   {type: 'text', text}          typed text for the model;
//   {type: 'barge-in'}            the person stopped the reply;
//   {type: 'stop'}                the person ended the session: the relay is told, the audio
//                                 ports are dropped, the socket closes after CLOSE_GRACE_MS.
// Messages out: {type: 'frame', frame} (a JSON frame of the relay, as it came), {type: 'speaking'}
// and {type: 'listening'} (the reply started / finished being heard), {type: 'interrupted'}
// (the reply was stopped: by the vendor or a barge-in), {type: 'refused', refused, why} (a
// message or a frame this worker does not take), {type: 'stats', stats} (at most every
// STATS_EVERY_MS while they change, and before each of the others), {type: 'closed', code}.
import { LIVE_AUDIO_FRAME_INVALID, LIVE_MESSAGE_INVALID, MAX_AUDIO_FRAME_BYTES } from './rules.js';

/** CLOSE_GRACE_MS is how long a stopped session waits for the relay to close the socket. */
const CLOSE_GRACE_MS = 2000;
/**
 * MAX_PLAYER_PENDING bounds the messages kept for the player worklet before its port arrives (the
 * page sends it as soon as the playback graph is built); past it the oldest is dropped, so a page
 * whose playback never started does not hold a whole reply's audio here.
 */
const MAX_PLAYER_PENDING = 256;
/** STATS_EVERY_MS is the shortest time between two stats messages while frames flow. */
const STATS_EVERY_MS = 50;

/**
 * stats are the session's audio counts the page shows (and tests read); leadMs, the player's
 * lead, and lateMs, the silence underruns put inside replies, are there once the player reported
 * them; chunksDropped counts the reply's chunks let go while waiting for the player's port
 * (MAX_PLAYER_PENDING).
 * @type {{framesSent: number, bytesSent: number, framesRefused: number, chunksReceived: number, chunksDropped: number, samplesQueued: number,
 *   samplesPlayed: number, underruns: number, interrupts: number, leadMs?: number, lateMs?: number}}
 */
const stats = { framesSent: 0, bytesSent: 0, framesRefused: 0, chunksReceived: 0, chunksDropped: 0, samplesQueued: 0, samplesPlayed: 0, underruns: 0, interrupts: 0 };
/** @type {WebSocket | null} */
let ws = null;
let over = false; // stopped: audio is neither sent nor played any more
let statsDue = false;

/** @param {object} m */
function tell(m) {
  flushStats();
  postMessage(m);
}

function flushStats() {
  statsDue = false;
  postMessage({ type: 'stats', stats });
}

function statsChanged() {
  if (statsDue) return;
  statsDue = true;
  setTimeout(() => { if (statsDue) flushStats(); }, STATS_EVERY_MS);
}

/**
 * refuse tells the page a message or frame was not taken, and why, as the relay's refusals read.
 * @param {string} rule
 * @param {string} why
 */
function refuse(rule, why) {
  tell({ type: 'refused', refused: rule, why });
}

/** @param {object} obj */
function send(obj) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
}

// ---- the player ----

// player is the reply's worklet seen from here: its port (or the messages waiting for it), what
// was handed to it and what it reported played, so a barge-in can say how much of the reply was
// heard without asking the audio thread.
const player = {
  /** @type {MessagePort | null} */
  port: null,
  /** @type {[{type: string, [key: string]: unknown}, Transferable[]][]} messages posted before the port arrived */
  pending: [],
  rate: 24000,
  queued: 0, // samples handed over, in all
  replyStart: -1, // the current reply's first sample among them
  report: { pos: 0, played: 0, playing: false, at: 0 }, // at: performance.now() when it came
  muted: false, // stopped: progress is not counted until the worklet confirms
  speaking: false, // the page was told the reply is being heard

  /**
   * @param {{type: string, [key: string]: unknown}} msg
   * @param {Transferable[]} [transfer]
   */
  post(msg, transfer = []) {
    if (this.port) this.port.postMessage(msg, transfer);
    else {
      this.pending.push([msg, transfer]);
      if (this.pending.length > MAX_PLAYER_PENDING && this.pending.shift()?.[0].type === 'push') stats.chunksDropped++;
    }
  },

  /** @param {ArrayBuffer} buf */
  push(buf) {
    const n = buf.byteLength >> 1;
    if (n === 0) return;
    if (this.replyStart < 0) this.replyStart = this.queued;
    this.queued += n;
    stats.samplesQueued += n;
    this.post({ type: 'push', pcm: buf }, [buf]);
    if (!this.speaking) {
      this.speaking = true;
      tell({ type: 'speaking' });
    }
  },

  // onWorklet takes the worklet's reports (audio-player.js); one whose counts are not numbers,
  // or that moves them back, is dropped (it would corrupt what a barge-in says was heard).
  /** @param {{type: string, pos: number, played: number, playing?: boolean, leadMs: number, lateMs?: number}} m */
  onWorklet(m) {
    if (!m || typeof m !== 'object' || !Number.isFinite(m.leadMs ?? 0) || !Number.isFinite(m.lateMs ?? 0)) return;
    if (m.type !== 'underrun' && !(Number.isSafeInteger(m.pos) && Number.isSafeInteger(m.played) && m.played >= this.report.played && m.pos >= m.played)) return;
    switch (m.type) {
      case 'progress':
        if (this.muted) return;
        stats.samplesPlayed += m.played - this.report.played;
        this.report = { pos: m.pos, played: m.played, playing: !!m.playing, at: performance.now() };
        stats.leadMs = m.leadMs;
        if (m.lateMs !== undefined) stats.lateMs = m.lateMs;
        statsChanged();
        if (!m.playing && m.pos === this.queued && this.speaking) {
          this.speaking = false;
          tell({ type: 'listening' });
        }
        break;
      case 'underrun':
        stats.underruns++;
        stats.leadMs = m.leadMs;
        statsChanged();
        break;
      case 'stopped':
        this.muted = false;
        this.report = { pos: m.pos, played: m.played, playing: false, at: performance.now() };
        break;
    }
  },

  // heardMs is how much of the current reply has played: the worklet's last report, plus the
  // time since while it was playing.
  heardMs() {
    if (this.replyStart < 0) return 0;
    const r = this.report;
    const since = r.playing ? Math.max(0, performance.now() - r.at) / 1000 * this.rate : 0;
    const pos = Math.min(this.queued, r.pos + since);
    return Math.max(0, Math.round((pos - this.replyStart) / this.rate * 1000));
  },

  // stop silences everything queued now, and returns how much of the reply was heard.
  stop() {
    const heard = this.heardMs();
    this.post({ type: 'stop' });
    this.muted = true;
    this.replyStart = -1;
    this.speaking = false;
    return heard;
  },

  endReply() {
    this.replyStart = -1;
    this.post({ type: 'end' });
  },
};

// bargeIn stops the reply at once, tells the page, then the relay how much of it was heard.
function bargeIn() {
  stats.interrupts++;
  const heard = player.stop();
  tell({ type: 'interrupted' });
  send({ type: 'interrupt', playedMs: heard });
}

// ---- the microphone ----

/** @type {MessagePort | null} */
let capture = null;

/** @param {unknown} pcm */
function sendFrame(pcm) {
  if (over || !ws || ws.readyState !== WebSocket.OPEN) return;
  if (!(pcm instanceof ArrayBuffer) || pcm.byteLength === 0 || pcm.byteLength % 2 !== 0 || pcm.byteLength > MAX_AUDIO_FRAME_BYTES) {
    stats.framesRefused++;
    refuse(LIVE_AUDIO_FRAME_INVALID, `a microphone frame is PCM16: an ArrayBuffer of an even number of bytes, 2 to ${MAX_AUDIO_FRAME_BYTES}, as the relay takes them; this one was not, so it was not sent`);
    return;
  }
  ws.send(pcm);
  stats.framesSent++;
  stats.bytesSent += pcm.byteLength;
  statsChanged();
}

// ---- the socket ----

/** @param {string} url */
function open(url) {
  ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  ws.onmessage = (e) => {
    if (typeof e.data !== 'string') {
      stats.chunksReceived++;
      statsChanged();
      if (!over) player.push(e.data);
      return;
    }
    /** @type {{type: string, [key: string]: any}} */
    let f;
    try { f = JSON.parse(e.data); } catch { return; }
    if (f && f.type === 'state') {
      if (f.state === 'interrupted') {
        if (!over) bargeIn();
        return;
      }
      if (f.state === 'turn-complete' && !over) player.endReply();
    }
    if (f && f.type === 'rate') player.rate = f.outputRate;
    tell({ type: 'frame', frame: f });
  };
  ws.onclose = (e) => {
    dropAudio();
    tell({ type: 'closed', code: e.code });
  };
}

function dropAudio() {
  over = true;
  if (capture) capture.close();
  if (player.port) player.port.close();
  capture = player.port = null;
  player.pending = [];
}

/** @param {string} why */
const notTaken = (why) => refuse(LIVE_MESSAGE_INVALID, why);

onmessage = (e) => {
  const m = e.data;
  const type = m && typeof m === 'object' ? m.type : undefined;
  switch (type) {
    case 'open':
      if (ws || typeof m.url !== 'string') return notTaken('open is {type:"open",url} and comes once');
      open(m.url);
      break;
    case 'capture':
      if (!(m.port instanceof MessagePort) || capture || over) return notTaken('capture is {type:"capture",port} and comes once per session');
      capture = m.port;
      m.port.onmessage = (/** @type {MessageEvent} */ ev) => sendFrame(ev.data);
      break;
    case 'player':
      if (!(m.port instanceof MessagePort) || player.port || over || !(m.rate > 0)) return notTaken('player is {type:"player",port,rate} and comes once per session');
      player.port = m.port;
      player.rate = m.rate;
      m.port.onmessage = (/** @type {MessageEvent} */ ev) => player.onWorklet(ev.data);
      for (const [msg, t] of player.pending) m.port.postMessage(msg, t);
      player.pending = [];
      break;
    case 'text':
      if (typeof m.text !== 'string') return notTaken('text is {type:"text",text}');
      send({ type: 'text', text: m.text });
      break;
    case 'barge-in':
      if (!over) bargeIn();
      break;
    case 'stop':
      send({ type: 'close' });
      dropAudio();
      setTimeout(() => { if (ws && ws.readyState !== WebSocket.CLOSED) ws.close(); }, CLOSE_GRACE_MS);
      break;
    default:
      notTaken('the live worker takes open, capture, player, text, barge-in and stop');
  }
};
