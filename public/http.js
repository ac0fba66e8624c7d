// @ts-check
// The one helper for the relay's JSON routes (same origin). Every route answers JSON, {ok: true,
// ...} or {ok: false, refused, why}; an answer that is not JSON becomes an internal-error refusal
// naming the status, so callers read one shape. A relay that does not answer at all rejects with a
// RelayDownError, and the page is told once (the relay event), so it says so once, with a retry,
// instead of every panel saying "Failed to fetch".
import { emit } from './events.js';

/**
 * RelayAnswer is a JSON answer of the relay: ok, and the route's own fields.
 * @typedef {{ok: boolean, refused?: string, why?: string, [key: string]: any}} RelayAnswer
 */

/** RelayDownError is what relay rejects with when the relay could not be reached. */
export class RelayDownError extends Error {
  constructor() {
    super('The relay is not answering, so this did not happen.');
    this.name = 'RelayDownError';
  }
}

/** @type {boolean | null} whether the relay answered the last request; null before any */
let up = null;

/**
 * reachable records whether the relay answers; the page is told when that changes. The event
 * stream calls it too (true) when it opens again.
 * @param {boolean} now
 */
export function reachable(now) {
  if (up === now) return;
  up = now;
  emit('relay', { up: now });
}

/**
 * relay asks one of the relay's routes and reads its JSON answer. With a body it sends JSON
 * (POST unless method says otherwise). A request that is not GET always carries a JSON body, {}
 * when none is given: the relay takes nothing else from a request that changes something (its
 * cross-site wall). prefer, when given, is sent as the Prefer header (turns.js asks
 * respond-async).
 * @param {string} path
 * @param {{method?: string, body?: unknown, prefer?: string}} [options]
 * @returns {Promise<RelayAnswer>}
 */
export async function relay(path, options = {}) {
  /** @type {RequestInit} */
  const init = {};
  const method = options.method || (options.body !== undefined ? 'POST' : 'GET');
  if (method !== 'GET') {
    init.method = method;
    init.headers = { 'Content-Type': 'application/json' };
    init.body = JSON.stringify(options.body === undefined ? {} : options.body);
  }
  if (options.prefer) init.headers = { ...init.headers, Prefer: options.prefer };
  let resp;
  try {
    resp = await fetch(path, init);
  } catch {
    reachable(false);
    throw new RelayDownError();
  }
  reachable(true);
  try {
    return await resp.json();
  } catch {
    return { ok: false, refused: 'internal-error', why: `the relay answered ${resp.status}` };
  }
}

/**
 * relayUp reports whether the relay answered the last request (true before the first).
 * @returns {boolean}
 */
export function relayUp() {
  return up !== false;
}
