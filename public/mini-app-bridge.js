// @ts-check
// The mini-app bridge: the outer frame between the host page and the inner frame where the app
// runs (sandbox="allow-scripts": an opaque origin). The page frames it on a host of the app's own
// (app-<16 hex>.localhost, a site of its own, so Chromium gives it and its app a renderer process
// of their own), or on the page's own origin when the page is not opened on a loopback name. The
// relay serves this document with connect-src 'none' and a Connection-Allowlist of its own origin
// with webrtc=block, and the inner srcdoc frame inherits both, so the app's code runs but reaches
// no network, WebRTC included where the browser honours the allowlist; the first script of every
// app's document (closePeers) takes WebRTC out of the app's window in every browser. An app host serves this document and
// the modules it imports (internal/core/server.AppHostFiles) and nothing else.
//
// It takes messages from its parent only when they come from the parent window on the page's
// origin (the ?host= of its address; the relay's frame-ancestors lets only the page's origins
// frame it), and from the app only as: one mini_app_ready per document, from the inner frame's
// window, answered with a fresh MessagePort; everything after that travels over the port. It
// bounds every call again (5,000 ms, 64 KiB of output) whatever the host does, and answers each
// call once.
//
// Every message of the app (over the port, or to this window from any frame inside it) is charged
// here, in a realm the app cannot reach, where it was already deserialised (message-budget.js):
// itself against MESSAGE_BUDGET and its bytes against MESSAGE_BYTE_BUDGET, unless it is an answer
// to a call the bridge sent (whose output has its bound, MAX_OUTPUT_BYTES). An app over either budget is stopped here at once (its frame removed, its calls answered) and the host is told, once. A
// message that is not the app's one handshake is dropped without being read; the host learns how
// many at most every DROP_REPORT_MS, with what the first MAX_SAMPLES of them were and why they
// were not taken (a message over the port of a type the bridge does not know is dropped the
// same way). The bounds and the tool name rule come from rules.js, generated from the Go
// constants; the SDK is given the name rule on its script element (data-tool-name).
//
// An MCP Apps view (a ui:// resource of a remote MCP tool, or a mini-app written with the
// ext-apps SDK) speaks JSON-RPC 2.0 with this window as its parent, with no port: the bridge is
// its host here, one more adapter on the same budget (every message is charged first). It answers
// ui/initialize (MCP_APPS_VERSION, hostInfo, hostCapabilities, the hostContext the page gave),
// sends the tool's input and result once the view says ui/notifications/initialized (holding
// the requests it makes before, at most MAX_EARLY_VIEW_REQUESTS, until then), hands
// tools/call, ui/open-link, ui/message, size changes and a teardown request to the page (which
// routes a call to the view's own server through the approval gate, and asks the person before a
// link opens), asks the view ui/resource-teardown before the page removes it, and answers every
// other request -32601. A view that declares appCapabilities.tools is asked tools/list once it is
// initialized (and on its list_changed): its tools are registered as an app's are, and the host's
// calls of them go to it as tools/call.
//
// The worker's port: with each document's port to the app, the bridge makes a second
// MessageChannel, hands one end to the app's document beside its own port and the other to the
// page with its handshake message; the page hands it to the worker (miniapps.port), once per
// document. The worker then sends its calls on it ({type: call_tool, callId, name, args} and
// {type: cancel_call, callId}) and takes the SDK's answers ({type: tool_result, callId, ok,
// result | error}) there, so a call crosses neither the page's main thread nor this bridge:
// worker -> app and back. The walls this bridge holds for the calls the page sends are held in
// the worker for those (internal/engine frames.go, public/app-port.js): the same message budget
// (message-budget.js, charged where the message lands: in the worker), the worker's deadline,
// the answer's shape and output bound, one answer per call, and everything else the app posts
// there refused by name. The app keeps its sandbox and origin; the port goes with its document
// (a reload or a stop: the page tells the worker, which closes its end and answers the calls
// waiting there mini-app-closed). A view has no handshake, so no such port: its tools are called
// through the page.
//
// Besides registering tools and answering calls, the app may ask the host to check the
// arguments of a call its own agent makes (validate_args, WebMCP executeTool); the host's cancel
// of a call is passed on to the app (cancel_call), which aborts the tool's signal.
import { MessageBudget } from './message-budget.js';
import {
  MAX_ARGUMENT_BYTES, MAX_DECLARATION_BYTES, MAX_OUTPUT_BYTES, MAX_TOOLS_PER_APP as MAX_TOOLS, TOOL_TIMEOUT_MS,
  SANDBOX_NO_NETWORK, WEBMCP_TOOL_NAME,
} from './rules.js';

/** DROP_REPORT_MS is how often at most the bridge tells the host how many messages it dropped. */
const DROP_REPORT_MS = 250;
/** MAX_SAMPLES is how many dropped messages the bridge describes to the host; the rest are counted. */
const MAX_SAMPLES = 5;
/** NOT_ON_PORT is why a message the app posted to the bridge's window is dropped. */
const NOT_ON_PORT = 'posted to the bridge\'s window, not over the app\'s port (only one mini_app_ready per document is taken there)';

/** MCP_APPS_VERSION is the MCP Apps protocol version the bridge answers ui/initialize with (the
 * ext-apps SDK's LATEST_PROTOCOL_VERSION). */
const MCP_APPS_VERSION = '2026-01-26';
/** MCP_CALL_MS bounds a view's request the page serves (tools/call waits for the person's
 * approval, 60 s, then the call, 30 s); past it the view is answered -32603. */
const MCP_CALL_MS = 100_000;
/** MCP_TEARDOWN_MS is how long a view has to answer ui/resource-teardown before it is removed. */
const MCP_TEARDOWN_MS = 500;
/** MAX_LISTED bounds the entries of a view's tools/list answer the bridge reads: one answer is
 * one message, and each entry past the app's tools could cost the host a refusal message. */
const MAX_LISTED = 32;
/** MAX_EARLY_VIEW_REQUESTS bounds the requests for the page a view may send before its
 * ui/notifications/initialized: they are held and sent on once it says it (the ext-apps SDK only
 * warns of a call made before its handshake ends, and example views call on a timer that can fire
 * first); past the bound a request is answered -32600. */
const MAX_EARLY_VIEW_REQUESTS = 8;
/** MCP_PAGE_METHODS are the view's requests the page serves (the rest the bridge answers). */
const MCP_PAGE_METHODS = new Set(['tools/call', 'ui/open-link', 'ui/message']);

/** BUNDLE is a folder app's base: where the relay serves its files (internal/core/server AppFilesPath). */
const BUNDLE = /^\/app-files\/[0-9a-f]{32}\/$/;

/**
 * closePeers is the first script of every app's document, an app's and a view's alike (its
 * source is put there, with the rule as its argument): it takes WebRTC out of the app's window,
 * so an app that reaches for it is refused at once (NotAllowedError, SANDBOX_NO_NETWORK) rather
 * than left with a connection that never connects. Every RTC* interface of the window (and the
 * prefixed ones) becomes a function that throws, and every method of the originals' prototypes
 * does too, so no reference is left to build one with. It cannot reach the frames the app makes
 * (a sandboxed frame's children are opaque origins of their own): there the bridge's
 * Connection-Allowlist holds, where the browser honours it (SECURITY.md).
 * @param {string} rule
 */
function closePeers(rule) {
  const why = `${rule}: a sandboxed app gets no network, and WebRTC is network`;
  const refuse = function () { throw new DOMException(why, 'NotAllowedError'); };
  const g = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (globalThis));
  for (const name of Object.getOwnPropertyNames(g)) {
    if (!/^(webkit|moz)?RTC/.test(name)) continue;
    const original = g[name];
    const proto = typeof original === 'function' ? original.prototype : null;
    if (proto) {
      for (const key of Object.getOwnPropertyNames(proto)) {
        const d = Object.getOwnPropertyDescriptor(proto, key);
        if (key !== 'constructor' && d && typeof d.value === 'function') Object.defineProperty(proto, key, { value: refuse });
      }
    }
    Object.defineProperty(g, name, { value: refuse, writable: false, configurable: false, enumerable: false });
  }
}

/** DOCTYPE finds the app's doctype (after a BOM, spaces and comments): the SDK goes right after it. */
const DOCTYPE = /^(\uFEFF?\s*(?:<!--[\s\S]*?-->\s*)*<!doctype[^>]*>)/i;

(() => {
  if (window.parent === window) return;
  document.documentElement.style.height = '100%';
  document.body.style.cssText = 'margin:0;height:100%;overflow:hidden';
  const host = window.parent;
  const hostOrigin = pageOrigin();
  const encoder = new TextEncoder();

  // pageOrigin is the origin the page said it has (?host=), when it is an origin; the bridge's
  // own otherwise (a bridge on the page's own host).
  function pageOrigin() {
    const said = new URLSearchParams(location.search).get('host');
    try {
      if (said && new URL(said).origin === said) return said;
    } catch { /* not a URL */ }
    return location.origin;
  }

  /** @type {HTMLIFrameElement | null} */
  let inner = null;
  let loads = 0; // load events of the current inner frame
  let generation = 0; // one per document shown in it
  let shaken = false; // the current document has its port
  /** @type {MessagePort | null} */
  let port = null;
  /** @type {Set<string>} */
  let names = new Set(); // tools of the current document, offered or registered
  /** @type {Map<unknown, {timer: number}>} */
  const calls = new Map(); // callId -> its timer, for the host's calls sent to the current document
  // The MCP Apps adapter: what the page gave for the view (its host context, the tool's input
  // and result), whether the current document initialised, and its requests the page serves.
  /** @type {{hostContext?: object, input?: object, result?: object, csp?: object}} */
  let mcpView = {};
  let mcpInitialized = false;
  /** @type {Map<string | number, number>} request id -> timer */
  const mcpPending = new Map();
  /** @type {{id: string | number, method: string, params: object}[]} requests held until the view is initialized */
  const mcpEarly = [];
  let teardownSeq = 0;
  // A view's own tools (ext-apps onlisttools/oncalltool): whether it declared them
  // (appCapabilities.tools), the names it listed (also in names, for the same limits), and the
  // requests the bridge sent it: request id -> the host's callId (tools/call) or null (tools/list).
  let viewTools = false;
  let viewNames = new Set();
  /** @type {Map<string, unknown>} */
  const viewRequests = new Map();
  let viewSeq = 0;

  // The message budget.
  const budget = new MessageBudget();
  let credits = 0; // answers the app owes: one per call sent to it, not charged
  let stopped = false; // the app went over its budget: nothing of it is read again
  let dropped = 0; // messages dropped, in all
  /** @type {{why: string, what: string}[]} the first MAX_SAMPLES dropped */
  const samples = [];
  let reportQueued = false;

  /**
   * @param {object} msg
   * @param {Transferable[]} [transfer]
   */
  const toHost = (msg, transfer) => host.postMessage(msg, hostOrigin, transfer || []);

  // charge charges one message of the app, data as received at (its event's timeStamp: when it
  // arrived, not when the bridge got to it; now for a reload, which has no message), owed: an
  // answer it owed, which is not counted; it reports whether it is within the budget; the one
  // over it stops the app.
  /**
   * @param {unknown} data
   * @param {boolean} [owed]
   * @param {number} [at]
   */
  function charge(data, owed = false, at = performance.now()) {
    if (stopped) return false;
    const over = budget.charge(data, owed, at);
    if (!over) return true;
    stop(over);
    return false;
  }

  // stop ends the app for good: its port, its calls and its frame. Only the host starts it again.
  /** @param {string} why */
  function stop(why) {
    stopped = true;
    retire(`the mini-app was stopped: ${why}`);
    if (inner) inner.remove();
    inner = null;
    toHost({ type: 'over_budget', why, messages: budget.count, bytes: budget.bytes });
  }

  // drop counts a message dropped (describing the first MAX_SAMPLES: why, and its type), and
  // tells the host the count at most every DROP_REPORT_MS.
  /**
   * @param {string} why
   * @param {unknown} data
   */
  function drop(why, data) {
    dropped++;
    if (samples.length < MAX_SAMPLES) samples.push({ why, what: describe(data) });
    if (reportQueued || stopped) return;
    reportQueued = true;
    setTimeout(() => {
      reportQueued = false;
      toHost({ type: 'dropped', count: dropped, samples });
    }, DROP_REPORT_MS);
  }

  /**
   * describe names a dropped message in a few words: its type, method or channel field.
   * @param {unknown} data
   */
  function describe(data) {
    if (!data || typeof data !== 'object') return typeof data;
    const d = /** @type {Record<string, unknown>} */ (data);
    for (const key of ['type', 'method', 'channel']) {
      if (typeof d[key] === 'string') return `${key} ${JSON.stringify(String(d[key]).slice(0, 60))}`;
    }
    return `an object with ${Object.keys(d).slice(0, 4).join(', ') || 'no fields'}`;
  }

  /**
   * @param {unknown} callId
   * @param {object} msg
   */
  function answer(callId, msg) {
    const c = calls.get(callId);
    if (c === undefined) return false; // answered already, or never sent here
    clearTimeout(c.timer);
    calls.delete(callId);
    toHost({ type: 'tool_result', callId, ...msg });
    return true;
  }

  // retire ends the current document's port and answers its calls: a new document starts clean.
  /** @param {string} why */
  function retire(why) {
    if (port) {
      port.onmessage = null;
      port.close();
      port = null;
    }
    for (const callId of [...calls.keys()]) answer(callId, { refused: 'mini-app-closed', why });
    names = new Set();
    viewNames = new Set();
    viewTools = false;
    viewRequests.clear();
    shaken = false;
    credits = 0;
    mcpInitialized = false;
    mcpEarly.length = 0;
    for (const [id, timer] of mcpPending) {
      clearTimeout(timer);
      mcpPending.delete(id);
    }
  }

  /**
   * @param {string} html
   * @param {string} sdk
   */
  function inject(html, sdk) {
    const rule = WEBMCP_TOOL_NAME.source.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
    let script = `<script>(${closePeers})(${JSON.stringify(SANDBOX_NO_NETWORK)})</` + 'script>';
    if (sdk) script += `<script data-tool-name="${rule}" data-max-argument-bytes="${MAX_ARGUMENT_BYTES}">${sdk}\n</` + 'script>';
    const m = DOCTYPE.exec(html);
    return m ? m[1] + script + html.slice(m[1].length) : script + html;
  }

  /**
   * @param {string} html
   * @param {string} sdk
   * @param {string} base a folder app's bundle, '' for a single-file app
   * @param {any} [view] an MCP Apps view's host context, tool input and result
   */
  function load(html, sdk, base, view) {
    if (stopped) return;
    mcpView = view && typeof view === 'object' ? view : {};
    // The app's document is a srcdoc, whose relative URLs resolve against this document's URL:
    // for a folder app, that is put in its bundle, so they resolve inside its folder only.
    if (BUNDLE.test(base)) history.replaceState(null, '', base);
    retire('the mini-app was reloaded before it answered');
    if (inner) inner.remove();
    loads = 0;
    generation++;
    inner = document.createElement('iframe');
    inner.id = 'inner-app';
    inner.setAttribute('sandbox', 'allow-scripts');
    inner.title = 'mini-app';
    inner.style.cssText = 'border:0;width:100%;height:100%;display:block';
    inner.addEventListener('load', () => {
      loads++;
      if (loads === 1) return;
      // The app loaded a new document in its frame (a reload or a navigation): it gets a new
      // generation, a new port once it asks, and no tools until it registers them again. Each
      // costs the host a message and the worker a reset, so it counts against the budget.
      if (!charge(null)) return;
      retire('the mini-app reloaded itself before it answered');
      generation++;
      toHost({ type: 'reloaded', generation });
      inner?.contentWindow?.postMessage({ type: 'mini_app_hello' }, '*');
    });
    // A view is no WebMCP app: it gets no SDK (only closePeers), and the MCP Apps host below.
    inner.srcdoc = inject(html, sdk);
    document.body.replaceChildren(inner);
  }

  function handshake() {
    shaken = true;
    const channel = new MessageChannel();
    port = channel.port1;
    port.onmessage = (event) => {
      const owed = credits > 0;
      if (owed) credits--;
      if (!charge(event.data, owed, event.timeStamp)) return;
      fromApp(event.data);
    };
    // The worker's port: one end to the app's document, the other to the page for the worker.
    const toWorker = new MessageChannel();
    inner?.contentWindow?.postMessage({ type: 'mini_app_port' }, '*', [channel.port2, toWorker.port1]);
    toHost({ type: 'handshake', generation }, [toWorker.port2]);
  }

  /**
   * callTool sends the app (or the view) the call callId of its tool name, within the deadline,
   * to be answered to the host.
   * @param {unknown} callId
   * @param {unknown} name
   * @param {unknown} args
   */
  function callTool(callId, name, args) {
    if (calls.has(callId)) return;
    const tool = String(name);
    if (viewNames.has(tool) && mcpInitialized) {
      // One of the view's own tools: asked as tools/call, within the same deadline.
      const id = `voicebox-call-${++viewSeq}`;
      viewRequests.set(id, callId);
      calls.set(callId, { timer: setTimeout(() => {
        if (answer(callId, { refused: 'tool-timeout', why: `tool execution timed out after ${TOOL_TIMEOUT_MS}ms` })) cancelView(callId);
      }, TOOL_TIMEOUT_MS) });
      toView({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args && typeof args === 'object' ? args : {} } });
      return;
    }
    if (!port || !names.has(tool)) {
      const refusal = { type: 'tool_result', callId, refused: 'unknown-tool', why: `the app has no tool named ${tool}` };
      toHost(refusal);
      return;
    }
    calls.set(callId, { timer: setTimeout(() => {
      if (answer(callId, { refused: 'tool-timeout', why: `tool execution timed out after ${TOOL_TIMEOUT_MS}ms` })) port?.postMessage({ type: 'cancel_call', callId });
    }, TOOL_TIMEOUT_MS) });
    credits++;
    port.postMessage({ type: 'call_tool', callId, name: tool, args });
  }

  /**
   * @param {string} name
   * @param {string} refused
   * @param {string} why
   */
  function refuseRegistration(name, refused, why) {
    port?.postMessage({ type: 'tool_refused', name, refused, why });
    toHost({ type: 'bridge_refused', name, refused, why });
  }

  /**
   * registerTool checks a tool's declaration (its name, the app's count, its size) and passes it
   * to the host, whose registry checks the rest; it reports whether it passed it on. view: the
   * view serves it (asked tools/call here), so the worker calls it through the host, not on the
   * app's port to the worker, whose SDK does not know it.
   * @param {any} tool
   * @param {boolean} [view]
   */
  function registerTool(tool, view = false) {
    const name = tool && typeof tool.name === 'string' ? tool.name : '';
    if (!WEBMCP_TOOL_NAME.test(name)) return refuseRegistration(String(name).slice(0, 80), 'invalid-tool-name', 'a tool name is 1 to 128 of a-z, A-Z, 0-9, _, - and .'), false;
    if (names.has(name)) return refuseRegistration(name, 'invalid-tool-name', `the app already has a tool named ${name}`), false;
    if (names.size >= MAX_TOOLS) return refuseRegistration(name, 'too-many-tools', `an app may register at most ${MAX_TOOLS} tools`), false;
    let text;
    try { text = JSON.stringify(tool); } catch { text = undefined; }
    if (text === undefined || encoder.encode(text).length > MAX_DECLARATION_BYTES) {
      return refuseRegistration(name, 'invalid-tool-parameters', `a declaration is JSON of at most ${MAX_DECLARATION_BYTES} bytes`), false;
    }
    names.add(name);
    toHost(view ? { type: 'register_tool', generation, tool: JSON.parse(text), view: true } : { type: 'register_tool', generation, tool: JSON.parse(text) });
    return true;
  }

  /**
   * finish answers the host's call callId with a tool's result value, within the output bound.
   * @param {unknown} callId
   * @param {unknown} result
   */
  function finish(callId, result) {
    const text = typeof result === 'string' ? result : JSON.stringify(result ?? null);
    if (text.length > MAX_OUTPUT_BYTES || encoder.encode(text).length > MAX_OUTPUT_BYTES) {
      answer(callId, { refused: 'tool-output-over-budget', why: `output over budget (max ${MAX_OUTPUT_BYTES / 1024}KB)` });
      return;
    }
    try { JSON.parse(text); } catch {
      answer(callId, { refused: 'exec-threw', why: 'the tool answered with something that is not JSON' });
      return;
    }
    answer(callId, { result: text });
  }

  /** @param {any} msg */
  function fromApp(msg) {
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'register_tool':
        registerTool(msg.tool);
        break;
      case 'unregister_tool':
        if (names.delete(String(msg.name))) toHost({ type: 'unregister_tool', generation, name: String(msg.name) });
        break;
      case 'ready':
        toHost({ type: 'app_ready', generation });
        break;
      case 'register_refused':
        // The SDK refused a declaration itself (the original's spelling goes on past it): the
        // host records it in the app's diagnostics, clipped, as the app's own word. The SDK sends
        // three strings; anything else is dropped.
        if (typeof msg.name !== 'string' || typeof msg.refused !== 'string' || typeof msg.why !== 'string') return;
        toHost({ type: 'bridge_refused', by: 'sdk', name: msg.name.slice(0, 128), refused: msg.refused.slice(0, 64), why: msg.why.slice(0, 512) });
        break;
      case 'validate_args': {
        const name = String(msg.name);
        if (!names.has(name)) {
          port?.postMessage({ type: 'validated', checkId: msg.checkId, ok: false, refused: 'unknown-tool', why: `the app has no tool named ${name.slice(0, 80)}` });
          return;
        }
        toHost({ type: 'validate_args', generation, checkId: msg.checkId, name, args: msg.args });
        break;
      }
      case 'tool_result': {
        if (!calls.has(msg.callId)) return; // late, or never asked: dropped
        if (msg.ok !== true) {
          answer(msg.callId, { refused: 'exec-threw', why: `the tool failed: ${String(msg.error).slice(0, 1000)}` });
          return;
        }
        finish(msg.callId, msg.result);
        break;
      }
      default:
        drop(`a message type the bridge does not know (${describe(msg)})`, msg);
    }
  }

  // ---- the MCP Apps adapter ----

  /** @param {object} msg */
  const toView = (msg) => inner?.contentWindow?.postMessage(msg, '*');

  /**
   * @param {string | number} id
   * @param {number} code
   * @param {string} message
   */
  function mcpError(id, code, message) {
    toView({ jsonrpc: '2.0', id, error: { code, message } });
  }

  /** listViewTools asks the view for its tools (tools/list); listed takes the answer. */
  function listViewTools() {
    const id = `voicebox-tools-${++viewSeq}`;
    viewRequests.set(id, null);
    toView({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
  }

  /**
   * listed makes the view's tools those of its tools/list answer: the ones gone are unregistered,
   * the new ones registered as a mini-app's are (the same checks, the host's registry after them),
   * as {name, description, inputSchema} and readOnlyHint alone of their annotations.
   * @param {any} msg
   */
  function listed(msg) {
    const all = msg.result && Array.isArray(msg.result.tools) ? msg.result.tools : [];
    if (all.length > MAX_LISTED) refuseRegistration(`${all.length} tools`, 'too-many-tools', `a view's tools/list is read up to ${MAX_LISTED} tools; an app may have at most ${MAX_TOOLS}`);
    const tools = all.slice(0, MAX_LISTED);
    /** @type {Map<string, any>} */
    const next = new Map();
    for (const t of tools) if (t && typeof t.name === 'string' && !next.has(t.name)) next.set(t.name, t);
    for (const name of [...viewNames]) {
      if (next.has(name)) continue;
      viewNames.delete(name);
      names.delete(name);
      toHost({ type: 'unregister_tool', generation, name });
    }
    for (const [name, t] of next) {
      if (viewNames.has(name)) continue;
      /** @type {Record<string, unknown>} */
      const decl = { name };
      if (typeof t.description === 'string') decl.description = t.description;
      if (t.inputSchema !== undefined) decl.inputSchema = t.inputSchema;
      if (t.annotations && t.annotations.readOnlyHint === true) decl.annotations = { readOnlyHint: true };
      if (registerTool(decl, true)) viewNames.add(name);
    }
  }

  /**
   * called answers the host's call callId with the view's tools/call answer: an error or an
   * isError result is a refusal (exec-threw) with its text, a result the CallToolResult itself.
   * @param {unknown} callId
   * @param {any} msg
   */
  function called(callId, msg) {
    if (msg.error) {
      answer(callId, { refused: 'exec-threw', why: `the view's tool failed: ${String(msg.error.message).slice(0, 1000)}` });
      return;
    }
    const r = msg.result && typeof msg.result === 'object' ? msg.result : {};
    if (r.isError) {
      const text = Array.isArray(r.content) ? r.content.map((/** @type {any} */ c) => (c && c.type === 'text' ? String(c.text) : '')).join(' ') : '';
      answer(callId, { refused: 'exec-threw', why: `the view's tool failed: ${text.slice(0, 1000)}` });
      return;
    }
    finish(callId, r);
  }

  /**
   * cancelView tells the view the host no longer waits for its answer to callId.
   * @param {unknown} callId
   */
  function cancelView(callId) {
    for (const [id, c] of viewRequests) {
      if (c !== callId || c === null) continue;
      viewRequests.delete(id);
      toView({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'the host stopped waiting' } });
    }
  }

  /**
   * fromView serves a JSON-RPC message of the view in the inner frame (charged already).
   * @param {any} msg
   */
  function fromView(msg) {
    const method = typeof msg.method === 'string' ? msg.method : '';
    const isRequest = method !== '' && (typeof msg.id === 'string' || typeof msg.id === 'number');
    if (!method) {
      // An answer: to tools/list or tools/call of the view's own tools, or ui/resource-teardown.
      if (viewRequests.has(msg.id)) {
        const callId = viewRequests.get(msg.id);
        viewRequests.delete(msg.id);
        if (callId === null) listed(msg);
        else called(callId, msg);
        return;
      }
      if (mcpPending.has(msg.id) && String(msg.id).startsWith('voicebox-teardown-')) {
        clearTimeout(mcpPending.get(msg.id));
        mcpPending.delete(msg.id);
        toHost({ type: 'torn_down', generation });
      } else drop('an answer to nothing the bridge asked', msg);
      return;
    }
    if (!isRequest) {
      switch (method) {
        case 'ui/notifications/initialized':
          if (mcpInitialized) return;
          mcpInitialized = true;
          toHost({ type: 'mcp_initialized', generation });
          if (mcpView.input) toView({ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: mcpView.input } });
          if (mcpView.result) toView({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: mcpView.result });
          if (viewTools) listViewTools();
          // What the view asked before its handshake ended is served now, in its order.
          for (const r of mcpEarly.splice(0)) toHost({ type: 'mcp_request', generation, id: r.id, method: r.method, params: r.params });
          return;
        case 'notifications/tools/list_changed':
          if (viewTools && mcpInitialized) listViewTools();
          return;
        case 'ui/notifications/size-changed': {
          const p = msg.params || {};
          toHost({ type: 'mcp_size', generation, width: Number(p.width) || 0, height: Number(p.height) || 0 });
          return;
        }
        case 'ui/notifications/request-teardown':
          toHost({ type: 'mcp_request_teardown', generation });
          return;
        case 'notifications/message':
          return; // the view's log: taken, not shown
        case 'notifications/cancelled': {
          // The view stopped waiting for one of its requests (the ext-apps SDK sends this when a
          // call's signal aborts or its own timeout passes): the page stops serving it (a call
          // waiting for the person's approval is withdrawn) and the view gets no answer, as MCP
          // says of a cancelled request.
          const p = msg.params && typeof msg.params === 'object' ? msg.params : {};
          const rid = p.requestId;
          if ((typeof rid !== 'string' && typeof rid !== 'number') || !mcpPending.has(rid) || String(rid).startsWith('voicebox-teardown-')) {
            drop('a cancellation of no request the host serves', msg);
            return;
          }
          clearTimeout(mcpPending.get(rid));
          mcpPending.delete(rid);
          // A request still held never reached the page: it is only forgotten.
          if (!unhold(rid)) toHost({ type: 'mcp_cancel', generation, id: rid });
          return;
        }
        default:
          drop(`a notification the MCP Apps host does not take (${method.slice(0, 60)})`, msg);
          return;
      }
    }
    const id = msg.id;
    switch (method) {
      case 'ui/initialize':
        viewTools = !!(msg.params && msg.params.appCapabilities && msg.params.appCapabilities.tools);
        toHost({ type: 'mcp_initialize', generation, appInfo: msg.params && msg.params.appInfo });
        toView({
          jsonrpc: '2.0', id, result: {
            protocolVersion: MCP_APPS_VERSION,
            hostInfo: { name: 'Voicebox', version: '1' },
            // sandbox.csp: the origins of the view's declaration it is given (the relay's
            // intersection with the extension's hosts), which this bridge's policy already holds.
            hostCapabilities: { openLinks: {}, serverTools: {}, logging: {}, message: { text: {} }, sandbox: { csp: mcpView.csp && typeof mcpView.csp === 'object' ? mcpView.csp : {} } },
            hostContext: mcpView.hostContext || {},
          },
        });
        return;
      case 'ping':
        toView({ jsonrpc: '2.0', id, result: {} });
        return;
      case 'ui/request-display-mode':
        toView({ jsonrpc: '2.0', id, result: { mode: 'inline' } });
        return;
    }
    if (!MCP_PAGE_METHODS.has(method)) {
      mcpError(id, -32601, `Method not found: ${method.slice(0, 80)}`);
      return;
    }
    if (mcpPending.has(id)) {
      mcpError(id, -32600, 'a request id already waiting');
      return;
    }
    if (!mcpInitialized && mcpEarly.length >= MAX_EARLY_VIEW_REQUESTS) {
      mcpError(id, -32600, `${method} before ui/notifications/initialized, past the ${MAX_EARLY_VIEW_REQUESTS} requests held until then`);
      return;
    }
    mcpPending.set(id, setTimeout(() => {
      if (!mcpPending.delete(id)) return;
      if (unhold(id)) {
        mcpError(id, -32603, `the view did not say ui/notifications/initialized within ${MCP_CALL_MS} ms of ${method}`);
        return;
      }
      mcpError(id, -32603, `the host did not answer ${method} within ${MCP_CALL_MS} ms`);
      toHost({ type: 'mcp_cancel', generation, id }); // nobody waits for it now: the page stops it
    }, MCP_CALL_MS));
    const params = msg.params && typeof msg.params === 'object' ? msg.params : {};
    // A request before the handshake ends waits for it (bounded in number and by its timer).
    if (!mcpInitialized) mcpEarly.push({ id, method, params });
    else toHost({ type: 'mcp_request', generation, id, method, params });
  }

  /**
   * unhold forgets the held request id, if it is held; it says whether it was.
   * @param {string | number} id
   */
  function unhold(id) {
    const at = mcpEarly.findIndex((r) => r.id === id);
    if (at < 0) return false;
    mcpEarly.splice(at, 1);
    return true;
  }

  /** @param {any} msg */
  function fromHost(msg) {
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'load':
        load(String(msg.html), String(msg.sdk || ''), String(msg.base || ''), msg.view);
        break;
      case 'mcp_answer': {
        if (msg.generation !== generation) return;
        const timer = mcpPending.get(msg.id);
        if (timer === undefined) return;
        clearTimeout(timer);
        mcpPending.delete(msg.id);
        if (msg.error) mcpError(msg.id, Number(msg.error.code) || -32603, String(msg.error.message || 'the host could not serve this'));
        else toView({ jsonrpc: '2.0', id: msg.id, result: msg.result ?? {} });
        break;
      }
      case 'teardown': {
        // Ask the view to tear down, then tell the page, whatever the view does.
        const id = `voicebox-teardown-${++teardownSeq}`;
        const done = () => { if (mcpPending.delete(id)) toHost({ type: 'torn_down', generation }); };
        if (!mcpInitialized || !inner) { toHost({ type: 'torn_down', generation }); return; }
        mcpPending.set(id, setTimeout(done, MCP_TEARDOWN_MS));
        toView({ jsonrpc: '2.0', id, method: 'ui/resource-teardown', params: {} });
        break;
      }
      case 'host_context':
        if (mcpInitialized && msg.hostContext) toView({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed', params: msg.hostContext });
        break;
      case 'validated':
        if (msg.generation !== generation || !port) return;
        port.postMessage({ type: 'validated', checkId: msg.checkId, ok: !!msg.ok, args: msg.args, refused: msg.refused, why: msg.why });
        break;
      case 'registered':
        if (msg.generation !== generation) return;
        if (!msg.ok) {
          names.delete(msg.name);
          viewNames.delete(msg.name);
        }
        if (!port) return;
        if (msg.ok) port.postMessage({ type: 'tool_registered', name: msg.name });
        else port.postMessage({ type: 'tool_refused', name: msg.name, refused: msg.refused, why: msg.why });
        break;
      case 'call_tool':
        callTool(msg.callId, msg.name, msg.args);
        break;
      case 'cancel':
        if (answer(msg.callId, { refused: 'tool-timeout', why: 'the host stopped waiting for this call' })) {
          port?.postMessage({ type: 'cancel_call', callId: msg.callId });
          cancelView(msg.callId);
        }
        break;
    }
  }

  // The source is checked first, and nothing else is read from a message that is not the host's
  // or the app's one handshake, so a flood costs a comparison and a count per message.
  window.addEventListener('message', (event) => {
    if (event.source === host) {
      if (event.origin === hostOrigin) fromHost(event.data);
      return;
    }
    // The view's answer to a request the bridge sent it (its own tools) is owed, not charged.
    const owed = inner && event.source === inner.contentWindow && event.data && typeof event.data === 'object' &&
      event.data.jsonrpc === '2.0' && event.data.method === undefined && viewRequests.has(event.data.id);
    if (!charge(event.data, owed, event.timeStamp)) {
      dropped++;
      return;
    }
    if (inner && event.source === inner.contentWindow) {
      const msg = event.data;
      if (!shaken && msg && msg.type === 'mini_app_ready') {
        handshake();
        return;
      }
      if (msg && typeof msg === 'object' && msg.jsonrpc === '2.0') {
        fromView(msg);
        return;
      }
    }
    drop(NOT_ON_PORT, samples.length < MAX_SAMPLES ? event.data : undefined);
  });

  toHost({ type: 'bridge_ready' });
})();
