// runInWorker(argv, env) runs /test.wasm (a GOOS=js test binary) in a fresh dedicated worker and
// resolves {exit, lines: [{fd, text}]} when it exits. Lines so far stay in window.workerLines, so a
// driver that gives up can still show them.
'use strict';
window.workerLines = [];
window.runInWorker = (argv, env) => new Promise((resolve) => {
  window.workerLines = [];
  const worker = new Worker('/runner-worker.js');
  worker.onmessage = (event) => {
    const msg = event.data;
    if (msg.line) {
      window.workerLines.push(msg.line);
    } else if ('exit' in msg) {
      worker.terminate();
      resolve({ exit: msg.exit, lines: window.workerLines });
    }
  };
  worker.onerror = (event) => {
    event.preventDefault();
    worker.terminate();
    window.workerLines.push({ fd: 2, text: 'worker error: ' + event.message });
    resolve({ exit: -1, lines: window.workerLines });
  };
  worker.postMessage({ argv, env });
});
