// @ts-check
// The mini-app SDK. The bridge puts this script first in every mini-app, right after its
// <!doctype html>, where it runs in the inner frame: sandbox="allow-scripts", an opaque origin,
// no network. It gives the app two ways to offer tools to the assistant:
//
//   window.webMcp.registerTool({name, description, parameters, execute}); window.webMcp.ready();
//   document.modelContext.registerTool({name, description, inputSchema, execute, annotations});
//
// (navigator.modelContext is the same object). When the browser, or a script of the app, already
// provides document.modelContext, the SDK leaves it alone and reads its tools back instead.
//
// The SDK talks to the bridge only over the MessagePort the bridge hands it: it says
// mini_app_ready to its parent and takes a port only from its parent. Every declaration is
// checked again by the host; a refused one is reported here (webMcp.refusals, and a
// "webmcp-refused" event on window) and is not offered to the assistant.
'use strict';

(() => {
  if (window.webMcp && window.webMcp.sdk === 'voicebox') return;
  const parentWindow = window.parent;
  /** @typedef {(args: any, client: object) => unknown} Execute */
  /** @type {Map<string, {execute: Execute}>} name -> the app's tool */
  const tools = new Map();
  /** @type {object[]} messages said before the port arrived */
  const outbox = [];
  /** @type {{name: string, refused: string, why: string}[]} */
  const refusals = [];
  /** @type {Map<string, (result: {ok: boolean, refused?: string, why?: string}) => void>} tool name -> its registration's result */
  const waiting = new Map();
  /** @type {MessagePort | null} */
  let port = null;

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

  /** @param {object} msg */
  function say(msg) {
    if (port) port.postMessage(msg);
    else outbox.push(msg);
  }

  /** @param {unknown} value */
  function plain(value) {
    // A tool's result crosses as JSON text, so what the assistant reads is what JSON can say.
    return value === undefined ? 'null' : JSON.stringify(value);
  }

  /** @param {{callId: unknown, name: string, args: unknown}} call */
  async function run({ callId, name, args }) {
    const tool = tools.get(name);
    try {
      if (!tool) throw new Error(`this app has no tool named ${name}`);
      const value = await tool.execute(args ?? {}, client);
      say({ type: 'tool_result', callId, ok: true, result: plain(value) });
    } catch (err) {
      say({ type: 'tool_result', callId, ok: false, error: String((err instanceof Error && err.message) || err) });
    }
  }

  /** @param {MessageEvent} event */
  function onPortMessage(event) {
    const msg = event.data;
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'call_tool':
        run(msg);
        break;
      case 'tool_registered':
      case 'tool_refused': {
        const ok = msg.type === 'tool_registered';
        if (!ok) {
          refusals.push({ name: msg.name, refused: msg.refused, why: msg.why });
          tools.delete(msg.name);
          console.warn(`voicebox: tool ${msg.name} was refused (${msg.refused}): ${msg.why}`);
          window.dispatchEvent(new CustomEvent('webmcp-refused', { detail: { name: msg.name, refused: msg.refused, why: msg.why } }));
        }
        const resolve = waiting.get(msg.name);
        waiting.delete(msg.name);
        if (resolve) resolve(ok ? { ok } : { ok, refused: msg.refused, why: msg.why });
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
    if (!msg || msg.type !== 'mini_app_port' || !event.ports || event.ports.length !== 1) return;
    port = event.ports[0];
    port.onmessage = onPortMessage;
    for (const m of outbox.splice(0)) port.postMessage(m);
  });

  // ---- registration ----

  const client = Object.freeze({ requestUserInteraction: async (/** @type {() => unknown} */ callback) => callback() });

  /**
   * register sends one of the app's tools to the bridge. tool is whatever the app passed.
   * @param {any} tool
   * @param {'parameters' | 'inputSchema'} schemaKey
   */
  function register(tool, schemaKey) {
    if (!tool || typeof tool !== 'object') throw new TypeError('registerTool needs a tool object');
    if (typeof tool.execute !== 'function') throw new TypeError(`tool ${tool.name} needs an execute function`);
    const name = String(tool.name);
    /** @type {Record<string, unknown>} */
    const decl = { name, description: tool.description };
    const schema = tool[schemaKey];
    if (schema !== undefined) decl[schemaKey] = schema;
    if (tool.annotations !== undefined) decl.annotations = tool.annotations;
    tools.set(name, { execute: tool.execute });
    /** @type {Promise<{ok: boolean, refused?: string, why?: string}>} */
    const result = new Promise((resolve) => waiting.set(name, resolve));
    let sent;
    try {
      sent = JSON.parse(JSON.stringify(decl));
    } catch (err) {
      tools.delete(name);
      throw new TypeError(`tool ${name} cannot be declared: ${err instanceof Error ? err.message : err}`);
    }
    say({ type: 'register_tool', tool: sent });
    return { name, result, unregister: () => unregister(name) };
  }

  /** @param {unknown} name */
  function unregister(name) {
    if (tools.delete(String(name))) say({ type: 'unregister_tool', name: String(name) });
  }

  const webMcp = Object.freeze({
    sdk: 'voicebox',
    registerTool: (/** @type {any} */ tool) => register(tool, 'parameters'),
    unregisterTool: unregister,
    ready: () => say({ type: 'ready' }),
    tools: () => [...tools.keys()],
    refusals,
  });
  Object.defineProperty(window, 'webMcp', { value: webMcp, configurable: false, writable: false });

  const ours = Object.freeze({
    registerTool: (/** @type {any} */ tool) => { register(tool, 'inputSchema'); },
    unregisterTool: unregister,
  });

  // readBack offers the tools of a model context the SDK did not make (the browser's, or another
  // script's), calling them through it. It never changes that object.
  /** @param {any} context */
  function readBack(context) {
    /** @type {unknown} */
    let list = [];
    try {
      const get = context.getTools || context.listTools;
      list = typeof get === 'function' ? get.call(context) : [];
    } catch { list = []; }
    Promise.resolve(list).then((found) => {
      for (const t of Array.isArray(found) ? found : []) {
        if (!t || tools.has(String(t.name))) continue;
        let schema = t.inputSchema;
        if (typeof schema === 'string') { try { schema = JSON.parse(schema); } catch { continue; } }
        const execute = typeof t.execute === 'function' ? t.execute.bind(t)
          : typeof context.executeTool === 'function' ? (/** @type {unknown} */ args) => context.executeTool(t.name, args) : null;
        if (execute) register({ name: t.name, description: t.description, inputSchema: schema, annotations: t.annotations, execute }, 'inputSchema');
      }
    });
  }

  const existing = document.modelContext;
  if (existing) {
    readBack(existing);
  } else {
    Object.defineProperty(document, 'modelContext', { value: ours, configurable: true, enumerable: true });
    try { Object.defineProperty(navigator, 'modelContext', { get: () => document.modelContext, configurable: true }); } catch { /* the browser's own stays */ }
    // A script of the app may bring its own model context after this one; read its tools then.
    window.addEventListener('load', () => {
      if (document.modelContext && document.modelContext !== ours) readBack(document.modelContext);
    });
  }

  parentWindow.postMessage({ type: 'mini_app_ready' }, '*');
})();
