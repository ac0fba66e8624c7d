// Package extensionhost is the relay's side of extensions: where descriptors wait, how a person
// admits them, which are loaded, and how their tools run. What a descriptor may be, and the
// gate every admission passes, live in internal/shared/extensions; this package keeps the state and runs
// the calls.
//
// # Where to look
//
//	admissions.go  Admissions: the extension files, in a Store. Proposals wait in
//	               proposals/<id>.json (Stage, StageCatalogue); a host-token decision (Decide)
//	               or a console code (codes.go) moves one beside the ledger, .ledger.jsonl, with
//	               a line bound to its plan's hash; Load reads back only what the ledger admits
//	               and the gate passes again, and reports the rest (Problem).
//	               A descriptor file put into the directory by hand is admitted where it lies
//	               (Candidate); an admission whose file is gone is descriptor-missing.
//	codes.go       one-time console approval codes: RequestCode, Approve, their bounds, and
//	               PendingCodes for `relay approval-code`. The codes, their attempts and the
//	               limits on asking are one document changed by compare-and-set (withCodes).
//	store.go       Store, where Admissions keeps all of the above but the audit log: DirStore,
//	               the state directory, by default; internal/door/fleet's JetStream store in a fleet.
//	               storetest/ is the conformance suite both pass.
//	audit.go       the audit log, .extensions-audit.jsonl: every staging, decision, code
//	               refusal, revocation and call, allowed or refused.
//	runtime.go     Runtime: the loaded set (Reload), what executors verify calls against
//	               (Admitted, AdmittedFrame), and CallExtension, which validates arguments and
//	               routes a call by primitive: file primitives to the root's executor (Ask),
//	               http-get to the Fetcher, wasm to where modules run.
//	shelf.go       the WASM shelf's tools as extensions (wasm-shelf-ID), and where modules run:
//	               the relay (wasmtool) or the page (a wasm call to the root's executor).
//	listing.go     what the Extensions panel and list_extensions show: Listing, Entry, the
//	               shipped catalogue with the gate's verdicts, the shelf.
//	fetch.go       Fetcher, the mediated fetch of http-get: hosts, redirects, budgets, time
//	               bounds, declared secrets, and Redact for what is logged.
//	remotemcp.go   the door's side of the MCP host: a session (mcphost) for each loaded remote
//	               MCP extension, the runtime as its Host (tools-changed, staged plans), calls
//	               (callMCP) and MCP Apps views (ReadView: the audit and the view's grants).
//	mcphost/       the MCP host: a remote MCP extension's client session (the go-sdk client
//	               over Streamable HTTP) and its mediated transport, behind a small interface
//	               to the door (mcphost.Host, Budget, Config).
//	routes.go      the HTTP routes under /api/extensions (Register), one handler each.
//	wasmtool/      the wazero runner of WASM modules (both ABIs of internal/shared/wasmabi) and its bounds.
//	wasmshelf/     the WASM shelf: its manifest.json and each tool's verdict.
//
// # Who may do what
//
// Staging, listing, asking for a console code and revoking are open to the page; admitting with
// the host token and calling a tool over HTTP need the host token, and a console code is printed
// on the relay's console only. Nothing staged runs; only a ledger-backed descriptor that passes
// the gate again is loaded, and every call is checked against what was loaded.
package extensionhost
