// @ts-check
// The Talk panel: a live voice session with the model through the relay's /live socket. The
// microphone is captured by an AudioWorklet (audio-worklet.js) as PCM16 at the rate the relay
// announces; the model's 24 kHz PCM16 is played back to back by another AudioWorklet
// (audio-player.js) with a small adaptive lead, and stopped at once when the person barges in.
// The socket and the audio between it and the worklets live in a dedicated worker
// (live-worker.js), so nothing this thread does (a long list drawn, a mini-app's burst) delays a
// frame; this thread builds the audio graphs and shows what the worker tells it.
// Captions show both sides as they come, and every tool call and its result is written into the
// transcript. The settings (provider, model, voice, thinking
// depth) apply to the next session; the relay never sends a vendor key here, only whether one is
// configured. The button says what can happen now: a provider without a live voice API, or one
// whose key the relay lacks, cannot start a session, and the panel says why once; text typed
// while no session runs goes to the assistant as a typed command instead of being dropped.
// startLive returns what tests read (state, stats).
import { byId, node } from './dom.js';
import { listen } from './events.js';
import { relay } from './http.js';
import { FEATURES, probePage } from './platform.js';
import { describeResult } from './results.js';

/** IDLE_NOTE is what the status line says while a session can start. */
const IDLE_NOTE = 'Press “Start talking” and speak; the model hears you and acts through the tools.';
/**
 * LEAD_START is the most a reply waits before it plays (seconds), at the start of a session and
 * once the lead has shrunk back: the player (audio-player.js) starts sooner when that much of the
 * reply is already buffered.
 */
const LEAD_START = 0.02;
/** LEAD_MAX is the most the lead grows to after underruns (seconds). */
const LEAD_MAX = 0.2;
/** LEAD_SHRINK_AFTER is how much audio plays without an underrun before the lead halves (seconds). */
const LEAD_SHRINK_AFTER = 10;
/**
 * CAPTURE_FRAME_MS is the longest microphone frame sent to the relay. The worklet posts what each
 * render quantum made (128 samples: 5.3 ms at 24 kHz, 8 ms at 16 kHz), so no sound waits for a
 * later quantum to fill its frame; this bounds a frame only where a quantum makes more. The
 * vendors take frames of any length, and the relay's cost per frame is tens of microseconds
 * (BENCHMARKS.md).
 */
const CAPTURE_FRAME_MS = 10;
/**
 * MicState is the Talk panel's state: no-key and unavailable (the chosen provider has no live
 * voice API) cannot start; idle can; connecting, listening and speaking are a session; error is
 * a session that ended for a reason the status line gives.
 * @typedef {'idle' | 'no-key' | 'unavailable' | 'connecting' | 'listening' | 'speaking' | 'error'} MicState
 */
/** @type {Record<MicState, string>} */
const MIC_LABELS = {
  idle: 'Start talking', 'no-key': 'Voice needs a key', unavailable: 'No live voice', connecting: 'Connecting… (stop)',
  listening: 'Listening — stop', speaking: 'Speaking — stop', error: 'Try again',
};

/**
 * Provider is what GET /api/agent-settings says of one provider.
 * @typedef {{name: string, label?: string, live: boolean, why?: string, models: string[], voices: string[],
 *   thinking: string[], thinkingModels: string[], keyConfigured: boolean, keyEnv?: string, keySource?: string}} Provider
 */
/** @typedef {{provider: string, model: string, voice: string, thinking: string}} LiveSettings */
/** @typedef {{ok: boolean, settings: LiveSettings, providers: Provider[]}} SettingsAnswer */
/**
 * Frame is a JSON frame of the /live socket from the relay (see internal/core/voice).
 * @typedef {{type: string, [key: string]: any}} Frame
 */

/**
 * startLive runs the Talk panel. typed sends text as a typed command to the assistant (when no
 * session runs); firstSteps is told what the voice step of the first screen is.
 * @param {{typed: (text: string) => Promise<unknown>, firstSteps?: {voice: (text: string) => void}}} deps
 */
export function startLive({ typed, firstSteps }) {
  const el = {
    mic: byId('mic'), stopReply: byId('live-stop-reply'), status: byId('live-status'), userCaption: byId('caption-user'),
    modelCaption: byId('caption-model'), transcript: byId('live-transcript'), settingsToggle: byId('live-settings-toggle'),
    settings: byId('live-settings'), provider: byId('live-provider', HTMLSelectElement), model: byId('live-model', HTMLSelectElement),
    voice: byId('live-voice', HTMLSelectElement), thinking: byId('live-thinking', HTMLSelectElement),
    thinkingRow: byId('live-thinking-row'), keyNote: byId('live-key-note'),
    textForm: byId('live-text-form'), text: byId('live-text', HTMLInputElement),
  };

  const stats = { framesSent: 0, bytesSent: 0, framesRefused: 0, chunksReceived: 0, chunksDropped: 0, samplesQueued: 0, samplesPlayed: 0, underruns: 0, leadMs: LEAD_START * 1000, lateMs: 0, interrupts: 0, toolCalls: 0, toolResults: 0 };
  /** @type {MicState} */
  let state = 'idle';
  /** @type {Session | null} */
  let session = null;
  /** @type {SettingsAnswer | null} */
  let settings = null;

  /**
   * @param {MicState} s
   * @param {string} [note]
   */
  function setState(s, note) {
    state = s;
    el.mic.dataset.state = s;
    el.mic.textContent = MIC_LABELS[s];
    el.mic.setAttribute('aria-pressed', String(s === 'listening' || s === 'speaking' || s === 'connecting'));
    el.mic.toggleAttribute('disabled', s === 'no-key' || s === 'unavailable');
    el.stopReply.hidden = s !== 'speaking';
    el.text.placeholder = session ? 'Type to the model' : 'Type to the assistant (no voice session)';
    if (note !== undefined) el.status.textContent = note;
  }

  /** noWorklet is set when this browser cannot capture the microphone as the panel does. */
  const noWorklet = probePage().includes('audio-worklet');

  /** blocked says why no session can start with the provider chosen, or '' when one can. */
  function blocked() {
    if (noWorklet) {
      const f = FEATURES['audio-worklet'];
      return `This browser has no ${f.what}, so Talk cannot start. Instead, ${f.remedy}.`;
    }
    const p = settings && providerOf(settings.settings.provider);
    if (!p) return '';
    if (!p.live) return `${p.why}. Choose another provider in Voice settings, or type commands to the assistant below.`;
    if (!p.keyConfigured) {
      return `Voice needs a ${p.label} key on the relay: its operator sets ${p.keyEnv} where it runs (or stores one with PUT /api/keys and the host token). Until then, type commands to the assistant below (offline mode).`;
    }
    return '';
  }

  // showAvailability puts the panel in the state the settings allow, when no session runs.
  function showAvailability() {
    if (session) return;
    const why = blocked();
    const p = settings && providerOf(settings.settings.provider);
    if (why) setState(noWorklet || (p && !p.live) ? 'unavailable' : 'no-key', why);
    else if (state === 'no-key' || state === 'unavailable') setState('idle', IDLE_NOTE);
    if (firstSteps) firstSteps.voice(why ? 'Voice is not set up on this relay yet; typed commands do everything voice does.' : 'To talk instead, press “Start talking” in the Talk panel and allow the microphone.');
  }

  // ---- settings ----

  /** @param {string} name */
  const providerOf = (name) => settings?.providers.find((p) => p.name === name);

  /**
   * @param {HTMLSelectElement} select
   * @param {string[]} values
   * @param {string} current
   */
  function fill(select, values, current) {
    select.replaceChildren(...values.map((v) => {
      const o = node('option', '', v);
      o.value = v;
      o.selected = v === current;
      return o;
    }));
  }

  function renderSettings() {
    if (!settings) return;
    const cur = settings.settings;
    fill(el.provider, settings.providers.map((p) => p.name), cur.provider);
    for (const o of el.provider.options) {
      const p = providerOf(o.value);
      o.textContent = (p?.label || o.value) + (p && !p.live ? ' (no live voice API)' : '');
      // A provider without a live API is not offered as a choice (unless it is the one chosen).
      o.disabled = !!p && !p.live && o.value !== cur.provider;
    }
    const p = providerOf(cur.provider);
    if (!p) return;
    fill(el.model, p.models, cur.model);
    fill(el.voice, p.voices, cur.voice);
    const thinks = p.thinkingModels.includes(cur.model);
    el.thinkingRow.hidden = !thinks;
    fill(el.thinking, thinks ? p.thinking : [], cur.thinking);
    el.model.disabled = el.voice.disabled = !p.live;
    el.keyNote.textContent = keyNote(p);
    el.keyNote.dataset.state = p.live && p.keyConfigured ? 'ok' : 'attention';
    showAvailability();
  }

  // keyNote is the settings' short fact about the key; the Talk panel's status line says what
  // to do about it, once.
  /** @param {Provider} p */
  function keyNote(p) {
    if (!p.live) return `${p.label} has no live voice API.`;
    if (!p.keyConfigured) return `No ${p.label} key is configured on the relay (${p.keyEnv}).`;
    return `${p.label} key configured (${p.keySource === 'store' ? 'stored on the relay' : 'from ' + p.keyEnv}).`;
  }

  async function loadSettings() {
    try {
      const data = await relay('/api/agent-settings');
      if (!data.ok) throw new Error(data.why || 'the relay refused');
      settings = /** @type {SettingsAnswer} */ (data);
      renderSettings();
    } catch (err) {
      el.keyNote.textContent = 'The voice settings could not be read: ' + (err instanceof Error ? err.message : String(err));
      if (!session) setState('idle', 'The voice settings could not be read, so the relay may not answer; try again once it does.');
    }
  }

  /** @param {Partial<LiveSettings>} change */
  async function saveSettings(change) {
    if (!settings) return;
    const next = Object.assign({}, settings.settings, change);
    if (change.provider) Object.assign(next, { model: '', voice: '', thinking: '' });
    if (change.model !== undefined) next.thinking = '';
    let data;
    try {
      data = await relay('/api/agent-settings', { method: 'PUT', body: next });
    } catch (err) {
      el.keyNote.textContent = `Not saved: ${err instanceof Error ? err.message : String(err)}`;
      renderSettings();
      return;
    }
    if (!data.ok) {
      el.keyNote.textContent = `Not saved (${data.refused}): ${data.why}`;
      el.keyNote.dataset.state = 'attention';
      renderSettings();
      return;
    }
    settings = /** @type {SettingsAnswer} */ (data);
    renderSettings();
    if (session) el.status.textContent = 'Saved; the new settings apply to the next session.';
  }

  el.settingsToggle.addEventListener('click', () => {
    el.settings.hidden = !el.settings.hidden;
    el.settingsToggle.setAttribute('aria-expanded', String(!el.settings.hidden));
  });
  el.provider.addEventListener('change', () => saveSettings({ provider: el.provider.value }));
  el.model.addEventListener('change', () => saveSettings({ model: el.model.value }));
  el.voice.addEventListener('change', () => saveSettings({ voice: el.voice.value }));
  el.thinking.addEventListener('change', () => saveSettings({ thinking: el.thinking.value }));

  // ---- the transcript ----

  /** @typedef {'user' | 'model' | 'text'} Speaker */
  /** @type {Record<Speaker, HTMLElement>} */
  const captions = { user: el.userCaption, model: el.modelCaption, text: el.modelCaption };
  /** @type {Record<Speaker, HTMLElement | null>} */
  const open = { user: null, model: null, text: null };

  /**
   * @param {Speaker} kind
   * @param {string} text
   */
  function appendText(kind, text) {
    const cap = captions[kind] || el.modelCaption;
    let li = open[kind];
    if (!li) {
      const who = kind === 'user' ? 'You' : 'Model';
      li = open[kind] = el.transcript.appendChild(node('li', 'turn ' + (kind === 'user' ? 'user' : 'model')));
      li.append(node('span', 'who', who + ': '), node('span', 'words', ''));
      cap.textContent = '';
    }
    const words = li.querySelector('.words');
    if (words) words.textContent += text;
    cap.textContent += text;
    el.transcript.scrollTop = el.transcript.scrollHeight;
  }

  function endTurn() {
    open.model = open.text = null;
    open.user = null;
  }

  /** @type {Map<string, HTMLElement>} */
  const toolItems = new Map();

  /** @param {Frame} f */
  function showToolCall(f) {
    stats.toolCalls++;
    const li = el.transcript.appendChild(node('li', 'tool'));
    li.append(node('span', 'who', 'Tool: '), node('code', 'call', `${f.name}(${JSON.stringify(f.args)})`), node('span', 'result pending', ' … running'));
    li.dataset.tool = f.name;
    toolItems.set(f.id, li);
    endTurn();
  }

  /** @param {Frame} f */
  function showToolResult(f) {
    stats.toolResults++;
    const li = toolItems.get(f.id);
    const res = li?.querySelector('.result');
    if (!res) return;
    res.classList.remove('pending');
    // In words, as the Assistant panel says results; a refusal with its rule id.
    if (f.refused) {
      res.classList.add('refused');
      res.textContent = ` → ${f.result.why || 'refused'} (${f.refused})`;
    } else {
      res.classList.add('ok');
      res.textContent = ' → ' + describeResult(li?.dataset.tool || '', f.result).textContent;
    }
  }

  // ---- playback ----

  // startPlayer builds the reply's audio graph: an AudioWorklet (audio-player.js) that owns the
  // queue and plays the chunks back to back with its adaptive lead (LEAD_START, doubled on an
  // underrun up to LEAD_MAX, halved back after LEAD_SHRINK_AFTER without one). The worklet's
  // port goes to the session's worker (live-worker.js), which feeds it and stops it; the page
  // only builds and closes the graph.
  /**
   * @param {number} rate
   * @param {(port: MessagePort) => void} toWorker
   * @returns {{close: () => void}}
   */
  function startPlayer(rate, toWorker) {
    /** @type {AudioContext} */
    let ctx;
    // At the reply's rate the worklet copies samples; a browser that refuses gets its own rate
    // and the worklet interpolates.
    try {
      ctx = new AudioContext({ sampleRate: rate });
    } catch {
      ctx = new AudioContext();
    }
    ctx.audioWorklet.addModule('/audio-player.js').then(() => {
      if (ctx.state === 'closed') return;
      const node = new AudioWorkletNode(ctx, 'voicebox-player', {
        numberOfInputs: 0, outputChannelCount: [1],
        processorOptions: { rate, leadStart: LEAD_START, leadMax: LEAD_MAX, shrinkAfter: LEAD_SHRINK_AFTER },
      });
      const ch = new MessageChannel();
      node.port.postMessage({ type: 'port', port: ch.port1 }, [ch.port1]);
      toWorker(ch.port2);
      node.connect(ctx.destination);
    }, (err) => {
      el.status.textContent = 'The reply cannot be played: ' + (err instanceof Error ? err.message : String(err));
    });
    return { close: () => { ctx.close(); } };
  }

  // ---- capture ----

  // startCapture opens the microphone and an AudioWorklet that makes PCM16 frames (one render
  // quantum each, at most CAPTURE_FRAME_MS) at rate and posts them to the session's worker
  // (toWorker gets the port). It asks the context for that rate; a browser that gives another one (or cannot connect the
  // microphone to it) gets a context at its own rate, and the worklet resamples.
  /**
   * @param {number} rate
   * @param {(port: MessagePort) => void} toWorker
   * @returns {Promise<{contextRate: number, stop: () => void}>}
   */
  async function startCapture(rate, toWorker) {
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    /** @param {AudioContextOptions} opts */
    const build = async (opts) => {
      const ctx = new AudioContext(opts);
      try {
        await ctx.audioWorklet.addModule('/audio-worklet.js');
        const src = ctx.createMediaStreamSource(stream);
        return { ctx, src };
      } catch (err) {
        ctx.close();
        throw err;
      }
    };
    /** @type {{ctx: AudioContext, src: MediaStreamAudioSourceNode} | undefined} */
    let graph;
    /** @type {AudioWorkletNode} */
    let worklet;
    try {
      try {
        graph = await build({ sampleRate: rate });
      } catch {
        graph = await build({});
      }
      worklet = new AudioWorkletNode(graph.ctx, 'voicebox-capture', { processorOptions: { targetRate: rate, frameMs: CAPTURE_FRAME_MS }, numberOfOutputs: 1 });
      const ch = new MessageChannel();
      worklet.port.postMessage({ type: 'port', port: ch.port1 }, [ch.port1]);
      toWorker(ch.port2);
      const mute = graph.ctx.createGain();
      mute.gain.value = 0;
      graph.src.connect(worklet);
      worklet.connect(mute);
      mute.connect(graph.ctx.destination); // keeps the worklet pulled; it plays nothing
      await graph.ctx.resume();
    } catch (err) {
      // The microphone was granted: it is stopped here, or it would stay open with nothing
      // reading it.
      for (const t of stream.getTracks()) t.stop();
      if (graph) graph.ctx.close();
      throw err;
    }
    const { ctx } = graph;
    return {
      contextRate: ctx.sampleRate,
      stop() {
        worklet.port.postMessage({ type: 'stop' });
        for (const t of stream.getTracks()) t.stop();
        ctx.close();
      },
    };
  }

  // ---- the session ----

  function liveURL() {
    return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/live';
  }

  // Session is one live session seen from the page: its worker (live-worker.js) owns the /live
  // socket and the audio's path through it; the page builds the audio graphs when the relay
  // names the rates, and shows what the worker tells it.
  class Session {
    constructor() {
      this.worker = new Worker('/live-worker.js', { name: 'voicebox-live', type: 'module' });
      /** @type {{contextRate: number, stop: () => void} | null} */
      this.capture = null;
      /** @type {{close: () => void} | null} */
      this.player = null;
      /** @type {Frame | null} the relay's rate frame: the session's rates, provider and model */
      this.rate = null;
      /** @type {Frame | null} */
      this.refused = null;
      this.ended = false;
      this.over = false; // stopped or closed: a microphone granted later is closed at once
      this.failed = ''; // why the page ended the session itself, kept on screen
      this.worker.onmessage = (e) => this.fromWorker(e.data);
      this.worker.onerror = () => {
        if (this.over) return;
        this.failed = 'The voice session stopped: its worker failed to start.';
        this.onClose(0);
      };
      this.worker.postMessage({ type: 'open', url: liveURL() });
    }

    /**
     * @param {object} msg
     * @param {Transferable[]} [transfer]
     */
    post(msg, transfer = []) {
      this.worker.postMessage(msg, transfer);
    }

    /** @param {string} text */
    sendText(text) {
      this.post({ type: 'text', text });
    }

    /** @param {{type: string, [key: string]: any}} m */
    fromWorker(m) {
      switch (m.type) {
        case 'stats': Object.assign(stats, m.stats); break;
        case 'frame': this.onFrame(m.frame); break;
        case 'speaking': if (!this.over && state === 'listening') setState('speaking'); break;
        case 'listening': if (!this.over && state === 'speaking') setState('listening'); break;
        case 'interrupted':
          endTurn();
          if (state === 'speaking') setState('listening');
          break;
        case 'refused': this.onFrame(m); break;
        case 'closed': this.onClose(m.code); break;
      }
    }

    /** @param {Frame} f */
    async onFrame(f) {
      switch (f.type) {
        case 'rate':
          if (this.over) break; // stopped before the relay answered: no microphone, no playback
          this.rate = f;
          this.player = startPlayer(f.outputRate, (port) => this.post({ type: 'player', port, rate: f.outputRate }, [port]));
          try {
            /** @type {MessagePort | null} */
            let capturePort = null;
            const capture = await startCapture(f.inputRate, (port) => { capturePort = port; });
            // The session may have ended while the browser asked for the microphone.
            if (this.over || !capturePort) capture.stop();
            else {
              this.capture = capture;
              this.post({ type: 'capture', port: capturePort }, [capturePort]);
            }
          } catch (err) {
            if (this.over) break;
            this.failed = 'The microphone could not be opened: ' + (err instanceof Error ? err.message || err.name : String(err));
            setState('error', this.failed);
            this.stop();
          }
          break;
        case 'state': this.onState(f); break;
        case 'transcript': appendText(f.kind, f.text); break;
        case 'tool-call': showToolCall(f); break;
        case 'tool-result': showToolResult(f); break;
        case 'notice': el.status.textContent = f.text; break;
        case 'refused':
          this.refused = f;
          el.status.textContent = `Refused (${f.refused}): ${f.why}`;
          break;
      }
    }

    /** @param {Frame} f */
    onState(f) {
      // Once the person stopped, only the end of the session is news.
      if (this.over && !['closed', 'upstream-closed', 'failed'].includes(f.state)) return;
      switch (f.state) {
        case 'transport-open': el.status.textContent = 'Connected to the model; setting up…'; break;
        case 'ready': setState('listening', `Listening (${this.rate?.provider} · ${this.rate?.model}). Speak, or type below.`); break;
        case 'reconnecting': setState('connecting', f.detail); break;
        case 'turn-complete': endTurn(); break; // the worker tells the player the reply ended
        case 'go-away': el.status.textContent = f.detail; break;
        case 'error': el.status.textContent = 'The model reported: ' + f.detail; break;
        default:
          this.ended = true;
          if (this.failed) setState('error', this.failed);
          else if (f.state === 'closed') setState('idle', 'Session ended.');
          else setState('error', (f.state === 'failed' ? 'The session failed: ' : 'The model hung up: ') + f.detail);
      }
    }

    // bargeIn stops the reply at once: the worker stops the player and tells the relay how much
    // of the reply was heard.
    bargeIn() {
      this.post({ type: 'barge-in' });
    }

    /** @param {number} code */
    onClose(code) {
      this.cleanup();
      this.worker.terminate();
      if (session === this) session = null;
      // A refusal the session went on after is not why it ended.
      if (this.failed || this.ended) return;
      if (this.refused) setState('error', `Refused (${this.refused.refused}): ${this.refused.why}`);
      else setState('error', `The relay closed the voice socket (${code}).`);
    }

    cleanup() {
      this.over = true;
      // A tool call the session did not answer ends here, said so.
      for (const res of el.transcript.querySelectorAll('.result.pending')) {
        res.className = 'result refused';
        res.textContent = ' → no answer: the session ended first';
      }
      if (this.capture) this.capture.stop();
      if (this.player) this.player.close();
      this.capture = this.player = null;
    }

    stop() {
      this.post({ type: 'stop' });
      this.cleanup();
    }
  }

  el.mic.addEventListener('click', () => {
    if (session) {
      session.stop();
      return;
    }
    if (blocked()) {
      showAvailability();
      return;
    }
    endTurn();
    byId('captions').hidden = false; // shown from the first session on
    setState('connecting', 'Connecting…');
    session = new Session();
    setState('connecting');
  });
  el.stopReply.addEventListener('click', () => { if (session) session.bargeIn(); });
  el.textForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = el.text.value.trim();
    if (!text) return;
    if (!session) {
      // No session: the text is not dropped; it goes to the assistant as a typed command.
      el.text.value = '';
      el.status.textContent = `No voice session is running, so “${text.length > 60 ? text.slice(0, 60) + '…' : text}” went to the assistant as a typed command (see the Assistant panel).`;
      typed(text);
      return;
    }
    session.sendText(text);
    appendText('user', text);
    endTurn();
    el.text.value = '';
  });

  setState('idle', IDLE_NOTE);
  loadSettings();
  // The relay came back: its settings may have changed meanwhile.
  listen('relay', ({ up }) => { if (up && !settings) loadSettings(); });

  return Object.freeze({
    state: () => state,
    open: () => session !== null,
    stats: () => Object.assign({}, stats),
    reloadSettings: loadSettings,
    transcript: () => [...el.transcript.children].map((li) => li.textContent),
  });
}
