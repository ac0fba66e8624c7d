// @ts-check
// The external apps' wire, without the DOM: how each protocol's envelopes are read and written
// (ADAPTERS), whether a message of an app's frame is one the host takes, and the clamps on what an
// app sends (its tools, its context, its results). Pure functions of their arguments, so Node's
// test runner holds them without a browser (tools/web/test); external-apps.js is their one user
// in the page.
import { validToolName } from './names.js';
import * as rules from './rules.js';

/** PROTOCOL is the marker every message of our guest protocol carries (mini-app-guest.js says the same). */
export const PROTOCOL = 'voicebox-mini-app/1';
/** THUNDERBOLT_MARKER is the marker every message of Thunderbolt's guest SDK carries. */
const THUNDERBOLT_MARKER = 'thunderbolt-miniapp';
/** THUNDERBOLT_VERSIONS are the protocol versions of Thunderbolt's guest SDK the host speaks. */
const THUNDERBOLT_VERSIONS = [3];

/**
 * Init is what an adapter reads of ui/initialize: the document, what the app says it can do,
 * and who it is; or, for params the protocol does not take, why (answered -32602).
 * @typedef {{documentId: string | null, caps: {tools: boolean, context: boolean, auth: boolean},
 *   appInfo: {name: string, version: string}} | {invalid: string}} Init
 */
/**
 * Adapter is how one protocol's envelopes are read and written. marker is the protocol field its
 * messages carry (null: none); init reads ui/initialize's params, initResult writes its answer
 * from the host's, context reads ui/get-context's answer as {title, summary, selection, data},
 * callResult reads tools/call's answer as an MCP result {content, isError}, token writes an
 * identity token (the relay's {token, expiresAt: Unix ms}) as the protocol's guests read it, and
 * hostContext writes the host context (whole, or the patch ui/notifications/host-context-changed
 * carries) in the fields the protocol has. elementAt says the protocol's guests answer
 * ui/element-at (what is under a point of the frame), so the host can ask.
 * @typedef {{name: string, marker: string | null, init: (params: any) => Init,
 *   initResult: (base: Record<string, any>) => object, context: (r: any) => any, callResult: (r: any) => any,
 *   token: (t: {token: string, expiresAt: number}) => object, hostContext: (c: Record<string, unknown>) => Record<string, unknown>,
 *   elementAt?: boolean}} Adapter
 */

/**
 * msToken is an identity token as our guest library (mini-app-guest.js) and a plain JSON-RPC
 * guest read it: expiresAt in Unix milliseconds.
 * @param {{token: string, expiresAt: number}} t
 */
const msToken = (t) => ({ token: t.token, expiresAt: t.expiresAt });

/**
 * THUNDERBOLT_CONTEXT are the host context's fields Thunderbolt's guest SDK has (its HostContext).
 */
const THUNDERBOLT_CONTEXT = ['theme', 'locale', 'platform'];

/**
 * mcpInit reads ui/initialize as the MCP Apps names it (our protocol and plain JSON-RPC):
 * {appInfo: {name, version}, appCapabilities: {tools, context, auth}, documentId}.
 * @param {any} params
 * @returns {Init}
 */
export function mcpInit(params) {
  const caps = params.appCapabilities && typeof params.appCapabilities === 'object' ? params.appCapabilities : {};
  const info = params.appInfo && typeof params.appInfo === 'object' ? params.appInfo : {};
  return {
    documentId: typeof params.documentId === 'string' ? params.documentId.slice(0, 200) : null,
    caps: { tools: !!caps.tools, context: !!caps.context, auth: !!caps.auth },
    appInfo: { name: String(info.name ?? ''), version: String(info.version ?? '') },
  };
}

/** @type {Record<string, Adapter>} protocol -> its adapter */
export const ADAPTERS = {
  voicebox: {
    name: 'voicebox', marker: PROTOCOL, init: mcpInit, initResult: (base) => base, context: (r) => r, callResult: (r) => r,
    token: msToken, hostContext: (c) => ({ ...c }),
  },
  jsonrpc: {
    name: 'jsonrpc', marker: null, init: mcpInit, initResult: (base) => base, context: (r) => r, callResult: (r) => r,
    token: msToken, hostContext: (c) => ({ ...c }),
  },
  // Thunderbolt's guest SDK (its miniapps/sdk): ui/initialize {protocolVersion, appName,
  // documentId, capabilities: {context, selection, tools, auth}} answered {hostContext, auth?};
  // ui/get-context answered {context: {...} | null}; tools/call answered {content: text, isError?};
  // a token's expiresAt is ISO 8601 (the SDK's getAuthToken keeps a token while Date.parse of it
  // is more than 30 s ahead); its host context is {theme, locale, platform}, and a change of it
  // comes as ui/notifications/host-context-changed with only what moved.
  thunderbolt: {
    name: 'thunderbolt',
    marker: THUNDERBOLT_MARKER,
    init: (params) => {
      if (!THUNDERBOLT_VERSIONS.includes(params.protocolVersion)) {
        return { invalid: `protocolVersion ${JSON.stringify(params.protocolVersion)} is not one this host speaks (${THUNDERBOLT_VERSIONS.join(', ')})` };
      }
      const caps = params.capabilities && typeof params.capabilities === 'object' ? params.capabilities : {};
      return {
        documentId: typeof params.documentId === 'string' ? params.documentId.slice(0, 200) : null,
        caps: { tools: !!caps.tools, context: !!caps.context, auth: !!caps.auth },
        appInfo: { name: String(params.appName ?? ''), version: String(params.protocolVersion) },
      };
    },
    initResult: (base) => ({
      hostContext: pick(base.hostContext, THUNDERBOLT_CONTEXT),
      ...(base.auth ? { auth: base.auth } : {}),
    }),
    token: (t) => ({ token: t.token, expiresAt: new Date(t.expiresAt).toISOString() }),
    hostContext: (c) => pick(c, THUNDERBOLT_CONTEXT),
    elementAt: true,
    context: (r) => (r && typeof r === 'object' ? r.context : null),
    callResult: (r) => ({
      content: [{ type: 'text', text: r && typeof r.content === 'string' ? r.content : '' }],
      ...(r && r.isError ? { isError: true } : {}),
    }),
  },
};

/**
 * pick is the fields of c named in keys that c has.
 * @param {Record<string, unknown>} c
 * @param {string[]} keys
 */
function pick(c, keys) {
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const k of keys) if (c && Object.hasOwn(c, k)) out[k] = c[k];
  return out;
}

/**
 * contextPatch is what of the host context moved from before to now, as ui/notifications/host-context-changed
 * carries it (only the fields whose value changed; empty when none did). Both are flat records of
 * strings, as hostContext writes them.
 * @param {Record<string, unknown>} before
 * @param {Record<string, unknown>} now
 */
export function contextPatch(before, now) {
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [k, v] of Object.entries(now)) if (!before || before[k] !== v) out[k] = v;
  return out;
}

/**
 * elementOf reads an answer to ui/element-at ({element: {id, label, text, rect} | null}) as what
 * the person pointed at, {label, text} cut to LIMITS.label and LIMITS.elementText, or null when
 * nothing is there (padding, a background: a normal answer).
 * @param {any} r
 * @returns {{label: string, text: string} | null}
 */
export function elementOf(r) {
  const e = r && typeof r === 'object' ? r.element : null;
  if (!e || typeof e !== 'object' || typeof e.text !== 'string' || e.text.trim() === '') return null;
  return { label: clamp(typeof e.label === 'string' ? e.label : '', LIMITS.label), text: clamp(e.text.trim(), LIMITS.elementText) };
}

/**
 * adapterOf is the adapter of an entry's protocol (ours when it names none).
 * @param {RegistryEntry} entry
 */
export function adapterOf(entry) {
  return ADAPTERS[entry.protocol || 'voicebox'] || ADAPTERS.voicebox;
}
/**
 * LIMITS are the page's clamps on what an app sends: those the relay holds an app to as well come
 * from rules.js; the others are the page's own.
 */
export const LIMITS = Object.freeze({
  description: rules.EXTERNAL_MAX_DESCRIPTION_CHARS, tools: rules.EXTERNAL_MAX_TOOLS, toolsChanged: 20,
  title: rules.EXTERNAL_MAX_TITLE_CHARS, summary: rules.EXTERNAL_MAX_SUMMARY_CHARS, payload: rules.EXTERNAL_MAX_PAYLOAD_CHARS,
  noteSelection: rules.EXTERNAL_MAX_NOTE_SELECTION_CHARS, schema: 16000, error: 500, prompt: 2000, result: 60000, appName: 80,
  label: 80, elementText: 1500,
});

/**
 * RegistryEntry is an app the operator registered (GET /mini-apps).
 * @typedef {{id: string, name: string, description?: string, url: string, origin: string, icon?: string,
 *   capabilities: string[], protocol?: string}} RegistryEntry
 */
/** @typedef {{name: string, modelName: string, description: string, inputSchema: unknown, readOnly: boolean}} AppTool */
/** @typedef {{ok: false, refused: string, why: string}} Refusal */
/**
 * @template V
 * @typedef {{ok: true, value: V} | Refusal} Outcome
 */
/** @typedef {'approved' | 'denied' | 'timedOut' | 'navigated' | 'cancelled'} ApprovalOutcome */

/**
 * refusal is a refusal with its rule id and a sentence a person can act on.
 * @param {string} refused
 * @param {string} why
 * @returns {Refusal}
 */
export function refusal(refused, why) {
  return { ok: false, refused, why };
}

/**
 * clamp cuts a string to n code points, marking the cut.
 * @param {unknown} s
 * @param {number} n
 */
export function clamp(s, n) {
  const chars = [...String(s)];
  return chars.length <= n ? chars.join('') : chars.slice(0, n - 1).join('') + '…';
}

/**
 * jsonLength is the length of v's JSON, Infinity when it has none.
 * @param {unknown} v
 */
export function jsonLength(v) {
  try { return JSON.stringify(v ?? null).length; } catch { return Infinity; }
}

/**
 * describe names a message in a few words: its marker and method, or what it is.
 * @param {unknown} msg
 */
export function describe(msg) {
  if (!msg || typeof msg !== 'object') return typeof msg;
  const m = /** @type {Record<string, unknown>} */ (msg);
  const parts = [];
  if (typeof m.protocol === 'string') parts.push(`protocol ${JSON.stringify(clamp(m.protocol, 40))}`);
  if (typeof m.method === 'string') parts.push(`method ${JSON.stringify(clamp(m.method, 60))}`);
  else if ('id' in m) parts.push(`an answer to id ${clamp(JSON.stringify(m.id) ?? '', 20)}`);
  if (typeof m.type === 'string') parts.push(`type ${JSON.stringify(clamp(m.type, 40))}`);
  return parts.join(', ') || `an object with ${Object.keys(m).slice(0, 4).join(', ') || 'no fields'}`;
}

/** NOT_JSONRPC is why a message with the right marker (or none expected) is still not taken. */
export const NOT_JSONRPC = 'not JSON-RPC 2.0 (no "jsonrpc": "2.0")';

/**
 * unacceptable says why msg is not an envelope of the protocol adapter speaks, or '' when it is.
 * @param {Adapter} ad
 * @param {any} msg
 */
export function unacceptable(ad, msg) {
  if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return 'not a JSON-RPC message (not an object)';
  const marker = typeof msg.protocol === 'string' ? msg.protocol : null;
  if (marker !== ad.marker) {
    const known = Object.values(ADAPTERS).find((a) => a.marker !== null && a.marker === marker);
    if (known) return `wrong marker: "${known.marker}" is the ${known.name} protocol; this app is registered as ${ad.name} (set "protocol": "${known.name}" in its registry entry)`;
    if (ad.marker && marker === null) return `no marker: the ${ad.name} protocol stamps every message "protocol": "${ad.marker}"`;
    if (ad.marker) return `wrong marker: "${clamp(marker, 40)}"; the ${ad.name} protocol stamps "${ad.marker}"`;
  }
  if (msg.jsonrpc !== '2.0') return NOT_JSONRPC;
  return '';
}

/**
 * envelope is msg as adapter's protocol writes it: JSON-RPC 2.0, stamped with its marker.
 * @param {Adapter} ad
 * @param {object} msg
 */
export function envelope(ad, msg) {
  return ad.marker ? { jsonrpc: '2.0', protocol: ad.marker, ...msg } : { jsonrpc: '2.0', ...msg };
}

/**
 * answerOf reads an app's answer to the page's request for method: its result, or a refusal when
 * the app answered with an error.
 * @param {string} method
 * @param {any} msg
 * @returns {Outcome<unknown>}
 */
export function answerOf(method, msg) {
  if (msg.error && typeof msg.error === 'object') {
    return refusal('external-app-error', clamp(`the app answered ${method} with an error: ${msg.error.message}`, LIMITS.error));
  }
  return { ok: true, value: msg.result };
}

/**
 * timeoutRefusal is what a request the app did not answer within ms is refused with.
 * @param {string} method
 * @param {number} ms
 */
export function timeoutRefusal(method, ms) {
  return refusal(method === 'tools/call' ? 'tool-timeout' : 'context-unavailable', `the app did not answer ${method} within ${ms} ms`);
}

/**
 * boundPayload keeps a structured value whole when its JSON fits the payload bound, and otherwise
 * withholds it with a note saying how large it was: cut JSON is not JSON.
 * @param {unknown} v
 */
export function boundPayload(v) {
  if (v === undefined || v === null) return null;
  const n = jsonLength(v);
  if (n <= LIMITS.payload) return v;
  return { withheld: true, note: `withheld: ${n === Infinity ? 'not JSON' : `${n} characters`}, over the ${LIMITS.payload}-character bound` };
}

/**
 * contextValue is what the assistant is told an app shows, from its ui/get-context answer c read
 * by its adapter: title and summary cut, selection and data bounded. null is the app saying it
 * has nothing to report now: a refusal, never an empty view.
 * @param {{id: string, name: string}} app
 * @param {any} c
 * @returns {Outcome<object>}
 */
export function contextValue(app, c) {
  if (c === null) return refusal('context-unavailable', `${app.name} has nothing to report right now`);
  if (typeof c !== 'object') c = {};
  return {
    ok: true,
    value: {
      app: app.id, name: app.name,
      title: clamp(typeof c.title === 'string' ? c.title : '', LIMITS.title),
      summary: clamp(typeof c.summary === 'string' ? c.summary : '', LIMITS.summary),
      selection: boundPayload(c.selection),
      data: boundPayload(c.data),
    },
  };
}

/**
 * parseToolsList takes each descriptor of a tools/list answer on its own: one bad descriptor
 * costs only itself. The tools' modelName is left for the caller.
 * @param {any} result
 */
export function parseToolsList(result) {
  /** @type {unknown[]} */
  const list = result && Array.isArray(result.tools) ? result.tools : [];
  /** @type {AppTool[]} */
  const tools = [];
  /** @type {{index: number, name: string, why: string}[]} */
  const dropped = [];
  const seen = new Set();
  list.forEach((/** @type {any} */ t, index) => {
    const name = t && typeof t.name === 'string' ? clamp(t.name, 80) : `#${index}`;
    if (tools.length >= LIMITS.tools) {
      dropped.push({ index, name, why: `the app lists more than ${LIMITS.tools} tools` });
      return;
    }
    const why = toolProblem(t);
    if (why) dropped.push({ index, name, why });
    else if (seen.has(t.name)) dropped.push({ index, name, why: 'another tool of the app has this name' });
    else {
      seen.add(t.name);
      tools.push({
        name: t.name,
        description: clamp(typeof t.description === 'string' ? t.description : '', LIMITS.description),
        inputSchema: t.inputSchema === undefined ? { type: 'object' } : t.inputSchema,
        readOnly: !!(t.annotations && t.annotations.readOnlyHint === true),
        modelName: '',
      });
    }
  });
  return { tools, dropped };
}

/**
 * toolProblem says why a tool descriptor is not one the host takes, or '' when it is.
 * @param {any} t
 */
export function toolProblem(t) {
  if (!t || typeof t !== 'object' || Array.isArray(t)) return 'it is not an object';
  if (!validToolName(t.name)) return 'its name must be 1 to 64 of A-Z, a-z, 0-9, _ and -';
  if (t.description !== undefined && typeof t.description !== 'string') return 'its description is not text';
  const s = t.inputSchema;
  if (s !== undefined) {
    if (!s || typeof s !== 'object' || Array.isArray(s)) return 'its inputSchema is not an object';
    if (s.type !== undefined && s.type !== 'object') return 'its inputSchema does not describe an object';
    if (jsonLength(s) > LIMITS.schema) return `its inputSchema is over ${LIMITS.schema} characters`;
  }
  return '';
}

/**
 * resultText reads an MCP tools/call result as the caller's text: its text parts, other parts
 * named, structured content as JSON when there is no text, cut at LIMITS.result.
 * @param {any} r
 * @returns {{text: string, isError?: boolean}}
 */
export function resultText(r) {
  const parts = r && Array.isArray(r.content) ? r.content : [];
  let text = parts.map((/** @type {any} */ p) => (p && p.type === 'text' && typeof p.text === 'string' ? p.text : p && p.type ? `[${clamp(p.type, 20)} content]` : '')).filter(Boolean).join('\n');
  if (!text && r && r.structuredContent !== undefined) text = JSON.stringify(r.structuredContent);
  const n = text.length;
  if (n > LIMITS.result) text = text.slice(0, LIMITS.result) + `\n[cut: ${n - LIMITS.result} more characters]`;
  return r && r.isError ? { text, isError: true } : { text };
}

/**
 * callArgs is a tool call's arguments as the host sends them (none is {}), or a refusal.
 * @param {unknown} args
 * @returns {Outcome<object>}
 */
export function callArgs(args) {
  if (args === undefined || args === null) return { ok: true, value: {} };
  if (typeof args !== 'object' || Array.isArray(args)) return refusal('invalid-tool-arguments', 'the arguments must be a JSON object');
  return { ok: true, value: args };
}

/**
 * notApproved is the refusal a call whose approval ended in outcome (anything but approved) is
 * answered with.
 * @param {Exclude<ApprovalOutcome, 'approved'>} outcome
 * @param {string} tool
 * @param {string} appName
 * @param {number} approvalMs the approval's deadline
 * @returns {Refusal}
 */
export function notApproved(outcome, tool, appName, approvalMs) {
  switch (outcome) {
    case 'denied': return refusal('approval-denied', `the person denied running ${tool} in ${appName}; it did not run`);
    case 'timedOut': return refusal('approval-timed-out', `nobody approved running ${tool} in ${appName} within ${approvalMs / 1000} s; it did not run`);
    case 'navigated': return refusal('external-app-navigated', `${appName} loaded another document while ${tool} waited for approval; it did not run`);
    default: return refusal('tool-timeout', `the caller stopped waiting while ${tool} waited for approval; it did not run`);
  }
}

/**
 * initResult is the host's answer to ui/initialize, before the app's adapter writes it: what the
 * host is and can do (auth only for an app the operator granted it), and where it is shown.
 * @param {RegistryEntry} entry
 * @param {object} hostContext
 * @returns {Record<string, unknown>}
 */
export function initResult(entry, hostContext) {
  return {
    protocolVersion: PROTOCOL,
    hostInfo: { name: 'Voicebox', version: '1' },
    hostCapabilities: { openChat: {}, tools: { call: {} }, context: {}, ...(entry.capabilities.includes('auth') ? { auth: {} } : {}) },
    hostContext,
  };
}
