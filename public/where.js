// @ts-check
// Where the assistant's tools act: this tab's workspace, another tab's, or a paired machine
// environment's folder. The header says it at all times; when it changes away from this tab the
// page says so once, with the way back ("Use this tab"). Every panel that depends on it (the
// Files panel shows the folder the tools act on) listens to the where event.
import { say } from './dialogs.js';
import { byId } from './dom.js';
import { emit, listen } from './events.js';
import { relay } from './http.js';

/** @typedef {import('./events.js').Where} Where */
/** @typedef {import('./events.js').RelayRoot} RelayRoot */

/** startWhere follows the page's root, its channel and the relay's root. */
export function startWhere() {
  const el = { where: byId('where'), start: byId('start-where') };
  /** @type {import('./worker-client.js').RootInfo | null} */
  let own = null;
  let channel = 'idle';
  /** why is what the relay said with the last channel state (how this tab came to hold it). */
  let why = '';
  /** @type {RelayRoot} */
  let held = { kind: '', name: '', connected: false };
  /** @type {Where | null} */
  let last = null;
  /** noStorage is set when this browser cannot hold a workspace in its storage (platform.js). */
  let noStorage = false;

  /** @param {string} kind @param {string} name */
  const folder = (kind, name) => (kind === 'handle' ? `the folder “${name}”` : 'browser storage');

  /** @returns {Where} */
  function compute() {
    const base = { kind: held.kind, name: held.name, connected: held.connected };
    // A connected channel is this tab holding the root: the relay gives it to the newest.
    if (channel === 'connected' && own) {
      return { holder: 'this-tab', kind: own.kind, name: own.name, connected: true, text: `Tools act on: ${own.kind === 'handle' ? folder(own.kind, own.name) + ' (this tab)' : "this tab's browser storage"}` };
    }
    if (held.kind === 'machine') {
      const off = held.connected ? '' : ' (not connected now)';
      return { ...base, holder: 'machine', text: `Tools act on: the machine “${held.name}”${off}` };
    }
    if (channel === 'replaced') {
      return { ...base, holder: 'other-tab', text: `Tools act on: another tab${held.kind ? ` (${folder(held.kind, held.name)})` : ''}` };
    }
    if (own && (channel === 'offline' || channel === 'connecting' || channel === 'refused')) {
      return { holder: 'offline', kind: own.kind, name: own.name, connected: false, text: 'Tools act on: nothing now (the relay cannot reach this tab)' };
    }
    return { ...base, holder: 'none', text: 'Tools act on: nothing yet (open a workspace)' };
  }

  function update() {
    const now = compute();
    el.where.textContent = now.text;
    el.where.dataset.where = now.holder;
    el.start.textContent = own ? (own.kind === 'handle' ? `the folder “${own.name}”` : `the browser storage of ${location.host}`)
      : noStorage ? 'not open: this browser has no browser storage (the note at the top says what to do)' : 'not open yet';
    const moved = !last || last.holder !== now.holder || last.name !== now.name;
    if (moved && last && last.holder === 'this-tab') {
      if (now.holder === 'machine') say(`The machine “${now.name}” took over: the assistant's tools now act on its folder. Press “Use this tab” to bring them back here.`);
      if (now.holder === 'other-tab') say('Another tab took over: the assistant\'s tools now act there. This tab takes the workspace back by itself when that tab closes; press “Use this tab” to bring them back now.');
    }
    if (moved && now.holder === 'other-tab' && (!last || (last.holder !== 'this-tab' && last.holder !== 'other-tab'))) {
      say('Another tab holds the workspace, so the assistant\'s tools act there. This tab takes over by itself when that tab closes; press “Use this tab” to take over now.');
    }
    if (moved && last && (last.holder === 'machine' || last.holder === 'other-tab') && now.holder === 'this-tab') {
      say(why ? `${why.charAt(0).toUpperCase()}${why.slice(1)}: this tab holds it now, and the assistant's tools act here.` : 'The assistant\'s tools act on this tab\'s workspace again.');
    }
    last = now;
    if (moved) emit('where', now);
  }

  listen('root', (info) => { own = info; update(); });
  listen('channel', ({ state, why: said }) => {
    channel = state;
    why = state === 'connected' ? said || '' : '';
    // The relay's root changes with the channel; ask rather than wait for the next event. Who
    // took over (another tab, a machine) is said once the relay has answered who holds it now.
    if (state === 'connected' || state === 'replaced') relay('/api/root').then(setHeld, () => {}).finally(update);
    if (state !== 'replaced') update();
  });
  /** @param {any} r */
  function setHeld(r) {
    if (!r || typeof r.kind !== 'string') return;
    held = { kind: r.kind, name: String(r.name || ''), connected: !!r.connected };
    update();
  }
  listen('relay:root', setHeld);
  listen('platform', ({ missing }) => { noStorage = missing.includes('opfs') || missing.includes('sync-access'); update(); });
  listen('relay:hello', (h) => { if (h.root) setHeld(h.root); });
  update();
  return Object.freeze({ where: () => compute() });
}
