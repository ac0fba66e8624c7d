// @ts-check
// The mini-apps' host decisions without the DOM: why an app is stopped, which running app a
// message's window belongs to, where an app's bridge is framed, and how an MCP Apps view's
// requests are read (its tool calls, links, messages and size) and its answers written. Pure
// functions of their arguments, so Node's test runner holds them without a browser
// (tools/web/test); mini-apps.js keeps the tray, the cards and the frames.
import { MESSAGE_BUDGET_EXCEEDED, TOOL_TIMEOUT_MS } from './rules.js';

/** MAX_FRAME_DEPTH bounds the walk from a message's source window up to the bridge it is in. */
export const MAX_FRAME_DEPTH = 8;
/** MAX_VIEW_HEIGHT bounds the height (px) an MCP Apps view may ask its frame for. */
export const MAX_VIEW_HEIGHT = 1200;
/** MIN_VIEW_HEIGHT is the least height (px) a view's frame keeps. */
export const MIN_VIEW_HEIGHT = 80;
/** MAX_IGNORED_SHOWN bounds the samples of ignored messages an app's card keeps from its bridge. */
export const MAX_IGNORED_SHOWN = 5;
/** MAX_MESSAGE_TEXT bounds the text a view's ui/message puts in the command box. */
export const MAX_MESSAGE_TEXT = 2000;

/**
 * StopReason is why an app was stopped; spent, for its message budget, what it had sent in the
 * window when it was (counted where the budget stopped it: the bridge or the page).
 * @typedef {{rule: string, why: string, spent?: {messages: number, bytes: number}}} StopReason
 */
/** @typedef {{connectDomains?: string[], resourceDomains?: string[], frameDomains?: string[], baseUriDomains?: string[]}} ViewCSP */

/**
 * overBudget is why an app that passed its message budget is stopped, with what it had spent.
 * @param {string} why
 * @param {unknown} messages
 * @param {unknown} bytes
 * @returns {StopReason}
 */
export function overBudget(why, messages, bytes) {
  return { rule: MESSAGE_BUDGET_EXCEEDED, why, spent: { messages: Number(messages) || 0, bytes: Number(bytes) || 0 } };
}

/**
 * timedOut is why an app whose tool did not answer in time is stopped.
 * @param {string} tool
 * @returns {StopReason}
 */
export function timedOut(tool) {
  return { rule: 'tool-timeout', why: `its tool ${tool} did not answer within ${TOOL_TIMEOUT_MS} ms` };
}

/**
 * ownerOf returns what owners holds for source (a bridge's window) or for the nearest of at most
 * MAX_FRAME_DEPTH windows above it, or null; the answer is kept for source, so every later
 * message from it costs one lookup. A window that throws when its parent is read owns nothing.
 * @template T
 * @param {WeakMap<object, T | null>} owners
 * @param {unknown} source
 * @returns {T | null}
 */
export function ownerOf(owners, source) {
  if (!source || typeof source !== 'object') return null;
  let found = owners.get(source);
  if (found !== undefined) return found;
  found = null;
  try {
    /** @type {any} */
    let w = source;
    for (let i = 0; i < MAX_FRAME_DEPTH && !found; i++) {
      const up = w.parent;
      if (!up || up === w) break;
      found = owners.get(up) || null;
      w = up;
    }
  } catch {
    found = null;
  }
  owners.set(source, found);
  return found;
}

/**
 * appHosts says whether each app gets a host of its own: a page opened on 127.0.0.1 or
 * localhost over http.
 * @param {{protocol: string, hostname: string}} loc the page's location
 */
export function appHosts(loc) {
  return loc.protocol === 'http:' && (loc.hostname === '127.0.0.1' || loc.hostname === 'localhost');
}

/**
 * appHost is an app host made of 8 random bytes: app-<16 hex>.localhost on the page's port.
 * @param {Uint8Array} bytes
 * @param {string} port the page's port ('' for the default)
 */
export function appHost(bytes, port) {
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `app-${hex}.localhost${port ? ':' + port : ''}`;
}

/**
 * bridgeURL is the address an app's bridge is framed at: on origin, told the page's origin, with
 * a folder app's bundle token and a view's policy token when it has them.
 * @param {string} origin the bridge's origin
 * @param {string} page the page's origin
 * @param {string} [files] a folder app's bundle token
 * @param {string} [policy] an MCP Apps view's policy token
 */
export function bridgeURL(origin, page, files, policy) {
  const f = files ? `&files=${files}` : '';
  const p = policy ? `&view=${encodeURIComponent(policy)}` : '';
  return `${origin}/mini-app-bridge.html?host=${encodeURIComponent(page)}${f}${p}`;
}

/**
 * viewAppId is the app id an MCP Apps view is shown under: its extension and server tool, in the
 * characters an app id may hold.
 * @param {string} extension
 * @param {string} serverTool
 */
export function viewAppId(extension, serverTool) {
  return `view-${extension}-${serverTool}`.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 100);
}

/**
 * viewHeight is the height a view's frame takes for its size change, or null for one it ignores.
 * @param {unknown} asked
 */
export function viewHeight(asked) {
  const height = Math.round(Number(asked));
  if (!(height > 0)) return null;
  return Math.min(MAX_VIEW_HEIGHT, Math.max(MIN_VIEW_HEIGHT, height));
}

/**
 * bridgeIgnored reads the bridge's report of the app's messages it dropped: the count, when it
 * is one, and the first few samples, each cut.
 * @param {any} msg
 * @returns {{count: number | null, samples: {why: string, what: string}[] | null}}
 */
export function bridgeIgnored(msg) {
  return {
    count: Number.isSafeInteger(msg.count) ? msg.count : null,
    samples: Array.isArray(msg.samples)
      ? msg.samples.slice(0, MAX_IGNORED_SHOWN).map((/** @type {any} */ x) => ({ why: String(x && x.why).slice(0, 300), what: String(x && x.what).slice(0, 100) }))
      : null,
  };
}

/**
 * viewCall reads a view's tools/call as the relay's turn action: a view's call goes to its own
 * extension (the prefix is the page's, never the view's), a mini-app's to the assistant's
 * catalogue; or the JSON-RPC error it is answered with.
 * @param {{extension: string} | null | undefined} mcp the view's extension, none for a mini-app
 * @param {any} params
 * @returns {{action: Record<string, unknown>} | {error: {code: number, message: string}}}
 */
export function viewCall(mcp, params) {
  const name = typeof params.name === 'string' ? params.name : '';
  const args = params.arguments && typeof params.arguments === 'object' && !Array.isArray(params.arguments) ? params.arguments : {};
  if (!name) return { error: { code: -32602, message: 'tools/call needs a tool name' } };
  return {
    action: mcp
      ? { verb: 'call_extension', extension: mcp.extension, name: `${mcp.extension}__${name}`, arguments: JSON.stringify(args) }
      : { verb: name, ...args },
  };
}

/**
 * openLink reads a view's ui/open-link: an http or https URL, or the error it is answered with.
 * @param {any} params
 * @returns {{url: URL} | {error: {code: number, message: string}}}
 */
export function openLink(params) {
  let url;
  try { url = new URL(String(params.url)); } catch { return { error: { code: -32602, message: 'ui/open-link needs an absolute URL' } }; }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { error: { code: -32602, message: 'ui/open-link opens http and https links only' } };
  return { url };
}

/**
 * messageText is the text of a view's ui/message: its text blocks, joined, cut at MAX_MESSAGE_TEXT.
 * @param {any} params
 */
export function messageText(params) {
  /** @type {any[]} */
  const blocks = Array.isArray(params.content) ? params.content : [];
  return blocks.filter((b) => b && b.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n').slice(0, MAX_MESSAGE_TEXT);
}

/**
 * toolResult turns a relay turn's result into an MCP CallToolResult: a remote MCP tool's text,
 * media and structured content as they came, anything else as its JSON text.
 * @param {unknown} result
 */
export function toolResult(result) {
  /** @type {any} */
  let r = result;
  if (typeof r === 'string') {
    try { r = JSON.parse(r); } catch { return { content: [{ type: 'text', text: r }] }; }
  }
  if (r && typeof r === 'object' && typeof r.text === 'string' && typeof r.server === 'string') {
    /** @type {object[]} */
    const content = [{ type: 'text', text: r.text }];
    for (const m of Array.isArray(r.media) ? r.media : []) content.push({ type: m.kind === 'audio' ? 'audio' : 'image', mimeType: m.mimeType, data: m.data });
    return r.structuredContent === undefined ? { content } : { content, structuredContent: r.structuredContent };
  }
  return { content: [{ type: 'text', text: JSON.stringify(r) }] };
}

/**
 * turnAnswer is a view's tools/call answer from the relay's turn t: its result, or its refusal
 * as an error result.
 * @param {any} t
 */
export function turnAnswer(t) {
  if (!t.ok) return { result: { content: [{ type: 'text', text: `${t.refused}: ${t.why}` }], isError: true } };
  return { result: toolResult(t.result) };
}

/**
 * cspGiven is every origin a view declared and was given, once.
 * @param {ViewCSP} csp
 */
export function cspGiven(csp) {
  return [...new Set([...(csp.connectDomains || []), ...(csp.resourceDomains || []), ...(csp.frameDomains || []), ...(csp.baseUriDomains || [])])];
}

/**
 * noToolsText says, in words, why the assistant cannot drive an app with no tools: it is still
 * loading, it is a page that offers none, or it loaded and registered none.
 * @param {string} kind the store entry's kind
 * @param {boolean} ready whether the app said it is ready
 * @param {boolean} waited whether a tool call's time passed since it loaded
 */
export function noToolsText(kind, ready, waited) {
  return !ready && !waited && kind !== 'page'
    ? 'Waiting for the app to register its tools…'
    : `${kind === 'page' ? 'This page' : 'This app'} registered no tools, so the assistant cannot use it; you can still use it here. An app offers tools with webMcp.registerTool (or document.modelContext.registerTool).`;
}

/** @typedef {{result: unknown} | {refused: string, why: string}} CallAnswer */

/**
 * Calls is the calls of the worker the page carries to an app (one with no port to the worker,
 * an MCP Apps view), by call id: each is answered to the worker exactly once, by the app, by its
 * deadline, or when its app closes or stops; a call the worker stopped waiting for is forgotten
 * unanswered.
 * @template A the app a call went to
 */
export class Calls {
  /** @param {(callId: string, answer: CallAnswer) => void} answer tells the worker */
  constructor(answer) {
    this.answer = answer;
    /** @type {Map<string, {app: A, tool: string, timer: ReturnType<typeof setTimeout>}>} */
    this.waiting = new Map();
  }

  /**
   * open records a call to app's tool; when ms pass unanswered, it is answered tool-timeout and
   * then expired runs (which stops the app).
   * @param {string} callId
   * @param {A} app
   * @param {string} tool
   * @param {number} ms
   * @param {() => void} expired
   */
  open(callId, app, tool, ms, expired) {
    const timer = setTimeout(() => {
      this.settle(callId, { refused: 'tool-timeout', why: `tool execution timed out after ${ms}ms` });
      expired();
    }, ms);
    this.waiting.set(callId, { app, tool, timer });
  }

  /**
   * get is the app and tool of the call callId while it waits.
   * @param {string} callId
   */
  get(callId) {
    const c = this.waiting.get(callId);
    return c ? { app: c.app, tool: c.tool } : undefined;
  }

  /**
   * settle answers the call callId, if it waits, and reports whether it did.
   * @param {string} callId
   * @param {CallAnswer} answer
   */
  settle(callId, answer) {
    const c = this.waiting.get(callId);
    if (!c) return false;
    clearTimeout(c.timer);
    this.waiting.delete(callId);
    this.answer(callId, answer);
    return true;
  }

  /**
   * forget drops the call callId unanswered (the worker stopped waiting) and returns its app and
   * tool, or undefined when it was not waiting.
   * @param {string} callId
   */
  forget(callId) {
    const c = this.waiting.get(callId);
    if (!c) return undefined;
    clearTimeout(c.timer);
    this.waiting.delete(callId);
    return { app: c.app, tool: c.tool };
  }

  /**
   * settleApp answers every call waiting on app with answer.
   * @param {A} app
   * @param {CallAnswer} answer
   */
  settleApp(app, answer) {
    for (const [callId, c] of this.waiting) if (c.app === app) this.settle(callId, answer);
  }
}
