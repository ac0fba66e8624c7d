// @ts-check
// The one client of the page's dedicated worker (worker.js, which runs the Go engine): it starts
// the worker, sends calls and matches each answer to its call, and hands every other message the
// worker posts to the listeners of its type. The shapes below are the protocol the engine's doc
// (internal/engine/doc.go) describes; a change there is a change here. The methods and their
// params are not written here: worker-methods.js is generated from the worker's own table.

/** @typedef {'opfs' | 'handle'} RootKind */
/** @typedef {{kind: RootKind, name: string, syncHandles: boolean}} RootInfo */
/** @typedef {{name: string, shown?: string, dir: boolean, size: number}} ListEntry */
/** @typedef {{dir: string, entries: ListEntry[]}} Listing */
/** @typedef {{path: string, size: number, text: string, binary: boolean, truncated: boolean, digest?: string}} FileView */
/**
 * StoreEntry is one app or page of the mini-app store (internal/shared/miniappstore.Entry).
 * @typedef {{appId: string, slug: string, title: string, fileName: string, source: string,
 *   kind: 'app' | 'page', storagePath: string, size: number, sandbox?: string}} StoreEntry
 */
/**
 * RegisteredTool is a mini-app tool the worker's registry took (miniapps.register).
 * @typedef {{appId: string, name: string, modelName: string, description: string, readOnly?: boolean,
 *   parameters: JSONSchema}} RegisteredTool
 */
/**
 * JSONSchema is a tool's parameter schema in the subset internal/shared/toolschema takes (only what the
 * page reads of it is spelled out).
 * @typedef {{type?: string, properties?: Record<string, JSONSchema>, required?: string[],
 *   enum?: unknown[], minimum?: number, maximum?: number, maxLength?: number}} JSONSchema
 */
/**
 * HistoryEntry is one change of the undo history (internal/shared/executor.HistoryEntry): who made it
 * ("person" is this page's file browser, "assistant" any call through the relay).
 * @typedef {{seq: number, time: string, action: 'write' | 'edit' | 'delete' | 'move' | 'mkdir' | 'rmdir', path: string, to?: string,
 *   by: 'person' | 'assistant', created: boolean, undone: boolean}} HistoryEntry
 */
/** @typedef {{entries: HistoryEntry[], undo: number, redo: number}} HistoryList */
/** @typedef {'keep-current' | 'restore-earlier' | 'keep-both'} Resolution */
/**
 * UndoDone is undo-last's observation.
 * @typedef {{undone: string, path: string, to?: string, by?: string, restored: boolean, removed: boolean, bytes: number,
 *   resolved?: Resolution, keptAs?: string, remaining: number, redo: number}} UndoDone
 */
/** @typedef {{redone: string, path: string, to?: string, by?: string, written: boolean, removed: boolean, bytes: number, remaining: number, redo: number}} RedoDone */
/** @typedef {{exists: boolean, folder?: boolean, size: number, text: string, binary: boolean, truncated: boolean}} Version */
/** @typedef {{inConflict: boolean, change: HistoryEntry, current: Version, earlier: Version, resolutions: Resolution[]}} Conflict */
/** @typedef {{callId: string, result: unknown} | {callId: string, refused: string, why: string}} CallAnswer */

/**
 * Methods maps each method of the worker to [its params, the value of its answer]: rendered from
 * the worker's method table (internal/engine's methodTable) into worker-methods.js.
 * @typedef {import('./worker-methods.js').Methods} Methods
 */
/** @typedef {keyof Methods} Method */

/**
 * Answer is the worker's answer to one call: a value, or a refusal with its rule id.
 * @template V
 * @typedef {{ok: true, value: V} | {ok: false, refused: string, why: string}} Answer
 */

/** @typedef {'connecting' | 'connected' | 'offline' | 'replaced' | 'refused'} ChannelState */

/**
 * Events maps each message type the worker posts on its own (not an answer) to its shape.
 * @typedef {{
 *   'ready': {type: 'ready', build: string},
 *   'failed': {type: 'failed', message: string},
 *   'platform': {type: 'platform', missing: string[]},
 *   'channel': {type: 'channel', state: ChannelState, why?: string, retryMs?: number},
 *   'history': {type: 'history'},
 *   'miniapp.call': {type: 'miniapp.call', callId: string, appId: string, tool: string, args?: unknown, onPort?: boolean},
 *   'miniapp.open': {type: 'miniapp.open', entry: StoreEntry, html: string, folder?: {path: string, size: number}[]},
 *   'miniapp.cancel': {type: 'miniapp.cancel', callId: string, expired: boolean, appId?: string, tool?: string, doc?: number},
 *   'miniapp.over_budget': {type: 'miniapp.over_budget', appId: string, doc: number, why: string, messages: number, bytes: number},
 *   'externalapp.call': {type: 'externalapp.call', callId: string, name: string, args: unknown},
 *   'externalapp.cancel': {type: 'externalapp.cancel', callId: string},
 * }} Events
 */
/** @typedef {keyof Events} EventType */

/**
 * RefusalError is what must throws: an Error that carries the refusal's rule id.
 */
export class RefusalError extends Error {
  /**
   * @param {string} rule
   * @param {string} why
   */
  constructor(rule, why) {
    super(why || rule);
    this.name = 'RefusalError';
    /** The refusal's rule id (a kebab-case name from shared/refusal). */
    this.rule = rule;
  }
}

/**
 * wrap is a call as it crosses to the worker: its JSON text, which Go reads in one crossing (a
 * string) rather than walking an object, and beside it, out of the text, the one value JSON cannot
 * carry: params.bytes (binary data) or params.handle / params.port (an object the browser
 * clones or transfers). A call with neither is the text alone.
 * @param {number} id
 * @param {string} method
 * @param {any} params
 * @returns {string | {call: string, bytes?: unknown, object?: unknown}}
 */
export function wrap(id, method, params) {
  if (!params || typeof params !== 'object' || !('bytes' in params || 'handle' in params || 'port' in params)) {
    return JSON.stringify({ type: 'call', id, method, params });
  }
  const { bytes, handle, port, ...rest } = params;
  /** @type {{call: string, bytes?: unknown, object?: unknown}} */
  const out = { call: JSON.stringify({ type: 'call', id, method, params: rest }) };
  if (bytes !== undefined) out.bytes = bytes;
  const object = handle !== undefined ? handle : port;
  if (object !== undefined) out.object = object;
  return out;
}

/**
 * unwrap reads what the worker posted: the engine posts its messages as JSON text (one crossing
 * out of Go, parsed here), with an answer's bytes beside the text ({json, bytes}: value.bytes);
 * worker.js posts plain objects before Go runs.
 * @param {any} data
 * @returns {any}
 */
export function unwrap(data) {
  try {
    if (typeof data === 'string') return JSON.parse(data);
    if (data && typeof data.json === 'string') {
      const msg = JSON.parse(data.json);
      if (msg && msg.value && typeof msg.value === 'object') msg.value.bytes = data.bytes;
      return msg;
    }
  } catch {
    // Not the engine's JSON: handed on as it came, so emit logs it as unexpected.
  }
  return data;
}

/**
 * WorkerClient is the page's side of the worker. Every call gets exactly one answer: the
 * worker's, or page-closed once the worker failed. Several listeners may take one event type;
 * a message of a type nobody listens to is logged.
 */
export class WorkerClient {
  /** @param {Worker} worker */
  constructor(worker) {
    this.worker = worker;
    /** @type {Map<number, (answer: Answer<any>) => void>} */
    this.pending = new Map();
    this.nextId = 1;
    /** @type {Map<string, Set<(msg: any) => void>>} */
    this.listeners = new Map();
    worker.onmessage = (event) => this.receive(unwrap(event.data));
    worker.onerror = (event) => {
      event.preventDefault();
      // An error the worker did not catch may leave the engine running: calls stay pending.
      this.emit({ type: 'failed', message: 'the engine failed: ' + (event.message || 'unknown error') });
    };
  }

  /**
   * receive takes one message from the worker.
   * @param {any} msg
   */
  receive(msg) {
    const type = msg && msg.type;
    if (type === 'result') {
      // The news the call made (the worker's notices of it, for display) come with its answer,
      // heard before the caller is: one message, one wake-up of this thread.
      if (Array.isArray(msg.news)) {
        for (const news of msg.news) this.emit(news);
        delete msg.news;
      }
      const settle = this.pending.get(msg.id);
      if (settle) {
        this.pending.delete(msg.id);
        settle(msg);
      }
      return;
    }
    if (type === 'failed') {
      for (const settle of this.pending.values()) settle({ ok: false, refused: 'page-closed', why: msg.message });
      this.pending.clear();
    }
    this.emit(msg);
  }

  /**
   * emit hands a message to the listeners of its type.
   * @param {any} msg
   */
  emit(msg) {
    const type = msg && msg.type;
    const fns = this.listeners.get(type);
    if (!fns || fns.size === 0) {
      console.warn('voicebox: unexpected message from the worker', msg);
      return;
    }
    for (const fn of [...fns]) fn(msg);
  }

  /**
   * on adds a listener for the worker's messages of one type and returns what removes it.
   * @template {EventType} T
   * @param {T} type
   * @param {(msg: Events[T]) => void} fn
   * @returns {() => void}
   */
  on(type, fn) {
    let fns = this.listeners.get(type);
    if (!fns) this.listeners.set(type, (fns = new Set()));
    fns.add(fn);
    return () => { fns.delete(fn); };
  }

  /**
   * call sends one call and resolves with the worker's answer; it never rejects.
   * @template {Method} M
   * @param {M} method
   * @param {Methods[M][0]} [params]
   * @param {Transferable[]} [transfer]
   * @returns {Promise<Answer<Methods[M][1]>>}
   */
  call(method, params, transfer) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.worker.postMessage(wrap(id, method, params), transfer || []);
    });
  }

  /**
   * must calls and returns the value, or throws a RefusalError carrying the refusal's rule and why.
   * @template {Method} M
   * @param {M} method
   * @param {Methods[M][0]} [params]
   * @param {Transferable[]} [transfer]
   * @returns {Promise<Methods[M][1]>}
   */
  async must(method, params, transfer) {
    const answer = await this.call(method, params, transfer);
    if (!answer.ok) throw new RefusalError(answer.refused, answer.why);
    return answer.value;
  }
}
