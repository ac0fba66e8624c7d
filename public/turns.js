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
import { MAX_LIVE_RUNS, OUTCOME_GRACE_MS } from './rules.js';

/** MAX_EARLY bounds the turn outcomes kept that nobody waits for yet: one that arrived before its 202, or another tab's. */
const MAX_EARLY = 64;

/** @typedef {import('./http.js').RelayAnswer} RelayAnswer */

/**
 * Waiting is who waits for a turn's outcome: done with the outcome, and the run of the relay that
 * took the turn (its instance, '' when that relay named none).
 * @typedef {{done: (t: RelayAnswer) => void, instance: string}} Waiting
 */

/** @type {Map<string, Waiting>} who waits for which turn's outcome */
const awaited = new Map();
/** @type {Map<string, RelayAnswer>} outcomes nobody waited for when they came, oldest first */
const early = new Map();

listen('relay:turn', (t) => {
  const id = t && typeof t.turnId === 'string' ? t.turnId : '';
  if (!id) return;
  const w = awaited.get(id);
  if (w) {
    awaited.delete(id);
    w.done(t);
    return;
  }
  early.delete(id);
  early.set(id, t);
  while (early.size > MAX_EARLY) early.delete(/** @type {string} */ (early.keys().next().value));
});
// A new stream sends the outcomes it holds after its hello; those kept from before are dropped.
// Its hello names the relay's instance and every turn it can still answer for (held, or its
// outcome following). A turn waited for that it does not name is lost at once when that relay
// took it (it no longer holds it), or when another relay alone greets the page (the one that took
// it stopped: a relay restarted answers at its address). In a fleet another relay may hold it and
// its outcome crosses the fleet, so it is waited for as before, unless the relay lists the
// fleet's live runs (runs, when it knows them all) and that turn's run is not among them: it
// stopped, or lost the fleet and with it the requests it asked for. The same list comes again as a
// runs event whenever it changes, so a page learns that another relay's run died without
// reconnecting. A hello naming no turns (an older relay), or no runs, proves nothing.
listen('relay:hello', (hello) => {
  early.clear();
  if (!hello || !Array.isArray(hello.turns) || typeof hello.instance !== 'string') return;
  const named = new Set(hello.turns);
  const live = liveRuns(hello.runs);
  for (const [id, w] of [...awaited]) {
    if (named.has(id) || !w.instance) continue;
    if (w.instance !== hello.instance && hello.fleet) {
      if (live && !live.has(w.instance)) settle(id, w, GONE_FROM_FLEET);
      continue;
    }
    settle(id, w, w.instance === hello.instance
      ? 'the relay no longer holds this turn and no outcome of it reached the page'
      : 'the relay that took this turn stopped before its outcome reached the page');
  }
});
listen('relay:runs', (event) => {
  const live = liveRuns(event && event.runs);
  if (!live) return;
  for (const [id, w] of [...awaited]) {
    if (w.instance && !live.has(w.instance)) settle(id, w, GONE_FROM_FLEET);
  }
});

/** GONE_FROM_FLEET is why a turn whose relay run the fleet no longer hears is lost. */
const GONE_FROM_FLEET = 'the relay that took this turn stopped (the fleet no longer hears it) before its outcome reached the page';

/**
 * liveRuns is the fleet's live relay runs a hello or a runs event lists, or null when it lists
 * none or not in the relay's shape (an array of at most MAX_LIVE_RUNS strings): then nothing is
 * known, and the turns wait as before.
 * @param {unknown} runs
 * @returns {Set<string> | null}
 */
function liveRuns(runs) {
  if (!Array.isArray(runs) || runs.length === 0 || runs.length > MAX_LIVE_RUNS) return null;
  if (!runs.every((r) => typeof r === 'string' && r !== '')) return null;
  return new Set(runs);
}

/**
 * settle ends the wait for turn id as lost, because.
 * @param {string} id
 * @param {Waiting} w
 * @param {string} because
 */
function settle(id, w, because) {
  awaited.delete(id);
  w.done(lost(id, because));
}

/**
 * lost is the outcome of a turn whose outcome will never reach the page.
 * @param {string} id
 * @param {string} because
 * @returns {RelayAnswer}
 */
function lost(id, because) {
  return { ok: false, turnId: id, refused: 'outcome-unknown', why: `${because}: look at the files to see whether it ran` };
}

/**
 * sendTurn sends one turn ({transcript} or {action}) and resolves with its outcome, the relay's
 * Turn. When the relay answers that the turn waits for the person, onPending is told at once
 * (with {turnId, pending}), and the outcome is awaited on the event stream: up to the approval's
 * own wait and OUTCOME_GRACE_MS more, past which it resolves outcome-unknown (at once when a
 * relay's hello shows the turn lost, above). It rejects as
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
      resolve(lost(id, 'no outcome of this turn reached the page (its connection to the relay broke while it waited)'));
    }, waits + OUTCOME_GRACE_MS);
    const instance = typeof answer.instance === 'string' ? answer.instance : '';
    awaited.set(id, { instance, done: (t) => {
      clearTimeout(timer);
      resolve(t);
    } });
  });
}
