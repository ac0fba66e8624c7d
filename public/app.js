// The page's main thread: it starts the worker that runs the Go engine and shows its state.
// window.voicebox.call(method, params) sends one call to the worker and resolves with its answer
// (see the browser package doc for the message API).
'use strict';

(() => {
  const status = document.getElementById('status');
  const pending = new Map();
  let nextId = 1;

  function show(state, text) {
    status.dataset.state = state;
    status.textContent = text;
  }

  const worker = new Worker('/worker.js');
  worker.onmessage = (event) => {
    const msg = event.data;
    switch (msg && msg.type) {
      case 'ready':
        show('ready', `ready · build ${msg.build}`);
        performance.mark('voicebox-ready');
        break;
      case 'failed':
        show('failed', msg.message);
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
      default:
        console.warn('voicebox: unexpected message from the worker', msg);
    }
  };
  worker.onerror = (event) => {
    event.preventDefault();
    show('failed', 'the engine failed: ' + (event.message || 'unknown error'));
  };

  window.voicebox = Object.freeze({
    call(method, params) {
      const id = nextId++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        worker.postMessage({ type: 'call', id, method, params });
      });
    },
  });
})();
