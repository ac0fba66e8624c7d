// @ts-check
// The one helper for the relay's JSON routes (same origin). Every route answers JSON, {ok: true,
// ...} or {ok: false, refused, why}; an answer that is not JSON becomes an internal-error refusal
// naming the status, so callers read one shape. A network failure rejects, as fetch does.

/**
 * RelayAnswer is a JSON answer of the relay: ok, and the route's own fields.
 * @typedef {{ok: boolean, refused?: string, why?: string, [key: string]: any}} RelayAnswer
 */

/**
 * relay asks one of the relay's routes and reads its JSON answer. With a body it sends JSON
 * (POST unless method says otherwise).
 * @param {string} path
 * @param {{method?: string, body?: unknown}} [options]
 * @returns {Promise<RelayAnswer>}
 */
export async function relay(path, options = {}) {
  /** @type {RequestInit} */
  const init = {};
  if (options.body !== undefined) {
    init.method = options.method || 'POST';
    init.headers = { 'Content-Type': 'application/json' };
    init.body = JSON.stringify(options.body);
  } else if (options.method) {
    init.method = options.method;
  }
  const resp = await fetch(path, init);
  try {
    return await resp.json();
  } catch {
    return { ok: false, refused: 'internal-error', why: `the relay answered ${resp.status}` };
  }
}
