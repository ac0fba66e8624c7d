// @ts-check
// The guest library for external mini-apps: web apps on their own origin that Voicebox embeds in
// an <iframe src> beside the assistant. An app loads this file from the relay (or ships a copy):
//
//   <script src="https://voicebox.example.com/mini-app-guest.js"></script>
//   <script>
//     const host = VoiceboxGuest.connect({
//       name: 'Order Book', version: '1.0.0',
//       getContext: () => ({ title: 'Orders', summary: '3 open', selection: null, data: orders }),
//       auth: true, // ask for identity tokens (the operator must also grant the auth capability)
//     });
//     document.modelContext.registerTool({ name, description, inputSchema, execute, annotations });
//   </script>
//
// What it does:
//   - mints a documentId for this document and answers the host's ui/identify with it, from the
//     moment it loads, so the host can tell which document is in the frame after every load;
//   - connect() sends ui/initialize (again on every call: a repeat from the same document is
//     answered without tearing anything down, so calling it from a React effect is fine);
//   - answers ui/get-context by calling getContext(), tools/list and tools/call from the tool
//     registry below;
//   - document.modelContext: a native one (the browser's) is used as it is and read back with
//     getTools(); when there is none, a shim with the same shape is installed, branded with
//     Symbol.for('voicebox.modelContext') so it can be told from a native one; anything else
//     claiming the property is left alone (with a warning) and a detached registry,
//     VoiceboxGuest.modelContext, is used instead;
//   - forwards tool registry changes as ui/notifications/tools-changed (the host asks tools/list
//     again; it honours 20 per document);
//   - getAuthToken() returns a token with more than a minute left, asking the host for a new one
//     (ui/request-auth-token) otherwise, and a timer refreshes it ahead of expiry;
//     refreshAuthToken() asks for a new one now (after the app's server refused the old one);
//   - openChat(prompt) asks the host to seed its composer (the person decides whether to send),
//     selectionChanged(value) reports a selection (text selections are reported by themselves),
//     and uncaught errors are reported as ui/notifications/error.
//
// Every message is JSON-RPC 2.0 stamped with the protocol marker, posted only to the host's
// origin (the origin this script was loaded from, or the hosts option), and a message is taken
// only from the parent window at that origin.
'use strict';

(() => {
  if (window.VoiceboxGuest) return;

  const PROTOCOL = 'voicebox-mini-app/1';
  const BRAND = Symbol.for('voicebox.modelContext');
  const INIT_MS = 10000;
  const REQUEST_MS = 10000;
  const REFRESH_AHEAD_MS = 60000;
  const SELECTION_DEBOUNCE_MS = 250;

  const documentId = (crypto.randomUUID && crypto.randomUUID()) || String(Math.random()).slice(2) + Date.now();
  const parentWindow = window.parent;
  const embedded = parentWindow !== window;
  const script = document.currentScript;
  const scriptOrigin = script instanceof HTMLScriptElement && script.src ? new URL(script.src).origin : null;
  /** @type {string[]} */
  let hosts = scriptOrigin ? [scriptOrigin] : [];
  /** @type {string | null} fixed by the first message the host sends */
  let hostOrigin = null;
  /**
   * Options are what the app passes to connect (see the top of this file).
   * @typedef {{name?: string, version?: string, getContext?: () => unknown, auth?: boolean, hosts?: string[],
   *   onToken?: (token: string, expiresAt: number) => void, selection?: boolean}} Options
   */
  /** @type {Options} */
  let options = {};
  /**
   * Connection is what connect returns to the app.
   * @typedef {{documentId: string, live: boolean, hostContext: unknown, hostInfo?: unknown, ready?: Promise<unknown>,
   *   getAuthToken: () => Promise<string>, refreshAuthToken: () => Promise<string>,
   *   openChat: (prompt: unknown) => Promise<unknown>, selectionChanged: (selection: unknown) => void,
   *   reportError: (err: any) => void}} Connection
   */
  /** @type {Connection | null} */
  let connection = null;
  let nextId = 1;
  /** @type {Map<string, {resolve: (v: any) => void, reject: (e: Error) => void, timer: number}>} */
  const pending = new Map();
  const stats = { identifies: 0, initializes: 0, toolsListed: 0, toolsCalled: 0, contextReads: 0, toolsChanged: 0 };

  // ---- the wire ----

  /** @param {object} msg */
  function post(msg) {
    if (!embedded) return;
    const stamped = { jsonrpc: '2.0', protocol: PROTOCOL, ...msg };
    for (const origin of hostOrigin ? [hostOrigin] : hosts) parentWindow.postMessage(stamped, origin);
  }

  /**
   * @param {string} method
   * @param {object} params
   * @returns {Promise<any>}
   */
  function request(method, params, ms = REQUEST_MS) {
    return new Promise((resolve, reject) => {
      const id = `g${nextId++}`;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`the host did not answer ${method} within ${ms} ms`));
      }, ms);
      pending.set(id, { resolve, reject, timer });
      post({ id, method, params });
    });
  }

  /**
   * @param {string} method
   * @param {object} params
   */
  function notify(method, params) {
    if (connection && connection.live) post({ method, params });
  }

  /** @type {Record<string, (params: any) => unknown>} */
  const handlers = {
    'ui/identify': () => { stats.identifies++; return { documentId }; },
    'ui/get-context': async () => {
      stats.contextReads++;
      if (typeof options.getContext !== 'function') throw rpcError(-32601, 'this app offers no context');
      return (await options.getContext()) ?? {};
    },
    'tools/list': async () => {
      stats.toolsListed++;
      return { tools: await registry.list() };
    },
    'tools/call': async (params) => {
      stats.toolsCalled++;
      const name = params && params.name;
      try {
        return asResult(await registry.call(String(name), (params && params.arguments) || {}));
      } catch (err) {
        return { content: [{ type: 'text', text: String((err instanceof Error && err.message) || err) }], isError: true };
      }
    },
  };

  /**
   * @param {number} code
   * @param {string} message
   */
  function rpcError(code, message) {
    return Object.assign(new Error(message), { code });
  }

  /**
   * asResult turns what a tool returned into an MCP tool result.
   * @param {any} value
   */
  function asResult(value) {
    if (typeof value === 'string') return { content: [{ type: 'text', text: value }] };
    if (value && typeof value === 'object' && Array.isArray(value.content)) return value;
    const text = value === undefined ? '' : JSON.stringify(value);
    /** @type {{content: {type: string, text: string}[], structuredContent?: unknown}} */
    const out = { content: [{ type: 'text', text }] };
    if (value && typeof value === 'object') out.structuredContent = value;
    return out;
  }

  window.addEventListener('message', async (event) => {
    if (event.source !== parentWindow || !(hostOrigin ? event.origin === hostOrigin : hosts.includes(event.origin))) return;
    const msg = event.data;
    if (!msg || typeof msg !== 'object' || msg.protocol !== PROTOCOL || msg.jsonrpc !== '2.0') return;
    hostOrigin = event.origin;
    if (typeof msg.method === 'string') {
      const handler = handlers[msg.method];
      if (msg.id === undefined) return; // the host sends no notifications this guest acts on
      if (!handler) {
        post({ id: msg.id, error: { code: -32601, message: `unknown method ${msg.method}` } });
        return;
      }
      try {
        post({ id: msg.id, result: await handler(msg.params) });
      } catch (err) {
        const e = /** @type {any} */ (err);
        post({ id: msg.id, error: { code: (e && e.code) || -32603, message: String((e && e.message) || e) } });
      }
      return;
    }
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.error) p.reject(Object.assign(new Error(String(msg.error.message)), { code: msg.error.code, data: msg.error.data }));
    else p.resolve(msg.result);
  });

  // ---- the tool registry: document.modelContext ----

  /** @param {any} tool */
  function descriptor(tool) {
    /** @type {Record<string, unknown>} */
    const d = { name: String(tool.name), description: tool.description === undefined ? '' : String(tool.description) };
    if (tool.inputSchema !== undefined) d.inputSchema = tool.inputSchema;
    if (tool.annotations !== undefined) d.annotations = tool.annotations;
    return JSON.parse(JSON.stringify(d));
  }

  function makeShim() {
    /** @type {Map<string, any>} */
    const tools = new Map();
    let queued = false;
    const changed = () => {
      if (queued) return;
      queued = true;
      queueMicrotask(() => { queued = false; stats.toolsChanged++; notify('ui/notifications/tools-changed', {}); });
    };
    const shim = {
      /** @param {any} tool */
      registerTool(tool) {
        if (!tool || typeof tool !== 'object' || typeof tool.execute !== 'function') throw new TypeError('registerTool needs {name, description, inputSchema, execute}');
        tools.set(String(tool.name), tool);
        changed();
      },
      /** @param {unknown} name */
      unregisterTool(name) {
        if (tools.delete(String(name))) changed();
      },
      getTools() { return [...tools.values()].map(descriptor); },
      /**
       * @param {unknown} name
       * @param {unknown} args
       */
      executeTool(name, args) {
        const tool = tools.get(String(name));
        if (!tool) throw new Error(`this app has no tool named ${name}`);
        return tool.execute(args, client);
      },
    };
    Object.defineProperty(shim, BRAND, { value: true });
    return shim;
  }

  const client = Object.freeze({ requestUserInteraction: async (/** @type {() => unknown} */ callback) => callback() });

  /** @param {any} context */
  function isNative(context) {
    try {
      return typeof context.registerTool === 'function' && /\[native code\]/.test(Function.prototype.toString.call(context.registerTool));
    } catch { return false; }
  }

  /** @type {any} */
  let context = document.modelContext;
  /** @type {'shim' | 'native' | 'detached'} */
  let mode;
  if (!context) {
    context = makeShim();
    mode = 'shim';
    Object.defineProperty(document, 'modelContext', { value: context, configurable: true, enumerable: true });
    if (!('modelContext' in navigator)) {
      try { Object.defineProperty(navigator, 'modelContext', { get: () => document.modelContext, configurable: true }); } catch { /* left as it is */ }
    }
  } else if (context[BRAND]) {
    mode = 'shim';
  } else if (isNative(context)) {
    mode = 'native';
    if (typeof context.addEventListener === 'function') {
      context.addEventListener('toolchange', () => { stats.toolsChanged++; notify('ui/notifications/tools-changed', {}); });
    }
  } else {
    console.warn('voicebox: document.modelContext belongs to another script; it is left alone, and tools go in VoiceboxGuest.modelContext');
    context = makeShim();
    mode = 'detached';
  }

  const registry = {
    async list() {
      const get = context.getTools || context.listTools;
      const found = typeof get === 'function' ? await get.call(context) : [];
      return (Array.isArray(found) ? found : []).map((/** @type {any} */ t) => {
        try { return descriptor(t); } catch { return { name: String(t && t.name) }; }
      });
    },
    /**
     * @param {string} name
     * @param {unknown} args
     */
    async call(name, args) {
      if (typeof context.executeTool === 'function') return context.executeTool(name, args);
      const get = context.getTools || context.listTools;
      const found = typeof get === 'function' ? await get.call(context) : [];
      const tool = (Array.isArray(found) ? found : []).find((/** @type {any} */ t) => t && t.name === name);
      if (!tool || typeof tool.execute !== 'function') throw new Error(`this app has no tool named ${name}`);
      return tool.execute(args, client);
    },
  };

  // ---- connecting ----

  /** @type {{token: string, expiresAt: number} | null} */
  let token = null;
  let refreshTimer = 0;

  /** @param {any} t */
  function keepToken(t) {
    if (!t || typeof t.token !== 'string') return;
    token = { token: t.token, expiresAt: Number(t.expiresAt) || 0 };
    clearTimeout(refreshTimer);
    const kept = token;
    const wait = kept.expiresAt - Date.now() - REFRESH_AHEAD_MS;
    refreshTimer = setTimeout(() => { refreshToken().catch(() => {}); }, Math.max(wait, 1000));
    if (typeof options.onToken === 'function') {
      try { options.onToken(kept.token, kept.expiresAt); } catch (err) { console.error(err); }
    }
  }

  /** @returns {Promise<string>} */
  async function refreshToken() {
    keepToken(await request('ui/request-auth-token', {}));
    if (!token) throw new Error('the host answered ui/request-auth-token without a token');
    return token.token;
  }

  async function getAuthToken() {
    if (token && token.expiresAt - Date.now() > REFRESH_AHEAD_MS) return token.token;
    return refreshToken();
  }

  /**
   * @param {Options} opts
   * @returns {Connection}
   */
  function connect(opts = {}) {
    options = opts;
    if (Array.isArray(opts.hosts) && opts.hosts.length > 0) hosts = opts.hosts.map((h) => new URL(h).origin);
    /** @type {Connection} */
    const conn = connection || {
      documentId,
      live: false,
      hostContext: null,
      getAuthToken,
      refreshAuthToken: refreshToken,
      openChat: (prompt) => request('ui/open-chat', { prompt: String(prompt ?? '') }),
      selectionChanged: (selection) => notify('ui/notifications/selection-changed', { selection }),
      reportError: (err) => notify('ui/notifications/error', { message: String((err && err.message) || err), stack: err && err.stack ? String(err.stack) : undefined }),
    };
    connection = conn;
    stats.initializes++;
    conn.ready = !embedded ? Promise.resolve(null) : request('ui/initialize', {
      documentId,
      protocolVersion: PROTOCOL,
      appInfo: { name: String(opts.name || document.title || 'app'), version: String(opts.version || '0') },
      appCapabilities: { tools: { listChanged: true }, context: typeof opts.getContext === 'function', auth: !!opts.auth },
    }, INIT_MS).then((result) => {
      conn.live = true;
      conn.hostContext = result.hostContext || null;
      conn.hostInfo = result.hostInfo || null;
      if (result.auth) keepToken(result.auth);
      return result;
    });
    conn.ready.catch(() => {}); // an app that never awaits ready is not told of a host that stayed silent
    return conn;
  }

  // ---- what the app reports without being asked ----

  let selectionTimer = 0;
  document.addEventListener('selectionchange', () => {
    if (options.selection === false) return;
    clearTimeout(selectionTimer);
    selectionTimer = setTimeout(() => {
      const text = String(document.getSelection() || '');
      if (connection) connection.selectionChanged(text ? { text } : null);
    }, SELECTION_DEBOUNCE_MS);
  });
  window.addEventListener('error', (event) => { if (connection) connection.reportError(event.error || event.message); });
  window.addEventListener('unhandledrejection', (event) => { if (connection) connection.reportError(event.reason); });

  window.VoiceboxGuest = Object.freeze({ connect, documentId, modelContext: context, mode, stats, protocol: PROTOCOL });
})();
