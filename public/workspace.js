// @ts-check
// The workspace on the page's main thread: the engine's status, the person's choice of workspace
// (browser storage, or a folder they granted) kept across reloads, the connection to the relay,
// and the file browser. Every file operation is a call into the worker, which applies the same
// path rules the assistant's tools meet, and every change (save, new file, upload, delete,
// rename or move) goes through the worker's executor into the undo history, as the person's.
//
// While a paired machine environment holds the workspace, the Files panel shows that machine's
// folder instead, read through the relay (read_file and list_files as typed actions), because
// that is where the assistant's tools act; changing it is left to the assistant there.
import { askName, choose, confirmAction, notify, say } from './dialogs.js';
import { byId, node } from './dom.js';
import { emit, listen } from './events.js';
import { formatSize } from './results.js';
import { sendTurn } from './turns.js';

/** UPLOAD_CHUNK is the size of one piece of an upload sent to the worker. */
const UPLOAD_CHUNK = 1 << 20;
/** ROOT_CHOICE_KEY is the localStorage key of the person's choice of workspace. */
const ROOT_CHOICE_KEY = 'voicebox.root';
/** UPLOAD_SHOWN_MS is how long a finished upload stays in the list. */
const UPLOAD_SHOWN_MS = 4000;
/** MAX_KEEP_BOTH_TRIES bounds the names tried for the person's version a save keeps beside a newer one. */
const MAX_KEEP_BOTH_TRIES = 100;

/** @typedef {import('./worker-client.js').WorkerClient} WorkerClient */
/** @typedef {import('./worker-client.js').RootInfo} RootInfo */
/** @typedef {import('./worker-client.js').RootKind} RootKind */
/** @typedef {import('./worker-client.js').ListEntry} ListEntry */

/**
 * startWorkspace shows the engine's status and the file browser, and opens the workspace once the
 * engine is ready. openAsApp runs a workspace .html file as a mini-app (the viewer's button);
 * platform says what this browser lacks (platform.js), so browser storage is not opened where it
 * cannot be.
 * @param {WorkerClient} engine
 * @param {{platform: {lacks: (id: import('./platform.js').FeatureId) => boolean}, openAsApp: (path: string) => Promise<unknown>}} options
 */
export function startWorkspace(engine, { platform, openAsApp }) {
  const el = {
    status: byId('status'), channel: byId('channel'), channelResume: byId('channel-resume'),
    rootKind: byId('root-kind', HTMLSelectElement), reconnect: byId('root-reconnect'),
    files: byId('files'), filesNote: byId('files-note'), crumbs: byId('crumbs'), list: byId('file-list'), uploads: byId('uploads'),
    newFile: byId('new-file', HTMLButtonElement), newFolder: byId('new-folder', HTMLButtonElement),
    upload: byId('upload', HTMLButtonElement), uploadInput: byId('upload-input', HTMLInputElement),
    refresh: byId('refresh', HTMLButtonElement), dropHint: byId('drop-hint'),
    viewer: byId('viewer'), viewerTitle: byId('viewer-title'), viewerNote: byId('viewer-note'), unsaved: byId('unsaved'),
    editor: byId('editor', HTMLTextAreaElement), save: byId('save', HTMLButtonElement), rename: byId('rename', HTMLButtonElement),
    download: byId('download', HTMLButtonElement), openApp: byId('open-app', HTMLButtonElement),
    del: byId('delete', HTMLButtonElement), closeBtn: byId('close-file', HTMLButtonElement),
  };
  const call = engine.call.bind(engine);
  const must = engine.must.bind(engine);

  // ---- the engine and the relay ----

  let engineBuild = '';

  /**
   * @param {string} state
   * @param {string} text
   */
  function showStatus(state, text) {
    el.status.dataset.state = state;
    el.status.textContent = text;
  }

  engine.on('ready', (msg) => {
    engineBuild = msg.build;
    showStatus('ready', `ready · build ${msg.build}`);
    performance.mark('voicebox-ready');
    restoreRoot();
  });
  engine.on('failed', (msg) => showStatus('failed', msg.message));
  engine.on('channel', showChannel);
  engine.on('history', () => emit('history'));

  // showChannel shows the worker's connection to the relay, where it runs the relay's calls on
  // the workspace.
  /** @param {import('./worker-client.js').Events['channel']} msg */
  function showChannel({ state, why, retryMs }) {
    const text = {
      connecting: 'relay: connecting…',
      connected: 'relay: connected',
      offline: `relay: offline, retrying in ${Math.max(1, Math.round((retryMs || 0) / 1000))} s`,
      replaced: 'relay: another tab or machine holds the workspace; this tab takes over when it goes away',
      refused: `relay: refused (${why || 'no reason given'})`,
    }[state] || `relay: ${state}`;
    if (state === 'connected' && performance.getEntriesByName('voicebox-channel').length === 0) {
      performance.mark('voicebox-channel');
    }
    el.channel.dataset.state = state;
    el.channel.textContent = text;
    emit('channel', { state, why: why || '' });
    el.channel.title = why || '';
    el.channelResume.hidden = state !== 'replaced' && state !== 'refused';
    el.channelResume.textContent = state === 'replaced' ? 'Use this tab' : 'Try again';
  }

  el.channelResume.addEventListener('click', () => call('channel.connect'));

  // ---- the workspace root: chosen once, kept across reloads ----

  // handleStore keeps the granted folder's handle in IndexedDB (a handle is structured-cloneable,
  // not JSON).
  const handleStore = {
    /** @returns {Promise<IDBDatabase>} */
    open() {
      return new Promise((resolve, reject) => {
        const req = indexedDB.open('voicebox', 1);
        req.onupgradeneeded = () => req.result.createObjectStore('handles');
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    },
    /**
     * @param {IDBTransactionMode} mode
     * @param {(store: IDBObjectStore) => IDBRequest} fn
     */
    async run(mode, fn) {
      const db = await this.open();
      try {
        return await new Promise((resolve, reject) => {
          const tx = db.transaction('handles', mode);
          const req = fn(tx.objectStore('handles'));
          tx.oncomplete = () => resolve(req.result);
          tx.onerror = () => reject(tx.error);
        });
      } finally {
        db.close();
      }
    },
    /** @returns {Promise<FileSystemDirectoryHandle | undefined>} */
    get() { return this.run('readonly', (s) => s.get('root')); },
    /** @param {FileSystemDirectoryHandle} handle */
    put(handle) { return this.run('readwrite', (s) => s.put(handle, 'root')); },
  };

  /** @type {RootInfo | null} */
  let root = null;
  /** @type {FileSystemDirectoryHandle | null} */
  let storedHandle = null;

  // Browser storage belongs to one origin: the same relay opened at another name or port shows
  // another, empty workspace. The picker says whose storage this is.
  const storageOption = el.rootKind.querySelector('option[value="opfs"]');
  if (storageOption) storageOption.textContent = `Browser storage of ${location.host}`;

  if (typeof window.showDirectoryPicker !== 'function') {
    const option = el.rootKind.querySelector('option[value="handle"]');
    if (option instanceof HTMLOptionElement) option.disabled = true;
    el.rootKind.title = 'This browser cannot grant a folder; the workspace is in browser storage.';
  }

  /**
   * @param {RootKind} kind
   * @param {FileSystemDirectoryHandle} [handle]
   */
  async function openRoot(kind, handle) {
    const info = await must('root.open', handle ? { kind, handle } : { kind });
    root = info;
    localStorage.setItem(ROOT_CHOICE_KEY, kind);
    el.rootKind.value = kind;
    el.rootKind.disabled = false;
    el.reconnect.hidden = true;
    showStatus('ready', `ready · build ${engineBuild} · ${info.name}`);
    closeFile();
    emit('root', info);
    await showDir('');
  }

  async function restoreRoot() {
    const choice = localStorage.getItem(ROOT_CHOICE_KEY) || 'opfs';
    try {
      if (choice === 'handle') {
        storedHandle = (await handleStore.get().catch(() => null)) || null;
        if (storedHandle) {
          const permission = await storedHandle.queryPermission({ mode: 'readwrite' });
          if (permission === 'granted') {
            await openRoot('handle', storedHandle);
            return;
          }
          // The browser dropped the grant: asking again needs a click.
          el.reconnect.textContent = `Reconnect “${storedHandle.name}”`;
          el.reconnect.hidden = false;
          el.rootKind.disabled = false;
          el.rootKind.value = 'handle';
          showStatus('attention', `“${storedHandle.name}” needs your permission again`);
          return;
        }
      }
      if (noStorage()) {
        const option = el.rootKind.querySelector('option[value="opfs"]');
        if (option instanceof HTMLOptionElement) option.disabled = true;
        el.rootKind.disabled = false;
        showStatus('attention', 'no workspace: this browser has no browser storage (the note at the top says what to do)');
        return;
      }
      await openRoot('opfs');
    } catch (err) {
      el.rootKind.disabled = false;
      notify(err);
    }
  }

  /** noStorage reports whether browser storage cannot be opened here (platform.js says why). */
  const noStorage = () => platform.lacks('opfs') || platform.lacks('sync-access');

  el.reconnect.addEventListener('click', async () => {
    if (!storedHandle) return;
    try {
      if (await storedHandle.requestPermission({ mode: 'readwrite' }) === 'granted') {
        await openRoot('handle', storedHandle);
      } else {
        notify(new Error('Permission was not given; the folder stays closed.'));
      }
    } catch (err) {
      notify(err);
    }
  });

  el.rootKind.addEventListener('change', async () => {
    const previous = root ? root.kind : 'opfs';
    try {
      if (dirty && !await leaveFile()) {
        el.rootKind.value = previous;
        return;
      }
      if (el.rootKind.value === 'opfs') {
        if (noStorage()) throw new Error('This browser has no browser storage: the note at the top says what you can do.');
        await openRoot('opfs');
        return;
      }
      if (!window.showDirectoryPicker) return;
      const handle = await window.showDirectoryPicker({ mode: 'readwrite', id: 'voicebox-workspace' });
      await handleStore.put(handle);
      storedHandle = handle;
      await openRoot('handle', handle);
    } catch (err) {
      el.rootKind.value = previous;
      if (!(err instanceof DOMException && err.name === 'AbortError')) notify(pickerRefusal(err));
    }
  });

  /**
   * pickerRefusal says in words why the browser would not grant a folder (the picker's
   * DOMException names the browser's call, not what the person can do).
   * @param {unknown} err
   */
  function pickerRefusal(err) {
    const name = err instanceof DOMException ? err.name : '';
    const why = {
      SecurityError: 'The browser would not open its folder picker here (it opens only from a click, in a top-level page, and some settings turn it off).',
      NotAllowedError: 'The browser did not give access to that folder.',
      TypeError: 'This browser cannot grant a folder.',
    }[name] || 'The browser could not open that folder.';
    return new Error(`${why} The workspace stays in ${root && root.kind === 'handle' ? `“${root.name}”` : 'browser storage'}; try “Choose a folder…” again, or another folder (not a system folder such as your home or Downloads).`);
  }

  // ---- which folder the panel shows: this tab's, or the machine's the tools act on ----

  /** @type {import('./events.js').Where | null} */
  let where = null;
  /** machine is the machine whose folder the panel shows, or '' for this tab's workspace. */
  let machine = '';

  listen('where', (w) => {
    where = w;
    const next = w.holder === 'machine' ? w.name : '';
    // While another tab holds the workspace the panel still shows this tab's, and says so: the
    // assistant acts on the other tab's, which may be another folder.
    if (!next) {
      el.filesNote.hidden = w.holder !== 'other-tab';
      el.filesNote.textContent = w.holder === 'other-tab' ? otherTabNote(w) : '';
    }
    if (next === machine) return;
    machine = next;
    // Unsaved edits of this tab's file are never dropped: the file stays open, and Save still
    // saves it in this tab's workspace.
    if (!dirty) closeFile(true);
    if (machine) {
      el.filesNote.hidden = false;
      el.filesNote.textContent = `The machine “${machine}” holds the workspace, so this is its folder, read through the relay. Ask the assistant to change files there, or press “Use this tab” to work on this tab's workspace again.`;
    }
    el.files.dataset.source = machine ? 'machine' : 'page';
    showDir('');
  });

  /** @param {import('./events.js').Where} w @returns {string} */
  function otherTabNote(w) {
    const theirs = w.kind === 'handle' ? `the folder “${w.name}”` : w.kind === 'opfs' ? 'browser storage' : '';
    const mine = root ? (root.kind === 'handle' ? `the folder “${root.name}”` : 'browser storage') : 'nothing yet';
    const same = theirs !== '' && root && w.kind === root.kind && (w.kind === 'opfs' || w.name === root.name);
    if (same) return `Another tab holds the workspace, the same ${mine} this panel shows: the assistant's changes show here too. This tab takes over by itself when that tab closes.`;
    return `Another tab holds the workspace${theirs ? ` (${theirs})` : ''}, and the assistant's tools act there; this panel shows this tab's ${mine}. Press “Use this tab” to make the assistant act on what this panel shows.`;
  }

  /** writable reports whether the panel may change the files it shows (this tab's own). */
  const writable = () => !!root && !machine;

  function showControls() {
    for (const b of [el.newFile, el.newFolder, el.upload]) b.disabled = !writable();
    el.refresh.disabled = !root && !machine;
    el.dropHint.hidden = !writable();
  }

  /**
   * onMachine runs one action on the machine's folder through the relay and returns its
   * observation, or throws its refusal.
   * @param {Record<string, string>} action
   */
  async function onMachine(action) {
    const t = await sendTurn({ action });
    if (!t.ok) throw Object.assign(new Error(t.why || 'the relay refused'), { rule: t.refused || '' });
    return typeof t.result === 'string' ? JSON.parse(t.result) : t.result;
  }

  /**
   * list reads a folder of what the panel shows.
   * @param {string} dir
   * @returns {Promise<ListEntry[]>}
   */
  async function list(dir) {
    if (!machine) return (await must('files.list', { dir })).entries;
    const obs = await onMachine(dir ? { verb: 'list_files', dir } : { verb: 'list_files' });
    return obs.entries || [];
  }

  // ---- the file browser ----

  let currentDir = '';
  let listings = 0;
  let openPath = '';
  /** openFrom is the machine the open file was read from, or '' for this tab's workspace. */
  let openFrom = '';
  let dirty = false;
  /**
   * openDigest is the SHA-256 of the version of the open file the editor started from (opened,
   * reloaded or saved), '' when unknown (a machine's file, one shown cut): a save expects it, so
   * it never overwrites a version written since without asking.
   */
  let openDigest = '';
  /** @type {ListEntry[]} the entries of the folder shown */
  let shown = [];

  /**
   * @param {string} dir
   * @param {string} name
   */
  const join = (dir, name) => (dir ? `${dir}/${name}` : name);
  /** @param {string} p */
  const baseName = (p) => p.slice(p.lastIndexOf('/') + 1);


  /**
   * @param {string} text
   * @param {string} className
   * @param {() => void} onClick
   * @param {string} [label]
   */
  function button(text, className, onClick, label) {
    const b = node('button', className, text);
    b.type = 'button';
    if (label) {
      b.setAttribute('aria-label', label);
      b.title = label;
    }
    b.addEventListener('click', onClick);
    return b;
  }

  function renderCrumbs() {
    el.crumbs.replaceChildren();
    const parts = currentDir ? currentDir.split('/') : [];
    const top = machine ? `machine “${machine}”` : root ? root.name : 'Workspace';
    el.crumbs.append(button(top, 'crumb', () => showDir(''), `Go to the top folder, ${top}`));
    parts.forEach((part, i) => {
      el.crumbs.append(node('span', '', '/'), button(part, 'crumb', () => showDir(parts.slice(0, i + 1).join('/')), `Go to the folder ${parts.slice(0, i + 1).join('/')}`));
    });
  }

  /** @param {string} dir */
  async function showDir(dir) {
    showControls();
    if (!root && !machine) return;
    // Only the newest listing is drawn: one asked earlier and answered later is stale.
    const mine = ++listings;
    let entries;
    try {
      entries = await list(dir);
    } catch (err) {
      if (mine === listings) notify(err);
      return;
    }
    if (mine !== listings) return;
    currentDir = dir;
    shown = entries;
    renderCrumbs();
    el.list.replaceChildren();
    const sorted = [...entries].sort((a, b) => (Number(b.dir) - Number(a.dir)) || a.name.localeCompare(b.name));
    if (sorted.length === 0) el.list.append(node('li', 'empty', 'This folder is empty.'));
    for (const entry of sorted) {
      const path = join(dir, entry.name);
      // A name stored by another program with characters that hide or reorder text shows them
      // escaped (the worker's shown); it is still opened, renamed and deleted by its name.
      const shown = entry.shown ?? entry.name;
      const li = node('li');
      li.dataset.path = path;
      li.dataset.kind = entry.dir ? 'dir' : 'file';
      if (path === openPath) li.classList.add('current');
      // The button's name is what it shows, said as an action: "Open notes.txt 12 B".
      const open = button('', 'open', () => (entry.dir ? showDir(path) : openFile(path)));
      const icon = node('span', entry.dir ? 'icon icon-dir' : 'icon icon-file');
      icon.setAttribute('aria-hidden', 'true');
      open.append(node('span', 'visually-hidden', entry.dir ? 'Open the folder ' : 'Open '), icon, node('span', 'name', shown));
      if (!entry.dir) open.append(node('span', 'visually-hidden', ' '), node('span', 'size', formatSize(entry.size)));
      li.append(open);
      if (writable()) {
        if (!entry.dir) li.append(button('✎', 'rename', () => renamePath(path), `Rename ${shown}`));
        li.append(button('✕', 'remove', () => removePath(path, entry.dir), `Delete ${entry.dir ? 'the folder ' : ''}${shown}`));
      }
      el.list.append(li);
    }
  }

  /** @param {boolean} [force] close whatever the editor holds, unsaved or not */
  function closeFile(force) {
    if (!force && dirty) return;
    openPath = '';
    openFrom = '';
    openDigest = '';
    setDirty(false);
    el.viewerTitle.textContent = 'No file open';
    el.editor.value = '';
    el.editor.disabled = true;
    el.editor.readOnly = false;
    el.viewerNote.hidden = true;
    for (const b of [el.save, el.rename, el.download, el.del, el.openApp, el.closeBtn]) b.disabled = true;
    for (const li of el.list.children) li.classList.remove('current');
  }

  /** @param {boolean} on */
  function setDirty(on) {
    dirty = on;
    el.unsaved.hidden = !on;
    el.save.disabled = !on;
    el.viewer.dataset.dirty = String(on);
  }

  /**
   * leaveFile asks before unsaved edits are dropped; it resolves true when the editor may be
   * left (nothing unsaved, saved, or discarded).
   * @returns {Promise<boolean>}
   */
  async function leaveFile() {
    if (!dirty) return true;
    const { value } = await choose({
      title: 'Unsaved changes',
      text: `“${openPath}” has changes that are not saved.`,
      choices: [{ value: 'save', label: 'Save them', default: true }, { value: 'discard', label: 'Discard them', danger: true }, { value: '', label: 'Keep editing' }],
    });
    if (value === 'save') return save();
    if (value === 'discard') {
      setDirty(false);
      return true;
    }
    el.editor.focus();
    return false;
  }

  /** @param {string} path */
  async function openFile(path) {
    if (dirty && path !== openPath && !await leaveFile()) return;
    let view;
    try {
      if (machine) {
        const obs = await onMachine({ verb: 'read_file', name: path });
        const binary = obs.encoding === 'base64';
        view = { path, size: obs.size, text: binary ? '' : obs.content, binary, truncated: !!obs.truncated };
      } else {
        view = await must('files.read', { path });
      }
    } catch (err) {
      notify(err);
      return;
    }
    openPath = path;
    openFrom = machine;
    openDigest = ('digest' in view && view.digest) || '';
    setDirty(false);
    el.viewerTitle.textContent = path;
    el.download.disabled = !!machine;
    el.del.disabled = el.rename.disabled = !writable();
    el.openApp.disabled = !!machine || !/\.html?$/i.test(path);
    el.closeBtn.disabled = false;
    if (view.binary) {
      el.editor.value = '';
      el.editor.disabled = true;
      el.viewerNote.textContent = `A binary file of ${formatSize(view.size)}: download it to open it.`;
      el.viewerNote.hidden = false;
    } else {
      el.editor.value = view.text;
      el.editor.disabled = false;
      el.editor.readOnly = view.truncated || !!machine;
      el.viewerNote.textContent = machine
        ? `Read from the machine “${machine}”; ask the assistant to change it.`
        : `Showing the first ${formatSize(view.text.length)} of ${formatSize(view.size)}; download the file to see it whole.`;
      el.viewerNote.hidden = !view.truncated && !machine;
    }
    for (const li of el.list.children) {
      if (li instanceof HTMLElement) li.classList.toggle('current', li.dataset.path === path);
    }
    // What the action opened is shown and takes focus.
    el.viewer.scrollIntoView({ block: 'nearest', behavior: 'instant' });
    (el.editor.disabled ? el.closeBtn : el.editor).focus({ preventScroll: true });
  }

  el.editor.addEventListener('input', () => { if (!el.editor.readOnly) setDirty(true); });

  /**
   * showNote says something about the open file under its title; '' hides it.
   * @param {string} text
   */
  function showNote(text) {
    el.viewerNote.textContent = text;
    el.viewerNote.hidden = !text;
  }

  /**
   * save writes the editor's text over the version it started from; it resolves false (having
   * said why) when it could not. A file changed since (file-changed) asks which to keep.
   * @returns {Promise<boolean>}
   */
  async function save() {
    if (!openPath || openFrom || !root) return false;
    const path = openPath;
    const content = el.editor.value;
    try {
      const written = await must('files.write', openDigest ? { path, content, expect: openDigest } : { path, content });
      saved(path, written.digest);
      await showDir(currentDir);
      return true;
    } catch (err) {
      if (err && typeof err === 'object' && 'rule' in err && err.rule === 'file-changed') return saveConflict(path, content);
      notify(err);
      return false;
    }
  }

  /**
   * saved marks the editor as holding the version of path whose digest is digest.
   * @param {string} path
   * @param {string} digest
   */
  function saved(path, digest) {
    if (path !== openPath) return;
    openDigest = digest;
    setDirty(false);
    showNote('');
  }

  /**
   * saveConflict asks what to do when the file changed after the editor opened it (the
   * assistant, an upload or another program wrote it): keep mine (written over theirs, which
   * Undo brings back), keep theirs (the edits are dropped) or keep both (mine under a new name
   * beside it). Nothing is written without an answer.
   * @param {string} path
   * @param {string} content the editor's text
   * @returns {Promise<boolean>}
   */
  async function saveConflict(path, content) {
    const now = await call('files.read', { path });
    const gone = !now.ok;
    const { value } = await choose({
      title: 'The file changed since you opened it',
      text: gone
        ? `“${path}” was removed after you opened it, while you were editing it. Saving puts your version back.`
        : `“${path}” was written by someone else (the assistant, an upload or another program) after you opened it, and you have unsaved edits. Which version do you want?`,
      choices: gone
        ? [{ value: 'mine', label: 'Save mine', default: true }, { value: '', label: 'Keep editing' }]
        : [{ value: 'mine', label: 'Keep mine', danger: true }, { value: 'theirs', label: 'Keep theirs' }, { value: 'both', label: 'Keep both', default: true }, { value: '', label: 'Keep editing' }],
    });
    try {
      if (value === 'mine') {
        // Over the version just shown, and no other: one written since asks again.
        const expect = now.ok && now.value.digest ? { expect: now.value.digest } : {};
        const written = await must('files.write', { path, content, ...expect });
        saved(path, written.digest);
        await showDir(currentDir);
        say(`Saved your version of “${path}”; Undo in the History panel brings the other back.`);
        return true;
      }
      if (value === 'theirs') {
        setDirty(false);
        await refreshOpen();
        say(`Kept the version of “${path}” in the workspace; your edits were dropped.`);
        return true;
      }
      if (value === 'both') {
        const kept = await writeBeside(path, content);
        setDirty(false);
        await refreshOpen();
        await showDir(currentDir);
        say(`Kept both: your version is “${kept}”, and “${path}” is as it was written.`);
        return true;
      }
    } catch (err) {
      if (err && typeof err === 'object' && 'rule' in err && err.rule === 'file-changed') return saveConflict(path, content);
      notify(err);
      return false;
    }
    el.editor.focus();
    return false;
  }

  /**
   * writeBeside writes content as a new file beside path ("notes (mine).txt", then
   * "notes (mine 2).txt", …) and returns its name; it never replaces a file.
   * @param {string} path
   * @param {string} content
   */
  async function writeBeside(path, content) {
    const slash = path.lastIndexOf('/');
    const name = path.slice(slash + 1);
    const dot = name.lastIndexOf('.');
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const ext = dot > 0 ? name.slice(dot) : '';
    for (let i = 1; i <= MAX_KEEP_BOTH_TRIES; i++) {
      const to = `${path.slice(0, slash + 1)}${stem} (mine${i > 1 ? ` ${i}` : ''})${ext}`;
      const answer = await call('files.write', { path: to, content, mode: 'create' });
      if (answer.ok) return to;
      if (answer.refused !== 'file-exists') throw Object.assign(new Error(answer.why), { rule: answer.refused });
    }
    throw new Error(`No free name was found beside “${path}” for your version; save it under another name.`);
  }

  el.save.addEventListener('click', () => { save(); });
  el.viewer.addEventListener('keydown', (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 's') {
      event.preventDefault();
      if (dirty) save();
    }
  });
  el.closeBtn.addEventListener('click', async () => {
    if (await leaveFile()) closeFile(true);
  });

  el.download.addEventListener('click', async () => {
    try {
      const value = await must('files.download', { path: openPath });
      const url = URL.createObjectURL(new Blob([value.bytes]));
      const a = document.createElement('a');
      a.href = url;
      a.download = baseName(openPath);
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 30000);
    } catch (err) {
      notify(err);
    }
  });

  el.del.addEventListener('click', () => removePath(openPath, false));
  el.rename.addEventListener('click', () => renamePath(openPath));
  el.openApp.addEventListener('click', () => { openAsApp(openPath).catch(notify); });

  /**
   * @param {string} path
   * @param {boolean} isDir
   */
  async function removePath(path, isDir) {
    const what = isDir ? `the folder “${path}” (it must be empty)` : `“${path}”? Undo in the History panel brings it back`;
    if (!await confirmAction(`Delete ${what}${isDir ? '?' : '.'}`, 'Delete')) return;
    try {
      await must('files.delete', { path });
      if (path === openPath) closeFile(true);
      await showDir(currentDir);
    } catch (err) {
      notify(err);
    }
  }

  /** @param {string} path */
  async function renamePath(path) {
    if (dirty && path === openPath && !await leaveFile()) return;
    const to = await askName(`Rename or move “${path}” to`, 'Rename', path);
    if (!to || to === path) return;
    try {
      await must('files.move', { path, to });
      if (path === openPath) {
        closeFile(true);
        await showDir(currentDir);
        await openFile(to);
      } else {
        await showDir(currentDir);
      }
    } catch (err) {
      notify(err);
    }
  }

  el.newFile.addEventListener('click', async () => {
    // Asked only when there is something to lose, so the dialog opens at once otherwise.
    if (dirty && !await leaveFile()) return;
    let name = await askName('New file name', 'Create');
    while (name) {
      const path = join(currentDir, name);
      try {
        await must('files.write', { path, content: '', mode: 'create' });
        await showDir(currentDir);
        await openFile(path);
        return;
      } catch (err) {
        if (!(err && typeof err === 'object' && 'rule' in err && err.rule === 'file-exists')) {
          notify(err);
          return;
        }
        // Never replace: offer the file that is there, or another name.
        const { value } = await choose({
          title: 'That file exists',
          text: `“${path}” already exists. Creating a file never replaces one.`,
          choices: [{ value: 'open', label: `Open ${name}`, default: true }, { value: 'rename', label: 'Choose another name' }, { value: '', label: 'Cancel' }],
        });
        if (value === 'open') {
          await openFile(path);
          return;
        }
        name = value === 'rename' ? await askName('New file name', 'Create', freeName(name)) : '';
      }
    }
  });

  el.newFolder.addEventListener('click', async () => {
    const name = await askName('New folder name', 'Create');
    if (!name) return;
    try {
      await must('files.mkdir', { path: join(currentDir, name) });
      await showDir(currentDir);
    } catch (err) {
      notify(err);
    }
  });

  el.refresh.addEventListener('click', () => showDir(currentDir));
  // refreshOpen shows the open file as it is now, when something else changed it (an undo, the
  // assistant, an upload) and it holds no unsaved edit, saying so; a file that is gone is closed,
  // saying so. With unsaved edits the editor keeps them, and says that Save will ask.
  async function refreshOpen() {
    if (!openPath || openFrom || !root) return;
    const path = openPath;
    const answer = await call('files.read', { path });
    if (path !== openPath) return;
    if (dirty) {
      const changed = !answer.ok || (answer.value.digest || '') !== openDigest;
      if (changed && openDigest) showNote(`“${path}” ${answer.ok ? 'changed' : 'was removed'} since you opened it; Save will ask which version to keep.`);
      return;
    }
    if (!answer.ok) {
      closeFile(true);
      say(`“${path}” is gone (${answer.why}); it was closed.`);
      return;
    }
    const v = answer.value;
    if (v.binary || v.truncated || (v.digest || '') === openDigest) return;
    const was = openDigest;
    openDigest = v.digest || '';
    if (v.text === el.editor.value) return;
    el.editor.value = v.text;
    if (was) showNote(`“${path}” changed while it was open, and was reloaded: this is the version in the workspace now.`);
  }

  // The assistant changed the workspace (assistant.js), or an undo or redo did (history.js).
  listen('files-changed', () => {
    if (root || machine) showDir(currentDir);
    refreshOpen();
  });
  listen('history', () => {
    if (root && !machine) showDir(currentDir);
    refreshOpen();
  });

  /**
   * freeName is a name like name that the folder shown does not hold: "notes (2).txt".
   * @param {string} name
   */
  function freeName(name) {
    const taken = new Set(shown.map((e) => e.name));
    const dot = name.lastIndexOf('.');
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const ext = dot > 0 ? name.slice(dot) : '';
    for (let i = 2; ; i++) {
      const next = `${stem} (${i})${ext}`;
      if (!taken.has(next)) return next;
    }
  }

  // ---- uploads: chunked, atomic (the file appears only when complete), with progress ----

  /**
   * @param {File} file
   * @param {string} name the name it is stored under in the folder shown
   * @param {'create' | 'replace'} mode
   */
  async function uploadFile(file, name, mode) {
    const path = join(currentDir, name);
    const li = node('li');
    const figures = node('span');
    const bar = node('progress');
    bar.max = file.size || 1;
    bar.value = 0;
    bar.setAttribute('aria-label', `Uploading ${name}`);
    li.dataset.path = path;
    li.append(node('span', '', name), figures, bar);
    el.uploads.append(li);
    /** @param {number} sent */
    const show = (sent) => {
      bar.value = sent;
      figures.textContent = `${formatSize(sent)} of ${formatSize(file.size)}`;
    };
    show(0);
    let uploadId = '';
    try {
      ({ uploadId } = await must('files.upload.begin', { path, mode }));
      for (let at = 0; at < file.size; at += UPLOAD_CHUNK) {
        const bytes = await file.slice(at, at + UPLOAD_CHUNK).arrayBuffer();
        const { written } = await must('files.upload.chunk', { uploadId, bytes }, [bytes]);
        show(written);
      }
      const id = uploadId;
      uploadId = ''; // committed or not, the worker has finished with it
      await must('files.upload.commit', { uploadId: id });
    } catch (err) {
      if (uploadId) call('files.upload.abort', { uploadId });
      li.dataset.state = 'failed';
      figures.textContent = 'failed';
      figures.className = 'failed';
      notify(err);
      return;
    }
    show(file.size);
    li.dataset.state = 'done';
    setTimeout(() => li.remove(), UPLOAD_SHOWN_MS);
  }

  /**
   * uploadAll uploads files into the folder shown; a name that is taken asks first: replace
   * it, keep both (under a free name), or skip it, for this file or for all that remain.
   * @param {File[]} files
   */
  async function uploadAll(files) {
    if (!writable()) return;
    /** @type {string} */
    let forAll = '';
    for (let i = 0; i < files.length; i++) {
      const file = files[i];
      const taken = shown.some((e) => e.name === file.name);
      let decision = taken ? forAll : 'create';
      if (taken && !decision) {
        const left = files.slice(i + 1).filter((f) => shown.some((e) => e.name === f.name)).length;
        const asked = await choose({
          title: 'A file of that name exists',
          text: `“${join(currentDir, file.name)}” already exists.`,
          choices: [{ value: 'replace', label: 'Replace it', danger: true }, { value: 'both', label: 'Keep both', default: true }, { value: 'skip', label: 'Skip' }],
          forAll: left === 0 ? undefined : left === 1 ? 'Do the same for the other file whose name is taken'
            : `Do the same for the ${left} other files whose names are taken`,
        });
        decision = asked.value || 'skip';
        if (asked.forAll) forAll = decision;
      }
      if (decision === 'skip') continue;
      const name = decision === 'both' ? freeName(file.name) : file.name;
      await uploadFile(file, name, decision === 'replace' ? 'replace' : 'create');
      await showDir(currentDir);
    }
  }

  el.upload.addEventListener('click', () => el.uploadInput.click());
  el.uploadInput.addEventListener('change', () => {
    const files = [...(el.uploadInput.files || [])];
    el.uploadInput.value = '';
    uploadAll(files);
  });
  el.files.addEventListener('dragover', (event) => {
    if (!writable() || !event.dataTransfer || !event.dataTransfer.types.includes('Files')) return;
    event.preventDefault();
    el.files.classList.add('dragging');
  });
  el.files.addEventListener('dragleave', (event) => {
    if (!(event.relatedTarget instanceof Node && el.files.contains(event.relatedTarget))) el.files.classList.remove('dragging');
  });
  el.files.addEventListener('drop', (event) => {
    el.files.classList.remove('dragging');
    if (!writable()) return;
    event.preventDefault();
    uploadAll([...(event.dataTransfer ? event.dataTransfer.files : [])]);
  });

  window.addEventListener('beforeunload', (event) => {
    if (dirty) event.preventDefault();
  });

  return Object.freeze({
    /** dirty reports unsaved edits in the editor. */
    dirty: () => dirty,
    /** where says what the Files panel shows: '' for this tab's workspace, or the machine's name. */
    machine: () => machine,
    say,
    where: () => where,
  });
}
