// @ts-check
// Mini-apps on the page's main thread: the tray, the open apps, and the messages between their
// bridge frames and the worker. The frames live here because they need the DOM; the rules live in
// the worker: the store says what a name means, the registry checks every declaration and every
// call's arguments. A call from the worker (miniapp.call) goes to the app's bridge, and its answer
// goes back as miniapps.result, once; the host gives up after 5,000 ms whatever the bridge does.
//
// startMiniApps returns the API the page and the tests use (see launch, call, tools, stats).
import { byId } from './dom.js';
import { listen } from './events.js';
import { TOOL_TIMEOUT_MS } from './rules.js';

/** @typedef {import('./worker-client.js').StoreEntry} StoreEntry */
/** @typedef {import('./worker-client.js').RegisteredTool} RegisteredTool */
/** @typedef {import('./worker-client.js').JSONSchema} JSONSchema */
/** @typedef {{name: string} | {path: string}} Target */
/**
 * Stats is what an open app's bridge has told the host, for the tests.
 * @typedef {{handshakes: number, reloads: number, loads: number, registered: string[],
 *   refusals: {name: string, refused: string, why: string, by?: string}[],
 *   dropped: {from: string, kind: string}[], late: number, ready: boolean}} Stats
 */
/**
 * OpenApp is an app shown in a card, with its bridge frame.
 * @typedef {{appId: string, entry: StoreEntry, html: string, target: Target, generation: number,
 *   tools: RegisteredTool[], stats: Stats, loaded: (() => void) | null, bridgeReady?: boolean, sdk?: string,
 *   frame: HTMLIFrameElement, view: {section: HTMLElement, h: HTMLElement, badge: HTMLElement,
 *   saveBtn: HTMLButtonElement, toolList: HTMLElement}}} OpenApp
 */

/**
 * startMiniApps runs the tray and the open apps.
 * @param {import('./dialogs.js').PageServices} vb
 */
export function startMiniApps(vb) {
  const el = { tray: byId('app-tray'), open: byId('open-apps'), refresh: byId('apps-refresh') };

  /** @type {Map<string, OpenApp>} appId -> app */
  const apps = new Map();
  /** @type {Map<string, {app: OpenApp, timer: number}>} callId -> the call sent to an app */
  const calls = new Map();
  /** @type {{origin: string, type: string}[]} messages from windows that are no open app's bridge */
  const strays = [];
  /** @type {Promise<string> | null} */
  let sdkText = null;

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
    const items = entries.map((e) => {
      const kind = e.kind || 'app'; // an entry without a kind is an app, as older lists were
      const li = document.createElement('li');
      li.dataset.appId = e.appId;
      li.dataset.kind = kind;
      const title = document.createElement('button');
      title.type = 'button';
      title.className = 'app-launch';
      title.textContent = e.title || e.fileName;
      title.title = `Open ${e.fileName} (${e.source})`;
      title.addEventListener('click', () => launch({ name: e.appId }).catch(vb.notify));
      const badge = document.createElement('span');
      badge.className = 'badge';
      badge.textContent = kind === 'page' ? 'page' : 'app';
      li.append(title, badge);
      if (kind === 'page' && e.source === 'workspace') {
        li.append(button('Save as app', () => save(e.storagePath)));
      } else if (kind === 'app') {
        const del = button('Delete', () => remove(e));
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
   */
  function button(text, onClick) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    b.addEventListener('click', onClick);
    return b;
  }

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
    if (!await vb.confirmAction(`Delete the app “${entry.title}”? This cannot be undone.`, 'Delete')) return;
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
    return { handshakes: 0, reloads: 0, loads: 0, registered: [], refusals: [], dropped: [], late: 0, ready: false };
  }

  /**
   * @param {OpenApp} app
   * @param {HTMLIFrameElement} frame
   */
  function card(app, frame) {
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
    tools.append(
      saveBtn,
      button('Reload', () => launch(app.target, app).catch(vb.notify)),
      button('Close', () => close(app.appId)),
    );
    head.append(h, badge, tools);
    frame.className = 'bridge';
    frame.title = `mini-app ${app.entry.title}`;
    frame.src = '/mini-app-bridge.html';
    const toolList = document.createElement('div');
    toolList.className = 'app-tools';
    section.append(head, frame, toolList);
    app.view = { section, h, badge, saveBtn, toolList };
    showHead(app);
    return section;
  }

  /** @param {OpenApp} app */
  function showHead(app) {
    app.view.h.textContent = app.entry.title || app.entry.fileName;
    app.view.badge.textContent = app.entry.kind === 'page' ? 'page' : 'app';
    app.view.saveBtn.hidden = !(app.entry.kind === 'page' && app.entry.source === 'workspace');
  }

  // launch opens {name} (through the store) or the workspace file {path}; an app already open
  // loads again in its own frame. It resolves once the bridge has the app's HTML.
  /**
   * @param {Target} target
   * @param {OpenApp} [reuse]
   */
  async function launch(target, reuse) {
    const { entry, html } = await vb.must('miniapps.launch', target);
    return show(entry, html, target, reuse);
  }

  /**
   * show puts a launched app in its frame (a new card, or the card already showing it).
   * @param {StoreEntry} entry
   * @param {string} html
   * @param {Target} target
   * @param {OpenApp} [reuse]
   * @returns {Promise<{appId: string, entry: StoreEntry}>}
   */
  async function show(entry, html, target, reuse) {
    let app = apps.get(entry.appId) || reuse;
    if (app && app.appId !== entry.appId) {
      close(app.appId);
      app = undefined;
    }
    const code = await sdk();
    if (!app) {
      const frame = document.createElement('iframe');
      // card() gives the app its view.
      app = /** @type {OpenApp} */ (/** @type {unknown} */ ({ appId: entry.appId, entry, html, target, generation: 0, tools: [], stats: newStats(), loaded: null, frame }));
      apps.set(app.appId, app);
      el.open.prepend(card(app, frame));
    } else {
      app.entry = entry;
      app.html = html;
      app.target = target;
      app.tools = [];
      app.stats.ready = false;
      showHead(app);
      showTools(app);
    }
    app.sdk = code;
    const shown = app;
    await new Promise((resolve) => {
      shown.loaded = () => resolve(undefined);
      if (shown.bridgeReady) sendLoad(shown);
    });
    return { appId: app.appId, entry: app.entry };
  }

  /** @param {OpenApp} app */
  function sendLoad(app) {
    app.stats.loads++;
    app.frame.contentWindow?.postMessage({ type: 'load', html: app.html, sdk: app.sdk }, location.origin);
    if (app.loaded) {
      app.loaded();
      app.loaded = null;
    }
  }

  /** @param {string} appId */
  function close(appId) {
    const app = apps.get(appId);
    if (!app) return;
    apps.delete(appId);
    app.view.section.remove();
    for (const [callId, c] of calls) {
      if (c.app === app) settle(callId, { refused: 'mini-app-closed', why: 'the mini-app was closed before it answered' });
    }
    vb.call('miniapps.close', { appId });
  }

  // ---- messages from the bridges ----

  window.addEventListener('message', (event) => {
    let app = null;
    for (const a of apps.values()) if (a.frame.contentWindow === event.source) app = a;
    if (!app || event.origin !== location.origin) {
      strays.push({ origin: event.origin, type: String(event.data && event.data.type).slice(0, 40) });
      if (strays.length > 100) strays.shift();
      return;
    }
    fromBridge(app, event.data || {});
  });

  /**
   * @param {OpenApp} app
   * @param {any} msg
   */
  async function fromBridge(app, msg) {
    const stats = app.stats;
    switch (msg.type) {
      case 'bridge_ready':
        app.bridgeReady = true;
        if (app.loaded) sendLoad(app);
        break;
      case 'handshake':
        stats.handshakes++;
        app.generation = msg.generation;
        break;
      case 'reloaded':
        stats.reloads++;
        app.generation = msg.generation;
        app.tools = [];
        stats.ready = false;
        showTools(app);
        await vb.call('miniapps.reset', { appId: app.appId });
        break;
      case 'register_tool': {
        if (msg.generation !== app.generation) return;
        const answer = await vb.call('miniapps.register', { appId: app.appId, tool: msg.tool });
        if (!apps.has(app.appId) || msg.generation !== app.generation) return;
        const name = msg.tool && msg.tool.name;
        if (answer.ok) {
          stats.registered.push(name);
          app.tools.push(answer.value);
          showTools(app);
        } else {
          stats.refusals.push({ name, refused: answer.refused, why: answer.why });
        }
        const refused = answer.ok ? {} : { refused: answer.refused, why: answer.why };
        post(app, { type: 'registered', generation: msg.generation, name, ok: answer.ok, ...refused });
        break;
      }
      case 'bridge_refused':
        stats.refusals.push({ name: msg.name, refused: msg.refused, why: msg.why, by: 'bridge' });
        break;
      case 'unregister_tool':
        if (msg.generation !== app.generation) return;
        await vb.call('miniapps.unregister', { appId: app.appId, name: msg.name });
        app.tools = app.tools.filter((t) => t.name !== msg.name);
        showTools(app);
        break;
      case 'app_ready':
        if (msg.generation === app.generation) stats.ready = true;
        break;
      case 'tool_result': {
        const c = calls.get(msg.callId);
        if (!c || c.app !== app) {
          stats.late++;
          return;
        }
        if (msg.refused) settle(msg.callId, { refused: msg.refused, why: msg.why });
        else settle(msg.callId, { result: JSON.parse(msg.result) });
        break;
      }
      case 'dropped':
        stats.dropped.push({ from: msg.from, kind: msg.kind });
        if (stats.dropped.length > 100) stats.dropped.shift();
        break;
    }
  }

  /**
   * @param {OpenApp} app
   * @param {object} msg
   */
  function post(app, msg) {
    app.frame.contentWindow?.postMessage(msg, location.origin);
  }

  // ---- calls from the worker ----

  /**
   * @param {string} callId
   * @param {{result: unknown} | {refused: string, why: string}} answer
   */
  function settle(callId, answer) {
    const c = calls.get(callId);
    if (!c) return;
    clearTimeout(c.timer);
    calls.delete(callId);
    vb.call('miniapps.result', { callId, ...answer });
  }

  vb.on('miniapp.call', ({ callId, appId, tool, args }) => {
    const app = apps.get(appId);
    if (!app) {
      vb.call('miniapps.result', { callId, refused: 'mini-app-closed', why: `mini-app ${appId} is not open` });
      return;
    }
    const timer = setTimeout(() => {
      settle(callId, { refused: 'tool-timeout', why: `tool execution timed out after ${TOOL_TIMEOUT_MS}ms` });
      post(app, { type: 'cancel', callId });
    }, TOOL_TIMEOUT_MS);
    calls.set(callId, { app, timer });
    post(app, { type: 'call_tool', callId, name: tool, args });
  });

  // The assistant opened an app (launch_mini_app, create_mini_app): the worker has launched it.
  vb.on('miniapp.open', ({ entry, html }) => {
    const target = entry.kind === 'page' && entry.source === 'workspace' ? { path: entry.storagePath } : { name: entry.appId };
    show(entry, html, target).then(refreshTray).catch(vb.notify);
  });

  vb.on('miniapp.cancel', ({ callId }) => {
    const c = calls.get(callId);
    if (!c) return;
    clearTimeout(c.timer);
    calls.delete(callId);
    post(c.app, { type: 'cancel', callId });
  });

  // ---- the tools of an open app, and trying one by hand ----

  /** @param {OpenApp} app */
  function showTools(app) {
    const list = app.view.toolList;
    if (app.tools.length === 0) {
      const p = document.createElement('p');
      p.className = 'hint';
      p.textContent = 'This app has registered no tools.';
      list.replaceChildren(p);
      return;
    }
    list.replaceChildren(...app.tools.map((t) => toolForm(app, t)));
  }

  /**
   * @param {OpenApp} app
   * @param {RegisteredTool} tool
   */
  function toolForm(app, tool) {
    const details = document.createElement('details');
    details.className = 'tool';
    details.dataset.tool = tool.name;
    const summary = document.createElement('summary');
    const code = document.createElement('code');
    code.textContent = tool.name;
    const desc = document.createElement('span');
    desc.textContent = ' ' + tool.description;
    summary.append(code, desc);
    const form = document.createElement('form');
    const schema = tool.parameters || {};
    const props = schema.properties || {};
    const required = new Set(schema.required || []);
    /** @type {[string, JSONSchema, HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement][]} */
    const readers = [];
    for (const [key, prop] of Object.entries(props)) {
      const label = document.createElement('label');
      label.textContent = key + (required.has(key) ? ' *' : '');
      const input = fieldFor(prop);
      input.name = key;
      if (required.has(key) && input.type !== 'checkbox') input.required = true;
      label.append(input);
      form.append(label);
      readers.push([key, prop, input]);
    }
    const out = document.createElement('pre');
    out.className = 'tool-result';
    const run = document.createElement('button');
    run.type = 'submit';
    run.textContent = 'Call';
    form.append(run, out);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      /** @type {Record<string, unknown>} */
      const args = {};
      try {
        for (const [key, prop, input] of readers) {
          const v = readField(prop, input);
          if (v !== undefined) args[key] = v;
        }
      } catch (err) {
        out.textContent = err instanceof Error ? err.message : String(err);
        out.dataset.state = 'refused';
        return;
      }
      out.textContent = '…';
      const answer = await vb.call('miniapps.call', { appId: app.appId, tool: tool.name, args });
      out.dataset.state = answer.ok ? 'ok' : 'refused';
      out.textContent = answer.ok ? JSON.stringify(answer.value.result, null, 2) : `${answer.refused}: ${answer.why}`;
    });
    details.append(summary, form);
    return details;
  }

  /**
   * fieldFor makes the form field for one property of a tool's parameters.
   * @param {JSONSchema} prop
   * @returns {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement}
   */
  function fieldFor(prop) {
    if (Array.isArray(prop.enum)) {
      const select = document.createElement('select');
      select.append(new Option('', ''));
      for (const v of prop.enum) select.append(new Option(String(v), JSON.stringify(v)));
      return select;
    }
    if (prop.type === 'array' || prop.type === 'object') {
      const area = document.createElement('textarea');
      area.placeholder = 'JSON';
      if (prop.maxLength !== undefined) area.maxLength = prop.maxLength;
      return area;
    }
    const input = document.createElement('input');
    switch (prop.type) {
      case 'boolean': input.type = 'checkbox'; break;
      case 'number': input.type = 'number'; input.step = 'any'; break;
      case 'integer': input.type = 'number'; input.step = '1'; break;
      default: input.type = 'text';
    }
    if (prop.minimum !== undefined) input.min = String(prop.minimum);
    if (prop.maximum !== undefined) input.max = String(prop.maximum);
    if (prop.maxLength !== undefined) input.maxLength = prop.maxLength;
    return input;
  }

  /**
   * readField reads one field back as the value the tool gets; undefined leaves it out.
   * @param {JSONSchema} prop
   * @param {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} input
   * @returns {unknown}
   */
  function readField(prop, input) {
    if (Array.isArray(prop.enum)) return input.value === '' ? undefined : JSON.parse(input.value);
    if (prop.type === 'boolean') return input instanceof HTMLInputElement && input.checked;
    if (input.value === '') return undefined;
    if (prop.type === 'number' || prop.type === 'integer') return Number(input.value);
    if (prop.type === 'array' || prop.type === 'object') {
      try { return JSON.parse(input.value); } catch { throw new Error(`${input.name} must be JSON`); }
    }
    return input.value;
  }

  el.refresh.addEventListener('click', refreshTray);
  listen('root', refreshTray);

  return Object.freeze({
    launch,
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
    strays: () => strays.slice(),
    open: () => [...apps.keys()],
  });
}
