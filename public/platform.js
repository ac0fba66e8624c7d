// @ts-check
// What this browser lacks of the platform the page needs, said in words with what the person can
// do, instead of a workspace that never opens. The page probes what it uses itself (browser
// storage, the folder picker, AudioWorklet) before anything needs it; the worker probes what only
// a worker has (sync access handles) and posts {type: 'platform', missing: [...]} before the engine
// starts; the mini-apps panel reports a per-app host (app-<hex>.localhost) that does not load.
// One banner lists them all, and every panel that depends on one asks lacks(id).
import { byId, node } from './dom.js';
import { emit, listen } from './events.js';

/**
 * Feature is one platform feature the page may lack: what it is, what its absence stops, and
 * what the person can do about it.
 * @typedef {{id: FeatureId, what: string, effect: string, remedy: string}} Feature
 */
/** @typedef {'opfs' | 'sync-access' | 'folder-picker' | 'audio-worklet' | 'app-hosts'} FeatureId */

/** OTHER_BROWSER is what every remedy that needs another browser says. */
const OTHER_BROWSER = 'open this page in a current Chromium, Edge or Firefox';
/** PAIRED_MACHINE is the way out that needs no browser storage at all. */
const PAIRED_MACHINE = 'or run `relay env` on a computer paired with this relay (`relay pair NAME`), so the assistant works on that computer\'s folder';

/** @type {Record<FeatureId, Feature>} */
export const FEATURES = Object.freeze({
  'opfs': {
    id: 'opfs',
    what: 'browser storage (the origin private file system)',
    effect: 'the workspace cannot live in this browser',
    remedy: `${OTHER_BROWSER}, choose a folder with Workspace at the top if this browser offers it, ${PAIRED_MACHINE}`,
  },
  'sync-access': {
    id: 'sync-access',
    what: 'file access from the page\'s worker (sync access handles)',
    effect: 'the engine cannot read or write browser storage',
    remedy: `${OTHER_BROWSER}, ${PAIRED_MACHINE}`,
  },
  'folder-picker': {
    id: 'folder-picker',
    what: 'folder picker (showDirectoryPicker)',
    effect: '“Choose a folder…” is not offered: the workspace is in browser storage',
    remedy: `to work on a real folder, open this page in Chromium or Edge, ${PAIRED_MACHINE}`,
  },
  'audio-worklet': {
    id: 'audio-worklet',
    what: 'audio processing for the microphone (AudioWorklet)',
    effect: 'Talk cannot start',
    remedy: 'type commands in the Assistant panel instead, or open this page in a current Chromium, Edge, Firefox or Safari to talk',
  },
  'app-hosts': {
    id: 'app-hosts',
    what: 'per-app hosts (app-<hex>.localhost do not load here)',
    effect: 'mini-apps run on the shared app host, so one app is less isolated from another',
    remedy: 'open this page in a browser that resolves *.localhost (Chromium, Edge, Firefox), or give the relay an --origin whose certificate covers a wildcard of app hosts',
  },
});

/**
 * probePage returns the features this page's window lacks. Each probe looks for the API the page
 * calls, so a browser that removed or never had it is told so.
 * @returns {FeatureId[]}
 */
export function probePage() {
  /** @type {FeatureId[]} */
  const missing = [];
  const storage = /** @type {any} */ (navigator).storage;
  if (!storage || typeof storage.getDirectory !== 'function') missing.push('opfs');
  if (typeof (/** @type {any} */ (window)).showDirectoryPicker !== 'function') missing.push('folder-picker');
  const ctx = /** @type {any} */ (window).AudioContext;
  if (typeof (/** @type {any} */ (window)).AudioWorkletNode !== 'function' || typeof ctx !== 'function' || !('audioWorklet' in ctx.prototype)) missing.push('audio-worklet');
  return missing;
}

/**
 * startPlatform shows what this browser lacks, from the page's own probe and from what the
 * worker and the panels report.
 * @param {{on: (type: 'platform', fn: (msg: {missing: string[]}) => void) => unknown}} engine
 */
export function startPlatform(engine) {
  const el = { banner: byId('platform'), list: byId('platform-list') };
  /** @type {Set<FeatureId>} */
  const missing = new Set(probePage());

  function show() {
    el.list.replaceChildren(...[...missing].map((id) => {
      const f = FEATURES[id];
      return node('li', '', `This browser has no ${f.what}, so ${f.effect}. What you can do: ${f.remedy}.`);
    }));
    el.banner.hidden = missing.size === 0;
    emit('platform', { missing: [...missing] });
  }

  /** @param {string} id */
  function report(id) {
    if (!(id in FEATURES) || missing.has(/** @type {FeatureId} */ (id))) return;
    missing.add(/** @type {FeatureId} */ (id));
    show();
  }

  engine.on('platform', (msg) => { for (const id of msg.missing || []) report(id); });
  listen('platform-missing', report);
  show();
  return Object.freeze({
    /** lacks reports whether this browser lacks the feature id. @param {FeatureId} id */
    lacks: (id) => missing.has(id),
    /** report records a feature found missing while the page runs. @param {FeatureId} id */
    report,
  });
}
