// @ts-check
// The mini-app SDK. The bridge puts this script first in every mini-app, right after its
// <!doctype html>, where it runs in the inner frame: sandbox="allow-scripts", an opaque origin,
// no network. It is the app's WebMCP: document.modelContext as the WebMCP draft defines it
// (webmachinelearning.github.io/webmcp), with the spellings apps already use:
//
//   document.modelContext.registerTool({name, title, description, inputSchema, annotations, execute}, {signal})
//     -> a promise, settled once the host took or refused the tool; aborting signal unregisters it
//   document.modelContext.getTools(), .executeTool(tool, input, {signal})   for the app's own agents
//   toolchange, toolactivated, toolcancel (and their on* handlers)
//   navigator.modelContext                      the same object (the draft's deprecated alias)
//   window.webMcp.registerTool({name, description, parameters, execute}); window.webMcp.ready()
//   window.voicebox                             the same as webMcp (the original Voicebox's apps)
//
// All of them reach one registry, and every declaration goes to the host as the app wrote it:
// parameters and inputSchema are one schema under two names, checked by the worker's registry,
// which also checks every call's arguments before the tool runs. Through document.modelContext
// (and navigator.modelContext) the schema is the WebMCP draft's subset (dialect "webmcp-draft":
// pattern and prefixItems; a pattern must compile in this page's RegExp and in the host's own
// linear-time matcher, RE2's syntax without Unicode classes, which matches model calls); through window.webMcp and
// window.voicebox it is the original Voicebox's. executeTool checks a draft tool's input here,
// against the schema the host took, so the tool starts in the caller's task as the draft runs it,
// and a webMcp tool's input through the host. Where the draft cannot hold here it says so: every
// sandboxed document has an opaque origin, so executeTool runs this document's own tools instead
// of refusing them (NotSupportedError), and an invalid argument is a DataError whose message is
// JSON {path, reason, schemaPath} (the draft's) with the host's refusal {refused, why}.
//
// Coexistence. When the browser, or a library the app loads (a WebMCP polyfill, @mcp-b/global),
// installs its own document.modelContext, before this script or after it, the SDK never replaces
// it: it reads that registry's tools back through its getTools() and follows its toolchange, and
// offers them to the host, calling them through its executeTool(). Its own object carries the
// Symbol.for('voicebox.modelContext') brand, so the two are never confused. The host has given
// this frame the "tools" feature, so document.permissionsPolicy says so (libraries check it).
//
// The SDK talks to the bridge only over the MessagePort the bridge hands it: it says
// mini_app_ready to its parent and takes ports only from its parent. With it comes a second port,
// whose other end the page's worker holds: the worker's calls come on it and are answered on it
// (the bridge is off a call's path), and nothing else is said there. A refused declaration is
// reported here too (webMcp.refusals, a "webmcp-refused" event on window, a console warning).
'use strict';

(() => {
  if (window.webMcp && window.webMcp.sdk === 'voicebox') return;
  const BRAND = Symbol.for('voicebox.modelContext');
  const parentWindow = window.parent;
  // The host's name rule, given by the bridge on this script's element (rules.js): the draft's.
  const namePattern = readPattern(document.currentScript?.dataset.toolName);
  // The host's bound on a call's arguments (rules.js MAX_ARGUMENT_BYTES), which executeTool's
  // input checked here is held to as the host holds a model's.
  const maxArgumentBytes = Number(document.currentScript?.dataset.maxArgumentBytes) || 65536;

  /** @param {string | undefined} source */
  function readPattern(source) {
    try { return source ? new RegExp(source) : null; } catch { return null; }
  }

  // ---- storage: an opaque origin has none, so apps get a document-local stand-in ----

  class MemoryStorage {
    /** @type {Map<string, string>} */
    #items = new Map();
    get length() { return this.#items.size; }
    /** @param {number} i */
    key(i) { return [...this.#items.keys()][i] ?? null; }
    /** @param {unknown} k */
    getItem(k) { return this.#items.get(String(k)) ?? null; }
    /**
     * @param {unknown} k
     * @param {unknown} v
     */
    setItem(k, v) { this.#items.set(String(k), String(v)); }
    /** @param {unknown} k */
    removeItem(k) { this.#items.delete(String(k)); }
    clear() { this.#items.clear(); }
  }
  for (const name of /** @type {const} */ (['localStorage', 'sessionStorage'])) {
    let usable = false;
    try { usable = !!window[name]; } catch { usable = false; }
    if (!usable) {
      try { Object.defineProperty(window, name, { value: new MemoryStorage(), configurable: true }); } catch { /* left as it is */ }
    }
  }

  // ---- the port ----

  /** @type {MessagePort | null} */
  let port = null;
  /** @type {object[]} messages said before the port arrived */
  const outbox = [];

  /** @param {object} msg */
  function say(msg) {
    if (port) port.postMessage(msg);
    else outbox.push(msg);
  }

  // ---- the registry ----

  /**
   * Entry is a tool in the registry. source is 'ours' for a tool registered through one of the
   * SDK's spellings, 'mirror' for one read back from another model context (from).
   * draft is whether the tool came through document.modelContext (or another model context), so
   * its schema is the WebMCP draft's subset, which executeTool checks here (checkDraft).
   * @typedef {{name: string, title?: string, description: string, schema?: string,
   *   annotations?: Record<string, boolean>, execute: Function, source: 'ours' | 'mirror', from?: object,
   *   draft: boolean, registered: boolean, settle: (error?: unknown) => void}} Entry
   */
  /** @type {Map<string, Entry>} name -> tool */
  const tools = new Map();
  /** @type {{name: string, refused: string, why: string}[]} */
  const refusals = [];
  // MAX_REFUSALS_KEPT bounds webMcp.refusals: the latest are kept.
  const MAX_REFUSALS_KEPT = 64;
  /** @type {Map<unknown, {controller: AbortController, name: string}>} host call id -> the run */
  const running = new Map();
  /** @type {Map<number, (answer: any) => void>} check id -> waiting executeTool */
  const checks = new Map();
  let nextCheck = 1;

  /**
   * @param {string} name
   * @param {string} message
   */
  const domError = (name, message) => new DOMException(message, name);

  /**
   * refusedError is what a registration's promise rejects with when the host refused the tool:
   * a TypeError for a schema it does not take (as the draft's tests expect), else a DOMException;
   * either carries {refused, why}.
   * @param {string} refused
   * @param {string} why
   */
  function refusedError(refused, why) {
    const message = `${refused}: ${why}`;
    const err = refused === 'invalid-tool-parameters' ? new TypeError(message)
      : domError(refused === 'too-many-tools' || refused === 'body-too-large' ? 'QuotaExceededError' : 'InvalidStateError', message);
    Object.defineProperties(err, { refused: { value: refused }, why: { value: why } });
    return err;
  }

  /**
   * tagged marks err with the refusal it stands for, so that the original's spellings
   * (webMcpRegister) can record it instead of throwing; the draft's path throws it as it is.
   * @template T
   * @param {T} err
   * @param {string} refused
   * @returns {T}
   */
  function tagged(err, refused) {
    if (err !== null && typeof err === 'object' && !('refused' in err)) {
      Object.defineProperties(err, { refused: { value: refused }, why: { value: String(/** @type {any} */ (err).message) } });
    }
    return err;
  }

  /**
   * serialize is the draft's "serialize a JavaScript value to a JSON string": a value JSON cannot
   * say is a TypeError; what JSON.stringify throws is thrown.
   * @param {unknown} value
   * @param {string} what
   */
  function serialize(value, what) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) throw new TypeError(`${what} must be an object`);
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`${what} cannot be written as JSON`);
    return text;
  }

  /** @param {unknown} origin */
  function trustworthy(origin) {
    let u;
    try { u = new URL(String(origin)); } catch { return false; }
    const h = u.hostname;
    return u.protocol === 'https:' || u.protocol === 'wss:' || h === 'localhost' || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '[::1]';
  }

  /**
   * @param {unknown} list
   * @param {string} what
   */
  function checkOrigins(list, what) {
    if (list === undefined) return;
    if (list === null || typeof list !== 'object' || !(Symbol.iterator in list)) throw new TypeError(`${what} must be a list of origins`);
    for (const o of /** @type {Iterable<unknown>} */ (list)) {
      if (!trustworthy(o)) throw domError('SecurityError', `${what}: ${String(o).slice(0, 80)} is not a potentially trustworthy origin`);
    }
  }

  /**
   * register takes one tool, converting and checking it as the draft's registerTool does (a
   * TypeError for a dictionary out of shape, InvalidStateError for a taken or invalid name or an
   * empty description, the serializer's error for a schema JSON cannot say, the signal's reason
   * for an aborted signal, SecurityError for an untrustworthy exposedTo origin), then sends it to
   * the host. It throws those errors; the promise it returns settles with the host's answer.
   * @param {any} tool
   * @param {any} options
   * @param {'ours' | 'mirror'} source
   * @param {boolean} draft the WebMCP draft's schema subset (document.modelContext), not the original's
   * @param {object} [from]
   * @returns {Promise<void>}
   */
  function register(tool, options, source, draft, from) {
    if (tool === undefined || tool === null) tool = {};
    if (typeof tool !== 'object' && typeof tool !== 'function') throw new TypeError('registerTool needs a tool object');
    if (tool.name === undefined) throw new TypeError('registerTool: the tool needs a name');
    if (tool.description === undefined) throw tagged(new TypeError('registerTool: the tool needs a description'), 'invalid-tool-description');
    const name = String(tool.name);
    const description = String(tool.description);
    const execute = tool.execute;
    if (typeof execute !== 'function') throw new TypeError(`registerTool: tool ${name.slice(0, 80)} needs an execute function`);
    /** @type {Record<string, boolean> | undefined} */
    let annotations;
    if (tool.annotations !== undefined && tool.annotations !== null) {
      if (typeof tool.annotations !== 'object') throw tagged(new TypeError('registerTool: annotations must be an object'), 'invalid-tool-declaration');
      annotations = {};
      for (const k of ['readOnlyHint', 'untrustedContentHint', 'consequentialHint', 'debugging']) annotations[k] = !!tool.annotations[k];
    }
    const title = tool.title === undefined ? undefined : String(tool.title);
    if (options === undefined || options === null) options = {};
    if (typeof options !== 'object') throw new TypeError('registerTool: options must be an object');
    const signal = options.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('registerTool: options.signal must be an AbortSignal');

    if (tools.has(name)) throw tagged(domError('InvalidStateError', `a tool named ${name.slice(0, 80)} is registered already`), 'invalid-tool-name');
    if (name === '' || (namePattern && !namePattern.test(name))) {
      throw tagged(domError('InvalidStateError', `tool name ${JSON.stringify(name.slice(0, 80))} must be 1 to 128 of A-Z, a-z, 0-9, _, - and .`), 'invalid-tool-name');
    }
    if (description === '') throw tagged(domError('InvalidStateError', `tool ${name.slice(0, 80)} needs a description that is not empty`), 'invalid-tool-description');
    /** @type {Record<string, unknown>} what the host is sent: the declaration as the app wrote it */
    const decl = { name, description };
    let schema;
    for (const key of /** @type {const} */ (['inputSchema', 'parameters', 'outputSchema'])) {
      if (tool[key] === undefined) continue;
      let text;
      try { text = serialize(tool[key], key); } catch (err) { throw tagged(err, 'invalid-tool-parameters'); }
      decl[key] = JSON.parse(text);
      if (key !== 'outputSchema') schema = text;
    }
    if (draft && schema !== undefined) checkPatterns(JSON.parse(schema));
    if (signal && signal.aborted) throw signal.reason;
    checkOrigins(options.exposedTo, 'exposedTo');
    if (title !== undefined) decl.title = title;
    if (annotations) decl.annotations = annotations;
    if (draft) decl.dialect = 'webmcp-draft';

    /** @type {Entry} */
    const entry = { name, title, description, schema, annotations, execute, source, from, draft, registered: false, settle: () => {} };
    const settled = new Promise((resolve, reject) => {
      entry.settle = (error) => {
        entry.settle = () => {};
        if (error === undefined) resolve(undefined);
        else reject(error);
      };
    });
    tools.set(name, entry);
    if (signal) {
      signal.addEventListener('abort', () => {
        if (tools.get(name) === entry) unregister(name);
        entry.settle(signal.reason);
      }, { once: true });
    }
    say({ type: 'register_tool', tool: decl });
    changed();
    return /** @type {Promise<void>} */ (settled);
  }

  /** @param {unknown} name */
  function unregister(name) {
    const key = String(name);
    if (!tools.delete(key)) return;
    say({ type: 'unregister_tool', name: key });
    changed();
  }

  let changeQueued = false;
  // changed fires toolchange once for the changes of one task, as the draft queues it.
  function changed() {
    if (changeQueued) return;
    changeQueued = true;
    setTimeout(() => {
      changeQueued = false;
      ours.dispatchEvent(new Event('toolchange'));
    }, 0);
  }

  // ---- the events ----

  // ToolActivatedEvent and ToolCancelEvent are the draft's two event interfaces, each an Event
  // with the tool's name. They are put on window where the browser has none.
  /** @param {string} label */
  function toolEventClass(label) {
    const cls = class extends Event {
      #toolName;
      /**
       * @param {string} type
       * @param {EventInit & {toolName?: string}} [init]
       */
      constructor(type, init = {}) {
        super(type, init);
        this.#toolName = String(init.toolName ?? '');
      }
      get toolName() { return this.#toolName; }
    };
    Object.defineProperty(cls, 'name', { value: label });
    return cls;
  }
  const ToolActivatedEvent = toolEventClass('ToolActivatedEvent');
  const ToolCancelEvent = toolEventClass('ToolCancelEvent');
  for (const [name, value] of /** @type {const} */ ([['ToolActivatedEvent', ToolActivatedEvent], ['ToolCancelEvent', ToolCancelEvent]])) {
    if (!(name in window)) Object.defineProperty(window, name, { value, configurable: true, writable: true });
  }

  /**
   * fire dispatches toolactivated or toolcancel at the model context and at the window, as
   * browsers do.
   * @param {'toolactivated' | 'toolcancel'} type
   * @param {string} toolName
   */
  function fire(type, toolName) {
    const Kind = type === 'toolactivated' ? ToolActivatedEvent : ToolCancelEvent;
    ours.dispatchEvent(new Kind(type, { toolName }));
    window.dispatchEvent(new Kind(type, { toolName }));
  }

  // ---- running a tool ----

  /**
   * runTool starts entry with args (already checked) and returns a promise of what it returns;
   * it rejects with what the tool threw. toolactivated fires once the tool has started, as the
   * draft orders it; aborting controller (the host cancelled the call, or executeTool's signal)
   * aborts the tool's signal.
   * @param {Entry} entry
   * @param {unknown} args
   * @param {AbortController} controller
   * @returns {Promise<unknown>}
   */
  function runTool(entry, args, controller) {
    const options = Object.freeze({
      signal: controller.signal,
      requestUserInteraction: async (/** @type {() => unknown} */ callback) => callback(),
    });
    let value;
    try {
      value = entry.execute(args ?? {}, options);
    } catch (err) {
      value = Promise.reject(err);
    }
    fire('toolactivated', entry.name);
    return Promise.resolve(value);
  }

  /**
   * run runs a call and answers it where it came from: the bridge's port, or the worker's.
   * @param {{callId: unknown, name: string, args: unknown}} call
   * @param {(msg: object) => void} answer
   */
  async function run({ callId, name, args }, answer) {
    watch();
    const entry = tools.get(name);
    if (!entry) {
      answer({ type: 'tool_result', callId, ok: false, error: `this app has no tool named ${name}` });
      return;
    }
    const controller = new AbortController();
    running.set(callId, { controller, name });
    try {
      const value = await runTool(entry, args, controller);
      const text = value === undefined ? 'null' : JSON.stringify(value);
      const result = typeof text === 'string' ? text : 'null';
      if (running.delete(callId)) answer({ type: 'tool_result', callId, ok: true, result });
    } catch (err) {
      if (running.delete(callId)) answer({ type: 'tool_result', callId, ok: false, error: String((err instanceof Error && err.message) || err) });
    }
  }

  /** @param {unknown} callId */
  function cancel(callId) {
    const r = running.get(callId);
    if (!r) return;
    running.delete(callId);
    r.controller.abort(domError('AbortError', 'the host stopped waiting for this call'));
    fire('toolcancel', r.name);
  }

  /**
   * check asks the host to validate args for the tool name, as a call's arguments are.
   * @param {string} name
   * @param {unknown} args
   * @returns {Promise<{ok: true, args: unknown} | {ok: false, refused: string, why: string}>}
   */
  function check(name, args) {
    const checkId = nextCheck++;
    return new Promise((resolve) => {
      checks.set(checkId, resolve);
      say({ type: 'validate_args', checkId, name, args });
    });
  }

  // ---- the model context ----

  const secret = Symbol('voicebox.modelContext.construct');
  /** @type {Map<string, EventListener | null>} event type -> its on* handler */
  const handlers = new Map();

  class ModelContext extends EventTarget {
    /** @param {symbol} key */
    constructor(key) {
      if (key !== secret) throw new TypeError('Illegal constructor');
      super();
    }

    /**
     * registerTool registers a tool; see the draft and register above.
     * @param {any} tool
     * @param {any} [options]
     * @returns {Promise<void>}
     */
    registerTool(tool, options) {
      try {
        watch();
        return register(tool, options, 'ours', true);
      } catch (err) {
        return Promise.reject(err);
      }
    }

    /**
     * getTools lists the tools registered here, sorted by name, as RegisteredTool dictionaries.
     * @param {any} [options]
     */
    getTools(options) {
      try {
        watch();
        if (options !== undefined && options !== null && typeof options !== 'object') throw new TypeError('getTools: options must be an object');
        checkOrigins(options && options.fromOrigins, 'fromOrigins');
      } catch (err) {
        return Promise.reject(err);
      }
      const list = [...tools.values()].filter((e) => e.source === 'ours').map((e) => ({
        name: e.name,
        title: e.title ?? '',
        description: e.description,
        ...(e.schema !== undefined ? { inputSchema: JSON.parse(e.schema) } : {}),
        window,
        origin: self.origin,
        ...(e.annotations ? { annotations: { ...e.annotations } } : {}),
      })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return new Promise((resolve) => setTimeout(() => resolve(list), 0));
    }

    /**
     * executeTool runs one of this document's tools for an agent in the app, its input checked
     * first (see execute). It resolves with a string result as it is, any other as JSON text.
     * @param {any} tool
     * @param {unknown} [input]
     * @param {any} [options]
     * @returns {Promise<string | null>}
     */
    executeTool(tool, input, options) {
      return execute(tool, input, options);
    }

    /**
     * unregisterTool removes a tool by name: the API Chromium shipped before the draft moved to
     * registerTool's signal, kept for the apps written against it.
     * @param {unknown} name
     */
    unregisterTool(name) { unregister(name); }

    get ontoolchange() { return handlers.get('toolchange') ?? null; }
    set ontoolchange(fn) { setHandler('toolchange', fn); }
    get ontoolactivated() { return handlers.get('toolactivated') ?? null; }
    set ontoolactivated(fn) { setHandler('toolactivated', fn); }
    get ontoolcancel() { return handlers.get('toolcancel') ?? null; }
    set ontoolcancel(fn) { setHandler('toolcancel', fn); }
  }
  Object.defineProperty(ModelContext.prototype, Symbol.toStringTag, { value: 'ModelContext', configurable: true });

  /**
   * @param {string} type
   * @param {unknown} fn
   */
  function setHandler(type, fn) {
    const old = handlers.get(type);
    if (old) EventTarget.prototype.removeEventListener.call(ours, type, old);
    const next = typeof fn === 'function' ? /** @type {EventListener} */ (fn) : null;
    handlers.set(type, next);
    if (next) EventTarget.prototype.addEventListener.call(ours, type, next);
  }

  /**
   * execute is executeTool: the draft's argument conversions (a TypeError for input that is not
   * an object, UnknownError for a string that is not JSON or a tool this document does not have),
   * then the input check, then the tool. A tool of document.modelContext is checked here against
   * its schema (checkDraft: the draft's subset, pattern by this page's RegExp) and starts in this
   * task, as the draft runs it; one of window.webMcp is checked by the host's registry. A string
   * result resolves as it is, any other as JSON text. Aborting signal rejects with its reason at
   * once; the tool's own signal is aborted (AbortError) and toolcancel fired in the next task.
   * @param {any} tool
   * @param {unknown} input
   * @param {any} options
   * @returns {Promise<string | null>}
   */
  function execute(tool, input, options) {
    /** @type {Entry} */
    let entry;
    /** @type {AbortSignal | undefined} */
    let signal;
    let args = input;
    try {
      watch();
      if (tool === null || typeof tool !== 'object') throw new TypeError('executeTool needs a RegisteredTool');
      for (const key of ['name', 'description', 'window', 'origin']) {
        if (!(key in tool)) throw new TypeError(`executeTool: the RegisteredTool has no ${key}`);
      }
      if (options !== undefined && options !== null && typeof options !== 'object') throw new TypeError('executeTool: options must be an object');
      signal = options ? options.signal : undefined;
      if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('executeTool: options.signal must be an AbortSignal');
      if (signal && signal.aborted) throw signal.reason;
      if (args === undefined) args = {};
      else if (typeof args === 'string') {
        try { args = JSON.parse(args); } catch { throw domError('UnknownError', 'executeTool: the input is not JSON'); }
      }
      if (args === null || typeof args !== 'object') throw new TypeError('executeTool: the input must be an object');
      args = JSON.parse(serialize(args, 'the input'));
      const found = tools.get(String(tool.name));
      if (tool.window !== window || !found || found.source !== 'ours') throw domError('UnknownError', `executeTool: this document has no tool named ${String(tool.name).slice(0, 80)}`);
      entry = found;
    } catch (err) {
      return Promise.reject(err);
    }
    if (entry.draft) {
      const size = new TextEncoder().encode(JSON.stringify(args)).length;
      if (size > maxArgumentBytes) return Promise.reject(dataError('invalid-argument-bounds', `the input is ${size} bytes, over the bound of ${maxArgumentBytes}`, { path: '', reason: 'maxBytes', schemaPath: '' }));
      const failure = entry.schema === undefined ? null : checkDraft(JSON.parse(entry.schema), args, '');
      if (failure) return Promise.reject(dataError(failure.refused, failure.why, failure));
      return start(entry, args, signal);
    }
    return check(entry.name, args).then((checked) => {
      if (!checked.ok) {
        throw checked.refused === 'unknown-tool' ? Object.defineProperties(domError('UnknownError', checked.why), { refused: { value: checked.refused }, why: { value: checked.why } })
          : dataError(checked.refused, checked.why, null);
      }
      if (signal && signal.aborted) throw signal.reason;
      return start(entry, checked.args, signal);
    });
  }

  /**
   * dataError is executeTool's DataError: its message is JSON {path, reason, schemaPath} (the
   * draft's: the JSON pointer of the failing input, the keyword, its pointer in the schema) with
   * the host's refusal {refused, why}, which it also carries as properties.
   * @param {string} refused
   * @param {string} why
   * @param {{path: string, reason: string, schemaPath: string} | null} at
   */
  function dataError(refused, why, at) {
    const err = domError('DataError', JSON.stringify({ ...(at ? { path: at.path, reason: at.reason, schemaPath: at.schemaPath } : {}), refused, why }));
    Object.defineProperties(err, { refused: { value: refused }, why: { value: why } });
    return err;
  }

  /**
   * start runs a checked call for executeTool; see execute.
   * @param {Entry} entry
   * @param {unknown} args
   * @param {AbortSignal | undefined} signal
   * @returns {Promise<string | null>}
   */
  function start(entry, args, signal) {
    const controller = new AbortController();
    return new Promise((resolve, reject) => {
      let done = false;
      const onAbort = () => {
        if (done) return;
        done = true;
        reject(signal && signal.reason);
        setTimeout(() => {
          controller.abort();
          fire('toolcancel', entry.name);
        }, 0);
      };
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      runTool(entry, args, controller).then((value) => {
        if (done) return;
        done = true;
        if (signal) signal.removeEventListener('abort', onAbort);
        resolve(typeof value === 'string' ? value : value === undefined ? null : JSON.stringify(value));
      }, (err) => {
        if (done) return;
        done = true;
        if (signal) signal.removeEventListener('abort', onAbort);
        console.warn(`voicebox: tool ${entry.name} failed:`, err);
        reject(domError('UnknownError', `the tool ${entry.name} failed: ${String((err instanceof Error && err.message) || err)}`));
      });
    });
  }

  // The rule the host's registry names for each keyword an input fails (shared/refusal).
  /** @type {Record<string, string>} */
  const ruleOf = {
    type: 'invalid-argument-type', required: 'missing-argument', enum: 'invalid-argument-enum',
    pattern: 'invalid-argument-pattern', minLength: 'invalid-argument-length', maxLength: 'invalid-argument-length',
    minimum: 'invalid-argument-range', maximum: 'invalid-argument-range', additionalProperties: 'invalid-argument',
  };

  /**
   * checkDraft checks value at path (a JSON pointer) against schema, a schema the host took in the
   * WebMCP draft's subset (toolschema.WebMCPDraft): the first failure, or null. Its keywords and
   * their order are the host's (type, then enum, then the rest); pattern is this page's RegExp.
   * @param {any} schema
   * @param {unknown} value
   * @param {string} path
   * @returns {{path: string, reason: string, schemaPath: string, refused: string, why: string} | null}
   */
  function checkDraft(schema, value, path) {
    /**
     * @param {string} reason
     * @param {string} at
     * @param {string} why
     */
    const fail = (reason, at, why) => ({ path: at, reason, schemaPath: '/' + reason, refused: ruleOf[reason] || 'invalid-tool-arguments', why: `argument ${at || '(the input)'} ${why}` });
    const type = schema.type;
    const kind = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
    const typed = type === undefined || (type === 'integer' ? Number.isInteger(value) : type === 'array' ? kind === 'array' : kind === type);
    if (!typed) return fail('type', path, `must be ${type}, got ${kind}`);
    if (Array.isArray(schema.enum) && !schema.enum.some((/** @type {unknown} */ m) => m === value)) return fail('enum', path, `is not one of ${schema.enum.map((/** @type {unknown} */ m) => JSON.stringify(m)).join(', ')}`);
    if (typeof value === 'string') {
      const n = [...value].length;
      if (typeof schema.minLength === 'number' && n < schema.minLength) return fail('minLength', path, `is ${n} ${n === 1 ? 'character' : 'characters'}, under ${schema.minLength}`);
      if (typeof schema.maxLength === 'number' && n > schema.maxLength) return fail('maxLength', path, `is ${n} ${n === 1 ? 'character' : 'characters'}, over ${schema.maxLength}`);
      if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) return fail('pattern', path, `does not match ${schema.pattern}`);
    } else if (typeof value === 'number') {
      if (typeof schema.minimum === 'number' && value < schema.minimum) return fail('minimum', path, `is ${value}, under ${schema.minimum}`);
      if (typeof schema.maximum === 'number' && value > schema.maximum) return fail('maximum', path, `is ${value}, over ${schema.maximum}`);
    } else if (Array.isArray(value)) {
      const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
      for (let i = 0; i < value.length; i++) {
        const item = i < prefix.length ? prefix[i] : schema.items;
        const f = item ? checkDraft(item, value[i], `${path}/${i}`) : null;
        if (f) return f;
      }
    } else if (value && typeof value === 'object') {
      const obj = /** @type {Record<string, unknown>} */ (value);
      const props = schema.properties || {};
      for (const name of Array.isArray(schema.required) ? schema.required : []) {
        if (!Object.hasOwn(obj, name) || obj[name] === null) return fail('required', `${path}/${pointerStep(name)}`, 'is required');
      }
      for (const name of Object.keys(obj)) {
        if (Object.hasOwn(props, name)) {
          const f = checkDraft(props[name], obj[name], `${path}/${pointerStep(name)}`);
          if (f) return f;
        } else if (schema.additionalProperties === false) {
          return fail('additionalProperties', `${path}/${pointerStep(name)}`, 'is not a declared parameter');
        }
      }
    }
    return null;
  }

  /** @param {string} name a key as one step of a JSON pointer (RFC 6901) */
  const pointerStep = (name) => name.replace(/~/g, '~0').replace(/\//g, '~1');

  /**
   * checkPatterns throws the TypeError registerTool rejects with when a pattern in schema is not
   * a regular expression this page's RegExp takes: the host matches patterns with the same
   * engine, and refuses the rest of the draft's exclusions itself.
   * @param {unknown} schema
   */
  function checkPatterns(schema) {
    if (!schema || typeof schema !== 'object') return;
    if (Array.isArray(schema)) {
      for (const s of schema) checkPatterns(s);
      return;
    }
    const obj = /** @type {Record<string, unknown>} */ (schema);
    if (typeof obj.pattern === 'string') {
      try { new RegExp(obj.pattern, 'u'); } catch (err) {
        throw Object.defineProperties(new TypeError(`invalid-tool-parameters: the pattern ${obj.pattern.slice(0, 80)} is not a regular expression: ${String(err instanceof Error ? err.message : err)}`),
          { refused: { value: 'invalid-tool-parameters' }, why: { value: `the pattern ${obj.pattern.slice(0, 80)} is not a regular expression` } });
      }
    }
    for (const key of ['items', 'prefixItems']) checkPatterns(obj[key]);
    if (obj.properties && typeof obj.properties === 'object') for (const v of Object.values(obj.properties)) checkPatterns(v);
  }

  const ours = new ModelContext(secret);
  Object.defineProperty(ours, BRAND, { value: true });
  if (!('ModelContext' in window)) Object.defineProperty(window, 'ModelContext', { value: ModelContext, configurable: true, writable: true });

  // ---- another model context: read its tools back, never replace it ----

  /** @type {WeakSet<object>} */
  const followed = new WeakSet();
  /** @type {unknown} */
  let lastSeen;

  // watch looks at what document.modelContext is now; a context the SDK did not make is followed.
  function watch() {
    let now;
    try { now = document.modelContext; } catch { return; }
    if (now === lastSeen) return;
    lastSeen = now;
    adopt(now);
  }

  /** @param {any} context */
  function adopt(context) {
    if (!context || typeof context !== 'object' || context === ours || context[BRAND] || followed.has(context)) return;
    followed.add(context);
    if (typeof context.getTools !== 'function' && typeof context.listTools !== 'function') {
      console.warn('voicebox: document.modelContext was replaced by something without getTools(); tools registered through it do not reach the assistant');
      return;
    }
    if (typeof context.addEventListener === 'function') {
      try { context.addEventListener('toolchange', () => sync(context)); } catch { /* it has no events */ }
    }
    sync(context);
  }

  // sync offers context's tools to the host (those this registry does not hold already) and
  // withdraws the ones it no longer lists.
  /** @param {any} context */
  function sync(context) {
    const get = typeof context.getTools === 'function' ? context.getTools : context.listTools;
    Promise.resolve().then(() => get.call(context)).then((/** @type {unknown} */ found) => {
      /** @type {Set<string>} */
      const seen = new Set();
      for (const t of Array.isArray(found) ? found : []) {
        if (!t || typeof t !== 'object' || typeof t.name !== 'string') continue;
        seen.add(t.name);
        if (tools.has(t.name)) continue; // its own, or one registered here (a library mirroring into this one)
        let schema = t.inputSchema;
        if (typeof schema === 'string') { try { schema = JSON.parse(schema); } catch { continue; } }
        const callable = typeof context.executeTool === 'function'
          ? (/** @type {unknown} */ args) => Promise.resolve(context.executeTool(t, JSON.stringify(args))).then(parseResult)
          : typeof t.execute === 'function' ? t.execute.bind(t) : null;
        if (!callable) continue;
        try {
          register({ name: t.name, title: t.title || undefined, description: t.description, inputSchema: schema, annotations: t.annotations, execute: callable }, {}, 'mirror', true, context)
            .catch(() => { /* refused: reported by the host's answer */ });
        } catch (err) {
          console.warn(`voicebox: the tool ${t.name} of another model context could not be offered:`, err);
        }
      }
      for (const e of [...tools.values()]) {
        if (e.source === 'mirror' && e.from === context && !seen.has(e.name)) unregister(e.name);
      }
    }, (/** @type {unknown} */ err) => console.warn('voicebox: another model context did not list its tools:', err));
  }

  /** @param {unknown} text */
  function parseResult(text) {
    if (typeof text !== 'string') return text;
    try { return JSON.parse(text); } catch { return text; }
  }

  // ---- what the host says ----

  /** @param {MessageEvent} event */
  function onPortMessage(event) {
    const msg = event.data;
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'call_tool':
        run(msg, say);
        break;
      case 'cancel_call':
        cancel(msg.callId);
        break;
      case 'validated': {
        const resolve = checks.get(msg.checkId);
        checks.delete(msg.checkId);
        if (resolve) resolve(msg.ok ? { ok: true, args: msg.args } : { ok: false, refused: String(msg.refused), why: String(msg.why) });
        break;
      }
      case 'tool_registered':
      case 'tool_refused': {
        watch();
        const entry = tools.get(msg.name);
        if (msg.type === 'tool_registered') {
          if (entry) {
            entry.registered = true;
            entry.settle();
          }
          break;
        }
        noteRefusal(msg.name, msg.refused, msg.why);
        if (entry && !entry.registered) {
          tools.delete(msg.name);
          changed();
          entry.settle(refusedError(String(msg.refused), String(msg.why)));
        }
        break;
      }
    }
  }

  window.addEventListener('message', (event) => {
    if (event.source !== parentWindow || port) return;
    const msg = event.data;
    if (msg && msg.type === 'mini_app_hello') {
      parentWindow.postMessage({ type: 'mini_app_ready' }, '*');
      return;
    }
    if (!msg || msg.type !== 'mini_app_port' || !event.ports || event.ports.length < 1 || event.ports.length > 2) return;
    port = event.ports[0];
    port.onmessage = onPortMessage;
    for (const m of outbox.splice(0)) port.postMessage(m);
    const worker = event.ports[1];
    if (worker) worker.onmessage = (e) => fromWorker(worker, e.data);
  });

  /**
   * fromWorker serves what the page's worker sends on its port: a call, answered on the same
   * port, or a call's cancel.
   * @param {MessagePort} worker
   * @param {any} msg
   */
  function fromWorker(worker, msg) {
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'call_tool') run(msg, (answer) => worker.postMessage(answer));
    else if (msg.type === 'cancel_call') cancel(msg.callId);
  }

  /**
   * noteRefusal records a refused registration where the app can read it: webMcp.refusals (the
   * latest MAX_REFUSALS_KEPT), a console warning and a "webmcp-refused" event on window.
   * @param {string} name
   * @param {string} refused
   * @param {string} why
   */
  function noteRefusal(name, refused, why) {
    refusals.push({ name, refused, why });
    if (refusals.length > MAX_REFUSALS_KEPT) refusals.splice(0, refusals.length - MAX_REFUSALS_KEPT);
    console.warn(`voicebox: tool ${name} was refused (${refused}): ${why}`);
    window.dispatchEvent(new CustomEvent('webmcp-refused', { detail: { name, refused, why } }));
  }

  // ---- the declarative API: a form with toolname is a tool ----

  // A <form toolname="..." tooldescription="..."> registers as a tool of document.modelContext
  // (the draft's declarative tools, and what @mcp-b/webmcp-polyfill's form tools declare): its
  // named controls are its parameters (toolparamdescription, or the control's label, describes
  // one; required makes it required). A call fills the controls and dispatches a cancelable
  // submit event whose agentInvoked is true; a handler that calls event.respondWith(value or
  // promise) answers the call. Otherwise a form with toolautosubmit answers with the values it
  // was given; one without waits for the person to submit it, and answers with its values then.
  // Forms are followed as they come, are renamed and go.

  /** @type {Map<HTMLFormElement, string>} form -> the name of the tool it registered */
  const formTools = new Map();

  /**
   * controlsOf returns form's named controls that a call may fill, by name.
   * @param {HTMLFormElement} form
   */
  function controlsOf(form) {
    /** @type {Map<string, (HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement)[]>} */
    const byName = new Map();
    for (const el of Array.from(form.elements)) {
      if (!(el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement)) continue;
      if (!el.name || el.disabled || (el instanceof HTMLInputElement && ['submit', 'button', 'reset', 'image', 'file', 'hidden'].includes(el.type))) continue;
      const list = byName.get(el.name) || [];
      list.push(el);
      byName.set(el.name, list);
    }
    return byName;
  }

  /**
   * formSchema is the input schema of form: one property per named control.
   * @param {HTMLFormElement} form
   */
  function formSchema(form) {
    /** @type {Record<string, any>} */
    const properties = {};
    /** @type {string[]} */
    const required = [];
    for (const [name, els] of controlsOf(form)) {
      const el = els[0];
      /** @type {Record<string, any>} */
      let p;
      if (el instanceof HTMLSelectElement) {
        const values = Array.from(el.options).map((o) => o.value);
        p = el.multiple ? { type: 'array', items: { type: 'string', enum: values } } : { type: 'string', enum: values };
      } else if (el instanceof HTMLInputElement && el.type === 'checkbox' && els.length === 1) {
        p = { type: 'boolean' };
      } else if (el instanceof HTMLInputElement && el.type === 'radio') {
        p = { type: 'string', enum: els.map((r) => r.value) };
      } else if (el instanceof HTMLInputElement && (el.type === 'number' || el.type === 'range')) {
        p = { type: 'number' };
        if (el.min !== '' && Number.isFinite(Number(el.min))) p.minimum = Number(el.min);
        if (el.max !== '' && Number.isFinite(Number(el.max))) p.maximum = Number(el.max);
      } else {
        p = { type: 'string' };
        if ('minLength' in el && el.minLength >= 0) p.minLength = el.minLength;
        if ('maxLength' in el && el.maxLength >= 0) p.maxLength = el.maxLength;
      }
      const described = el.getAttribute('toolparamdescription') || (el.labels && el.labels[0] ? el.labels[0].textContent?.trim() : '');
      if (described) p.description = described;
      properties[name] = p;
      if (els.some((e) => e.required)) required.push(name);
    }
    return { type: 'object', properties, ...(required.length ? { required } : {}) };
  }

  /**
   * fillForm sets form's controls from args, as a person would.
   * @param {HTMLFormElement} form
   * @param {Record<string, unknown>} args
   */
  function fillForm(form, args) {
    for (const [name, els] of controlsOf(form)) {
      if (!Object.hasOwn(args, name)) continue;
      const v = args[name];
      for (const el of els) {
        if (el instanceof HTMLInputElement && el.type === 'checkbox' && els.length === 1) el.checked = v === true;
        else if (el instanceof HTMLInputElement && el.type === 'radio') el.checked = el.value === v;
        else if (el instanceof HTMLSelectElement && el.multiple) for (const o of Array.from(el.options)) o.selected = Array.isArray(v) && v.includes(o.value);
        else el.value = String(v);
        el.dispatchEvent(new Event('input', { bubbles: true }));
        el.dispatchEvent(new Event('change', { bubbles: true }));
      }
    }
  }

  /** @param {HTMLFormElement} form the values of form's controls, as a call gives them */
  function formValues(form) {
    /** @type {Record<string, unknown>} */
    const out = {};
    for (const [name, els] of controlsOf(form)) {
      const el = els[0];
      if (el instanceof HTMLInputElement && el.type === 'checkbox' && els.length === 1) out[name] = el.checked;
      else if (el instanceof HTMLInputElement && el.type === 'radio') out[name] = els.find((r) => /** @type {HTMLInputElement} */ (r).checked)?.value ?? null;
      else if (el instanceof HTMLSelectElement && el.multiple) out[name] = Array.from(el.selectedOptions).map((o) => o.value);
      else out[name] = el.value;
    }
    return out;
  }

  /**
   * submitForm is a form tool's execute: see the section's comment.
   * @param {HTMLFormElement} form
   * @param {Record<string, unknown>} args
   * @param {{signal: AbortSignal}} options
   */
  function submitForm(form, args, options) {
    fillForm(form, args);
    /** @type {Promise<unknown> | null} */
    let answer = null;
    const event = new SubmitEvent('submit', { bubbles: true, cancelable: true });
    Object.defineProperties(event, {
      agentInvoked: { value: true },
      respondWith: { value: (/** @type {unknown} */ value) => { answer = Promise.resolve(value); } },
    });
    form.dispatchEvent(event);
    if (answer) return answer;
    if (form.hasAttribute('toolautosubmit')) return formValues(form);
    return new Promise((resolve, reject) => {
      const onSubmit = (/** @type {Event} */ e) => {
        if (/** @type {any} */ (e).agentInvoked) return;
        e.preventDefault();
        form.removeEventListener('submit', onSubmit);
        resolve(formValues(form));
      };
      form.addEventListener('submit', onSubmit);
      options.signal.addEventListener('abort', () => {
        form.removeEventListener('submit', onSubmit);
        reject(options.signal.reason);
      }, { once: true });
    });
  }

  // syncForms registers the forms with toolname the document has now, and unregisters those
  // that left or changed.
  function syncForms() {
    const now = new Set(/** @type {HTMLFormElement[]} */ (Array.from(document.querySelectorAll('form[toolname]'))));
    for (const [form, name] of formTools) {
      if (!now.has(form) || form.getAttribute('toolname') !== name) {
        formTools.delete(form);
        if (tools.get(name)?.from === form) unregister(name);
      }
    }
    for (const form of now) {
      if (formTools.has(form)) continue;
      const name = form.getAttribute('toolname') || '';
      formTools.set(form, name);
      try {
        register({
          name, description: form.getAttribute('tooldescription') || name, inputSchema: formSchema(form),
          execute: (/** @type {Record<string, unknown>} */ args, /** @type {{signal: AbortSignal}} */ options) => submitForm(form, args, options),
        }, {}, 'ours', true, form).catch((/** @type {unknown} */ err) => console.warn(`voicebox: the form tool ${name} was refused:`, err));
      } catch (err) {
        console.warn(`voicebox: the form tool ${name} could not register:`, err);
      }
    }
  }
  /**
   * movesForms reports whether a change to the document may have added or removed a form, or
   * changed a form's toolname: an element came or went (it may be a form or hold one), or one of
   * the two attributes changed. A tool that writes text (most of them: a score, a status line)
   * changes neither, and the document is not searched again for it.
   * @param {MutationRecord} r
   */
  const movesForms = (r) => {
    if (r.type === 'attributes') return true;
    for (const n of r.addedNodes) if (n.nodeType === Node.ELEMENT_NODE) return true;
    for (const n of r.removedNodes) if (n.nodeType === Node.ELEMENT_NODE) return true;
    return false;
  };
  let formsQueued = false;
  /** @param {MutationRecord[]} records */
  const formsChanged = (records) => {
    // While the document is parsed, a form's controls are still coming: forms register once it is.
    if (formsQueued || document.readyState === 'loading' || !records.some(movesForms)) return;
    formsQueued = true;
    queueMicrotask(() => { formsQueued = false; syncForms(); });
  };
  new MutationObserver(formsChanged).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['toolname', 'tooldescription'] });
  document.addEventListener('DOMContentLoaded', syncForms);

  // ---- the spellings ----

  /**
   * webMcp.registerTool is the original Voicebox's spelling. It throws only where the original's
   * SDK threw: a tool that is not an object, a name that is not a string, no execute function.
   * Any other fault of the declaration (no description, a name that is taken or out of shape, a
   * schema JSON cannot say) is refused without throwing, so the app's script goes on and its
   * later tools register: the refusal is recorded as the host's are (noteRefusal) and sent to the
   * page for the app's diagnostics. It returns {name, result, unregister}, result resolving to
   * {ok} or {ok: false, refused, why}.
   * @param {any} tool
   */
  function webMcpRegister(tool) {
    watch();
    if (tool === null || (typeof tool !== 'object' && typeof tool !== 'function') || typeof tool.name !== 'string' || typeof tool.execute !== 'function') {
      throw new TypeError('registerTool: a tool needs a string name and an execute function');
    }
    const name = tool.name;
    let settled;
    try {
      settled = register(tool, {}, 'ours', false);
    } catch (err) {
      const e = /** @type {any} */ (err);
      const refused = String(e && e.refused || 'invalid-tool-declaration');
      const why = String(e && (e.why || e.message) || e);
      noteRefusal(name, refused, why);
      say({ type: 'register_refused', name: name.slice(0, 128), refused, why: why.slice(0, 512) });
      // Nothing was registered: unregister must not take a tool of the same name that was.
      return { name, result: Promise.resolve({ ok: false, refused, why }), unregister: () => {} };
    }
    const result = settled.then(() => ({ ok: true }), (/** @type {any} */ err) => ({ ok: false, refused: String(err && err.refused || err && err.name), why: String(err && err.why || err && err.message) }));
    return { name, result, unregister: () => unregister(name) };
  }

  const webMcp = Object.freeze({
    sdk: 'voicebox',
    registerTool: webMcpRegister,
    unregisterTool: unregister,
    ready: () => say({ type: 'ready' }),
    tools: () => [...tools.keys()],
    refusals,
    modelContext: ours,
  });
  Object.defineProperty(window, 'webMcp', { value: webMcp, configurable: false, writable: false });
  Object.defineProperty(window, 'voicebox', { value: webMcp, configurable: false, writable: false });

  let existing;
  try { existing = document.modelContext; } catch { existing = undefined; }
  if (existing) {
    watch(); // the browser's own, or a script's: left as it is, and read back
  } else {
    Object.defineProperty(document, 'modelContext', { get: () => ours, configurable: true, enumerable: true });
    lastSeen = ours;
  }
  if (!('modelContext' in navigator)) {
    try { Object.defineProperty(navigator, 'modelContext', { get: () => document.modelContext, configurable: true, enumerable: true }); } catch { /* the browser's own stays */ }
  }
  // A library may install its own model context while the document loads.
  document.addEventListener('DOMContentLoaded', watch);
  window.addEventListener('load', watch);

  // The host delegates the "tools" feature to this frame (its WebMCP is this SDK), and libraries
  // ask the document's permissions policy before they offer WebMCP: say so where the browser's
  // policy does not know the feature.
  try {
    const policy = /** @type {any} */ (document).permissionsPolicy || /** @type {any} */ (document).featurePolicy;
    const knows = policy && typeof policy.features === 'function' && policy.features().includes('tools');
    if (!knows && !('permissionsPolicy' in document)) {
      const base = policy && typeof policy.allowsFeature === 'function' ? policy : null;
      Object.defineProperty(document, 'permissionsPolicy', {
        configurable: true,
        value: Object.freeze({
          features: () => [...(base ? base.features() : []), 'tools'],
          allowedFeatures: () => [...(base ? base.allowedFeatures() : []), 'tools'],
          allowsFeature: (/** @type {string} */ f, /** @type {string} */ o) => f === 'tools' || (base ? base.allowsFeature(f, o) : false),
          getAllowlistForFeature: (/** @type {string} */ f) => (f === 'tools' ? ['*'] : base ? base.getAllowlistForFeature(f) : []),
        }),
      });
    }
  } catch { /* no policy to speak of */ }

  parentWindow.postMessage({ type: 'mini_app_ready' }, '*');
})();
