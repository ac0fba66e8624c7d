// Starts the JavaScript peer in a dedicated worker (jsworker.js): what the page's design costs
// without Go, the floor under the Go worker's figure.
'use strict';
window.peerReady = new Promise((resolve, reject) => {
  const w = new Worker('/jsworker.js');
  w.onmessage = (e) => (e.data === 'ready' ? resolve(true) : reject(new Error(String(e.data))));
  window.peerWorker = w;
});
