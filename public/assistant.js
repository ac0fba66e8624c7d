// @ts-check
// The assistant panel: the command box (typed turns, POST /api/turn), each turn's action and
// result in words, the calls a live model (or an MCP client) makes, the approval prompts with
// their countdown, and what kind of model answers ("typed commands" while no voice model is
// configured). It follows the relay's event stream (stream.js), which reaches this page whoever
// holds the workspace, even a paired machine environment.
//
// startAssistant returns turn(text), action(action) and pending(): what the page and the tests use.
import { notify } from './dialogs.js';
import { byId, node } from './dom.js';
import { emit, listen } from './events.js';
import { RelayDownError, relay } from './http.js';
import { describeResult, helpNode } from './results.js';
import { FILE_CHANGING_TOOLS } from './rules.js';
import { sendTurn } from './turns.js';

/** MAX_TURNS bounds the turns the panel keeps on screen; older ones are dropped. */
const MAX_TURNS = 100;
/** Verbs whose success changes the workspace, so the file list is refreshed. */
const CHANGES = new Set(FILE_CHANGING_TOOLS);
/** TICK_MS is how often an approval's countdown is redrawn. */
const TICK_MS = 1000;

/**
 * Turn is the relay's account of one turn or one model call: what it understood, the action,
 * and the result or refusal.
 * @typedef {{ok: boolean, understood?: string, action?: {verb?: string, [key: string]: unknown},
 *   result?: any, help?: string, refused?: string, why?: string}} Turn
 */
/** @typedef {{id: string, tool: string, summary: string, deadline: string, timeoutMs?: number, client?: string}} Approval */

/** startAssistant runs the Assistant panel. */
export function startAssistant() {
  const el = {
    form: byId('command-form'), input: byId('command', HTMLInputElement), turns: byId('turns'), approvals: byId('approvals'),
    mode: byId('assistant-mode'), help: byId('command-help'),
  };

  // ---- the record of turns and calls ----

  /**
   * @param {string} kind you, model or mcp
   * @param {string} said
   */
  function entry(kind, said) {
    const li = node('li', 'turn');
    li.dataset.turn = kind;
    li.dataset.state = 'pending';
    const head = node('div', 'turn-head');
    head.append(node('span', 'badge', kind === 'you' ? 'you' : kind === 'mcp' ? 'MCP client' : 'assistant'), node('span', 'said', said));
    li.append(head, node('p', 'result pending', 'working…'));
    el.turns.prepend(li);
    while (el.turns.children.length > MAX_TURNS) el.turns.lastElementChild?.remove();
    return li;
  }

  /**
   * fill shows a turn's (or a call's) understanding, action and result, for people: the result
   * in words (a refusal as its sentence with the rule id small beside it), the JSON only behind
   * "Details".
   * @param {HTMLElement} li
   * @param {Turn} turn
   */
  function fill(li, { understood, action, result, ok, help }) {
    li.dataset.state = ok ? 'ok' : 'refused';
    if (action && action.verb) li.dataset.verb = action.verb;
    li.querySelector('.result.pending')?.remove();
    if (understood) li.append(node('p', 'understood', understood));
    if (result) li.append(describeResult(action && action.verb ? String(action.verb) : '', result));
    if (help) li.append(helpNode(help));
    if (action || result) {
      const details = node('details', 'result-json');
      details.append(node('summary', '', 'Details'));
      const shown = { ...(action || {}) };
      for (const key of ['content', 'html']) {
        if (typeof shown[key] === 'string' && shown[key].length > 200) shown[key] = shown[key].slice(0, 200) + `… (${shown[key].length} characters)`;
      }
      if (action) details.append(node('code', 'action', JSON.stringify(shown)));
      if (result) details.append(node('pre', '', JSON.stringify(result, null, 2)));
      li.append(details);
    }
    if (ok && action && CHANGES.has(String(action.verb))) emit('files-changed');
  }

  /**
   * failed ends a turn that got no answer: the relay was not there, or something broke.
   * @param {HTMLElement} li
   * @param {unknown} err
   */
  function failed(li, err) {
    li.dataset.state = 'failed';
    const p = li.querySelector('.result.pending') || li.appendChild(node('p', 'result'));
    p.className = 'result failed';
    p.textContent = err instanceof RelayDownError ? 'Not sent: the relay is not answering. Try again once it is back.' : `Failed: ${err instanceof Error ? err.message : String(err)}`;
  }

  /**
   * asked shows, in a turn still pending, that it waits for the person's decision (the request
   * itself is among the approvals above).
   * @param {HTMLElement} li
   * @param {import('./http.js').RelayAnswer} answer its pending is the Approval
   */
  function asked(li, answer) {
    const pending = /** @type {Approval | undefined} */ (answer.pending);
    const p = li.querySelector('.result.pending');
    if (!p || !pending) return;
    li.dataset.approvalId = pending.id;
    p.textContent = 'waiting for your decision above…';
  }

  /**
   * send sends one turn and shows it in li; a turn that waits for the person's approval is
   * answered at once and shown as waiting, and its outcome fills li when it comes (turns.js).
   * It never rejects.
   * @param {HTMLElement} li
   * @param {object} body
   * @returns {Promise<Turn>}
   */
  async function send(li, body) {
    try {
      const t = /** @type {Turn} */ (await sendTurn(body, (answer) => asked(li, answer)));
      fill(li, { ...t, result: t.result || (t.refused ? { refused: t.refused, why: t.why } : null) });
      return t;
    } catch (err) {
      failed(li, err);
      return { ok: false, refused: 'relay-unreachable', why: err instanceof Error ? err.message : String(err) };
    }
  }

  /**
   * turn runs a transcript through the relay's resolver.
   * @param {string} text
   * @returns {Promise<Turn>}
   */
  function turn(text) {
    return send(entry('you', text), { transcript: text });
  }

  /**
   * action runs one action as given ({verb, ...arguments}).
   * @param {{verb: string, [key: string]: unknown}} a
   * @param {string} [said] what the record shows for it
   */
  function action(a, said) {
    return send(entry('you', said || a.verb), { action: a });
  }

  el.form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = el.input.value.trim();
    if (!text) return;
    el.input.value = '';
    turn(text);
  });
  el.help.addEventListener('click', () => { turn('help'); });

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
    const bar = node('progress', 'countdown');
    const total = a.timeoutMs || Math.max(1000, Date.parse(a.deadline) - Date.now());
    bar.max = total;
    bar.setAttribute('aria-hidden', 'true');
    const tick = () => {
      const ms = Math.max(0, Date.parse(a.deadline) - Date.now());
      left.textContent = `${Math.round(ms / 1000)} s left`;
      bar.value = ms;
    };
    tick();
    const summary = node('span', 'summary', a.summary);
    summary.id = `approval-${a.id}`;
    const yes = node('button', 'approve', 'Approve');
    const no = node('button', 'deny danger', 'Deny');
    for (const [b, approve] of /** @type {[HTMLButtonElement, boolean][]} */ ([[yes, true], [no, false]])) {
      b.type = 'button';
      b.setAttribute('aria-label', `${approve ? 'Approve' : 'Deny'}: ${a.summary}`);
      b.addEventListener('click', async () => {
        yes.disabled = no.disabled = true;
        try {
          const answer = await relay(`/api/approvals/${encodeURIComponent(a.id)}`, { body: { approve } });
          if (!answer.ok && answer.refused === 'outcome-unknown') {
            // The fleet's relay that asked did not answer: the decision may or may not have been
            // taken. The request stays, to be decided again; its approval-settled ends it if taken.
            yes.disabled = no.disabled = false;
            notify(new Error(answer.why));
            return;
          }
          if (!answer.ok) notify(new Error(answer.why || 'the request is no longer waiting'));
          settle(a.id);
        } catch (err) {
          yes.disabled = no.disabled = false;
          notify(err);
        }
      });
    }
    li.append(summary, left, bar, yes, no);
    el.approvals.append(li);
    el.approvals.hidden = false;
    waiting.set(a.id, { li, timer: setInterval(tick, TICK_MS) });
    // A request is what the person must act on now: it is shown, and announced (role=alert).
    li.scrollIntoView({ block: 'nearest', behavior: 'instant' });
    // An MCP client's request names its asker already (the relay's summary says "MCP client … asks:").
    const alert = node('span', 'visually-hidden', a.client ? a.summary : `The assistant asks: ${a.summary}`);
    alert.setAttribute('role', 'alert');
    li.append(alert);
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
    el.mode.textContent = offline ? 'typed commands' : 'voice model ready';
    el.mode.dataset.mode = offline ? 'offline' : 'live';
    el.mode.title = offline
      ? 'No voice model is configured (offline mode): type commands here; the built-in resolver understands them.'
      : 'A live voice model is configured: talk in the Talk panel, or type here.';
  }

  listen('relay:hello', (hello) => {
    showMode(hello.mode);
    const live = new Set((hello.approvals || []).map((/** @type {Approval} */ a) => a.id));
    for (const id of [...waiting.keys()]) if (!live.has(id)) settle(id);
    for (const a of hello.approvals || []) ask(a);
  });
  listen('relay:approval', (a) => ask(a));
  listen('relay:approval-settled', (s) => settle(s.id));
  listen('relay:call', (c) => {
    if (c.source === 'turn') {
      // Typed turns are shown by the turn itself; a change made through one in another tab
      // still changes the files shown here.
      if (c.ok && CHANGES.has(c.tool)) emit('files-changed');
      return;
    }
    const kind = c.source === 'mcp' ? 'mcp' : 'model';
    fill(entry(kind, c.client ? `${c.tool} (${c.client})` : c.tool), { action: c.action, result: c.result, ok: c.ok });
  });
  showMode('offline');

  return Object.freeze({ turn, action, pending: () => [...waiting.keys()] });
}
