// @ts-check
// The engine's byte paths to the browser, done in one call across the wasm boundary each: the
// page's dedicated worker (worker.js) loads this module and sets self.voiceboxIO to
// engineIO(the Go instance's memory) before Go starts; the Go side is internal/jsutil's IO.
//
// Each function reads or writes Go's own memory in place, at an address and length Go passes,
// during the call (Go's heap does not move, and nothing else runs in the worker meanwhile). A
// syscall/js crossing costs about as much as a small read, and each JavaScript object it hands
// Go costs a finalizer there and a garbage collection here: the generic way, a socket's frame
// took five crossings and four such objects on arrival, an answer four crossings to send and a
// 4 KiB OPFS read two. Without this module (a test binary on the page's main thread) the engine
// takes the generic way, with the same results.

/**
 * A FileSystemSyncAccessHandle, as far as read uses it.
 * @typedef {{read: (buffer: Uint8Array, options: {at: number}) => number}} SyncReader
 */

/** @param {WebAssembly.Memory} memory the Go instance's memory (instance.exports.mem) */
export function engineIO(memory) {
  const encoder = new TextEncoder();
  const at0 = { at: 0 };
  // A view is made again at every use: the memory's ArrayBuffer is replaced when Go's heap grows.
  /** @param {number} addr @param {number} n */
  const bytes = (addr, n) => new Uint8Array(memory.buffer, addr, n);
  // Go takes each function once and calls it alone (no this).
  return {
    /**
     * frames gives each message ws receives to onFrame: a text or binary frame of up to cap bytes
     * is copied into Go's buffer at addr and onFrame(n) is called with its length; anything
     * else (larger, or of another kind) is onFrame(-1, data), which Go reads the generic way.
     * @param {WebSocket} ws @param {number} addr @param {number} cap
     * @param {(n: number, data?: unknown) => void} onFrame
     */
    frames(ws, addr, cap, onFrame) {
      ws.onmessage = (event) => {
        const data = event.data;
        if (typeof data === 'string') {
          // A character takes at most 3 bytes in UTF-8 for each UTF-16 unit it takes.
          if (data.length * 3 <= cap) {
            onFrame(encoder.encodeInto(data, bytes(addr, cap)).written);
            return;
          }
        } else if (data instanceof ArrayBuffer && data.byteLength <= cap) {
          bytes(addr, data.byteLength).set(new Uint8Array(data));
          onFrame(data.byteLength);
          return;
        }
        onFrame(-1, data);
      };
    },
    /**
     * send sends Go's n bytes at addr on ws as one binary message, and reports whether ws was
     * open to take it (the browser copies the bytes before send returns).
     * @param {WebSocket} ws @param {number} addr @param {number} n
     */
    send(ws, addr, n) {
      if (ws.readyState !== WebSocket.OPEN) return false;
      ws.send(bytes(addr, n));
      return true;
    },
    /**
     * read reads the file open as handle from its start into Go's cap bytes at addr, and
     * returns how many it read (a throw is the handle's error).
     * @param {SyncReader} handle @param {number} addr @param {number} cap
     */
    read(handle, addr, cap) {
      return handle.read(bytes(addr, cap), at0);
    },
  };
}
