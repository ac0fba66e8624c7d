// @ts-check
// The page's turns (POST /api/turn), sent so that none of the page's requests waits on a person.
// A browser opens few connections to one host and the event stream holds one, so a turn held open
// while the person decides (a delete, an extension's write, an MCP Apps view's call) would queue
// the page's own Approve and Deny behind it. Every turn is sent with Prefer: respond-async: one
// that needs the person's approval is answered at once (202) with its pending handle, {turnId,
// pending: approval}, and its outcome comes later, once, as the event stream's turn event
// (stream.js), which this module hands to whoever waits for that turn.
import { listen } from './events.js';
import { relay } from './http.js';
import { OUTCOME_GRACE_MS } from './rules.js';

/** MAX_EARLY bounds the turn outcomes kept that nobody waits for yet: one that arrived before its 202, or another tab's. */
const MAX_EARLY = 64;

/** @typedef {import('./http.js').RelayAnswer} RelayAnswer */

/** @type {Map<string, (t: RelayAnswer) => void>} who waits for which turn's outcome */
const awaited = new Map();
/** @type {Map<string, RelayAnswer>} outcomes nobody waited for when they came, oldest first */
const early = new Map();

listen('relay:turn', (t) => {
  const id = t && typeof t.turnId === 'string' ? t.turnId : '';
  if (!id) return;
  const done = awaited.get(id);
  if (done) {
    awaited.delete(id);
    done(t);
    return;
  }
  early.delete(id);
  early.set(id, t);
  while (early.size > MAX_EARLY) early.delete(/** @type {string} */ (early.keys().next().value));
});
// A new stream (perhaps of a relay started again, whose turn ids begin anew) sends the outcomes
// it holds after its hello; those kept from before are dropped.
listen('relay:hello', () => { early.clear(); });

/**
 * sendTurn sends one turn ({transcript} or {action}) and resolves with its outcome, the relay's
 * Turn. When the relay answers that the turn waits for the person, onPending is told at once
 * (with {turnId, pending}), and the outcome is awaited on the event stream: up to the approval's
 * own wait and OUTCOME_GRACE_MS more, past which it resolves outcome-unknown. It rejects as
 * relay() does (RelayDownError). When signal aborts (its caller stopped waiting: a view that sent
 * notifications/cancelled, or was closed), a turn that waits for the person is cancelled on the
 * relay (POST /api/turn/{id}/cancel): its request for approval goes and nothing is done; its
 * outcome still comes, as the turn's refusal.
 * @param {object} body
 * @param {(answer: RelayAnswer) => void} [onPending]
 * @param {AbortSignal} [signal]
 * @returns {Promise<RelayAnswer>}
 */
export async function sendTurn(body, onPending, signal) {
  const answer = await relay('/api/turn', { body, prefer: 'respond-async' });
  if (!answer.ok || !answer.pending || typeof answer.turnId !== 'string') return answer;
  const id = answer.turnId;
  const got = early.get(id);
  if (got) {
    early.delete(id);
    return got;
  }
  if (signal) {
    const cancel = () => { relay(`/api/turn/${encodeURIComponent(id)}/cancel`, { method: 'POST' }).catch(() => {}); };
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
  }
  if (onPending) onPending(answer);
  const waits = Number(answer.pending.timeoutMs) > 0 ? Number(answer.pending.timeoutMs) : 0;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      awaited.delete(id);
      resolve({
        ok: false, turnId: id, refused: 'outcome-unknown',
        why: 'no outcome of this turn reached the page (its connection to the relay broke while it waited): look at the files to see whether it ran',
      });
    }, waits + OUTCOME_GRACE_MS);
    awaited.set(id, (t) => {
      clearTimeout(timer);
      resolve(t);
    });
  });
}
