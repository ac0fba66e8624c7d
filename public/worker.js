// @ts-check
// The page's dedicated worker: it loads the Go runtime and voicebox.wasm. Messages that arrive
// before Go has taken over onmessage wait in self.voiceboxInbox (see the browser package doc).
'use strict';

self.voiceboxInbox = [];
self.onmessage = (event) => self.voiceboxInbox.push(event.data);

// What only a worker can see of the platform the engine needs; the page says it in words
// (platform.js) instead of a workspace that never opens.
{
  /** @type {string[]} */
  const missing = [];
  const storage = self.navigator && self.navigator.storage;
  if (!storage || typeof storage.getDirectory !== 'function') missing.push('opfs');
  if (typeof FileSystemFileHandle === 'undefined' || !('createSyncAccessHandle' in FileSystemFileHandle.prototype)) missing.push('sync-access');
  if (missing.length > 0) self.postMessage({ type: 'platform', missing });
}

/** @param {unknown} message */
function fail(message) {
  self.postMessage({ type: 'failed', message: String(message) });
}

// The mini-apps' direct ports are opened through app-port.js (the message budget the bridge and
// the page charge, one implementation): loaded beside the engine, set before Go starts. So is
// engine-io.js, the byte paths (the socket's frames, OPFS reads) in one call across each.
const appPortModule = '/app-port.js';
const engineIOModule = '/engine-io.js';

try {
  importScripts('/wasm_exec.js');
  const go = new Go();
  Promise.all([import(appPortModule), import(engineIOModule), WebAssembly.instantiateStreaming(fetch('/voicebox.wasm'), go.importObject)])
    .then(([ports, io, { instance }]) => {
      self.voiceboxOpenAppPort = ports.openAppPort;
      self.voiceboxIO = io.engineIO(/** @type {WebAssembly.Memory} */ (instance.exports.mem));
      return go.run(instance);
    })
    .then(() => fail('the engine stopped'), (err) => fail('the engine could not start: ' + err));
} catch (err) {
  fail('the engine could not load: ' + err);
}
