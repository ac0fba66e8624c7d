// @ts-check
// The page's own events, between its modules: one typed target instead of CustomEvents on the
// document, so who says what is visible in the imports.

/**
 * PageEvents maps each event to its detail.
 * @typedef {{
 *   'root': import('./worker-client.js').RootInfo,
 *   'channel': {state: import('./worker-client.js').ChannelState},
 *   'files-changed': undefined,
 *   'external-apps': {apps: unknown[]},
 * }} PageEvents
 */

const target = new EventTarget();

/**
 * emit tells the listeners of name.
 * @template {keyof PageEvents} N
 * @param {N} name
 * @param {PageEvents[N]} [detail]
 */
export function emit(name, detail) {
  target.dispatchEvent(new CustomEvent(name, { detail }));
}

/**
 * listen calls fn with the detail of every event called name.
 * @template {keyof PageEvents} N
 * @param {N} name
 * @param {(detail: PageEvents[N]) => void} fn
 */
export function listen(name, fn) {
  target.addEventListener(name, (event) => fn(/** @type {CustomEvent} */ (event).detail));
}
