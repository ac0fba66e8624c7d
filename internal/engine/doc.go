// Package engine is the page's Go: the Engine that runs in the page's dedicated worker
// (public/worker.js, started by the browser command compiled to public/voicebox.wasm), never on
// the main thread. It holds the workspace root, runs the file browser's operations, holds the
// open mini-apps' tools, and is the relay's executor over /channel. Run starts it in a worker;
// New and the Engine's methods are portable, so tests and benchmarks drive it natively too.
//
// # What JavaScript sees
//
// The worker and the page's main thread talk through postMessage with the shapes below (the
// page's one client of the worker, public/worker-client.js, spells every shape as a JSDoc type
// that tsc checks the page against: change the two together). Each crosses as its JSON text,
// which Go reads or writes in one crossing into JavaScript (walking an object took about twenty,
// each value handed back costing Go's js bridge a finalizer); what JSON cannot carry goes beside
// the text: a call with params.bytes, params.handle or params.port is posted as {call: text,
// bytes, object}, those taken out of its params, and an answer with bytes as {json: text, bytes}
// (worker-client.js's wrap and unwrap):
//
//	worker -> page  {type: "ready", build}                         once, when Go is running
//	page -> worker  {type: "call", id, method, params}             id: a number the page chooses
//	worker -> page  {type: "result", id, ok: true, value}          exactly one answer per call
//	worker -> page  {type: "result", id, ok: false, refused, why}  a refusal with a rule id
//	                 either may carry news: [message, ...]          messages the call made for the
//	                                                                page, heard before its answer
//	worker -> page  {type: "channel", state, why, retryMs}         the connection to the relay
//	worker -> page  {type: "history"}                              the undo history changed
//	worker -> page  {type: "failed", message}                      from worker.js when loading fails
//
// params may carry two things JSON cannot: params.bytes (a Uint8Array or ArrayBuffer, for upload
// chunks) and params.handle (a FileSystemDirectoryHandle, for root.open). A download's bytes come
// back as value.bytes, a transferred Uint8Array.
//
// The methods, their params and their answers are the method table (methodTable in api.go), one
// line each: the page's public/worker-methods.js is rendered from it (go generate
// ./browser/engine; TestWorkerMethodsModuleIsCurrent fails when it is stale), so the page's calls
// are checked against the worker's own list.
//
// Every change the page makes (files.write, files.move, files.mkdir, files.delete of a file, an
// upload's commit) runs through the executor with the undo history the relay's calls use too: the page's
// are recorded as the person's (executor.ByPerson), the relay's as the assistant's.
//
// The mini-apps' methods (miniapps.*, see miniapps.go and the table) serve the frames and their
// bridge, which live on the main thread, in public/mini-apps.js.
//
// A call to a mini-app tool (from miniapps.call, or from the relay over /channel under its
// model-facing name app_HHHHHHHH__tool) is validated by the registry, then sent over the app's
// port, when its bridge handed one over (miniapps.port, once per document, see frames.go). The
// port's other end is the app's document itself (the bridge made the channel; it is off the
// call's path), and what the app posts there is charged to its message budget first
// (public/app-port.js, loaded by worker.js):
//
//	worker -> app {type: "call_tool", callId, name, args}
//	worker -> app {type: "cancel_call", callId}       the worker stopped waiting
//	app -> worker {type: "tool_result", callId, ok: true, result} | {type: "tool_result", callId, ok: false, error}
//	                                                  result: the tool's JSON as text; a failure is exec-threw
//
// and the page hears {"type":"miniapp.call", callId, appId, tool, onPort: true} for display only
// (no args; nothing is asked of it; inside the answer's news for a call of the page's own
// miniapps.call, posted apart for the relay's), {"type":"miniapp.cancel", callId, appId, tool, doc,
// expired: true} when the call passed its deadline, and {"type":"miniapp.over_budget", appId,
// doc, why, messages, bytes} when the app passed its message budget on the port: the page then
// stops that document of the app. Anything else the app posts on the port is refused by name
// (malformed-answer, mini-app-unsolicited-answer) and counted (miniapps.ports). An app with no port (an MCP Apps view) is called through the
// page: {"type":"miniapp.call", callId, appId, tool, args}, answered with miniapps.result; a
// {"type":"miniapp.cancel", callId, expired} tells the page the worker stopped waiting; expired
// is true when a deadline passed, and the page then stops the app.
//
// The assistant's mini-app tools reach the worker over /channel as list-mini-apps,
// launch-mini-app {name} and create-mini-app {title, html} (see assistant.go). A launch the
// relay asks for is sent to the page as {"type":"miniapp.open", entry, html}, which the page
// opens as it opens one the user launched. Whenever the open apps' tools change, the worker tells
// the relay with a {"type":"tools","tools":[...]} frame, so the assistant's catalogue follows.
//
// The external mini-apps (web apps on their own origin; their frames, bridge and approval gate
// are on the main thread, in public/external-apps.js): a relay call of one of their tools (named
// app_x_<appId>__<tool>, see internal/shared/externalapp) or of get_app_context is sent to the page as
// {"type":"externalapp.call", callId, name, args}, answered with externalapps.result (once); the
// page reports its open apps and their tools with externalapps.report, passed on to the relay as
// the tools frame's externalApps; and {"type":"externalapp.cancel", callId} tells the page the
// worker stopped waiting.
//
// Every path goes through fsroot.Check, so the page meets the same rules (and rule ids) as the
// assistant's tools. An unknown method is refused "unknown-method"; a call without a numeric id
// or a method is refused "malformed-call" when it has an id and dropped (with a console line)
// when it has none.
//
// Before Go starts, worker.js keeps arriving messages in self.voiceboxInbox; Go takes over
// self.onmessage and drains that inbox first, so no message sent after the worker started is lost.
//
// # The channel
//
// Once a root is open the worker dials the relay's /channel (the page's own origin) and serves
// the relay's calls on that root through the executor door (see peer.go for the frames). It
// reconnects with backoff when the relay goes away, and waits for channel.connect after the relay
// refused it or a newer tab took the executor's place. The socket's frames, both ways, and the
// OPFS root's pooled reads move their bytes through public/engine-io.js (worker.js sets it as
// self.voiceboxIO before Go starts; internal/jsutil's IO): one call across the wasm boundary each,
// reading and writing Go's memory in place. Without it (a test binary on the main thread) they
// take syscall/js's generic way, with the same results.
//
// Only Run, and the message loop, sockets and roots it uses, are GOOS=js; the rest is portable and
// its tests run natively as well as in the browser.
package engine
