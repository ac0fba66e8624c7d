// @ts-check
// The assistant panel: the command box (typed turns, POST /api/turn), each turn's action and
// result, the calls a live model makes, the approval prompts with their deadline, the Undo
// button, and the "offline mode" label while no voice model is configured. It listens to the
// relay's event stream (GET /api/events), which reaches this page whoever holds the workspace,
// even a paired machine environment.
//
// startAssistant returns turn(text), undo() and pending(): what the page and the tests use.
import { notify } from './dialogs.js';
import { byId, node } from './dom.js';
import { emit, listen } from './events.js';
import { relay } from './http.js';
import { FILE_CHANGING_TOOLS } from './rules.js';

/** MAX_TURNS bounds the turns the panel keeps on screen; older ones are dropped. */
const MAX_TURNS = 100;
/** Verbs whose success changes the workspace, so the file list is refreshed. */
const CHANGES = new Set(FILE_CHANGING_TOOLS);
/** TICK_MS is how often an approval's countdown is redrawn. */
const TICK_MS = 1000;
/** STREAM_RETRY_MS is the pause before the event stream opens again while the workspace is elsewhere. */
const STREAM_RETRY_MS = 15000;

/**
 * Turn is the relay's account of one turn or one model call: what it understood, the action,
 * and the result or refusal.
 * @typedef {{ok: boolean, understood?: string, action?: {verb?: string, [key: string]: unknown},
 *   result?: any, help?: string, refused?: string, why?: string}} Turn
 */
/** @typedef {{id: string, tool: string, summary: string, deadline: string}} Approval */

/** startAssistant runs the Assistant panel. */
export function startAssistant() {
  const el = {
    form: byId('command-form'), input: byId('command', HTMLInputElement), turns: byId('turns'), approvals: byId('approvals'),
    undo: byId('undo'), mode: byId('assistant-mode'), help: byId('command-help'),
  };

  /**
   * @param {string} path
   * @param {unknown} body
   * @returns {Promise<any>}
   */
  const post = (path, body) => relay(path, { body });

  // ---- the record of turns and calls ----

  /**
   * @param {string} kind
   * @param {string} said
   */
  function entry(kind, said) {
    const li = node('li', 'turn');
    li.dataset.turn = kind;
    li.dataset.state = 'pending';
    const head = node('div', 'turn-head');
    head.append(node('span', 'badge', kind === 'model' ? 'assistant' : kind), node('span', 'said', said));
    li.append(head);
    el.turns.prepend(li);
    while (el.turns.children.length > MAX_TURNS) el.turns.lastElementChild?.remove();
    return li;
  }

  /** @param {any} result */
  function describe(result) {
    if (!result) return '';
    if (result.refused) return `${result.refused}: ${result.why}`;
    return JSON.stringify(result, null, 2);
  }

  /**
   * fill shows a turn's (or a call's) understanding, action and result.
   * @param {HTMLElement} li
   * @param {Turn} turn
   */
  function fill(li, { understood, action, result, ok, help }) {
    li.dataset.state = ok ? 'ok' : 'refused';
    if (action && action.verb) li.dataset.verb = action.verb;
    if (understood) li.append(node('p', 'understood', understood));
    if (action) {
      const shown = { ...action };
      for (const key of ['content', 'html']) {
        if (typeof shown[key] === 'string' && shown[key].length > 200) shown[key] = shown[key].slice(0, 200) + `… (${shown[key].length} characters)`;
      }
      li.append(node('code', 'action', JSON.stringify(shown)));
    }
    if (result) li.append(node('pre', 'result', describe(result)));
    if (help) li.append(node('pre', 'help', help));
    if (ok && action && CHANGES.has(String(action.verb))) emit('files-changed');
  }

  /**
   * @param {string} text
   * @returns {Promise<Turn>}
   */
  async function turn(text) {
    const li = entry('you', text);
    const t = await post('/api/turn', { transcript: text });
    fill(li, { ...t, result: t.result || (t.refused ? { refused: t.refused, why: t.why } : null) });
    return t;
  }

  /** @returns {Promise<Turn>} */
  async function undo() {
    const li = entry('you', 'Undo');
    const t = await post('/api/turn', { action: { verb: 'undo_last_action' } });
    fill(li, t);
    return t;
  }

  el.form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = el.input.value.trim();
    if (!text) return;
    el.input.value = '';
    turn(text).catch(notify);
  });
  el.undo.addEventListener('click', () => undo().catch(notify));
  el.help.addEventListener('click', () => turn('help').catch(notify));

  // ---- approvals ----

  /** @type {Map<string, {li: HTMLElement, timer: number}>} */
  const waiting = new Map();

  /** @param {Approval} a */
  function ask(a) {
    if (waiting.has(a.id)) return;
    const li = node('li', 'approval');
    li.dataset.approvalId = a.id;
    li.dataset.tool = a.tool;
    const left = node('span', 'deadline');
    const tick = () => {
      const s = Math.max(0, Math.round((Date.parse(a.deadline) - Date.now()) / 1000));
      left.textContent = `${s} s left`;
    };
    tick();
    const yes = node('button', 'approve', 'Approve');
    const no = node('button', 'deny danger', 'Deny');
    for (const [b, approve] of /** @type {[HTMLButtonElement, boolean][]} */ ([[yes, true], [no, false]])) {
      b.type = 'button';
      b.addEventListener('click', async () => {
        yes.disabled = no.disabled = true;
        const answer = await post(`/api/approvals/${encodeURIComponent(a.id)}`, { approve });
        if (!answer.ok) notify(new Error(answer.why || 'the request is no longer waiting'));
        settle(a.id);
      });
    }
    li.append(node('span', 'summary', a.summary), left, yes, no);
    el.approvals.append(li);
    el.approvals.hidden = false;
    waiting.set(a.id, { li, timer: setInterval(tick, TICK_MS) });
  }

  /** @param {string} id */
  function settle(id) {
    const w = waiting.get(id);
    if (!w) return;
    clearInterval(w.timer);
    w.li.remove();
    waiting.delete(id);
    el.approvals.hidden = waiting.size === 0;
  }

  // ---- the event stream ----

  /** @param {string} mode */
  function showMode(mode) {
    const offline = mode !== 'live';
    el.mode.textContent = offline ? 'offline mode' : 'live';
    el.mode.dataset.mode = offline ? 'offline' : 'live';
    el.mode.title = offline
      ? 'No voice model is configured: type commands here; the built-in resolver understands them.'
      : 'A live voice model is configured.';
  }

  /** @type {EventSource | null} */
  let stream = null;
  let retry = 0;
  /** The page's channel to the relay, as the workspace last said. */
  let channelState = 'idle';

  // listenStream opens the stream. When it fails it is closed rather than left to retry by itself:
  // it opens again once the page's channel to the relay is back (or, while another tab or a
  // machine holds the workspace, after a pause).
  function listenStream() {
    clearTimeout(retry);
    if (stream) return;
    stream = new EventSource('/api/events');
    stream.addEventListener('hello', (e) => {
      const hello = JSON.parse(e.data);
      showMode(hello.mode);
      const live = new Set((hello.approvals || []).map((/** @type {Approval} */ a) => a.id));
      for (const id of [...waiting.keys()]) if (!live.has(id)) settle(id);
      for (const a of hello.approvals || []) ask(a);
    });
    stream.addEventListener('approval', (e) => ask(JSON.parse(e.data)));
    stream.addEventListener('approval-settled', (e) => settle(JSON.parse(e.data).id));
    stream.addEventListener('call', (e) => {
      const c = JSON.parse(e.data);
      if (c.source === 'turn') return; // typed turns are shown by the turn itself
      const kind = c.source === 'mcp' ? `MCP ${c.client}` : 'model';
      fill(entry(kind, c.tool), { action: c.action, result: c.result, ok: c.ok });
    });
    stream.onerror = () => {
      stream?.close();
      stream = null;
      const state = channelState;
      if (state === 'replaced' || state === 'refused' || state === 'idle') retry = setTimeout(listenStream, STREAM_RETRY_MS);
    };
  }

  listen('channel', ({ state }) => {
    channelState = state;
    if (state === 'connected') listenStream();
  });
  showMode('offline');
  listenStream();

  return Object.freeze({ turn, undo, pending: () => [...waiting.keys()] });
}
