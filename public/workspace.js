// @ts-check
// The workspace on the page's main thread: the engine's status, the person's choice of workspace
// (browser storage, or a folder they granted) kept across reloads, the connection to the relay,
// and the file browser. Every file operation is a call into the worker, which applies the same
// path rules the assistant's tools meet.
import { confirmAction, notify } from './dialogs.js';
import { byId } from './dom.js';
import { emit, listen } from './events.js';

/** UPLOAD_CHUNK is the size of one piece of an upload sent to the worker. */
const UPLOAD_CHUNK = 1 << 20;
/** ROOT_CHOICE_KEY is the localStorage key of the person's choice of workspace. */
const ROOT_CHOICE_KEY = 'voicebox.root';

/** @typedef {import('./worker-client.js').WorkerClient} WorkerClient */
/** @typedef {import('./worker-client.js').RootInfo} RootInfo */
/** @typedef {import('./worker-client.js').RootKind} RootKind */

/**
 * startWorkspace shows the engine's status and the file browser, and opens the workspace once the
 * engine is ready. openAsApp runs a workspace .html file as a mini-app (the viewer's button).
 * @param {WorkerClient} engine
 * @param {{openAsApp: (path: string) => Promise<unknown>}} options
 */
export function startWorkspace(engine, { openAsApp }) {
  const el = {
    status: byId('status'), channel: byId('channel'), channelResume: byId('channel-resume'),
    rootKind: byId('root-kind', HTMLSelectElement), reconnect: byId('root-reconnect'),
    files: byId('files'), crumbs: byId('crumbs'), list: byId('file-list'), uploads: byId('uploads'),
    newFile: byId('new-file', HTMLButtonElement), newFolder: byId('new-folder', HTMLButtonElement),
    upload: byId('upload', HTMLButtonElement), uploadInput: byId('upload-input', HTMLInputElement),
    refresh: byId('refresh', HTMLButtonElement), viewerTitle: byId('viewer-title'), viewerNote: byId('viewer-note'),
    editor: byId('editor', HTMLTextAreaElement), save: byId('save', HTMLButtonElement),
    download: byId('download', HTMLButtonElement), openApp: byId('open-app', HTMLButtonElement),
    del: byId('delete', HTMLButtonElement),
    name: byId('name-dialog', HTMLDialogElement), nameLabel: byId('name-label'),
    nameInput: byId('name-input', HTMLInputElement), nameOK: byId('name-ok'),
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

  // showChannel shows the worker's connection to the relay, where it runs the relay's calls on
  // the workspace.
  /** @param {import('./worker-client.js').Events['channel']} msg */
  function showChannel({ state, why, retryMs }) {
    const text = {
      connecting: 'relay: connecting…',
      connected: 'relay: connected',
      offline: `relay: offline, retrying in ${Math.max(1, Math.round((retryMs || 0) / 1000))} s`,
      replaced: 'relay: another tab or machine is in charge',
      refused: `relay: refused (${why || 'no reason given'})`,
    }[state] || `relay: ${state}`;
    if (state === 'connected' && performance.getEntriesByName('voicebox-channel').length === 0) {
      performance.mark('voicebox-channel');
    }
    el.channel.dataset.state = state;
    el.channel.textContent = text;
    emit('channel', { state });
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
    for (const b of [el.newFile, el.newFolder, el.upload, el.refresh]) b.disabled = false;
    closeFile();
    await showDir('');
    emit('root', info);
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
      await openRoot('opfs');
    } catch (err) {
      el.rootKind.disabled = false;
      notify(err);
    }
  }

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
      if (el.rootKind.value === 'opfs') {
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
      if (!(err instanceof DOMException && err.name === 'AbortError')) notify(err);
    }
  });

  // ---- the file browser ----

  let currentDir = '';
  let openPath = '';
  let dirty = false;

  /**
   * @param {string} dir
   * @param {string} name
   */
  const join = (dir, name) => (dir ? `${dir}/${name}` : name);

  /** @param {number} n */
  function formatSize(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
    if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
    return `${(n / (1 << 30)).toFixed(2)} GiB`;
  }

  /**
   * @param {string} text
   * @param {string} className
   * @param {() => void} onClick
   * @param {string} [label]
   */
  function button(text, className, onClick, label) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = className;
    b.textContent = text;
    if (label) b.setAttribute('aria-label', label);
    b.addEventListener('click', onClick);
    return b;
  }

  function renderCrumbs() {
    el.crumbs.replaceChildren();
    const parts = currentDir ? currentDir.split('/') : [];
    el.crumbs.append(button(root ? root.name : 'Workspace', 'crumb', () => showDir('')));
    parts.forEach((part, i) => {
      const sep = document.createElement('span');
      sep.textContent = '/';
      el.crumbs.append(sep, button(part, 'crumb', () => showDir(parts.slice(0, i + 1).join('/'))));
    });
  }

  /** @param {string} dir */
  async function showDir(dir) {
    let listing;
    try {
      listing = await must('files.list', { dir });
    } catch (err) {
      notify(err);
      return;
    }
    currentDir = dir;
    renderCrumbs();
    el.list.replaceChildren();
    const entries = [...listing.entries].sort((a, b) => (Number(b.dir) - Number(a.dir)) || a.name.localeCompare(b.name));
    if (entries.length === 0) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = 'This folder is empty.';
      el.list.append(li);
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const li = document.createElement('li');
      li.dataset.path = path;
      li.dataset.kind = entry.dir ? 'dir' : 'file';
      if (path === openPath) li.classList.add('current');
      const open = button('', 'open', () => (entry.dir ? showDir(path) : openFile(path)));
      const icon = document.createElement('span');
      icon.className = entry.dir ? 'icon icon-dir' : 'icon icon-file';
      icon.setAttribute('aria-hidden', 'true');
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = entry.name;
      open.append(icon, name);
      if (!entry.dir) {
        const size = document.createElement('span');
        size.className = 'size';
        size.textContent = formatSize(entry.size);
        open.append(size);
      }
      li.append(open, button('✕', 'remove', () => removePath(path, entry.dir), `Delete ${entry.name}`));
      el.list.append(li);
    }
  }

  function closeFile() {
    openPath = '';
    dirty = false;
    el.viewerTitle.textContent = 'No file open';
    el.editor.value = '';
    el.editor.disabled = true;
    el.viewerNote.hidden = true;
    for (const b of [el.save, el.download, el.del, el.openApp]) b.disabled = true;
  }

  /** @param {string} path */
  async function openFile(path) {
    if (dirty && !await confirmAction(`Discard your changes to “${openPath}”?`, 'Discard')) return;
    let view;
    try {
      view = await must('files.read', { path });
    } catch (err) {
      notify(err);
      return;
    }
    openPath = path;
    dirty = false;
    el.viewerTitle.textContent = path;
    el.download.disabled = false;
    el.del.disabled = false;
    el.openApp.disabled = !/\.html?$/i.test(path);
    el.save.disabled = true;
    if (view.binary) {
      el.editor.value = '';
      el.editor.disabled = true;
      el.viewerNote.textContent = `A binary file of ${formatSize(view.size)}: download it to open it.`;
      el.viewerNote.hidden = false;
    } else {
      el.editor.value = view.text;
      el.editor.disabled = view.truncated;
      el.viewerNote.textContent = `Showing the first ${formatSize(view.text.length)} of ${formatSize(view.size)}; download the file to see it whole.`;
      el.viewerNote.hidden = !view.truncated;
    }
    for (const li of el.list.children) {
      if (li instanceof HTMLElement) li.classList.toggle('current', li.dataset.path === path);
    }
  }

  el.editor.addEventListener('input', () => {
    dirty = true;
    el.save.disabled = false;
  });

  el.save.addEventListener('click', async () => {
    try {
      await must('files.write', { path: openPath, content: el.editor.value });
      dirty = false;
      el.save.disabled = true;
      await showDir(currentDir);
    } catch (err) {
      notify(err);
    }
  });

  el.download.addEventListener('click', async () => {
    try {
      const value = await must('files.download', { path: openPath });
      const url = URL.createObjectURL(new Blob([value.bytes]));
      const a = document.createElement('a');
      a.href = url;
      a.download = openPath.split('/').pop() || openPath;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 30000);
    } catch (err) {
      notify(err);
    }
  });

  el.del.addEventListener('click', () => removePath(openPath, false));
  el.openApp.addEventListener('click', () => { openAsApp(openPath).catch(notify); });

  /**
   * @param {string} path
   * @param {boolean} isDir
   */
  async function removePath(path, isDir) {
    const what = isDir ? `the folder “${path}” (it must be empty)` : `“${path}”`;
    if (!await confirmAction(`Delete ${what}? This cannot be undone.`, 'Delete')) return;
    try {
      await must('files.delete', { path });
      if (path === openPath) closeFile();
      await showDir(currentDir);
    } catch (err) {
      notify(err);
    }
  }

  /**
   * askName asks for a name; it resolves '' when the person cancelled.
   * @param {string} label
   * @param {string} verb
   * @returns {Promise<string>}
   */
  function askName(label, verb) {
    el.nameLabel.textContent = label;
    el.nameOK.textContent = verb;
    el.nameInput.value = '';
    el.name.returnValue = '';
    el.name.showModal();
    return new Promise((resolve) => {
      el.name.addEventListener('close', () => {
        resolve(el.name.returnValue === 'ok' ? el.nameInput.value.trim() : '');
      }, { once: true });
    });
  }

  el.newFile.addEventListener('click', async () => {
    const name = await askName('New file name', 'Create');
    if (!name) return;
    const path = join(currentDir, name);
    try {
      await must('files.write', { path, content: '' });
      await showDir(currentDir);
      await openFile(path);
    } catch (err) {
      notify(err);
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
  // The assistant changed the workspace (assistant.js).
  listen('files-changed', () => { if (root) showDir(currentDir); });

  // ---- uploads: chunked, atomic (the file appears only when complete), with progress ----

  /** @param {File} file */
  async function uploadFile(file) {
    const path = join(currentDir, file.name);
    const li = document.createElement('li');
    const label = document.createElement('span');
    label.textContent = file.name;
    const figures = document.createElement('span');
    const bar = document.createElement('progress');
    bar.max = file.size || 1;
    bar.value = 0;
    li.dataset.path = path;
    li.append(label, figures, bar);
    el.uploads.append(li);
    /** @param {number} sent */
    const show = (sent) => {
      bar.value = sent;
      figures.textContent = `${formatSize(sent)} of ${formatSize(file.size)}`;
    };
    show(0);
    let uploadId = '';
    try {
      ({ uploadId } = await must('files.upload.begin', { path }));
      for (let at = 0; at < file.size; at += UPLOAD_CHUNK) {
        const bytes = await file.slice(at, at + UPLOAD_CHUNK).arrayBuffer();
        const { written } = await must('files.upload.chunk', { uploadId, bytes }, [bytes]);
        show(written);
      }
      await must('files.upload.commit', { uploadId });
      show(file.size);
      li.dataset.state = 'done';
      setTimeout(() => li.remove(), 4000);
      await showDir(currentDir);
    } catch (err) {
      if (uploadId) call('files.upload.abort', { uploadId });
      li.dataset.state = 'failed';
      figures.textContent = 'failed';
      figures.className = 'failed';
      notify(err);
    }
  }

  /** @param {File[]} files */
  async function uploadAll(files) {
    for (const file of files) await uploadFile(file);
  }

  el.upload.addEventListener('click', () => el.uploadInput.click());
  el.uploadInput.addEventListener('change', () => {
    const files = [...(el.uploadInput.files || [])];
    el.uploadInput.value = '';
    uploadAll(files);
  });
  el.files.addEventListener('dragover', (event) => {
    if (!root || !event.dataTransfer || !event.dataTransfer.types.includes('Files')) return;
    event.preventDefault();
    el.files.classList.add('dragging');
  });
  el.files.addEventListener('dragleave', (event) => {
    if (!(event.relatedTarget instanceof Node && el.files.contains(event.relatedTarget))) el.files.classList.remove('dragging');
  });
  el.files.addEventListener('drop', (event) => {
    el.files.classList.remove('dragging');
    if (!root) return;
    event.preventDefault();
    uploadAll([...(event.dataTransfer ? event.dataTransfer.files : [])]);
  });

  window.addEventListener('beforeunload', (event) => {
    if (dirty) event.preventDefault();
  });
}
