// @ts-check
// The page's own events, between its modules: one typed target instead of CustomEvents on the
// document, so who says what is visible in the imports.

/**
 * RelayRoot is who holds the workspace the relay's tools act on (GET /api/root, the event
 * stream's root event): kind "" while nobody declared one, "opfs" or "handle" for a page, and
 * "machine" for a paired machine environment.
 * @typedef {{kind: '' | 'opfs' | 'handle' | 'machine', name: string, connected: boolean}} RelayRoot
 */

/**
 * Where says where the assistant's tools act now (where.js): this tab's own workspace, another
 * tab's, a paired machine's folder, or nowhere (no workspace, or no relay).
 * @typedef {{holder: 'none' | 'this-tab' | 'other-tab' | 'machine' | 'offline', kind: string, name: string,
 *   connected: boolean, text: string}} Where
 */

/**
 * PageEvents maps each event to its detail. The relay:* events are the relay's event stream
 * (GET /api/events, stream.js), one per kind it sends.
 * @typedef {{
 *   'root': import('./worker-client.js').RootInfo,
 *   'channel': {state: import('./worker-client.js').ChannelState | 'idle', why?: string},
 *   'platform': {missing: import('./platform.js').FeatureId[]},
 *   'platform-missing': import('./platform.js').FeatureId,
 *   'files-changed': undefined,
 *   'external-apps': {apps: unknown[]},
 *   'relay': {up: boolean},
 *   'where': Where,
 *   'history': undefined,
 *   'relay:hello': {mode: string, tools: string[], approvals: any[], root?: RelayRoot, instance?: string, fleet?: boolean, turns?: string[], runs?: string[]},
 *   'relay:call': {id: string, source: string, tool: string, action?: any, ok: boolean, result: any, client?: string},
 *   'relay:approval': any,
 *   'relay:approval-settled': {id: string, outcome: string},
 *   'relay:turn': import('./http.js').RelayAnswer,
 *   'relay:tools': {tools: string[]},
 *   'relay:root': RelayRoot,
 *   'relay:extensions': {what: string, id?: string},
 *   'relay:runs': {runs: string[]},
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
