// Command browser is the page's Go: compiled with GOOS=js GOARCH=wasm to public/voicebox.wasm and
// run in the page's dedicated worker (public/worker.js), never on the main thread.
//
// # What JavaScript sees
//
// The worker and the page's main thread talk through postMessage with plain objects:
//
//	worker -> page  {type: "ready", build}                         once, when Go is running
//	page -> worker  {type: "call", id, method, params}             id: a number the page chooses
//	worker -> page  {type: "result", id, ok: true, value}          exactly one answer per call
//	worker -> page  {type: "result", id, ok: false, refused, why}  a refusal with a rule id
//	worker -> page  {type: "failed", message}                      from worker.js when loading fails
//
// Methods:
//
//	status  -> {build, go, uptimeMs}
//
// An unknown method is refused "unknown-method"; a call without a numeric id or a method is
// refused "malformed-call" when it has an id and dropped (with a console warning) when it has none.
//
// Before Go starts, worker.js keeps arriving messages in self.voiceboxInbox; Go takes over
// self.onmessage and drains that inbox first, so no message sent after the worker started is lost.
//
// The same code is built natively only so that `go vet ./...` covers it; the native binary
// refuses to run.
package main
