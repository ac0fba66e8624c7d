// The page's main thread: it starts the worker that runs the Go engine, keeps the user's choice
// of workspace (browser storage, or a folder they granted), and shows the file browser. Every
// file operation is a call into the worker, which applies the same path rules the assistant's
// tools meet. window.voicebox.call(method, params) is that call (see the browser package doc).
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const el = {
    status: $('status'), channel: $('channel'), channelResume: $('channel-resume'), rootKind: $('root-kind'), reconnect: $('root-reconnect'),
    files: $('files'), crumbs: $('crumbs'), list: $('file-list'), uploads: $('uploads'),
    newFile: $('new-file'), newFolder: $('new-folder'), upload: $('upload'), uploadInput: $('upload-input'),
    refresh: $('refresh'), viewerTitle: $('viewer-title'), viewerNote: $('viewer-note'), editor: $('editor'),
    save: $('save'), download: $('download'), openApp: $('open-app'), del: $('delete'), notice: $('notice'),
    confirm: $('confirm-dialog'), confirmText: $('confirm-text'),
    name: $('name-dialog'), nameLabel: $('name-label'), nameInput: $('name-input'), nameOK: $('name-ok'),
  };

  // UPLOAD_CHUNK is the size of one piece of an upload sent to the worker.
  const UPLOAD_CHUNK = 1 << 20;
  const ROOT_CHOICE_KEY = 'voicebox.root';

  // ---- the worker and its calls ----

  const pending = new Map();
  let nextId = 1;
  let engineBuild = '';

  function showStatus(state, text) {
    el.status.dataset.state = state;
    el.status.textContent = text;
  }

  const worker = new Worker('/worker.js');
  worker.onmessage = (event) => {
    const msg = event.data;
    switch (msg && msg.type) {
      case 'ready':
        engineBuild = msg.build;
        showStatus('ready', `ready · build ${msg.build}`);
        performance.mark('voicebox-ready');
        restoreRoot();
        break;
      case 'channel':
        showChannel(msg);
        break;
      case 'failed':
        showStatus('failed', msg.message);
        for (const settle of pending.values()) settle({ ok: false, refused: 'page-closed', why: msg.message });
        pending.clear();
        break;
      case 'result': {
        const settle = pending.get(msg.id);
        if (settle) {
          pending.delete(msg.id);
          settle(msg);
        }
        break;
      }
      default: {
        const listener = listeners.get(msg && msg.type);
        if (listener) listener(msg);
        else console.warn('voicebox: unexpected message from the worker', msg);
      }
    }
  };

  // listeners take the worker's messages of their own (a mini-app call); see on().
  const listeners = new Map();
  function on(type, fn) { listeners.set(type, fn); }
  worker.onerror = (event) => {
    event.preventDefault();
    showStatus('failed', 'the engine failed: ' + (event.message || 'unknown error'));
  };

  // showChannel shows the worker's connection to the relay, where it runs the relay's calls on
  // the workspace.
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
    document.dispatchEvent(new CustomEvent('voicebox:channel', { detail: { state } }));
    el.channel.title = why || '';
    el.channelResume.hidden = state !== 'replaced' && state !== 'refused';
    el.channelResume.textContent = state === 'replaced' ? 'Use this tab' : 'Try again';
  }

  el.channelResume.addEventListener('click', () => call('channel.connect'));

  // call sends one call and resolves with the worker's answer {ok, value} or {ok: false, refused, why}.
  function call(method, params, transfer) {
    const id = nextId++;
    return new Promise((resolve) => {
      pending.set(id, resolve);
      worker.postMessage({ type: 'call', id, method, params }, transfer || []);
    });
  }

  // must calls and returns the value, or throws an Error carrying the refusal's rule and why.
  async function must(method, params, transfer) {
    const answer = await call(method, params, transfer);
    if (!answer.ok) {
      const err = new Error(answer.why || answer.refused);
      err.rule = answer.refused;
      throw err;
    }
    return answer.value;
  }

  let noticeTimer = 0;
  function notify(err) {
    el.notice.textContent = err && err.message ? err.message : String(err);
    el.notice.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { el.notice.hidden = true; }, 6000);
  }

  // ---- the workspace root: chosen once, kept across reloads ----

  const handleStore = {
    open() {
      return new Promise((resolve, reject) => {
        const req = indexedDB.open('voicebox', 1);
        req.onupgradeneeded = () => req.result.createObjectStore('handles');
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    },
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
    get() { return this.run('readonly', (s) => s.get('root')); },
    put(handle) { return this.run('readwrite', (s) => s.put(handle, 'root')); },
  };

  let root = null; // {kind, name, syncHandles}
  let storedHandle = null;

  if (typeof window.showDirectoryPicker !== 'function') {
    el.rootKind.querySelector('option[value="handle"]').disabled = true;
    el.rootKind.title = 'This browser cannot grant a folder; the workspace is in browser storage.';
  }

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
    document.dispatchEvent(new CustomEvent('voicebox:root', { detail: info }));
  }

  async function restoreRoot() {
    const choice = localStorage.getItem(ROOT_CHOICE_KEY) || 'opfs';
    try {
      if (choice === 'handle') {
        storedHandle = await handleStore.get().catch(() => null);
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
      const handle = await window.showDirectoryPicker({ mode: 'readwrite', id: 'voicebox-workspace' });
      await handleStore.put(handle);
      storedHandle = handle;
      await openRoot('handle', handle);
    } catch (err) {
      el.rootKind.value = previous;
      if (err.name !== 'AbortError') notify(err);
    }
  });

  // ---- the file browser ----

  let currentDir = '';
  let openPath = '';
  let dirty = false;

  const join = (dir, name) => (dir ? `${dir}/${name}` : name);

  function formatSize(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
    if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
    return `${(n / (1 << 30)).toFixed(2)} GiB`;
  }

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
    const entries = [...listing.entries].sort((a, b) => (b.dir - a.dir) || a.name.localeCompare(b.name));
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
    for (const li of el.list.children) li.classList.toggle('current', li.dataset.path === path);
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
      a.download = openPath.split('/').pop();
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 30000);
    } catch (err) {
      notify(err);
    }
  });

  el.del.addEventListener('click', () => removePath(openPath, false));
  el.openApp.addEventListener('click', () => window.voicebox.miniApps.launch({ path: openPath }));

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

  function confirmAction(text, verb) {
    el.confirmText.textContent = text;
    $('confirm-ok').textContent = verb;
    el.confirm.returnValue = '';
    el.confirm.showModal();
    return new Promise((resolve) => {
      el.confirm.addEventListener('close', () => resolve(el.confirm.returnValue === 'ok'), { once: true });
    });
  }

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
  // The assistant changed the workspace (public/assistant.js).
  document.addEventListener('voicebox:files-changed', () => { if (root) showDir(currentDir); });

  // ---- uploads: chunked, atomic (the file appears only when complete), with progress ----

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

  async function uploadAll(files) {
    for (const file of files) await uploadFile(file);
  }

  el.upload.addEventListener('click', () => el.uploadInput.click());
  el.uploadInput.addEventListener('change', () => {
    const files = [...el.uploadInput.files];
    el.uploadInput.value = '';
    uploadAll(files);
  });
  el.files.addEventListener('dragover', (event) => {
    if (!root || !event.dataTransfer.types.includes('Files')) return;
    event.preventDefault();
    el.files.classList.add('dragging');
  });
  el.files.addEventListener('dragleave', (event) => {
    if (!el.files.contains(event.relatedTarget)) el.files.classList.remove('dragging');
  });
  el.files.addEventListener('drop', (event) => {
    el.files.classList.remove('dragging');
    if (!root) return;
    event.preventDefault();
    uploadAll([...event.dataTransfer.files]);
  });

  window.addEventListener('beforeunload', (event) => {
    if (dirty) event.preventDefault();
  });

  // The page's other scripts (the mini-apps) reach the worker and the page's dialogs through this.
  window.voicebox = { call, must, notify, on, confirmAction };
})();
