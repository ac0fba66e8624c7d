// @ts-check
// Mini-apps on the page's main thread: the tray, the open apps, and the messages between their
// bridge frames and the worker. The frames live here because they need the DOM; the rules live in
// the worker: the store says what a name means, the registry checks every declaration and every
// call's arguments. A call does not pass through here: each document of an app gets a port to
// the worker from its bridge (with the bridge's handshake message, from the bridge's own window
// and origin only, one per document, numbered as it is handed on: miniapps.port {appId, doc}),
// and the worker calls the app's tools over it (the port's other end is the app's document: the
// bridge is off the path too); this file hears of each such call only for display (miniapp.call
// with onPort), of one that passed its deadline (miniapp.cancel with the app and its document),
// and of a document over its message budget on that port (miniapp.over_budget), each of which
// stops the app. An app without such a port (an MCP Apps view)
// is called through here: a call from the worker (miniapp.call) goes to the app's bridge, and its
// answer goes back as miniapps.result, once; the host gives up after 5,000 ms whatever the
// bridge does.
//
// Each app's bridge is framed on a host of its own, app-<16 hex>.localhost on the page's port, a
// new one each time the app starts, when the page is opened on 127.0.0.1 or localhost over http:
// a site of its own, so Chromium runs the app in a renderer process of its own and one app's busy
// loop holds up neither the page nor another app. Opened anywhere else, the page frames the
// bridge on its own origin and the apps share a process.
//
// A bridge says it is ready (bridge_ready) within BRIDGE_HANDSHAKE_MS of its frame being made, or
// the frame is taken for one that cannot load: on a per-app host (a browser, proxy or DNS that
// does not serve *.localhost) the app starts again on the shared app host, the page's own origin,
// and every app after it does too; its card says so, and that apps are then less isolated from
// one another. Silent on the shared host as well, the app is stopped mini-app-frame-timeout with
// the words of what failed, never left "waiting" for ever.
//
// An app is stopped (its frame removed, its tools unregistered in the worker, the reason shown in
// its card with a button to start it again) when a call to it passes its deadline, or when it
// sends more than MESSAGE_BUDGET messages or MESSAGE_BYTE_BUDGET bytes within MESSAGE_WINDOW_MS
// (message-budget.js): its bridge charges what the app sends it and stops the app there, and this
// file charges what a frame inside the app posts to the page directly, the one door the bridge
// cannot see (the page has received and deserialised such a message before its listener runs, so
// it sizes it, and the budget bounds what it pays). The page's message listener looks at a
// message's source before anything else and reads nothing of a message that is not from a
// running app; what it drops, it counts (see counters), never logs.
//
// A folder app (an index.html beside its modules, styles and images) has its files copied to the
// relay when it starts, into a bundle under a random token (POST/PUT /api/app-files); its bridge
// is framed with ?files=<token>, which lets its policy load that bundle and nothing more, and puts
// its base URL in the bundle, so the app's relative URLs resolve inside its folder only. The
// bundle is dropped when the app closes, stops or starts again.
//
// An MCP Apps view (a remote MCP tool's ui:// resource, read by the relay: openView) is shown the
// same way, in the same sandbox with the same budgets: the bridge speaks the MCP Apps protocol to
// it, and this file serves what the bridge hands on: a view's tools/call goes to its own
// extension's server through the assistant's gate (POST /api/turn, call_extension, which asks
// the person first unless the tool declares readOnlyHint; turns.js, so the request does not wait
// on the person), a mini-app's to the assistant's
// catalogue; ui/open-link asks the person; ui/message only fills the assistant's command box;
// size changes set the frame's height (within MAX_VIEW_HEIGHT); closing asks the view to tear
// down first.
//
// What is logic rather than DOM (why an app is stopped, which app a window belongs to, where a
// bridge is framed, how a view's requests are read) lives in mini-app-host.js, pure and tested in
// Node (tools/web/test).
//
// startMiniApps returns the API the page and the tests use (see launch, call, tools, stats).
import { byId, node } from './dom.js';
import { emit, listen } from './events.js';
import { relay } from './http.js';
import { MessageBudget } from './message-budget.js';
import {
  appHost, appHosts, bridgeIgnored, Calls, bridgeURL, cspGiven, MAX_VIEW_HEIGHT, messageText, noToolsText, openLink,
  overBudget, ownerOf, timedOut, toolResult, turnAnswer, viewAppId, viewCall, viewHeight,
} from './mini-app-host.js';
import { BRIDGE_HANDSHAKE_MS, MINI_APP_FRAME_TIMEOUT, TOOL_TIMEOUT_MS } from './rules.js';
import { toolForm } from './schema-form.js';
import { sendTurn } from './turns.js';

/** MAX_REFUSALS_KEPT bounds the refused registrations an app's diagnostics keep (the latest). */
const MAX_REFUSALS_KEPT = 64;
/** MAX_DROPPED_SHOWN bounds the dropped domains a view's card lists (the relay says how many were not read). */
const MAX_DROPPED_SHOWN = 20;
/** TEARDOWN_WAIT_MS is how long a closed view's frame stays for its ui/resource-teardown (the
 * bridge answers within 500 ms whatever the view does). */
const TEARDOWN_WAIT_MS = 600;
/** APP_HOSTS says whether each app gets a host of its own (see above). */
const APP_HOSTS = appHosts(location);

/** @typedef {import('./worker-client.js').StoreEntry} StoreEntry */
/** @typedef {import('./worker-client.js').RegisteredTool} RegisteredTool */
/** @typedef {import('./worker-client.js').JSONSchema} JSONSchema */
/**
 * ViewInfo is what an MCP Apps view shows: the tool it belongs to (by the model's name and the
 * server's), its resource, and the call's input and result when it shows one.
 * policy is the relay's token for the origins the view declared that it is given (those within the
 * extension's bounds.hosts: csp), which its bridge is framed with (?view=); dropped the declared
 * domains it is not given, each with why, shown in its card.
 * @typedef {{extension: string, tool: string, serverTool: string, uri: string, description?: string,
 *   inputSchema?: unknown, input?: object, result?: object, policy?: string, csp?: ViewCSP, dropped?: DroppedDomain[]}} ViewInfo
 */
/** @typedef {import('./mini-app-host.js').ViewCSP} ViewCSP */
/** @typedef {{field: string, domain: string, refused: string, why: string}} DroppedDomain */
/** @typedef {{name: string} | {path: string} | {view: {extension: string, tool: string, input?: object, result?: object}}} Target */
/** @typedef {{path: string, size: number}} FolderFile */
/** @typedef {{token: string, base: string}} Bundle */
/** @typedef {import('./mini-app-host.js').StopReason} StopReason */
/**
 * Stats is what an open app's frames have done, for the tests. dropped is the bridge's count of
 * the app's messages it dropped and ignored what the first few of them were and why, foreign the
 * page's count of messages from the app's frames other than its bridge, validated the arguments
 * its own agent had checked, stopped what stopped it last (null while it runs), onPort the
 * calls the worker made over its port, portsRefused the ports of its bridge not handed on (a
 * second for one document) or refused by the worker.
 * @typedef {{handshakes: number, onPort: number, portsRefused: number, reloads: number, loads: number, registered: string[],
 *   refusals: {name: string, refused: string, why: string, by?: string, generation: number}[],
 *   dropped: number, ignored: {why: string, what: string}[], foreign: number, late: number, ready: boolean,
 *   starts: number, validated: number, stopped: StopReason | null,
 *   mcp: {initialized: boolean, calls: number, links: number, messages: number, height: number, teardowns: number, cancelled: number}}} Stats
 */
/**
 * Running is one start of an app: its bridge's window and origin, whether it still runs, and its
 * message budget's count. Messages from a window of an earlier one are never charged to this.
 * doc is the number of the document whose port was last handed to the worker (0: none yet),
 * portGeneration the bridge's generation of that document.
 * @typedef {{app: OpenApp, window: Window | null, origin: string, live: boolean, budget: MessageBudget,
 *   doc: number, portGeneration: number, ownHost: boolean, handshake: ReturnType<typeof setTimeout> | 0}} Running
 */
/**
 * OpenApp is an app shown in a card, with its bridge frame (none while it is stopped).
 * @typedef {{appId: string, entry: StoreEntry, html: string, target: Target, generation: number,
 *   tools: RegisteredTool[], stats: Stats, loaded: ((failed?: Error) => void) | null, bridgeReady?: boolean, sdk?: string, waited?: boolean, bundle: Bundle | null,
 *   mcp?: ViewInfo | null, viewCalls?: Map<unknown, AbortController>,
 *   frame: HTMLIFrameElement | null, running: Running, view: {section: HTMLElement, h: HTMLElement, badge: HTMLElement,
 *   saveBtn: HTMLButtonElement, reload: HTMLButtonElement, closer: HTMLButtonElement, toolList: HTMLElement, slot: HTMLElement,
 *   stopped: HTMLElement, stoppedText: HTMLElement, again: HTMLButtonElement, ignored: HTMLElement, hostNote: HTMLElement}}} OpenApp
 */

/**
 * startMiniApps runs the tray and the open apps.
 * @param {import('./dialogs.js').PageServices} vb
 */
export function startMiniApps(vb) {
  const el = { tray: byId('app-tray'), open: byId('open-apps'), refresh: byId('apps-refresh') };

  /** @type {Map<string, OpenApp>} appId -> app */
  const apps = new Map();
  /** @type {Calls<OpenApp>} the worker's calls sent to an app through the page */
  const calls = new Calls((callId, answer) => vb.call('miniapps.result', { callId, ...answer }));
  /**
   * owners maps a window to the start of an app it belongs to, or to null for a window of no
   * app's; filled as messages arrive.
   * @type {WeakMap<object, Running | null>}
   */
  const owners = new WeakMap();
  // counters counts the messages the listener dropped: from no app's window (strays), and from a
  // frame of an app since stopped, closed or started again (afterStop).
  const counters = { strays: 0, afterStop: 0 };
  /** @type {Promise<string> | null} */
  let sdkText = null;
  // docs numbers the documents whose port is handed to the worker, across apps and starts.
  let docs = 0;
  /** ownHostsFailed is set once a per-app host did not load: every app runs on the shared app host from then on. */
  let ownHostsFailed = false;

  function sdk() {
    if (!sdkText) {
      sdkText = fetch('/mini-app-sdk.js').then((r) => {
        if (!r.ok) throw new Error(`the mini-app SDK could not be loaded (${r.status})`);
        return r.text();
      });
      sdkText.catch(() => { sdkText = null; });
    }
    return sdkText;
  }

  // ---- the tray ----

  async function refreshTray() {
    let entries;
    try {
      ({ entries } = await vb.must('miniapps.list'));
    } catch (err) {
      vb.notify(err);
      return;
    }
    // Two entries of one title are told apart by their file (and where it is kept).
    /** @type {Map<string, number>} */
    const titles = new Map();
    for (const e of entries) titles.set(e.title || e.fileName, (titles.get(e.title || e.fileName) || 0) + 1);
    const items = entries.map((e) => {
      const kind = e.kind || 'app'; // an entry without a kind is an app, as older lists were
      const li = document.createElement('li');
      li.dataset.appId = e.appId;
      li.dataset.kind = kind;
      const name = (titles.get(e.title || e.fileName) || 0) > 1 ? `${e.title || e.fileName} (${e.fileName}, ${e.source === 'workspace' ? 'workspace' : 'shelf'})` : (e.title || e.fileName);
      const title = document.createElement('button');
      title.type = 'button';
      title.className = 'app-launch';
      title.textContent = name;
      title.title = `Open ${e.fileName} (${e.source})`;
      title.setAttribute('aria-label', `Open ${name}`);
      title.addEventListener('click', () => launch({ name: e.appId }).catch(vb.notify));
      const badge = document.createElement('span');
      badge.className = 'badge';
      badge.textContent = kind === 'page' ? 'page' : 'app';
      li.append(title, badge);
      if (kind === 'page' && e.source === 'workspace') {
        li.append(button('Save as app', () => save(e.storagePath), `Save as app: ${name}`));
      } else if (kind === 'app') {
        const del = button('Delete', () => remove(e), `Delete the app ${name}`);
        del.className = 'danger';
        li.append(del);
      }
      return li;
    });
    if (items.length === 0) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = 'No mini-apps yet. Any .html file in your workspace can be opened as one.';
      items.push(li);
    }
    el.tray.replaceChildren(...items);
  }

  /**
   * @param {string} text
   * @param {() => void} onClick
   * @param {string} [label] the accessible name, saying what the button acts on
   */
  function button(text, onClick, label) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    if (label) b.setAttribute('aria-label', label);
    b.addEventListener('click', onClick);
    return b;
  }

  /** @param {StoreEntry} entry */
  const appTitle = (entry) => entry.title || entry.fileName;

  /** @param {string} name */
  async function save(name) {
    try {
      const entry = await vb.must('miniapps.save', { name });
      vb.notify(new Error(`Saved “${entry.title}” as an app.`));
      for (const app of apps.values()) if (app.entry.storagePath === name && app.entry.source === 'workspace') app.entry = entry;
      await refreshTray();
    } catch (err) {
      vb.notify(err);
    }
  }

  /** @param {StoreEntry} entry */
  async function remove(entry) {
    const back = entry.source === 'shelf' ? 'A shipped sample comes back with “Restore samples”; any other app cannot be brought back.' : 'This cannot be undone.';
    if (!await vb.confirmAction(`Delete the app “${entry.title}”? ${back}`, 'Delete')) return;
    try {
      await vb.must('miniapps.delete', { id: entry.appId });
      const app = apps.get(entry.appId);
      if (app) close(app.appId);
      await refreshTray();
    } catch (err) {
      vb.notify(err);
    }
  }

  // ---- an open app ----

  /** @returns {Stats} */
  function newStats() {
    return { handshakes: 0, onPort: 0, portsRefused: 0, reloads: 0, loads: 0, registered: [], refusals: [], dropped: 0, ignored: [], foreign: 0, late: 0, ready: false, starts: 0, validated: 0, stopped: null,
      mcp: { initialized: false, calls: 0, links: 0, messages: 0, height: 0, teardowns: 0, cancelled: 0 } };
  }

  /** @param {OpenApp} app */
  function card(app) {
    const section = document.createElement('section');
    section.className = 'app-card';
    section.dataset.appId = app.appId;
    const head = document.createElement('div');
    head.className = 'panel-head';
    const h = document.createElement('h3');
    const badge = document.createElement('span');
    badge.className = 'badge';
    const tools = document.createElement('div');
    tools.className = 'tools';
    const saveBtn = button('Save as app', () => save(app.entry.storagePath));
    const reload = button('Reload', () => launch(app.target, app).catch(vb.notify));
    const closer = button('Close', () => close(app.appId));
    tools.append(saveBtn, reload, closer);
    app.view = /** @type {OpenApp['view']} */ ({ reload, closer });
    head.append(h, badge, tools);
    const stopped = document.createElement('div');
    stopped.className = 'app-stopped';
    stopped.setAttribute('role', 'alert');
    stopped.hidden = true;
    const stoppedText = document.createElement('p');
    const again = button('Start again', () => { launch(app.target, app).catch(vb.notify); });
    stopped.append(stoppedText, again);
    const slot = document.createElement('div');
    slot.className = 'bridge-slot';
    const toolList = document.createElement('div');
    toolList.className = 'app-tools';
    const ignored = document.createElement('details');
    ignored.className = 'app-ignored hint';
    ignored.hidden = true;
    const hostNote = node('p', 'hint app-host-note');
    hostNote.setAttribute('role', 'status');
    hostNote.hidden = true;
    section.append(head, stopped, hostNote, slot, ignored, toolList);
    section.setAttribute('aria-labelledby', h.id = `app-title-${app.appId}`);
    h.tabIndex = -1;
    app.view = { ...app.view, section, h, badge, saveBtn, toolList, slot, stopped, stoppedText, again, ignored, hostNote };
    showHead(app);
    showTools(app);
    return section;
  }

  /** randomHost is a fresh app host: app-<16 hex>.localhost on the page's port. */
  function randomHost() {
    return appHost(crypto.getRandomValues(new Uint8Array(8)), location.port);
  }

  /**
   * upload copies a folder app's files to the relay, each read from the worker under the file
   * tools' containment, and returns the bundle they are served from.
   * @param {string} appId
   * @param {FolderFile[]} files
   * @returns {Promise<Bundle>}
   */
  async function upload(appId, files) {
    const made = await relay('/api/app-files', { method: 'POST' });
    if (!made.ok) throw new Error(`the folder app's files could not be served: ${made.why}`);
    /** @type {Bundle} */
    const bundle = { token: made.token, base: made.base };
    try {
      for (const f of files) {
        const { bytes } = await vb.must('miniapps.file', { appId, path: f.path });
        const address = `/api/app-files/${bundle.token}/${f.path.split('/').map(encodeURIComponent).join('/')}`;
        const resp = await fetch(address, { method: 'PUT', headers: { 'Content-Type': 'application/octet-stream' }, body: bytes });
        if (!resp.ok) {
          const body = await resp.json().catch(() => ({}));
          throw new Error(`${f.path} could not be served: ${body.why || resp.status}`);
        }
      }
    } catch (err) {
      dropBundle(bundle);
      throw err;
    }
    return bundle;
  }

  /** @param {Bundle | null} bundle */
  function dropBundle(bundle) {
    if (bundle) relay(`/api/app-files/${bundle.token}`, { method: 'DELETE' }).catch(() => {});
  }

  /**
   * startFrame gives app a new bridge frame (replacing any before it) and a new Running for it.
   * @param {OpenApp} app
   */
  function startFrame(app) {
    if (app.frame) app.frame.remove();
    if (app.running) app.running.live = false;
    const ownHost = APP_HOSTS && !ownHostsFailed;
    const origin = ownHost ? `http://${randomHost()}` : location.origin;
    const frame = document.createElement('iframe');
    frame.className = 'bridge';
    frame.title = `mini-app ${appTitle(app.entry)}`;
    frame.src = bridgeURL(origin, location.origin, app.bundle ? app.bundle.token : '', app.mcp ? app.mcp.policy : '');
    app.view.slot.replaceChildren(frame);
    app.view.stopped.hidden = true;
    app.frame = frame;
    app.bridgeReady = false;
    app.stats.starts++;
    app.stats.stopped = null;
    const running = { app, window: frame.contentWindow, origin, live: true, budget: new MessageBudget(), doc: 0, portGeneration: -1, ownHost, handshake: 0 };
    running.handshake = setTimeout(() => frameSilent(app, running), BRIDGE_HANDSHAKE_MS);
    app.running = running;
    if (frame.contentWindow) owners.set(frame.contentWindow, app.running);
    if (APP_HOSTS && !ownHost && !app.view.hostNote.textContent) showHostNote(app, `Per-app hosts do not load in this browser, so this app runs on the page's shared app host: ${WEAKER}.`);
  }

  /** WEAKER is what running on the shared app host costs, in words. */
  const WEAKER = 'apps are less isolated from one another here (they share a host and a process, so one app\'s busy loop can slow another)';

  /**
   * showHostNote says on app's card which host its frame runs on, and why.
   * @param {OpenApp} app
   * @param {string} text
   */
  function showHostNote(app, text) {
    app.view.hostNote.textContent = text;
    app.view.hostNote.hidden = false;
  }

  /**
   * frameSilent acts on a bridge frame that did not say it was ready within BRIDGE_HANDSHAKE_MS:
   * on a per-app host, the app starts again on the shared app host (and so does every app after
   * it); on the shared host, the app is stopped with what failed.
   * @param {OpenApp} app
   * @param {Running} running
   */
  function frameSilent(app, running) {
    if (apps.get(app.appId) !== app || app.running !== running || !running.live || app.bridgeReady) return;
    const secs = BRIDGE_HANDSHAKE_MS / 1000;
    if (running.ownHost) {
      ownHostsFailed = true;
      emit('platform-missing', 'app-hosts');
      showHostNote(app, `Its own host (${new URL(running.origin).hostname}) did not load within ${secs} s, so it runs on the page's shared app host: ${WEAKER}.`);
      startFrame(app);
      return;
    }
    const why = `its frame did not load within ${secs} s: the app host ${running.origin} did not answer. Press “Start again”, or reload the page`;
    stop(app, { rule: MINI_APP_FRAME_TIMEOUT, why });
    if (app.loaded) {
      app.loaded(new Error(`The mini-app ${appTitle(app.entry)} could not start: ${why}.`));
      app.loaded = null;
    }
  }

  /** @param {OpenApp} app */
  function showHead(app) {
    const title = appTitle(app.entry);
    app.view.h.textContent = title;
    app.view.badge.textContent = app.entry.kind === 'page' ? 'page' : 'app';
    app.view.saveBtn.hidden = !(app.entry.kind === 'page' && app.entry.source === 'workspace');
    app.view.saveBtn.setAttribute('aria-label', `Save as app: ${title}`);
    app.view.reload.setAttribute('aria-label', `Reload ${title}`);
    app.view.closer.setAttribute('aria-label', `Close ${title}`);
    app.view.again.setAttribute('aria-label', `Start ${title} again`);
    if (app.frame) app.frame.title = `mini-app ${title}`;
  }

  // launch opens {name} (through the store) or the workspace file {path}; an app already open
  // loads again in its own frame. It resolves once the bridge has the app's HTML.
  /**
   * @param {Target} target
   * @param {OpenApp} [reuse]
   */
  async function launch(target, reuse) {
    if ('view' in target) return openView(target.view.extension, target.view.tool, target.view);
    const { entry, html, folder } = await vb.must('miniapps.launch', target);
    return show(entry, html, target, reuse, folder);
  }

  /**
   * openView shows the MCP Apps view of tool (the model's name of it, id__tool) of admitted remote
   * MCP extension extension, with a call's input and result when given. The relay reads it from
   * the server (POST /api/extensions/view: reading it spends the extension's requests); it runs in the sandbox as any mini-app does.
   * @param {string} extension
   * @param {string} tool
   * @param {{input?: object, result?: object}} [call]
   * @param {OpenApp} [reuse] the card already showing this view
   * @param {boolean} [focus] whether its heading takes focus (the person opened it)
   * @returns {Promise<{appId: string, entry: StoreEntry}>}
   */
  async function openView(extension, tool, call = {}, reuse, focus = true) {
    const r = await relay('/api/extensions/view', { body: { extension, tool } });
    if (!r.ok) throw Object.assign(new Error(`The view of ${tool} could not be read (${r.refused}): ${r.why}`), { rule: r.refused || '' });
    const v = r.view;
    const appId = viewAppId(extension, v.serverTool);
    const entry = /** @type {StoreEntry} */ (/** @type {unknown} */ ({ appId, title: `${v.serverTool} (${extension})`, fileName: v.uri, kind: 'view', source: 'extension', storagePath: '' }));
    /** @type {ViewInfo} */
    const info = { extension, tool, serverTool: v.serverTool, uri: v.uri, description: v.description, inputSchema: v.inputSchema, input: call.input, result: call.result,
      policy: typeof v.policy === 'string' ? v.policy : '', csp: v.csp || {}, dropped: Array.isArray(v.dropped) ? v.dropped : [] };
    return show(entry, v.html, { view: { extension, tool, input: call.input, result: call.result } }, reuse, undefined, focus, info);
  }

  /**
   * show puts a launched app in its frame (a new card, or the card already showing it).
   * @param {StoreEntry} entry
   * @param {string} html
   * @param {Target} target
   * @param {OpenApp} [reuse]
   * @param {FolderFile[]} [folder] a folder app's files
   * @param {boolean} [focus] whether the app's heading takes focus (the person opened it)
   * @param {ViewInfo} [view] an MCP Apps view's tool and call
   * @returns {Promise<{appId: string, entry: StoreEntry}>}
   */
  async function show(entry, html, target, reuse, folder, focus = true, view) {
    let app = apps.get(entry.appId) || reuse;
    if (app && app.appId !== entry.appId) {
      close(app.appId);
      app = undefined;
    }
    const code = await sdk();
    const bundle = folder && folder.length > 0 ? await upload(entry.appId, folder) : null;
    if (!app) {
      // card() gives the app its view, startFrame its frame and its Running.
      app = /** @type {OpenApp} */ (/** @type {unknown} */ ({ appId: entry.appId, entry, html, target, generation: 0, tools: [], stats: newStats(), loaded: null, frame: null, bundle, mcp: view || null }));
      apps.set(app.appId, app);
      el.open.prepend(card(app));
      startFrame(app);
    } else {
      const old = app.bundle;
      app.bundle = bundle;
      dropBundle(old);
      // A folder app's bridge is framed for its bundle: a new bundle needs a new frame.
      if (bundle || old) startFrame(app);
      app.entry = entry;
      app.html = html;
      app.target = target;
      const oldPolicy = app.mcp ? app.mcp.policy || '' : '';
      app.mcp = view || null;
      // A view's bridge is framed for its policy: a new one needs a new frame.
      if ((view && view.policy || '') !== oldPolicy && app.running.live) startFrame(app);
      app.tools = [];
      app.stats.ready = false;
      showHead(app);
      showTools(app);
      if (!app.running.live) startFrame(app); // stopped: it starts again in a new frame
    }
    app.sdk = code;
    const shown = app;
    await new Promise((resolve, reject) => {
      shown.loaded = (failed) => (failed ? reject(failed) : resolve(undefined));
      if (shown.bridgeReady) sendLoad(shown);
    });
    // What the action opened is shown, and its heading takes focus.
    shown.view.section.scrollIntoView({ block: 'nearest', behavior: 'instant' });
    if (focus) shown.view.h.focus({ preventScroll: true });
    return { appId: app.appId, entry: app.entry };
  }

  /** @param {OpenApp} app */
  function sendLoad(app) {
    app.stats.loads++;
    app.stats.mcp.initialized = false;
    const view = app.mcp ? { hostContext: hostContext(app), input: app.mcp.input, result: app.mcp.result, csp: app.mcp.csp || {} } : { hostContext: hostContext(app) };
    post(app, { type: 'load', html: app.html, sdk: app.mcp ? '' : app.sdk, base: app.bundle ? app.bundle.base : '', view });
    // An app that neither registers a tool nor says it is ready within a tool call's time is
    // said to have none, rather than to be loading for ever.
    app.waited = false;
    const loads = app.stats.loads;
    setTimeout(() => {
      if (apps.get(app.appId) !== app || app.stats.loads !== loads) return;
      app.waited = true;
      showTools(app);
    }, TOOL_TIMEOUT_MS);
    if (app.loaded) {
      app.loaded();
      app.loaded = null;
    }
  }

  /**
   * hostContext is what an MCP Apps view is told of where it is shown (ui/initialize).
   * @param {OpenApp} app
   */
  function hostContext(app) {
    /** @type {Record<string, unknown>} */
    const ctx = {
      theme: matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light',
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      displayMode: 'inline',
      availableDisplayModes: ['inline'],
      containerDimensions: { width: app.view.slot.clientWidth || 600, maxHeight: MAX_VIEW_HEIGHT },
      platform: 'web',
      userAgent: 'Voicebox',
    };
    if (app.mcp) ctx.toolInfo = { tool: { name: app.mcp.serverTool, description: app.mcp.description || '', inputSchema: app.mcp.inputSchema || { type: 'object' } } };
    return ctx;
  }

  /**
   * stopViewCalls stops the requests of app's view (or of a mini-app written with the ext-apps
   * SDK) the page still serves: their turns are cancelled on the relay, so a request for the
   * person's approval goes and nothing is done. Called when the view cancels one (id), and for
   * all when it closes, stops or loads another document: nobody waits for their answers then.
   * @param {OpenApp} app
   * @param {unknown} [id] one request's id; all when left out
   */
  function stopViewCalls(app, id) {
    const live = app.viewCalls;
    if (!live) return;
    for (const [key, ctl] of [...live]) {
      if (id !== undefined && key !== id) continue;
      live.delete(key);
      app.stats.mcp.cancelled++;
      ctl.abort();
    }
  }

  /** @param {string} appId */
  function close(appId) {
    const app = apps.get(appId);
    if (!app) return;
    apps.delete(appId);
    stopViewCalls(app);
    if (app.stats.mcp.initialized && app.frame) {
      // A view is asked to tear down first; its frame goes once the bridge had its answer (or
      // gave up on it), and the card is hidden meanwhile.
      post(app, { type: 'teardown' });
      app.stats.mcp.teardowns++;
      const section = app.view.section;
      section.hidden = true;
      setTimeout(() => section.remove(), TEARDOWN_WAIT_MS);
    } else app.view.section.remove();
    app.running.live = false;
    dropBundle(app.bundle);
    app.bundle = null;
    calls.settleApp(app, { refused: 'mini-app-closed', why: 'the mini-app was closed before it answered' });
    vb.call('miniapps.close', { appId, doc: app.running.doc });
  }

  /**
   * stop stops app's running frame, for reason: the frame is removed, calls waiting on it are
   * answered, the worker forgets its tools, and its card says why and offers to start it again.
   * It does nothing to an app that is not running.
   * @param {OpenApp} app
   * @param {StopReason} reason
   */
  function stop(app, reason) {
    const running = app.running;
    if (!running.live || apps.get(app.appId) !== app) return;
    running.live = false;
    stopViewCalls(app);
    app.frame?.remove();
    app.frame = null;
    app.bridgeReady = false;
    app.tools = [];
    app.stats.ready = false;
    app.stats.stopped = reason;
    const why = `the mini-app was stopped: ${reason.why}`;
    calls.settleApp(app, { refused: 'mini-app-closed', why });
    vb.call('miniapps.close', { appId: app.appId, why, doc: running.doc });
    app.view.stoppedText.textContent = `Stopped (${reason.rule}): ${reason.why}`;
    app.view.stopped.hidden = false;
    showTools(app);
  }

  /**
   * charge charges one message a running frame's app posted to the page (data as received, at
   * its arrival: the event's timeStamp) against its budget and reports whether it is within it;
   * the first one over it stops the app.
   * @param {Running} running
   * @param {unknown} data
   * @param {number} at
   */
  function charge(running, data, at) {
    const over = running.budget.charge(data, false, at);
    if (!over) return true;
    stop(running.app, overBudget(over, running.budget.count, running.budget.bytes));
    return false;
  }

  /**
   * owner returns the Running source belongs to (a bridge, or any frame inside one), or null. The
   * first message from a window walks up at most MAX_FRAME_DEPTH parents; the answer is kept, so
   * every later message costs one lookup.
   * @param {MessageEventSource | null} source
   * @returns {Running | null}
   */
  function owner(source) {
    return ownerOf(owners, source);
  }

  // ---- messages from the bridges ----

  window.addEventListener('message', (event) => {
    const running = owner(event.source);
    if (!running) {
      counters.strays++;
      return;
    }
    if (!running.live) {
      counters.afterStop++;
      return;
    }
    const app = running.app;
    if (event.source !== running.window || event.origin !== running.origin) {
      // A frame inside the app writing to the page: never part of the protocol.
      app.stats.foreign++;
      charge(running, event.data, event.timeStamp);
      return;
    }
    fromBridge(app, running, event.data || {}, event.ports);
  });

  /**
   * fromBridge acts on a message of app's bridge in its running frame; what it does after waiting
   * for the worker, it does only while that frame still runs.
   * @param {OpenApp} app
   * @param {Running} running
   * @param {any} msg
   * @param {readonly MessagePort[]} ports what the bridge transferred with it
   */
  async function fromBridge(app, running, msg, ports) {
    const stats = app.stats;
    const current = () => apps.get(app.appId) === app && app.running === running && running.live;
    switch (msg.type) {
      case 'bridge_ready':
        clearTimeout(running.handshake);
        app.bridgeReady = true;
        if (app.loaded) sendLoad(app);
        break;
      case 'handshake': {
        stats.handshakes++;
        app.generation = msg.generation;
        // The document's port to the worker: handed on once per document, numbered.
        const given = ports[0];
        if (!given) break;
        if (running.portGeneration === msg.generation) {
          stats.portsRefused++;
          given.close();
          break;
        }
        running.portGeneration = msg.generation;
        running.doc = ++docs;
        const bound = await vb.call('miniapps.port', { appId: app.appId, doc: running.doc, port: given }, [given]);
        if (!bound.ok) stats.portsRefused++;
        break;
      }
      case 'reloaded':
        stats.reloads++;
        stopViewCalls(app);
        app.generation = msg.generation;
        app.tools = [];
        stats.ready = false;
        showTools(app);
        // The document that went: its port to the worker goes with it (not a newer one's).
        await vb.call('miniapps.reset', { appId: app.appId, doc: running.doc });
        break;
      case 'register_tool': {
        if (msg.generation !== app.generation) return;
        const answer = await vb.call('miniapps.register', msg.view === true ? { appId: app.appId, tool: msg.tool, view: true } : { appId: app.appId, tool: msg.tool });
        if (!current() || msg.generation !== app.generation) return;
        const name = msg.tool && msg.tool.name;
        if (answer.ok) {
          stats.registered.push(name);
          app.tools.push(answer.value);
          showTools(app);
        } else {
          noteRefusal(app, { name, refused: answer.refused, why: answer.why });
        }
        const refused = answer.ok ? {} : { refused: answer.refused, why: answer.why };
        post(app, { type: 'registered', generation: msg.generation, name, ok: answer.ok, ...refused });
        break;
      }
      case 'bridge_refused':
        noteRefusal(app, { name: String(msg.name), refused: String(msg.refused), why: String(msg.why), by: msg.by === 'sdk' ? 'sdk' : 'bridge' });
        break;
      case 'unregister_tool':
        if (msg.generation !== app.generation) return;
        await vb.call('miniapps.unregister', { appId: app.appId, name: msg.name });
        if (!current()) return;
        app.tools = app.tools.filter((t) => t.name !== msg.name);
        showTools(app);
        break;
      case 'app_ready':
        if (msg.generation === app.generation) {
          stats.ready = true;
          showTools(app);
        }
        break;
      case 'tool_result': {
        const c = calls.get(msg.callId);
        if (!c || c.app !== app) {
          stats.late++;
          return;
        }
        if (msg.refused) calls.settle(msg.callId, { refused: msg.refused, why: msg.why });
        else calls.settle(msg.callId, { result: JSON.parse(msg.result) });
        if (msg.refused === 'tool-timeout') stop(app, timedOut(c.tool));
        break;
      }
      case 'dropped': {
        const { count, samples } = bridgeIgnored(msg);
        if (count !== null) stats.dropped = count;
        if (samples !== null) stats.ignored = samples;
        showIgnored(app);
        break;
      }
      case 'validate_args': {
        // The app's own agent asks whether a call's arguments pass: the worker's validator says.
        if (msg.generation !== app.generation) return;
        const answer = await vb.call('miniapps.validate', { appId: app.appId, tool: String(msg.name), args: msg.args });
        if (!current() || msg.generation !== app.generation) return;
        stats.validated++;
        post(app, answer.ok
          ? { type: 'validated', generation: msg.generation, checkId: msg.checkId, ok: true, args: answer.value.args }
          : { type: 'validated', generation: msg.generation, checkId: msg.checkId, ok: false, refused: answer.refused, why: answer.why });
        break;
      }
      case 'over_budget':
        stop(app, overBudget(typeof msg.why === 'string' ? msg.why.slice(0, 200) : 'it passed its message budget', msg.messages, msg.bytes));
        break;
      case 'mcp_initialize':
        // A view's handshake, as WebMCP's is an app's: the document it names is the current one.
        stats.handshakes++;
        stopViewCalls(app); // an earlier document's, if any
        app.generation = msg.generation;
        break;
      case 'mcp_initialized':
        if (msg.generation !== app.generation) return;
        stats.mcp.initialized = true;
        stats.ready = true;
        showTools(app);
        break;
      case 'mcp_size': {
        const height = viewHeight(msg.height);
        if (msg.generation !== app.generation || !app.frame || height === null) return;
        stats.mcp.height = height;
        app.frame.style.height = `${stats.mcp.height}px`;
        break;
      }
      case 'mcp_request_teardown':
        if (msg.generation === app.generation) close(app.appId);
        break;
      case 'mcp_request': {
        if (msg.generation !== app.generation) return;
        const ctl = new AbortController();
        if (!app.viewCalls) app.viewCalls = new Map();
        stopViewCalls(app, msg.id); // the bridge refuses an id already waiting; a stale one goes
        app.viewCalls.set(msg.id, ctl);
        const answer = await serveView(app, String(msg.method), msg.params || {}, ctl.signal);
        if (app.viewCalls.get(msg.id) === ctl) app.viewCalls.delete(msg.id);
        if (ctl.signal.aborted || !current() || msg.generation !== app.generation) return;
        post(app, { type: 'mcp_answer', generation: msg.generation, id: msg.id, ...answer });
        break;
      }
      case 'mcp_cancel':
        if (msg.generation === app.generation) stopViewCalls(app, msg.id);
        break;
    }
  }

  /**
   * serveView serves a view's request the bridge handed on: tools/call through the assistant's
   * gate (a view to its own extension's server only; a mini-app to the assistant's catalogue),
   * ui/open-link once the person agrees, ui/message into the command box.
   * @param {OpenApp} app
   * @param {string} method
   * @param {any} params
   * @param {AbortSignal} signal aborts when nobody waits for the answer any more
   * @returns {Promise<{result: object} | {error: {code: number, message: string}}>}
   */
  async function serveView(app, method, params, signal) {
    const stats = app.stats.mcp;
    switch (method) {
      case 'tools/call': {
        const call = viewCall(app.mcp, params);
        if ('error' in call) return call;
        stats.calls++;
        const action = call.action;
        /** @type {any} */
        let t;
        try {
          t = await sendTurn({ action }, undefined, signal);
        } catch (err) {
          return { result: { content: [{ type: 'text', text: err instanceof Error ? err.message : String(err) }], isError: true } };
        }
        return turnAnswer(t);
      }
      case 'ui/open-link': {
        const link = openLink(params);
        if ('error' in link) return link;
        const url = link.url;
        stats.links++;
        if (!await vb.confirmAction(`${appTitle(app.entry)} asks to open ${url.href} in a new tab.`, 'Open')) return { result: { isError: true } };
        window.open(url.href, '_blank', 'noopener,noreferrer');
        return { result: {} };
      }
      case 'ui/message': {
        const text = messageText(params);
        stats.messages++;
        // Only the command box: nothing is sent until the person sends it.
        const box = /** @type {HTMLInputElement | null} */ (document.getElementById('command'));
        if (!box) return { result: { isError: true } };
        box.value = text;
        box.dataset.from = app.appId;
        box.focus({ preventScroll: true });
        return { result: {} };
      }
    }
    return { error: { code: -32601, message: `Method not found: ${method}` } };
  }

  /**
   * showIgnored says in app's card how many of its messages were ignored, and why, with the first
   * few: a guest speaking something the host does not understand is told apart from a silent one.
   * @param {OpenApp} app
   */
  function showIgnored(app) {
    const { dropped, ignored } = app.stats;
    const box = app.view.ignored;
    box.hidden = dropped === 0;
    if (dropped === 0) return;
    const summary = document.createElement('summary');
    summary.textContent = `${dropped} message${dropped === 1 ? '' : 's'} ignored: ${ignored[0] ? ignored[0].why : 'not part of the protocol'}`;
    const list = document.createElement('ul');
    for (const x of ignored) {
      const li = document.createElement('li');
      li.textContent = `${x.what}: ${x.why}`;
      list.append(li);
    }
    box.replaceChildren(summary, list);
  }

  /**
   * post sends msg to app's bridge, on the bridge's own origin only.
   * @param {OpenApp} app
   * @param {object} msg
   */
  function post(app, msg) {
    app.frame?.contentWindow?.postMessage(msg, app.running.origin);
  }

  // ---- calls from the worker ----

  vb.on('miniapp.call', ({ callId, appId, tool, args, onPort }) => {
    const app = apps.get(appId);
    if (onPort) {
      // The worker called the app over its port: this is only the news of it.
      if (app) app.stats.onPort++;
      return;
    }
    if (!app || !app.running.live) {
      const why = app ? `mini-app ${appId} was stopped: ${app.stats.stopped?.why}` : `mini-app ${appId} is not open`;
      vb.call('miniapps.result', { callId, refused: 'mini-app-closed', why });
      return;
    }
    calls.open(callId, app, tool, TOOL_TIMEOUT_MS, () => stop(app, timedOut(tool)));
    post(app, { type: 'call_tool', callId, name: tool, args });
  });

  // The assistant opened an app (launch_mini_app, create_mini_app): the worker has launched it.
  vb.on('miniapp.open', ({ entry, html, folder }) => {
    const target = entry.kind === 'page' && entry.source === 'workspace' ? { path: entry.storagePath } : { name: entry.appId };
    show(entry, html, target, undefined, folder, false).then(refreshTray).catch(vb.notify);
  });

  // A document passed its message budget on its port to the worker (which charges what the app
  // posts there, as the bridge charges the rest): that document's app is stopped, never a newer.
  vb.on('miniapp.over_budget', ({ appId, doc, why, messages, bytes }) => {
    const app = apps.get(String(appId));
    if (app && doc && app.running.doc === doc) stop(app, overBudget(String(why).slice(0, 200), messages, bytes));
  });

  // The worker stopped waiting: its deadline passed (expired), which stops the app, or its caller
  // went away, which only cancels the call.
  vb.on('miniapp.cancel', ({ callId, expired, appId, tool, doc }) => {
    const c = calls.forget(callId);
    if (!c) {
      // A call over an app's port passed its deadline (in the worker or in the bridge): the
      // document it went to is stopped, never a newer one.
      const app = appId ? apps.get(appId) : undefined;
      if (expired && app && doc && app.running.doc === doc) stop(app, timedOut(String(tool)));
      return;
    }
    if (expired) stop(c.app, timedOut(c.tool));
    else post(c.app, { type: 'cancel', callId });
  });

  // ---- the tools of an open app, and trying one by hand ----

  /**
   * noteRefusal keeps a refused registration in the app's diagnostics (the latest
   * MAX_REFUSALS_KEPT) and shows it on the app's card.
   * @param {OpenApp} app
   * @param {{name: string, refused: string, why: string, by?: string}} r
   */
  function noteRefusal(app, r) {
    const list = app.stats.refusals;
    list.push({ ...r, generation: app.generation });
    if (list.length > MAX_REFUSALS_KEPT) list.splice(0, list.length - MAX_REFUSALS_KEPT);
    showTools(app);
  }

  /**
   * refusalList is the card's list of the tools the app's current document asked for and did not
   * get, with why; null when there are none.
   * @param {OpenApp} app
   */
  function refusalList(app) {
    const now = app.stats.refusals.filter((r) => r.generation === app.generation);
    if (now.length === 0) return null;
    const d = document.createElement('details');
    d.className = 'hint tool-refusals';
    d.append(node('summary', '', `${now.length === 1 ? 'A tool was' : `${now.length} tools were`} refused; the app's other tools work.`));
    const ul = document.createElement('ul');
    for (const r of now) ul.append(node('li', '', `${r.name.slice(0, 80)}: ${r.why} (${r.refused})`));
    d.append(ul);
    return d;
  }

  /** @param {OpenApp} app */
  function showTools(app) {
    const list = app.view.toolList;
    if (app.mcp) {
      list.replaceChildren(node('p', 'hint', `The view of ${app.mcp.serverTool}, a tool of the extension ${app.mcp.extension}. What it asks its server to do goes through the assistant, which asks you first unless the tool only reads.`));
      const csp = app.mcp.csp || {};
      const given = cspGiven(csp);
      if (given.length > 0) {
        list.append(node('p', 'hint view-csp-given', `It may reach ${given.join(', ')} itself, as it declared: within the hosts the extension was admitted for.`));
      }
      const dropped = app.mcp.dropped || [];
      if (dropped.length > 0) {
        const d = document.createElement('details');
        d.className = 'hint view-csp-dropped';
        d.append(node('summary', '', `It declared ${dropped.length === 1 ? 'a domain' : `${dropped.length} domains`} it may not reach (outside the extension's hosts, or not an origin); it runs without ${dropped.length === 1 ? 'it' : 'them'}.`));
        const ul = document.createElement('ul');
        for (const x of dropped.slice(0, MAX_DROPPED_SHOWN)) {
          ul.append(node('li', '', `${x.domain || '(none)'} in ${x.field}: ${x.why} (${x.refused})`));
        }
        if (dropped.length > MAX_DROPPED_SHOWN) ul.append(node('li', '', `and ${dropped.length - MAX_DROPPED_SHOWN} more`));
        d.append(ul);
        list.append(d);
      }
      // Tools the view lists itself (ext-apps onlisttools) are the assistant's as an app's are.
      list.append(...app.tools.map((t) => appToolForm(app, t)));
      return;
    }
    if (app.tools.length === 0 && app.stats.stopped) {
      list.replaceChildren(); // the card's stopped line says why: it waits for nothing
      return;
    }
    if (app.tools.length === 0) {
      // Why the assistant cannot drive this app, in words: it is still loading, it is a page
      // that offers no tools, or it loaded and registered none.
      const p = node('p', 'hint no-tools', noToolsText(app.entry.kind, app.stats.ready, !!app.waited));
      list.replaceChildren(p);
    } else {
      list.replaceChildren(...app.tools.map((t) => appToolForm(app, t)));
    }
    const refused = refusalList(app);
    if (refused) list.append(refused);
  }

  /**
   * @param {OpenApp} app
   * @param {RegisteredTool} tool
   */
  function appToolForm(app, tool) {
    return toolForm({
      name: tool.name, description: tool.description, schema: tool.parameters, app: appTitle(app.entry),
      run: async (args) => {
        const answer = await vb.call('miniapps.call', { appId: app.appId, tool: tool.name, args });
        return answer.ok ? { ok: true, text: JSON.stringify(answer.value.result, null, 2) } : answer;
      },
    });
  }

  el.refresh.addEventListener('click', refreshTray);
  // The tray follows the workspace: a page written or removed there (by anyone) shows at once.
  let trayQueued = false;
  const trayLater = () => {
    if (trayQueued) return;
    trayQueued = true;
    queueMicrotask(() => { trayQueued = false; refreshTray(); });
  };
  listen('root', trayLater);
  listen('files-changed', trayLater);
  listen('history', trayLater);

  // The model (or an MCP client) called a remote MCP tool that has a view: the view shows that
  // call, its input and its result, as MCP Apps hosts do. The relay's result names the extension
  // that answered and the tool's view, so the view opens whoever called and however the call
  // named the tool (call_extension's extension is optional). A call typed here, or a view's own
  // (both typed turns), opens nothing, so a view calling its own tool does not reload itself.
  listen('relay:call', (c) => {
    if (c.source === 'turn' || !c.ok || c.tool !== 'call_extension' || !c.action || !c.result) return;
    const { extension, view, server } = c.result;
    const name = c.action.name;
    if (typeof extension !== 'string' || typeof view !== 'string' || !view || typeof server !== 'string' || typeof name !== 'string') return;
    /** @type {object} */
    let input = {};
    try { input = JSON.parse(c.action.arguments || '{}'); } catch { /* the relay checked them; show none */ }
    const result = typeof c.result.text === 'string' ? toolResult(c.result) : undefined;
    // A view already open shows the new call in its own card.
    openView(extension, name, { input, result }, undefined, false).catch(vb.notify);
  });

  return Object.freeze({
    launch,
    openView,
    close,
    refreshTray,
    list: async () => (await vb.must('miniapps.list')).entries,
    /**
     * @param {string} appId
     * @param {string} tool
     * @param {unknown} args
     */
    call: async (appId, tool, args) => (await vb.must('miniapps.call', { appId, tool, args })).result,
    /** @param {string} appId */
    tools: (appId) => apps.get(appId)?.tools.map((t) => t.name) ?? [],
    /** @param {string} appId */
    stats: (appId) => { const app = apps.get(appId); return app ? structuredClone(app.stats) : null; },
    counters: () => ({ ...counters }),
    open: () => [...apps.keys()],
  });
}
