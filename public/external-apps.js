// @ts-check
// External mini-apps on the page's main thread: the host side of the bridge. An external app is a
// web app on its own origin (registered by the operator in MINI_APPS; the relay serves the list at
// GET /mini-apps) shown here in an <iframe src> with an empty allow attribute. The page and the app
// talk JSON-RPC 2.0 over postMessage, every message stamped with the protocol marker; the page
// posts only to the app's declared origin and drops every message whose origin is not that origin
// or whose source is not that app's frame.
//
// The page asks the app:  ui/identify (after every frame load: 5 s of silence resets the
//                         handshake), ui/get-context, tools/list, tools/call
// The app asks the page:  ui/initialize, ui/request-auth-token, ui/open-chat
// The app tells the page: ui/notifications/tools-changed (20 honoured per document),
//                         ui/notifications/error, ui/notifications/selection-changed,
//                         ui/notifications/initialized
//
// Each registry entry names the protocol its app speaks (protocol: voicebox, the default;
// thunderbolt, Thunderbolt's guest SDK at protocol version 3; jsonrpc, plain JSON-RPC 2.0 with no
// marker). The protocol changes only how an envelope is read and written: an adapter per
// protocol (ADAPTERS, in external-app-wire.js) in front of this one host, with its one set of clamps, deadlines, origin
// pins and approvals. A message of the app's frame the host does not take is counted by why
// (wrong origin, wrong marker, not JSON-RPC, unknown method, invalid params, an answer to nothing)
// and the first few are kept and shown in the app's card ("n messages ignored: why"); a request
// it cannot serve is answered -32601 (no such method) or -32602 (invalid params), never dropped.
//
// Every request the page sends has a deadline. What an app sends is clamped, not rejected:
// descriptions to 300 characters, 64 tools, each tool parsed on its own (a dropped one is logged),
// context title and summary cut, a context data payload over 20,000 characters withheld with a
// note saying so. A tool not marked readOnlyHint: true waits for the person's approval here, with
// a deadline, whoever called it (the tool form below, or the assistant through the worker); the
// caller is told whether it was approved, denied or timed out.
//
// The message listener looks at a message's source before anything else: a message from a window
// that is no open app's frame is counted (strays) and never read. An app's frame may send at most
// MESSAGE_BUDGET messages within MESSAGE_WINDOW_MS (rules.js), besides one answer to each request
// the page sent it, and at most MESSAGE_BYTE_BUDGET bytes, besides those answers (message-budget.js:
// the page is the realm that receives and deserialises what the app posts, so it sizes each
// message as it reads it); the first one over either stops it (its frame removed, its tools
// withdrawn, the reason in its card with Start again).
//
// What is logic rather than DOM lives beside this file, pure and tested in Node (tools/web/test):
// external-app-wire.js (the protocols, the envelope checks, the clamps) and external-app-state.js
// (an open app's stats and the handshake's decisions).
//
// startExternalApps returns the API the page and the tests use (see the end of the file).
import { byId } from './dom.js';
import { emit } from './events.js';
import { relay } from './http.js';
import { MessageBudget } from './message-budget.js';
import {
  adapterOf, boundPayload, callArgs, clamp, contextValue, envelope, initResult, LIMITS, NOT_JSONRPC,
  notApproved, parseToolsList, refusal, resultText, unacceptable,
} from './external-app-wire.js';
import {
  beginHandshake, countStray, forgetHandshake, frameLoaded, identified, keepLast, newStats, newStrays, noteIgnored, owedAnswer,
  Pending, repeatsHandshake, stateOf, takeToolsChange,
} from './external-app-state.js';
import { externalModelName as modelName } from './names.js';
import * as rules from './rules.js';
import { toolForm as schemaToolForm } from './schema-form.js';

/** @typedef {import('./external-app-wire.js').Init} Init */
/** @typedef {import('./external-app-wire.js').RegistryEntry} RegistryEntry */
/** @typedef {import('./external-app-wire.js').AppTool} AppTool */
/** @typedef {import('./external-app-wire.js').Refusal} Refusal */
/** @typedef {import('./external-app-wire.js').ApprovalOutcome} ApprovalOutcome */
/**
 * @template V
 * @typedef {import('./external-app-wire.js').Outcome<V>} Outcome
 */
/** @typedef {import('./external-app-state.js').XApp} XApp */

/** @type {Record<string, string>} */
const ICONS = { app: '▣', calendar: '◴', cart: '⊞', chart: '▲', chat: '❝', document: '▤', folder: '▭', mail: '✉', map: '⌖', table: '▦', users: '☺' };
/**
 * startExternalApps runs the Apps panel.
 * @param {import('./dialogs.js').PageServices} vb
 */
export function startExternalApps(vb) {
  /** @type {Record<string, number>} */
  // The approval's is every approval's (rules.APPROVAL_TIMEOUT_MS, the relay's too); tools/call's
  // is what the relay allows an app's answer after it (rules.EXTERNAL_CALL_TIMEOUT_MS).
  // ui/identify's is as long as tools/list's: at 500 ms a frame busy on a loaded machine (or a slow
  // phone) answered late and lost a good handshake, which it never begins again; a frame that
  // navigated elsewhere is still reset, 5 s later.
  const DEADLINES = { 'ui/identify': 5000, 'tools/list': 5000, 'ui/get-context': 5000, 'tools/call': rules.EXTERNAL_CALL_TIMEOUT_MS, approval: rules.APPROVAL_TIMEOUT_MS };
  // The composer is the assistant's command box (assistant.js): an app's suggestion goes
  // there, and only the person sends it.
  const el = { list: byId('xa-list'), open: byId('xa-open'), composer: byId('command', HTMLInputElement), note: byId('xa-note') };

  /** @type {RegistryEntry[]} the apps of GET /mini-apps */
  let registry = [];
  /** @type {Map<string, XApp>} appId -> open app */
  const apps = new Map();
  /** @type {WeakMap<object, XApp>} an open app's frame window -> the app */
  const frames = new WeakMap();
  /** strays counts the messages from windows that are no open app's frame, by origin. */
  const strays = newStrays();
  let nextCall = 1;

  // ---- small helpers ----

  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {Partial<HTMLElementTagNameMap[K]>} [props]
   * @param {(Node | string)[]} children
   * @returns {HTMLElementTagNameMap[K]}
   */
  function node(tag, props = {}, ...children) {
    const n = document.createElement(tag);
    Object.assign(n, props);
    n.append(...children);
    return n;
  }

  /**
   * @param {string} text
   * @param {() => void} onClick
   * @param {string} [className]
   */
  function button(text, onClick, className) {
    const b = node('button', { type: 'button', textContent: text });
    if (className) b.className = className;
    b.addEventListener('click', onClick);
    return b;
  }

  // ---- the registry and the list of apps ----

  async function refresh() {
    try {
      const body = await relay('/mini-apps');
      if (!body.ok) throw new Error(body.why || `GET /mini-apps answered ${body.refused}`);
      registry = body.apps || [];
    } catch (err) {
      registry = [];
      el.note.textContent = `The app list could not be loaded: ${err instanceof Error ? err.message : err}`;
    }
    renderList();
    return registry;
  }

  function renderList() {
    if (registry.length === 0) {
      el.list.replaceChildren(node('li', { className: 'empty', textContent: 'No apps are registered. The operator adds them to MINI_APPS.' }));
      return;
    }
    el.list.replaceChildren(...registry.map((a) => {
      const li = node('li');
      li.dataset.appId = a.id;
      const open = button(`${ICONS[a.icon || 'app'] || ICONS.app} ${a.name}`, () => openApp(a.id), 'xa-launch');
      open.title = a.description || a.url;
      li.append(open, node('span', { className: 'hint', textContent: ` ${a.origin}` }));
      return li;
    }));
  }

  // ---- an open app ----

  /** @param {string} appId */
  function openApp(appId) {
    const entry = registry.find((a) => a.id === appId);
    if (!entry) throw new Error(`no app is registered as ${appId}`);
    let app = apps.get(appId);
    if (app) {
      app.view.section.scrollIntoView({ block: 'nearest' });
      return app.state();
    }
    // card() gives the app its frame and view.
    const opened = /** @type {XApp} */ (/** @type {unknown} */ ({
      id: appId, entry, adapter: adapterOf(entry), documentId: null, live: false, caps: {}, appInfo: null, initResult: null,
      tools: [], selection: null, toolsChanged: 0, initSinceLoad: false,
      pending: new Pending(), identifySeq: 0, approvals: new Map(), stats: newStats(),
      budget: new MessageBudget(),
    }));
    opened.state = () => stateOf(opened);
    apps.set(appId, opened);
    el.open.prepend(card(opened));
    if (opened.frame.contentWindow) frames.set(opened.frame.contentWindow, opened);
    render(opened);
    changed();
    return opened.state();
  }

  /** @param {XApp} app */
  function card(app) {
    const section = node('section', { className: 'xa-card' });
    section.dataset.appId = app.id;
    const title = node('h3', { textContent: `${ICONS[app.entry.icon || 'app'] || ICONS.app} ${app.entry.name}` });
    const status = node('span', { className: 'badge xa-status' });
    const reloadBtn = button('Reload', () => reload(app.id));
    reloadBtn.setAttribute('aria-label', `Reload ${app.entry.name}`);
    const closeBtn = button('Close', () => closeApp(app.id));
    closeBtn.setAttribute('aria-label', `Close ${app.entry.name}`);
    title.id = `xa-title-${app.id}`;
    title.tabIndex = -1;
    section.setAttribute('aria-labelledby', title.id);
    const head = node('div', { className: 'panel-head' }, title, status, node('div', { className: 'tools' }, reloadBtn, closeBtn));
    const approvals = node('div', { className: 'xa-approvals' });
    const stoppedText = node('p');
    const again = button('Start again', () => startAgain(app));
    again.setAttribute('aria-label', `Start ${app.entry.name} again`);
    const stopped = node('div', { className: 'app-stopped', hidden: true }, stoppedText, again);
    stopped.setAttribute('role', 'alert');
    const frame = newFrame(app);
    const selection = node('div', { className: 'xa-selection', hidden: true });
    const errors = node('ul', { className: 'xa-errors' });
    const ignored = node('details', { className: 'app-ignored hint', hidden: true });
    const tools = node('div', { className: 'app-tools xa-tools' });
    section.append(head, approvals, stopped, frame, selection, errors, ignored, tools);
    app.frame = frame;
    app.view = { section, status, approvals, selection, errors, tools, stopped, stoppedText, ignored };
    // What the person opened is shown, and its heading takes focus.
    requestAnimationFrame(() => {
      section.scrollIntoView({ block: 'nearest', behavior: 'instant' });
      title.focus({ preventScroll: true });
    });
    return section;
  }

  /** @param {XApp} app */
  function newFrame(app) {
    const frame = node('iframe', { className: 'xa-frame', title: `app ${app.entry.name}` });
    // An empty allow: no feature (tools discovery included) is delegated to the app. The sandbox
    // keeps the app's own origin, scripts, forms and popups, and takes away navigating this page.
    frame.setAttribute('allow', '');
    frame.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads');
    frame.addEventListener('load', () => onFrameLoad(app));
    frame.src = app.entry.url;
    return frame;
  }

  /**
   * stop removes app's frame for reason: its tools are withdrawn and its requests refused (see
   * reset), and its card says why, with Start again.
   * @param {XApp} app
   * @param {{rule: string, why: string}} reason
   */
  function stop(app, reason) {
    if (app.stats.stopped || apps.get(app.id) !== app) return;
    app.stats.stopped = reason;
    app.frame.remove();
    app.identifySeq++; // an identify in flight no longer counts
    reset(app, `the app was stopped: ${reason.why}`);
    app.view.stoppedText.textContent = `Stopped (${reason.rule}): ${reason.why}`;
    app.view.stopped.hidden = false;
  }

  /**
   * startAgain gives a stopped app a new frame, loading its address afresh.
   * @param {XApp} app
   */
  function startAgain(app) {
    if (!app.stats.stopped || apps.get(app.id) !== app) return;
    app.stats.stopped = null;
    app.stats.starts++;
    app.budget = new MessageBudget();
    app.view.stopped.hidden = true;
    const frame = newFrame(app);
    app.view.stopped.after(frame);
    app.frame = frame;
    if (frame.contentWindow) frames.set(frame.contentWindow, app);
  }

  /**
   * charge charges one message of app's frame (data as received, at its arrival (the event's
   * timeStamp); owed: an answer it owed, which is free) against its budget and reports whether
   * it is within it; the first one over it stops the app.
   * @param {XApp} app
   * @param {unknown} data
   * @param {boolean} owed
   * @param {number} at
   */
  function charge(app, data, owed, at) {
    const over = app.budget.charge(data, owed, at);
    if (!over) return true;
    stop(app, { rule: rules.MESSAGE_BUDGET_EXCEEDED, why: over });
    return false;
  }

  /** @param {string} appId */
  function reload(appId) {
    const app = apps.get(appId);
    if (!app) return;
    if (app.stats.stopped) {
      startAgain(app);
      return;
    }
    reset(app, 'the page reloaded the app');
    app.frame.src = app.entry.url;
  }

  /** @param {string} appId */
  function closeApp(appId) {
    const app = apps.get(appId);
    if (!app) return;
    reset(app, 'the app was closed');
    apps.delete(appId);
    app.view.section.remove();
    changed();
  }

  // ---- the wire ----

  /**
   * @param {XApp} app
   * @param {object} msg
   */
  function post(app, msg) {
    // Only the declared origin receives it: if the frame has navigated elsewhere, nothing does.
    app.frame.contentWindow?.postMessage(envelope(app.adapter, msg), app.entry.origin);
  }

  /**
   * ignore counts one message of app's frame the host did not take, by why, and keeps the first
   * few: a guest speaking something else is told apart from a silent one.
   * @param {XApp} app
   * @param {string} why
   * @param {unknown} msg
   */
  function ignore(app, why, msg) {
    noteIgnored(app.stats, why, msg);
    showIgnored(app);
  }

  /** @param {XApp} app */
  function showIgnored(app) {
    if (!app.view) return;
    const g = app.stats.ignored;
    const box = app.view.ignored;
    box.hidden = g.total === 0;
    if (g.total === 0) return;
    box.replaceChildren(
      node('summary', { textContent: `${g.total} message${g.total === 1 ? '' : 's'} ignored: ${g.samples[0] ? g.samples[0].why : ''}` }),
      node('ul', {}, ...g.samples.map((x) => node('li', { textContent: `${x.what}: ${x.why}` }))));
  }

  /**
   * @param {XApp} app
   * @param {unknown} id
   * @param {unknown} result
   */
  function reply(app, id, result) { post(app, { id, result }); }
  /**
   * @param {XApp} app
   * @param {unknown} id
   * @param {number} code
   * @param {string} message
   * @param {string} [rule]
   */
  function replyError(app, id, code, message, rule) {
    post(app, { id, error: { code, message, data: rule ? { refused: rule } : undefined } });
  }

  /**
   * refuse answers a request the host cannot serve with a JSON-RPC error, and counts it among
   * the ignored messages: -32601 for a method it does not have, -32602 for params it cannot take.
   * @param {XApp} app
   * @param {any} msg
   * @param {-32601 | -32602} code
   * @param {string} why
   */
  function refuse(app, msg, code, why) {
    ignore(app, why, msg);
    if (msg.id !== undefined && msg.id !== null) replyError(app, msg.id, code, why);
  }

  // request sends one request to the app and settles with its result, or rejects with a refusal
  // when the deadline passes or the document goes away first.
  /**
   * @param {XApp} app
   * @param {string} method
   * @param {object} params
   * @returns {Promise<any>}
   */
  function request(app, method, params) {
    const { id, answered } = app.pending.open(method, DEADLINES[method]);
    post(app, { id, method, params });
    return answered;
  }

  // The source first: nothing of a message from a window that is no open app's frame (a frame
  // nested in an app, a sandboxed mini-app, another page) is read, and nothing is logged.
  window.addEventListener('message', (event) => {
    const source = event.source;
    const app = source && typeof source === 'object' ? frames.get(source) : undefined;
    if (!app || apps.get(app.id) !== app || app.frame.contentWindow !== source) {
      countStray(strays, event.origin);
      return;
    }
    if (!charge(app, event.data, owedAnswer(app, event.origin, event.data), event.timeStamp)) return;
    if (event.origin !== app.entry.origin) {
      app.stats.dropped.origin++;
      app.stats.dropped.lastOrigin = event.origin;
      ignore(app, `wrong origin: ${clamp(event.origin, 80)} (the app is registered at ${app.entry.origin})`, undefined);
      return;
    }
    const msg = event.data;
    const why = unacceptable(app.adapter, msg);
    if (why) {
      if (why === NOT_JSONRPC) app.stats.dropped.protocol++;
      ignore(app, why, msg);
      return;
    }
    fromApp(app, msg);
  });

  /**
   * @param {XApp} app
   * @param {any} msg
   */
  function fromApp(app, msg) {
    if (typeof msg.method !== 'string') {
      if (!app.pending.answer(msg)) ignore(app, 'an answer to no request the host is waiting on (late, or never asked)', msg);
      return;
    }
    if (msg.params !== undefined && (msg.params === null || typeof msg.params !== 'object')) {
      refuse(app, msg, -32602, `invalid params for ${clamp(msg.method, 60)}: params must be an object or an array`);
      return;
    }
    const params = msg.params && typeof msg.params === 'object' ? msg.params : {};
    switch (msg.method) {
      case 'ui/initialize': {
        if (msg.id === undefined) {
          ignore(app, 'ui/initialize sent as a notification (it is a request: it needs an id)', msg);
          return;
        }
        const init = app.adapter.init(params);
        if ('invalid' in init) {
          refuse(app, msg, -32602, `invalid params for ui/initialize: ${init.invalid}`);
          return;
        }
        initialize(app, msg.id, init);
        return;
      }
      case 'ui/notifications/initialized':
        return;
      case 'ui/request-auth-token':
        if (msg.id !== undefined) authToken(app, msg.id);
        return;
      case 'ui/open-chat':
        if (params.prompt !== undefined && typeof params.prompt !== 'string') {
          refuse(app, msg, -32602, 'invalid params for ui/open-chat: prompt must be text');
          return;
        }
        openChat(app, params);
        if (msg.id !== undefined) reply(app, msg.id, {});
        return;
      case 'ui/notifications/tools-changed':
        toolsChanged(app);
        return;
      case 'ui/notifications/error': {
        const text = clamp(String(params.message ?? 'an error'), LIMITS.error);
        keepLast(app.stats.errors, text, 20);
        console.warn(`voicebox: the app ${app.id} reported an error: ${text}`);
        renderErrors(app);
        return;
      }
      case 'ui/notifications/selection-changed':
        // Only the selection's line is drawn again: an app may send these as fast as a person
        // drags, and drawing the whole card (its tool forms too) for each cost milliseconds.
        app.selection = boundPayload(params.selection);
        renderSelection(app);
        return;
      default:
        refuse(app, msg, -32601, `unknown method ${clamp(msg.method, 60)}: the host has no such method`);
    }
  }

  // ---- the handshake and which document is in the frame ----

  function hostContext() {
    return {
      theme: matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light',
      locale: navigator.language,
      platform: 'web',
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    };
  }

  /**
   * @param {XApp} app
   * @param {unknown} id
   * @param {Exclude<Init, {invalid: string}>} init
   */
  async function initialize(app, id, init) {
    if (repeatsHandshake(app, init)) {
      // The same document asking again (a React effect run twice): answered, nothing torn down.
      app.stats.repeats++;
      reply(app, id, app.initResult);
      return;
    }
    reset(app, 'a new document began a handshake', true);
    const generation = beginHandshake(app, init);
    /** @type {Record<string, unknown>} */
    const result = initResult(app.entry, hostContext());
    if (app.caps.auth) {
      const t = await mint(app);
      if (t.ok) result.auth = { token: t.token, expiresAt: t.expiresAt };
      else result.authError = { refused: t.refused, why: t.why };
    }
    if (app.stats.handshakes !== generation || !app.live) return; // superseded while minting
    app.initResult = app.adapter.initResult(result);
    reply(app, id, app.initResult);
    render(app);
    changed();
    if (app.caps.tools) listTools(app);
  }

  /** @param {XApp} app */
  function onFrameLoad(app) {
    if (!apps.has(app.id)) return;
    // A guest too old to have a document id cannot be asked (see frameLoaded).
    const next = frameLoaded(app);
    if (next === 'reset') reset(app, 'the frame loaded a new document');
    if (next !== 'identify') return;
    const seq = ++app.identifySeq;
    app.stats.identifies++;
    request(app, 'ui/identify', {}).then((r) => {
      if (seq !== app.identifySeq) return;
      const why = identified(app, r);
      if (why === null) app.stats.kept++;
      else reset(app, why);
    }, () => {
      if (seq === app.identifySeq) reset(app, `the frame did not answer ui/identify within ${DEADLINES['ui/identify'] / 1000} s`);
    });
  }

  // reset forgets the handshake: the tools, the capabilities, the pending requests (refused
  // external-app-navigated) and the approvals waiting; the next handshake starts over.
  /**
   * @param {XApp} app
   * @param {string} why
   * @param {boolean} [quiet]
   */
  function reset(app, why, quiet) {
    const wasLive = forgetHandshake(app);
    // An identify in flight is the frame's to answer: a reset does not settle it.
    app.pending.drop(why, (p) => p.method === 'ui/identify');
    for (const a of [...app.approvals.values()]) a.settle('navigated');
    if (wasLive || !quiet) keepLast(app.stats.resets, why, 50);
    render(app);
    if (wasLive) changed();
  }

  // ---- tools ----

  /** @param {XApp} app */
  function toolsChanged(app) {
    if (!app.live) return;
    if (!takeToolsChange(app)) {
      if (app.stats.toolsChangedIgnored === 1) console.warn(`voicebox: the app ${app.id} changed its tools more than ${LIMITS.toolsChanged} times; later changes are ignored until it loads again`);
      return;
    }
    listTools(app);
  }

  /** @param {XApp} app */
  async function listTools(app) {
    const documentId = app.documentId;
    let result;
    try {
      result = await request(app, 'tools/list', {});
    } catch (err) {
      console.warn(`voicebox: the app ${app.id} did not list its tools: ${/** @type {Refusal} */ (err).why}`);
      return;
    }
    if (!app.live || app.documentId !== documentId) return;
    const { tools, dropped } = parseToolsList(result);
    for (const t of tools) t.modelName = await modelName(app.id, t.name);
    if (!app.live || app.documentId !== documentId) return;
    for (const d of dropped) {
      console.warn(`voicebox: the app ${app.id}'s tool ${d.name} was dropped: ${d.why}`);
      keepLast(app.stats.droppedTools, d, 100);
    }
    app.tools = tools;
    app.stats.toolsLists++;
    render(app);
    changed();
  }

  // callTool runs one of an open app's tools for a caller ('user' from the form, 'model' from the
  // assistant). A tool not marked read-only waits for approval first. It answers {ok, value} with
  // value {text, isError?, approval?: "approved"}, or a refusal; exactly once.
  /**
   * @param {string} appId
   * @param {string} name
   * @param {unknown} args
   * @returns {Promise<Outcome<{text: string, isError?: boolean, approval?: string}>>}
   */
  async function callTool(appId, name, args, by = 'user', callId = '') {
    const app = apps.get(appId);
    if (!app) return refusal('external-app-unknown', `the app ${appId} is not open`);
    if (!app.live) return refusal('external-app-not-ready', `the app ${app.entry.name} has not connected (no handshake with the document in its frame)`);
    const tool = app.tools.find((t) => t.name === name);
    if (!tool) return refusal('unknown-tool', `the app ${app.entry.name} has no tool named ${clamp(name, 80)}`);
    const given = callArgs(args);
    if (!given.ok) return given;
    args = given.value;
    const documentId = app.documentId;
    if (!tool.readOnly) {
      const outcome = await approval(app, tool, args, by, callId);
      if (outcome !== 'approved') return notApproved(outcome, tool.name, app.entry.name, DEADLINES.approval);
      if (!app.live || app.documentId !== documentId) return refusal('external-app-navigated', `${app.entry.name} loaded another document; ${tool.name} did not run`);
    }
    try {
      const r = app.adapter.callResult(await request(app, 'tools/call', { name: tool.name, arguments: args }));
      // A write tool's caller is told it ran because the person approved it.
      return { ok: true, value: tool.readOnly ? resultText(r) : { ...resultText(r), approval: 'approved' } };
    } catch (err) {
      return err && typeof err === 'object' && 'refused' in err ? /** @type {Refusal} */ (err) : refusal('external-app-error', String(err));
    }
  }

  // ---- the approval gate ----

  /**
   * @param {XApp} app
   * @param {AppTool} tool
   * @param {unknown} args
   * @param {string} by
   * @param {string} modelCallId
   * @returns {Promise<ApprovalOutcome>}
   */
  function approval(app, tool, args, by, modelCallId) {
    return new Promise((resolve) => {
      const callId = nextCall++;
      const box = node('div', { className: 'xa-approval' });
      box.setAttribute('role', 'alertdialog');
      box.dataset.callId = String(callId);
      box.dataset.tool = tool.name;
      const who = by === 'model' ? 'The assistant wants' : 'You asked';
      const args_ = node('pre', { textContent: clamp(JSON.stringify(args, null, 2), 2000) });
      const left = node('span', { className: 'hint xa-deadline' });
      let timer = 0;
      let ticker = 0;
      /** @param {ApprovalOutcome} outcome */
      const settle = (outcome) => {
        if (!app.approvals.has(callId)) return;
        app.approvals.delete(callId);
        clearTimeout(timer);
        clearInterval(ticker);
        box.remove();
        if (outcome === 'approved' || outcome === 'denied' || outcome === 'timedOut') app.stats.approvals[outcome]++;
        resolve(outcome);
      };
      const approve = button('Approve', () => settle('approved'), 'xa-approve');
      approve.setAttribute('aria-label', `Approve running ${tool.name} in ${app.entry.name}`);
      const deny = button('Deny', () => settle('denied'), 'danger xa-deny');
      deny.setAttribute('aria-label', `Deny running ${tool.name} in ${app.entry.name}`);
      const ask = node('p', { textContent: `${who} to run ${tool.name} in ${app.entry.name}, which may change something there.` });
      ask.id = `xa-ask-${callId}`;
      box.setAttribute('aria-labelledby', ask.id);
      box.append(ask, args_,
        node('div', { className: 'tools' }, approve, deny, left));
      const ends = Date.now() + DEADLINES.approval;
      const tick = () => { left.textContent = `${Math.max(0, Math.ceil((ends - Date.now()) / 1000))} s left`; };
      tick();
      ticker = setInterval(tick, 1000);
      timer = setTimeout(() => settle('timedOut'), DEADLINES.approval);
      app.approvals.set(callId, { settle, tool: tool.name, by, modelCallId });
      app.view.approvals.append(box);
      box.scrollIntoView({ block: 'nearest', behavior: 'instant' });
      approve.focus({ preventScroll: true });
    });
  }

  // ---- context ----

  // readContext asks the app what is on screen now. It answers {ok, value: {app, name, title,
  // summary, selection, data}} or a refusal (context-unavailable on a timeout, a navigation, or an
  // app that never declared the capability): never anything stale.
  /**
   * @param {string} appId
   * @returns {Promise<Outcome<object>>}
   */
  async function readContext(appId) {
    const app = apps.get(appId);
    if (!app) return refusal('external-app-unknown', `the app ${appId} is not open`);
    if (!app.live) return refusal('context-unavailable', `${app.entry.name} has not connected, so what it shows is unknown`);
    if (!app.caps.context) return refusal('context-unavailable', `${app.entry.name} does not describe what it shows`);
    let c;
    try {
      c = app.adapter.context(await request(app, 'ui/get-context', {}));
    } catch (err) {
      return refusal('context-unavailable', /** @type {Refusal} */ (err).why || String(err));
    }
    return contextValue({ id: app.id, name: app.entry.name }, c);
  }

  // ---- what the app asks of the page ----

  /**
   * @param {XApp} app
   * @returns {Promise<{ok: true, token: string, expiresAt: string} | Refusal>}
   */
  async function mint(app) {
    if (!app.entry.capabilities.includes('auth')) {
      return refusal('external-app-no-auth', `the operator did not grant ${app.entry.name} the auth capability, so it gets no identity token`);
    }
    try {
      const body = await relay(`/mini-apps/${encodeURIComponent(app.id)}/token`, { method: 'POST' });
      return body.ok ? { ok: true, token: body.token, expiresAt: body.expiresAt } : refusal(String(body.refused), String(body.why));
    } catch (err) {
      return refusal('external-app-no-auth', `the relay did not mint a token: ${err instanceof Error ? err.message : err}`);
    }
  }

  /**
   * @param {XApp} app
   * @param {unknown} id
   */
  async function authToken(app, id) {
    if (!app.live) { replyError(app, id, -32002, 'no handshake with this document', 'external-app-not-ready'); return; }
    const documentId = app.documentId;
    const t = await mint(app);
    if (app.documentId !== documentId) return;
    if (t.ok) reply(app, id, { token: t.token, expiresAt: t.expiresAt });
    else replyError(app, id, -32001, t.why, t.refused);
  }

  // openChat seeds the composer with the app's suggestion; nothing is sent to the assistant until
  // the person sends it.
  /**
   * @param {XApp} app
   * @param {any} params
   */
  function openChat(app, params) {
    if (!app.live) return;
    const prompt = clamp(typeof params.prompt === 'string' ? params.prompt : '', LIMITS.prompt);
    app.stats.openChats++;
    seedComposer(prompt, app);
  }

  /**
   * @param {string} text
   * @param {XApp} [app]
   */
  function seedComposer(text, app) {
    el.composer.value = text;
    el.composer.dataset.from = app ? app.id : '';
    el.composer.focus({ preventScroll: true });
  }

  // ---- showing an app ----

  /**
   * render draws app's card: its status, selection, reported errors and tool forms.
   * @param {XApp} app
   */
  function render(app) {
    if (!app.view) return;
    const v = app.view;
    v.status.textContent = app.live ? 'connected' : 'not connected';
    v.status.dataset.state = app.live ? 'connected' : 'waiting';
    renderSelection(app);
    renderErrors(app);
    if (app.tools.length === 0) {
      v.tools.replaceChildren(node('p', { className: 'hint', textContent: app.live ? 'This app offers no tools.' : 'Waiting for the app to connect…' }));
      return;
    }
    v.tools.replaceChildren(...app.tools.map((t) => toolForm(app, t)));
  }

  /**
   * renderSelection draws the line of app's card that shows what is selected in it.
   * @param {XApp} app
   */
  function renderSelection(app) {
    if (!app.view) return;
    const v = app.view;
    v.selection.hidden = !app.selection;
    if (!app.selection) return;
    const text = app.selection.text !== undefined ? String(app.selection.text) : JSON.stringify(app.selection);
    v.selection.replaceChildren(node('span', { className: 'hint', textContent: `Selected: “${clamp(text, 120)}”` }),
      button('Ask about this', () => seedComposer(`About this, in ${app.entry.name}: “${clamp(text, LIMITS.prompt - 60)}”`, app)));
  }

  /**
   * renderErrors draws the last errors app reported.
   * @param {XApp} app
   */
  function renderErrors(app) {
    if (!app.view) return;
    app.view.errors.replaceChildren(...app.stats.errors.slice(-3).map((e) => node('li', { className: 'hint', textContent: `The app reported: ${e}` })));
  }

  /**
   * toolForm is the same schema form sandboxed apps' tools get (schema-form.js); a tool that
   * changes something asks for approval first, whoever calls it.
   * @param {XApp} app
   * @param {AppTool} tool
   */
  function toolForm(app, tool) {
    return schemaToolForm({
      name: tool.name, description: tool.description, app: app.entry.name, note: tool.readOnly ? '' : '(asks first)',
      schema: /** @type {import('./worker-client.js').JSONSchema} */ (tool.inputSchema),
      run: async (args) => {
        const answer = await callTool(app.id, tool.name, args, 'user');
        return answer.ok ? { ok: true, text: answer.value.text } : answer;
      },
    });
  }

  // ---- what the assistant gets ----

  // report describes the open apps for the relay's tool catalogue: which are open and connected,
  // and the tools they offer now (app-written, clamped). Who an app is, the relay takes from its
  // own registry.
  function report() {
    return {
      apps: [...apps.values()].map((app) => ({
        id: app.id, name: app.entry.name, description: app.entry.description || '', live: app.live, context: !!app.caps.context,
        tools: app.tools.map((t) => ({ name: t.name, modelName: t.modelName, description: t.description, inputSchema: t.inputSchema, readOnly: t.readOnly })),
      })),
    };
  }

  let changeQueued = false;
  function changed() {
    if (changeQueued) return;
    changeQueued = true;
    queueMicrotask(() => {
      changeQueued = false;
      const r = report();
      // The worker passes it on to the relay with the page's tools (internal/door/externalapps.Model).
      vb.call('externalapps.report', r);
      emit('external-apps', r);
    });
  }

  // A call from the assistant, by way of the relay and the worker: an app tool under its model
  // name, or get_app_context. It is answered with externalapps.result, once.
  /** @param {import('./worker-client.js').Events['externalapp.call']} call */
  async function modelCall({ callId, name, args }) {
    /** @type {Outcome<unknown>} */
    let answer;
    if (name === rules.CONTEXT_TOOL) {
      const given = /** @type {{app?: unknown} | null} */ (args);
      const appId = given && typeof given.app === 'string' ? given.app : apps.size === 1 ? [...apps.keys()][0] : '';
      answer = appId ? await readContext(appId) : refusal('external-app-unknown', 'name the app: get_app_context {app}');
    } else {
      /** @type {[string, string] | null} */
      let target = null;
      for (const app of apps.values()) for (const t of app.tools) if (t.modelName === name) target = [app.id, t.name];
      answer = target ? await callTool(target[0], target[1], args, 'model', callId) : refusal('unknown-tool', `no open app offers a tool named ${clamp(name, 80)}`);
    }
    vb.call('externalapps.result', answer.ok ? { callId, result: answer.value } : { callId, refused: answer.refused, why: answer.why });
  }
  vb.on('externalapp.call', modelCall);
  // The worker stopped waiting (the relay's deadline): a prompt still open for that call goes away.
  vb.on('externalapp.cancel', ({ callId }) => {
    for (const app of apps.values()) {
      for (const a of [...app.approvals.values()]) if (a.modelCallId === callId) a.settle('cancelled');
    }
  });

  const api = Object.freeze({
    refresh,
    registry: () => structuredClone(registry),
    open: openApp,
    close: closeApp,
    reload,
    /** @param {string} appId */
    state: (appId) => { const app = apps.get(appId); return app ? stateOf(app) : null; },
    callTool,
    context: readContext,
    report,
    strays: () => ({ total: strays.total, byOrigin: Object.fromEntries(strays.byOrigin) }),
    composer: () => el.composer.value,
    /**
     * configure shortens the approval deadline, for a test that lets one run out.
     * @param {{approvalMs?: number}} options
     */
    configure: ({ approvalMs } = {}) => { if (approvalMs && approvalMs > 0) DEADLINES.approval = approvalMs; },
    limits: LIMITS,
    modelName,
  });

  byId('xa-refresh').addEventListener('click', refresh);
  refresh();
  return api;
}
