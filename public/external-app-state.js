// @ts-check
// An open external app's state without the DOM: its stats, what the tests read of it, the count
// of stray messages, the ignored messages' accounting, and the handshake's decisions (whether a
// message is an answer the page is owed, what a ui/identify answer means, whether a tools change
// is still honoured). Pure functions of a state object, so Node's test runner holds them without
// a browser (tools/web/test); external-apps.js keeps the frames and the cards.
import { answerOf, clamp, describe, LIMITS, refusal, timeoutRefusal } from './external-app-wire.js';

/** @typedef {import('./external-app-wire.js').Adapter} Adapter */
/** @typedef {import('./external-app-wire.js').RegistryEntry} RegistryEntry */
/** @typedef {import('./external-app-wire.js').AppTool} AppTool */
/** @typedef {import('./external-app-wire.js').Refusal} Refusal */
/** @typedef {import('./external-app-wire.js').ApprovalOutcome} ApprovalOutcome */
/** @typedef {Exclude<import('./external-app-wire.js').Init, {invalid: string}>} Init */
/** @typedef {import('./message-budget.js').MessageBudget} MessageBudget */

/** MAX_IGNORED_SAMPLES is how many ignored messages an app's card describes; the rest are counted. */
export const MAX_IGNORED_SAMPLES = 5;
/** MAX_STRAY_ORIGINS bounds the origins strays are counted by; the others count in the total only. */
export const MAX_STRAY_ORIGINS = 64;

/**
 * XApp is an open external app: its frame, the handshake with the document in it, and its stats.
 * @typedef {{
 *   id: string, entry: RegistryEntry, adapter: Adapter, documentId: string | null, live: boolean,
 *   caps: {tools?: boolean, context?: boolean, auth?: boolean},
 *   appInfo: {name: string, version: string} | null, initResult: object | null,
 *   toldContext: Record<string, unknown> | null,
 *   tools: AppTool[], selection: any, toolsChanged: number, initSinceLoad: boolean,
 *   pending: Pending, identifySeq: number,
 *   approvals: Map<number, {settle: (o: ApprovalOutcome) => void, tool: string, by: string, modelCallId: string}>,
 *   stats: ReturnType<typeof newStats>, state: () => ReturnType<typeof stateOf>,
 *   frame: HTMLIFrameElement, budget: MessageBudget,
 *   view: {section: HTMLElement, status: HTMLElement, approvals: HTMLElement, selection: HTMLElement,
 *     errors: HTMLElement, tools: HTMLElement, stopped: HTMLElement, stoppedText: HTMLElement, ignored: HTMLElement, pointBtn: HTMLButtonElement},
 * }} XApp
 */

/** newStats is a new start's stats, all zero. */
export function newStats() {
  return {
    loads: 0, handshakes: 0, repeats: 0, resets: /** @type {string[]} */ ([]), kept: 0, identifies: 0, toolsLists: 0,
    toolsChangedHonoured: 0, toolsChangedIgnored: 0,
    droppedTools: /** @type {{index: number, name: string, why: string}[]} */ ([]),
    // dropped counts the messages of the app's frame dropped: from another origin (the frame went
    // elsewhere; lastOrigin says where), or marked ours but not JSON-RPC 2.0 (protocol).
    dropped: { origin: 0, protocol: 0, lastOrigin: '' },
    // ignored counts every message of the app's frame the host did not take, by why, and keeps
    // the first MAX_IGNORED_SAMPLES (what it was, and why).
    ignored: { total: 0, byWhy: /** @type {Record<string, number>} */ ({}), samples: /** @type {{why: string, what: string}[]} */ ([]) },
    errors: /** @type {string[]} */ ([]), openChats: 0,
    // contextChanges counts the ui/notifications/host-context-changed the app was sent.
    contextChanges: 0,
    approvals: { approved: 0, denied: 0, timedOut: 0 },
    starts: 1, stopped: /** @type {{rule: string, why: string} | null} */ (null),
  };
}

/**
 * stateOf is what the tests read of an open app.
 * @param {XApp} app
 */
export function stateOf(app) {
  return {
    appId: app.id, live: app.live, documentId: app.documentId, caps: { ...app.caps },
    tools: app.tools.map((t) => ({ name: t.name, modelName: t.modelName, description: t.description, readOnly: t.readOnly })),
    selection: app.selection, approvalsPending: app.approvals.size, stats: structuredClone(app.stats),
    budget: { count: app.budget.count, bytes: app.budget.bytes },
  };
}


/**
 * keepLast appends item to list and keeps its last n items.
 * @template T
 * @param {T[]} list
 * @param {T} item
 */
export function keepLast(list, item, n = 100) {
  list.push(item);
  if (list.length > n) list.shift();
}

/**
 * Strays counts the messages from windows that are no open app's frame, by origin (at most
 * MAX_STRAY_ORIGINS of them; the others count in the total only).
 * @typedef {{total: number, byOrigin: Map<string, number>}} Strays
 */

/** @returns {Strays} */
export function newStrays() {
  return { total: 0, byOrigin: new Map() };
}

/**
 * countStray counts one stray message from origin.
 * @param {Strays} strays
 * @param {string} origin
 */
export function countStray(strays, origin) {
  strays.total++;
  const n = strays.byOrigin.get(origin);
  if (n !== undefined) strays.byOrigin.set(origin, n + 1);
  else if (strays.byOrigin.size < MAX_STRAY_ORIGINS) strays.byOrigin.set(origin, 1);
}

/**
 * noteIgnored counts one message of an app's frame the host did not take, by why (at most 16
 * whys), and keeps the first MAX_IGNORED_SAMPLES: a guest speaking something else is told apart
 * from a silent one.
 * @param {ReturnType<typeof newStats>} stats
 * @param {string} why
 * @param {unknown} msg
 */
export function noteIgnored(stats, why, msg) {
  const g = stats.ignored;
  g.total++;
  if (why in g.byWhy || Object.keys(g.byWhy).length < 16) g.byWhy[why] = (g.byWhy[why] || 0) + 1;
  if (g.samples.length < MAX_IGNORED_SAMPLES) g.samples.push({ why, what: describe(msg) });
}

/**
 * owedAnswer reports whether a message (data, from origin) is app's answer to a request the page
 * is waiting on. Each request earns its one answer free of the budget (the request is settled by
 * it, so a second answer is charged), as a mini-app's answers to its calls are: an app answering
 * as fast as it is asked is never stopped for it.
 * @param {{entry: {origin: string}, pending: {has: (id: unknown) => boolean}}} app
 * @param {string} origin
 * @param {any} data
 */
export function owedAnswer(app, origin, data) {
  return origin === app.entry.origin && data !== null && typeof data === 'object' &&
    typeof data.method !== 'string' && app.pending.has(data.id);
}

/**
 * identified reads the frame's answer r to ui/identify: null when it holds the document the
 * handshake was made with (the handshake is kept), or why the handshake is reset.
 * @param {{live: boolean, documentId: string | null}} app
 * @param {any} r
 * @returns {string | null}
 */
export function identified(app, r) {
  const id = r && typeof r.documentId === 'string' ? r.documentId : null;
  if (id !== null && id === app.documentId && app.live) return null;
  return id === null ? 'the frame answered ui/identify without a document id' : 'the frame holds a document that has not begun a handshake';
}

/**
 * takeToolsChange counts an app's tools-changed notice and reports whether it is honoured: at
 * most LIMITS.toolsChanged per handshake, the rest counted as ignored.
 * @param {{toolsChanged: number, stats: ReturnType<typeof newStats>}} app
 */
export function takeToolsChange(app) {
  if (app.toolsChanged >= LIMITS.toolsChanged) {
    app.stats.toolsChangedIgnored++;
    return false;
  }
  app.toolsChanged++;
  app.stats.toolsChangedHonoured++;
  return true;
}

/**
 * Pending is the requests the page sent an app and is waiting on, numbered from 1: each is
 * settled once, by the app's answer, by its deadline (timeoutRefusal), or by drop.
 */
export class Pending {
  constructor() {
    /** @type {Map<unknown, {method: string, resolve: (v: any) => void, reject: (r: Refusal) => void, timer: ReturnType<typeof setTimeout>}>} */
    this.waiting = new Map();
    this.nextId = 1;
  }

  /** size is how many requests wait. */
  get size() { return this.waiting.size; }

  /**
   * has reports whether a request numbered id waits.
   * @param {unknown} id
   */
  has(id) { return this.waiting.has(id); }

  /**
   * open numbers a request for method with a deadline of ms: id is what the request carries,
   * answered settles with the app's result, or rejects with a refusal.
   * @param {string} method
   * @param {number} ms
   * @returns {{id: number, answered: Promise<any>}}
   */
  open(method, ms) {
    const id = this.nextId++;
    /** @type {Promise<any>} */
    const answered = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(timeoutRefusal(method, ms));
      }, ms);
      this.waiting.set(id, { method, resolve, reject, timer });
    });
    return { id, answered };
  }

  /**
   * answer settles the request msg (a JSON-RPC answer) answers, and reports whether one waited.
   * @param {any} msg
   */
  answer(msg) {
    const p = this.waiting.get(msg.id);
    if (!p) return false;
    this.waiting.delete(msg.id);
    clearTimeout(p.timer);
    const a = answerOf(p.method, msg);
    if (a.ok) p.resolve(a.value);
    else p.reject(a);
    return true;
  }

  /**
   * drop refuses every request waiting (external-app-navigated, saying why) but those keep
   * takes, which their deadline settles.
   * @param {string} why
   * @param {(p: {method: string}) => boolean} keep
   */
  drop(why, keep) {
    for (const [id, p] of this.waiting) {
      if (keep(p)) continue;
      clearTimeout(p.timer);
      this.waiting.delete(id);
      p.reject(refusal('external-app-navigated', `${why}; the request ${p.method} was not answered`));
    }
  }
}

// ---- the handshake: which document in the frame the host talks to ----

/**
 * Handshake is the part of an open app the handshake changes: whether a document of its frame
 * made one (live), which (documentId: null for a guest too old to have one), what it said it can
 * do, and the answer it was given.
 * @typedef {{live: boolean, documentId: string | null, initResult: object | null, toldContext?: XApp['toldContext'], caps: XApp['caps'],
 *   appInfo: XApp['appInfo'], tools: AppTool[], toolsChanged: number, selection: any, initSinceLoad: boolean,
 *   stats: ReturnType<typeof newStats>}} Handshake
 */

/**
 * repeatsHandshake reports whether ui/initialize (init) is the same document asking again (a
 * React effect run twice): it is answered as before, and nothing is torn down.
 * @param {Handshake} app
 * @param {Init} init
 */
export function repeatsHandshake(app, init) {
  return init.documentId !== null && init.documentId === app.documentId && app.live && app.initResult !== null;
}

/**
 * beginHandshake makes init's document the app's (after forgetHandshake) and returns the
 * handshake's generation: a later one supersedes it.
 * @param {Handshake} app
 * @param {Init} init
 */
export function beginHandshake(app, init) {
  app.caps = { ...init.caps };
  app.appInfo = { name: clamp(init.appInfo.name, LIMITS.appName), version: clamp(init.appInfo.version, 40) };
  app.documentId = init.documentId;
  app.live = true;
  app.initSinceLoad = true;
  app.stats.handshakes++;
  return app.stats.handshakes;
}

/**
 * forgetHandshake forgets the document: its tools, its capabilities, its selection and its
 * answer; it reports whether the app was live.
 * @param {Handshake} app
 */
export function forgetHandshake(app) {
  const wasLive = app.live;
  app.live = false;
  app.documentId = null;
  app.initResult = null;
  app.toldContext = null;
  app.caps = {};
  app.tools = [];
  app.toolsChanged = 0;
  app.selection = null;
  return wasLive;
}

/**
 * frameLoaded counts a load of the app's frame and says what it means: identify (ask the
 * document which it is), reset (the handshake belongs to the document that just left), or keep.
 * A guest too old to have a document id cannot be asked: a handshake since the last load belongs
 * to this document, one from before to the document that left.
 * @param {Handshake} app
 * @returns {'identify' | 'reset' | 'keep'}
 */
export function frameLoaded(app) {
  app.stats.loads++;
  const sinceLoad = app.initSinceLoad;
  app.initSinceLoad = false;
  if (app.live && app.documentId === null) return sinceLoad ? 'keep' : 'reset';
  return 'identify';
}
