// @ts-check
// The worker's end of a mini-app's direct port: the page's dedicated worker (worker.js) loads this
// module and the Go engine opens every app's port through it (internal/engine ports_js.go). The
// other end is held by the app's document itself (its bridge made the channel and handed one end
// to each; the bridge is off the call's path), so the app is the only one writing on it, and
// everything it writes is charged here first, where it landed and was deserialised, with the same
// MessageBudget the bridge and the page charge (message-budget.js): an answer to a call waiting
// on this port is owed and free, anything else costs the app a message and its bytes. The first
// message over the budget closes the port and is reported to Go (over), which stops the app.
//
// Only an owed answer reaches Go (receive, as JSON text), which checks it again and takes it
// once. Anything else is refused here by name and counted (refused(), which Go reads for
// miniapps.ports): MALFORMED_ANSWER for what is not an answer's shape, MINI_APP_UNSOLICITED_ANSWER
// for an answer to no call waiting here. So a flood costs the worker a check and a count per
// message, as it costs the bridge, never a crossing into Go: a realm slow to read a flood would
// spread it over several budget windows (the window is of when messages are read).
import { MessageBudget } from './message-budget.js';
import { MALFORMED_ANSWER, MAX_OUTPUT_BYTES, MAX_PORT_REFUSAL_SAMPLES, MINI_APP_UNSOLICITED_ANSWER } from './rules.js';

/**
 * AppPortEnd is the worker's side of one app document's port.
 * @typedef {{post: (text: string, callId: string, owe: boolean) => void, refused: () => string, close: () => void}} AppPortEnd
 */

/**
 * shaped reports whether data has an answer's shape, as the SDK writes it: {type: 'tool_result',
 * callId, ok: true, result} with the tool's value as JSON text, or {..., ok: false, error}.
 * @param {any} data
 */
export function shaped(data) {
  if (!data || typeof data !== 'object' || data.type !== 'tool_result' || typeof data.callId !== 'string' || data.callId === '') return false;
  if (data.ok === true) return typeof data.result === 'string' && data.error === undefined;
  return data.ok === false && typeof data.error === 'string' && data.result === undefined;
}

/**
 * crossing is what of an owed answer crosses into Go: its own fields alone, its text cut just past
 * the output bound (MAX_OUTPUT_BYTES + 1 UTF-16 units are more than MAX_OUTPUT_BYTES bytes of
 * UTF-8), so Go still refuses an answer over the bound by name (tool-output-over-budget) but the
 * worker's WebAssembly memory, which never shrinks, is not grown by what the bound refuses, nor
 * by fields beside the answer's.
 * @param {{type: string, callId: string, ok: boolean, result?: string, error?: string}} data a shaped answer
 */
export function crossing(data) {
  /** @param {string} text */
  const cut = (text) => (text.length > MAX_OUTPUT_BYTES ? text.slice(0, MAX_OUTPUT_BYTES + 1) : text);
  if (data.ok) return { type: data.type, callId: data.callId, ok: true, result: cut(String(data.result)) };
  return { type: data.type, callId: data.callId, ok: false, error: cut(String(data.error)) };
}

/**
 * openAppPort starts port: each message is charged; an owed answer is given to receive as JSON
 * text, anything else refused and counted; the first over the budget closes the port and calls
 * over once.
 * @param {MessagePort} port
 * @param {(text: string) => void} receive
 * @param {(why: string, messages: number, bytes: number) => void} over
 * @returns {AppPortEnd}
 */
export function openAppPort(port, receive, over) {
  const budget = new MessageBudget();
  /** @type {Set<string>} the call ids whose answers the app owes: free of its budget, once each */
  const owes = new Set();
  let dropped = 0;
  /** @type {Record<string, number>} */
  const refused = {};
  /** @type {{rule: string, why: string}[]} */
  const samples = [];
  let open = true;

  /**
   * @param {string} rule
   * @param {() => string} why
   */
  const refuse = (rule, why) => {
    dropped++;
    refused[rule] = (refused[rule] || 0) + 1;
    if (samples.length < MAX_PORT_REFUSAL_SAMPLES) samples.push({ rule, why: why() });
  };
  const close = () => {
    if (!open) return;
    open = false;
    owes.clear();
    port.onmessage = null;
    port.close();
  };
  port.onmessage = (event) => {
    if (!open) return;
    const data = event.data;
    const answer = shaped(data);
    const owed = answer && owes.delete(data.callId);
    const why = budget.charge(data, owed, event.timeStamp);
    if (why) {
      close();
      over(why, budget.count, budget.bytes);
      return;
    }
    if (owed) {
      receive(JSON.stringify(crossing(data)));
      return;
    }
    if (answer) {
      refuse(MINI_APP_UNSOLICITED_ANSWER, () => `no call ${data.callId.slice(0, 80)} waits on this port: it was never made here, or it was answered already, passed its deadline or was cancelled`);
    } else {
      refuse(MALFORMED_ANSWER, () => 'what the app sent on its port is not an answer: {type: "tool_result", callId, ok: true, result} or {type: "tool_result", callId, ok: false, error}');
    }
  };
  return {
    // post sends the app msg (JSON text); with a call id, owe says the app owes its answer (a
    // call) or no longer does (a cancel).
    post(text, callId, owe) {
      if (!open) throw new Error('the port is closed');
      if (callId) {
        if (owe) owes.add(callId);
        else owes.delete(callId);
      }
      port.postMessage(JSON.parse(text));
    },
    refused: () => JSON.stringify({ dropped, refused, samples }),
    close,
  };
}
