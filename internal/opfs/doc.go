// Package opfs holds the page's workspace roots: one over the browser's private storage (OPFS)
// and one over any FileSystemDirectoryHandle, such as a folder the user granted with
// showDirectoryPicker. Both implement fsroot.Root and pass its conformance suite in Chromium.
//
// # Wasm
//
// The package is GOOS=js only (the native build is empty). It runs in the page's dedicated
// worker, where OPFS offers sync access handles: reads of an OPFS root go through handles kept
// open in a small pool (a read is then microseconds; opening one costs about a millisecond).
// Writes go through createWritable, which commits a swap file on close, so a reader never sees a
// partial file; a file cannot have a sync handle and a writable open at once, so a write closes
// that file's pooled handle first and reads of a file being written use the asynchronous API.
// A new file is written under a hidden temporary name and moved into place, so it never appears
// half-written. A sync handle locks its file against the origin's other contexts (another tab's
// worker), so the pools of every context lend their handles back on request (release_js.go).
// Where sync handles do not exist (the main thread, a picked directory), every
// read uses the asynchronous API and retries when a replace invalidated its snapshot.
package opfs
