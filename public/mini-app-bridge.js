// @ts-check
// The mini-app bridge: the outer frame, on the page's own origin, between the host page and the
// inner frame where the app runs (sandbox="allow-scripts": an opaque origin). The relay serves
// this document with connect-src 'none', and the inner srcdoc frame inherits that policy, so the
// app's code runs but reaches no network.
//
// It takes messages from its parent only when they come from the parent window on this origin,
// and from the app only as: one mini_app_ready per document, from the inner frame's window,
// answered with a fresh MessagePort; everything after that travels over the port. It bounds every
// call again (5,000 ms, 64 KiB of output) whatever the host does, and answers each call once.
// The bounds and the tool name rule come from rules.js, generated from the Go constants.
import { MAX_DECLARATION_BYTES, MAX_OUTPUT_BYTES, MAX_TOOLS_PER_APP as MAX_TOOLS, TOOL_TIMEOUT_MS } from './rules.js';
import { validToolName } from './names.js';

/** DOCTYPE finds the app's doctype (after a BOM, spaces and comments): the SDK goes right after it. */
const DOCTYPE = /^(\uFEFF?\s*(?:<!--[\s\S]*?-->\s*)*<!doctype[^>]*>)/i;

(() => {
  if (window.parent === window) return;
  document.documentElement.style.height = '100%';
  document.body.style.cssText = 'margin:0;height:100%;overflow:hidden';
  const host = window.parent;
  const origin = location.origin;
  const encoder = new TextEncoder();

  /** @type {HTMLIFrameElement | null} */
  let inner = null;
  let loads = 0; // load events of the current inner frame
  let generation = 0; // one per document shown in it
  let shaken = false; // the current document has its port
  /** @type {MessagePort | null} */
  let port = null;
  /** @type {Set<string>} */
  let names = new Set(); // tools of the current document, offered or registered
  /** @type {Map<unknown, number>} */
  const calls = new Map(); // callId -> timer, for calls sent to the current document

  /** @param {object} msg */
  const toHost = (msg) => host.postMessage(msg, origin);

  /**
   * @param {unknown} callId
   * @param {object} msg
   */
  function answer(callId, msg) {
    const timer = calls.get(callId);
    if (timer === undefined) return false; // answered already, or never sent here
    clearTimeout(timer);
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
    shaken = false;
  }

  /**
   * @param {string} html
   * @param {string} sdk
   */
  function inject(html, sdk) {
    const script = `<script>${sdk}\n</` + 'script>';
    const m = DOCTYPE.exec(html);
    return m ? m[1] + script + html.slice(m[1].length) : script + html;
  }

  /**
   * @param {string} html
   * @param {string} sdk
   */
  function load(html, sdk) {
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
      // generation, a new port once it asks, and no tools until it registers them again.
      retire('the mini-app reloaded itself before it answered');
      generation++;
      toHost({ type: 'reloaded', generation });
      inner?.contentWindow?.postMessage({ type: 'mini_app_hello' }, '*');
    });
    inner.srcdoc = inject(html, sdk);
    document.body.replaceChildren(inner);
  }

  function handshake() {
    if (shaken) {
      toHost({ type: 'dropped', from: 'app', kind: 'repeated mini_app_ready' });
      return;
    }
    shaken = true;
    const channel = new MessageChannel();
    port = channel.port1;
    port.onmessage = (event) => fromApp(event.data);
    inner?.contentWindow?.postMessage({ type: 'mini_app_port' }, '*', [channel.port2]);
    toHost({ type: 'handshake', generation });
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

  /** @param {any} msg */
  function fromApp(msg) {
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'register_tool': {
        const tool = msg.tool;
        const name = tool && typeof tool.name === 'string' ? tool.name : '';
        if (!validToolName(name)) return refuseRegistration(String(name).slice(0, 80), 'invalid-tool-name', 'a tool name is 1 to 64 of a-z, A-Z, 0-9, _ and -');
        if (names.has(name)) return refuseRegistration(name, 'invalid-tool-name', `the app already has a tool named ${name}`);
        if (names.size >= MAX_TOOLS) return refuseRegistration(name, 'too-many-tools', `an app may register at most ${MAX_TOOLS} tools`);
        let text;
        try { text = JSON.stringify(tool); } catch { text = undefined; }
        if (text === undefined || encoder.encode(text).length > MAX_DECLARATION_BYTES) {
          return refuseRegistration(name, 'invalid-tool-parameters', `a declaration is JSON of at most ${MAX_DECLARATION_BYTES} bytes`);
        }
        names.add(name);
        toHost({ type: 'register_tool', generation, tool: JSON.parse(text) });
        break;
      }
      case 'unregister_tool':
        if (names.delete(String(msg.name))) toHost({ type: 'unregister_tool', generation, name: String(msg.name) });
        break;
      case 'ready':
        toHost({ type: 'app_ready', generation });
        break;
      case 'tool_result': {
        if (!calls.has(msg.callId)) return; // late, or never asked: dropped
        if (msg.ok !== true) {
          answer(msg.callId, { refused: 'exec-threw', why: `the tool failed: ${String(msg.error).slice(0, 1000)}` });
          return;
        }
        const text = typeof msg.result === 'string' ? msg.result : JSON.stringify(msg.result ?? null);
        if (text.length > MAX_OUTPUT_BYTES || encoder.encode(text).length > MAX_OUTPUT_BYTES) {
          answer(msg.callId, { refused: 'tool-output-over-budget', why: `output over budget (max ${MAX_OUTPUT_BYTES / 1024}KB)` });
          return;
        }
        try { JSON.parse(text); } catch {
          answer(msg.callId, { refused: 'exec-threw', why: 'the tool answered with something that is not JSON' });
          return;
        }
        answer(msg.callId, { result: text });
        break;
      }
    }
  }

  /** @param {any} msg */
  function fromHost(msg) {
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'load':
        load(String(msg.html), String(msg.sdk));
        break;
      case 'registered':
        if (msg.generation !== generation || !port) return;
        if (msg.ok) port.postMessage({ type: 'tool_registered', name: msg.name });
        else {
          names.delete(msg.name);
          port.postMessage({ type: 'tool_refused', name: msg.name, refused: msg.refused, why: msg.why });
        }
        break;
      case 'call_tool': {
        const { callId, name, args } = msg;
        if (calls.has(callId)) return;
        if (!port || !names.has(name)) {
          toHost({ type: 'tool_result', callId, refused: 'unknown-tool', why: `the app has no tool named ${name}` });
          return;
        }
        calls.set(callId, setTimeout(() => answer(callId, { refused: 'tool-timeout', why: `tool execution timed out after ${TOOL_TIMEOUT_MS}ms` }), TOOL_TIMEOUT_MS));
        port.postMessage({ type: 'call_tool', callId, name, args });
        break;
      }
      case 'cancel':
        answer(msg.callId, { refused: 'tool-timeout', why: 'the host stopped waiting for this call' });
        break;
    }
  }

  window.addEventListener('message', (event) => {
    if (event.source === host && event.origin === origin) {
      fromHost(event.data);
      return;
    }
    const msg = event.data;
    if (inner && event.source === inner.contentWindow && msg && msg.type === 'mini_app_ready') {
      handshake();
      return;
    }
    const from = inner && event.source === inner.contentWindow ? 'app window' : 'another frame';
    toHost({ type: 'dropped', from, kind: String(msg && msg.type).slice(0, 40) });
  });

  toHost({ type: 'bridge_ready' });
})();
