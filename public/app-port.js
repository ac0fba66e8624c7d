// @ts-check
// The worker's end of a mini-app's direct port: the page's dedicated worker (worker.js) loads this
// module and the Go engine opens every app's port through it (internal/engine ports_js.go). The
// other end is held by the app's document itself (its bridge made the channel and handed one end
// to each; the bridge is off the call's path), so the app is the only one writing on it, and
// everything it writes is charged here first, where it lands and was deserialised, with the same
// MessageBudget the bridge and the page charge (message-budget.js): an answer to a call waiting
// on this port is owed and free, anything else costs the app a message and its bytes. The first
// message over the budget closes the port and is reported to Go (over), which stops the app; a
// message within it reaches Go as JSON text (receive), which takes only an answer to a call
// waiting on this very port, once, and refuses the rest by name.
import { MessageBudget } from './message-budget.js';

/**
 * AppPortEnd is the worker's side of one app document's port.
 * @typedef {{post: (text: string, callId: string, owe: boolean) => void, close: () => void}} AppPortEnd
 */

/**
 * openAppPort starts port: each message is charged, then given to receive as JSON text (null when
 * it is not JSON), in order; the first over the budget closes the port and calls over once.
 * @param {MessagePort} port
 * @param {(text: string | null) => void} receive
 * @param {(why: string, messages: number, bytes: number) => void} over
 * @returns {AppPortEnd}
 */
export function openAppPort(port, receive, over) {
  const budget = new MessageBudget();
  /** @type {Set<unknown>} the call ids whose answers the app owes: free of its budget, once each */
  const owes = new Set();
  let open = true;
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
    const owed = !!data && typeof data === 'object' && data.type === 'tool_result' && owes.delete(data.callId);
    const why = budget.charge(data, owed, event.timeStamp);
    if (why) {
      close();
      over(why, budget.count, budget.bytes);
      return;
    }
    /** @type {string | null} */
    let text = null;
    try {
      const t = JSON.stringify(data);
      if (typeof t === 'string') text = t;
    } catch {
      text = null;
    }
    receive(text);
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
    close,
  };
}
