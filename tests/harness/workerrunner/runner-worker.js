// Runs the test binary in this worker. globalThis.fs.writeSync carries the binary's stdout, its
// stderr and runtime panics; each is split into lines and posted as it comes.
'use strict';
importScripts('/wasm_exec.js');

self.onmessage = async (event) => {
  const { argv, env } = event.data;
  const decoder = new TextDecoder();
  const partial = { 1: '', 2: '' };
  const flush = (fd, all) => {
    const parts = partial[fd].split('\n');
    partial[fd] = all ? '' : parts.pop();
    for (const text of all ? parts.filter((p, i) => i < parts.length - 1 || p !== '') : parts) {
      self.postMessage({ line: { fd, text } });
    }
  };
  globalThis.fs.writeSync = (fd, buf) => {
    const key = fd === 1 ? 1 : 2;
    partial[key] += decoder.decode(buf);
    flush(key, false);
    return buf.length;
  };
  const go = new Go();
  go.argv = ['test.wasm', ...argv];
  go.env = env;
  go.exit = (code) => {
    flush(1, true);
    flush(2, true);
    self.postMessage({ exit: code });
  };
  try {
    const [io, { instance }] = await Promise.all([import('/engine-io.js'), WebAssembly.instantiateStreaming(fetch('/test.wasm'), go.importObject)]);
    self.voiceboxIO = io.engineIO(instance.exports.mem); // as the page's worker.js does
    await go.run(instance);
  } catch (err) {
    self.postMessage({ line: { fd: 2, text: 'runner: ' + err } });
    self.postMessage({ exit: -1 });
  }
};
