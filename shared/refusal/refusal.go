// Package refusal is the one value every Voicebox rule answers with when it says no: a stable
// kebab-case rule id and a sentence a person can act on.
//
// The rule ids are a contract shared with the model, the page, the relay and other programs: they
// never change meaning, and callers branch on them, never on the text of Why.
package refusal

import (
	"errors"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// Rule is a stable refusal id such as "unknown-field".
type Rule string

// The rule ids. Each is used by the package that enforces it; they live here so that no two
// packages can spell one differently.
const (
	// Wire envelopes (internal/shared/wire).
	UnknownField     Rule = "unknown-field"
	BadVersion       Rule = "bad-version"
	MalformedCall    Rule = "malformed-call"
	MalformedAnswer  Rule = "malformed-answer"
	UnattributedCall Rule = "unattributed-call"
	BoundsMismatch   Rule = "bounds-mismatch"

	// The executor door (internal/shared/channel).
	ExecThrew Rule = "exec-threw"

	// Peer absence when the executor is the browser page (internal/shared/channel).
	NoPage      Rule = "no-page"
	PageTimeout Rule = "page-timeout"
	PageClosed  Rule = "page-closed"

	// Peer absence when the executor is a paired machine environment (internal/shared/channel).
	MachineUnreachable Rule = "machine-unreachable"
	MachineTimeout     Rule = "machine-timeout"
	MachineClosed      Rule = "machine-closed"

	// Extension runtime refusals that cross the wire unchanged (internal/shared/extensions).
	HostNotAllowed  Rule = "host-not-allowed"
	FetchFailed     Rule = "fetch-failed"
	BudgetExhausted Rule = "budget-exhausted"
	// FetchTimeout answers a mediated fetch that a request or the call as a whole took longer
	// than its bound (extensions.FetchRequestTimeout, extensions.FetchCallTimeout).
	FetchTimeout Rule = "fetch-timeout"
	// SecretUnset answers a call whose request would carry a declared secret that the relay's
	// environment does not hold: nothing is sent, never an empty header.
	SecretUnset Rule = "secret-unset"

	// Tool schemas and arguments (internal/shared/toolschema, internal/shared/miniapp).
	InvalidToolParameters Rule = "invalid-tool-parameters"
	InvalidToolArguments  Rule = "invalid-tool-arguments"
	InvalidArgumentBounds Rule = "invalid-argument-bounds"
	MissingArgument       Rule = "missing-argument"
	InvalidArgument       Rule = "invalid-argument"
	InvalidArgumentType   Rule = "invalid-argument-type"
	InvalidArgumentLength Rule = "invalid-argument-length"
	InvalidArgumentRange  Rule = "invalid-argument-range"
	InvalidArgumentEnum   Rule = "invalid-argument-enum"
	// InvalidArgumentPattern answers a string argument that does not match its schema's pattern
	// (a tool registered through document.modelContext, the WebMCP draft's subset).
	InvalidArgumentPattern Rule = "invalid-argument-pattern"
	InvalidToolName        Rule = "invalid-tool-name"
	InvalidToolDescription Rule = "invalid-tool-description"
	InvalidToolDeclaration Rule = "invalid-tool-declaration"
	UnknownTool            Rule = "unknown-tool"
	// AmbiguousTool answers a call of a mini-app tool by its plain name (the typed action
	// mini_app_tool) that more than one open app offers; the refusal names the apps.
	AmbiguousTool Rule = "ambiguous-tool"

	// The mini-app tool registry and its calls (internal/shared/miniapp).
	TooManyTools         Rule = "too-many-tools"
	InvalidAppID         Rule = "invalid-app-id"
	ToolTimeout          Rule = "tool-timeout"
	ToolOutputOverBudget Rule = "tool-output-over-budget"
	// MiniAppClosed answers a call whose app closed or reloaded before it answered.
	MiniAppClosed Rule = "mini-app-closed"
	// MiniAppPortRefused answers a port handed to the page's worker for an app's document that
	// already has one, or for an older document: a port is taken once per document.
	MiniAppPortRefused Rule = "mini-app-port-refused"
	// MiniAppUnsolicitedAnswer is what the page's worker refuses, on the port an app's document
	// holds to it, an answer to no call waiting on that port: a second answer, one after the
	// call's deadline or its cancel, one to a call never made or made on another port. It is
	// counted and shown (miniapps.ports), never taken, and never answers the app.
	MiniAppUnsolicitedAnswer Rule = "mini-app-unsolicited-answer"
	// MessageBudgetExceeded is why the page stopped a mini-app (sandboxed or external) that sent
	// more messages than its budget allows (public/mini-apps.js, public/external-apps.js); a
	// stopped app's card shows it, and its calls waiting are answered MiniAppClosed.
	MessageBudgetExceeded Rule = "message-budget-exceeded"
	// MiniAppFrameTimeout is why the page stopped a mini-app whose frame never loaded: its bridge
	// did not say it was ready within the bridge's handshake bound, on the shared app host too
	// (public/mini-apps.js). Its card says so, with a button to start it again; its calls waiting
	// are answered MiniAppClosed.
	MiniAppFrameTimeout Rule = "mini-app-frame-timeout"
	// SandboxNoNetwork is the error a sandboxed app (a workspace or shelf mini-app, a folder app,
	// an MCP Apps view) gets when it reaches for WebRTC: the bridge takes RTCPeerConnection and
	// its kin out of the app's window (public/mini-app-bridge.js), and where the browser honours
	// the bridge's Connection-Allowlist no peer connection can start from any frame of the app.
	SandboxNoNetwork Rule = "sandbox-no-network"

	// InvalidName refuses a name a person reads (a file or folder name, an app title, a tool,
	// extension, MCP client or machine name) that holds a character that hides or reorders text:
	// a C0 or C1 control, a bidi control, a zero-width or other format character, or a name not in
	// Unicode NFC (internal/shared/names). The sentence names the character (U+XXXX and its class) and its
	// index.
	InvalidName Rule = "invalid-name"

	// Workspace paths (internal/shared/fsroot): every root checks every name before it touches anything.
	OutsideRoot    Rule = "outside-root"
	DotfileRefused Rule = "dotfile-refused"
	PathTooLong    Rule = "path-too-long"

	// The file primitives (internal/shared/executor); a missing file or folder is NotFound.
	IsADirectory  Rule = "is-a-directory"
	NotADirectory Rule = "not-a-directory"
	WriteTooLarge Rule = "write-too-large"
	DiffTooLarge  Rule = "diff-too-large"
	// NotARegularFile answers a read of a FIFO, a device or a socket planted in the workspace,
	// which no file tool opens.
	NotARegularFile Rule = "not-a-regular-file"

	// HTTP doors of the relay (relay), and a missing file or folder (internal/shared/executor).
	NotFound      Rule = "not-found"
	InternalError Rule = "internal-error"
	// StateDiskFull answers a change the relay could not record because the disk that holds its
	// state directory is full (or the user's quota is spent): nothing of it was kept, no torn
	// record was left behind, and the same request succeeds once there is space (507).
	StateDiskFull Rule = "state-disk-full"
	// WorkspaceDiskFull answers a change of the workspace that found no room: the disk that holds
	// a machine's folder is full (or its quota spent), or the browser's storage quota is. The
	// file keeps its earlier content, and the same call succeeds once there is space.
	WorkspaceDiskFull Rule = "workspace-disk-full"
	// FileBusy answers a change of a file that another context holds locked and did not let go
	// of when asked (another tab of the page's browser storage, busy past the wait). The file
	// keeps its earlier content, and the same call succeeds once it is let go.
	FileBusy Rule = "file-busy"

	// The relay's JSON door (internal/core/server): the body of every JSON route.
	UnsupportedContentType Rule = "unsupported-content-type"
	BodyTooLarge           Rule = "body-too-large"
	MalformedJSON          Rule = "malformed-json"
	// BodyTimeout answers a request whose body did not arrive within the relay's bounds: a gap
	// between bytes over server.BodyIdleTimeout, or the whole body over server.BodyTimeout (408).
	BodyTimeout Rule = "body-timeout"
	// BodyRequired answers a request that changes something (any method but GET and HEAD) on a
	// JSON route with an empty body (400): such a route takes a JSON object, {} when there is
	// nothing to say, so a page of another site cannot send one without a preflight.
	BodyRequired Rule = "body-required"
	// AppFilesFull answers a new folder app bundle, or a file of one, past the relay's bounds on
	// them together (server.MaxAppFileBundles, server.MaxAppFilesBytes; 507): an open app's files
	// are never dropped to make room.
	AppFilesFull Rule = "app-files-full"

	// The relay's walls before any handler (internal/core/server).
	// HostRefused answers a request whose Host header names no host this relay serves under
	// (on a loopback bind: loopback names, *.localhost and the public origin's host), the mark of
	// a DNS-rebinding page (421).
	HostRefused Rule = "host-refused"
	// TooManyConnections answers a connection over the bound of connections open at once from one
	// client address (server.MaxConnsPerClient) with a 429, then closes it.
	TooManyConnections Rule = "too-many-connections"

	// Who may use the relay (relay): the host token, the loopback gate, the /channel hello.
	HostTokenRequired       Rule = "host-token-required"
	LoopbackUnauthenticated Rule = "loopback-unauthenticated"
	ExecutorUnauthenticated Rule = "executor-unauthenticated"
	BearerRefused           Rule = "bearer-refused"
	OriginRefused           Rule = "origin-refused"

	// Running the relay (relay): shutting down, and the socket limits.
	RelayShuttingDown Rule = "relay-shutting-down"
	TooManySockets    Rule = "too-many-sockets"
	// SlowReader is why the relay closed an outgoing stream (an /mcp or /api/events event
	// stream, a /channel or /live socket) whose reader did not keep up: its queue passed its
	// bound, or one write did not finish within the write deadline (internal/core/outbound). The other
	// streams are never made to wait for it; the client connects again and reads.
	SlowReader Rule = "slow-reader"

	// A fleet of relays on NATS (internal/door/fleet): the shared state cannot be reached, a call whose
	// executor's relay went away before it answered, and an approval whose requester went away.
	FleetUnavailable Rule = "fleet-unavailable" // NATS (the fleet's shared state and routing) is unreachable from this relay
	OutcomeUnknown   Rule = "outcome-unknown"   // the relay holding the executor went away mid-call: the call may or may not have run
	// ApprovalRequesterGone: the relay whose call asked for the approval stopped being heard by
	// the fleet (it died or lost NATS), so no decision can reach the call any more.
	ApprovalRequesterGone Rule = "approval-requester-gone"

	// The page's worker API (internal/engine).
	UnknownMethod    Rule = "unknown-method"
	NoRoot           Rule = "no-root"
	RootUnavailable  Rule = "root-unavailable"
	TooManyUploads   Rule = "too-many-uploads"
	FileExists       Rule = "file-exists"
	PermissionDenied Rule = "permission-denied"
	FileError        Rule = "file-error"
	// FileChanged refuses a save whose file is no longer the version the saver read (write-file's
	// expect): someone else (the assistant, an upload, another program) changed it since, and
	// writing would lose that change without a word. The saver shows both and asks. It also ends
	// the workspace's download when a file changed while its entry was half sent (the rest of
	// the entry would be another version's): the page discards the partial archive.
	FileChanged Rule = "file-changed"
	// FolderNotEmpty refuses deleting a folder that still holds files or folders: a delete of a
	// folder never takes what is inside with it.
	FolderNotEmpty Rule = "folder-not-empty"

	// The mini-app store (internal/shared/miniappstore): lookup, deletion and saving.
	MiniAppNotFound    Rule = "mini-app-not-found"
	MiniAppNameTaken   Rule = "mini-app-name-taken"
	MissingHTML        Rule = "missing-html"
	InvalidMiniAppName Rule = "invalid-mini-app-name"
	MiniAppReadOnly    Rule = "mini-app-read-only"
	MiniAppTooLarge    Rule = "mini-app-too-large"

	// Extension admission (internal/shared/extensions), in the order the gate checks them.
	UnknownCapability    Rule = "unknown-capability"
	EvalNotAToolPath     Rule = "eval-not-a-tool-path"
	ExecAbsent           Rule = "exec-absent"
	CapabilityUnmediated Rule = "capability-unmediated"
	NetworkUnbounded     Rule = "network-unbounded"
	NoTools              Rule = "no-tools"
	BadToolName          Rule = "bad-tool-name"
	UnknownPrimitive     Rule = "unknown-primitive"
	UnderDeclared        Rule = "under-declared"
	UnsupportedABI       Rule = "unsupported-abi"
	DuplicateTool        Rule = "duplicate-tool"
	BadDescriptor        Rule = "bad-descriptor"
	// SecretReserved refuses a descriptor that declares one of the relay's own environment
	// variables as a secret (extensions.ReservedSecrets): vendor keys, settings, paths.
	SecretReserved Rule = "secret-reserved"

	// Extension lifecycle and execution.
	NotAdmitted        Rule = "not-admitted"
	PresentNotAdmitted Rule = "present-not-admitted"
	// AlreadyAdmitted refuses a proposal of exactly what is admitted (the same id and bytes): there
	// is nothing to decide, so nothing waits for a decision.
	AlreadyAdmitted        Rule = "already-admitted"
	ApprovalPlanChanged    Rule = "approval-plan-changed"
	RedirectHostNotAllowed Rule = "redirect-host-not-allowed"
	TooManyRedirects       Rule = "too-many-redirects"
	ImportUndeclared       Rule = "import-undeclared"
	DigestMismatch         Rule = "digest-mismatch"
	OverBudget             Rule = "over-budget"
	TimeExceeded           Rule = "time-exceeded"
	ResourceExceeded       Rule = "resource-exceeded"
	WasmTrapped            Rule = "wasm-trapped"
	WasmInvalid            Rule = "wasm-invalid"
	// DescriptorMissing reports a ledger admission whose descriptor file is gone.
	DescriptorMissing Rule = "descriptor-missing"
	// WasmUnreadable refuses a call (or lists a shelf tool) whose module file cannot be read.
	WasmUnreadable Rule = "wasm-unreadable"
	// DiffFailed refuses a buffer-abi/diff call whose module could not diff (internal/shared/wasmabi).
	DiffFailed Rule = "diff-failed"

	// The WASM shelf (internal/door/extensionhost/wasmshelf): a directory of digest-pinned modules named
	// by its manifest.json.
	ShelfUnavailable Rule = "shelf-unavailable" // no manifest where the shelf should be
	ShelfUnreadable  Rule = "shelf-unreadable"  // a manifest that is not the manifest's JSON

	// Sessions of the relay's gate (internal/core/session): why a session's sockets were closed, and
	// session commands on a relay that runs without the gate.
	SessionExpired Rule = "session-expired"
	SessionRevoked Rule = "session-revoked"
	GateOff        Rule = "gate-off"

	// Live voice sessions (internal/core/live, internal/core/voice): providers, settings, rates, the /live socket.
	LiveProviderUnknown          Rule = "live-provider-unknown"
	LiveProviderUnavailable      Rule = "live-provider-unavailable"
	LiveNoInputRate              Rule = "live-no-input-rate"
	LiveInputRateInvalid         Rule = "live-input-rate-invalid" // a provider registered with a negative input rate
	LiveRateMismatch             Rule = "live-rate-mismatch"
	LiveModelRefused             Rule = "live-model-refused"
	LiveVoiceRefused             Rule = "live-voice-refused"
	LiveThinkingRefused          Rule = "live-thinking-refused"
	LiveKeyMissing               Rule = "live-key-missing"
	LiveKeyInvalid               Rule = "live-key-invalid"
	LiveTransportUnauthenticated Rule = "live-transport-unauthenticated"
	LiveNotReady                 Rule = "live-not-ready"
	LiveSessionClosed            Rule = "live-session-closed"
	LiveSetupTimeout             Rule = "live-setup-timeout"
	LiveUpstreamFailed           Rule = "live-upstream-failed"
	LiveUpdateUnsupported        Rule = "live-update-unsupported"
	LiveAudioFrameInvalid        Rule = "live-audio-frame-invalid"
	LiveMessageInvalid           Rule = "live-message-invalid"

	// The assistant's tools (internal/shared/commands, internal/shared/executor, internal/core/assistant): the router,
	// the file primitives behind edit and undo, the user's approval, the typed turn.
	RootNotDeclared  Rule = "root-not-declared"
	OldTextNotFound  Rule = "old-text-not-found"
	OldTextAmbiguous Rule = "old-text-ambiguous"
	NothingToUndo    Rule = "nothing-to-undo"
	UndoConflict     Rule = "undo-conflict"
	HistoryFailed    Rule = "history-failed"
	NothingToRedo    Rule = "nothing-to-redo"
	RedoConflict     Rule = "redo-conflict"
	ApprovalDenied   Rule = "approval-denied"
	ApprovalTimedOut Rule = "approval-timed-out"
	NotUnderstood    Rule = "not-understood"

	// Extension approval by console code (internal/door/extensionhost): why a code did not admit, and the
	// limit on asking for codes.
	ApprovalCodeWrong        Rule = "approval-code-wrong"        // not the outstanding code; the asker's attempts remain, or this was its last
	ApprovalGuessesExhausted Rule = "approval-guesses-exhausted" // this requester made its five wrong attempts at the code, which still admits for others
	ApprovalCodeExpired      Rule = "approval-code-expired"      // the code outlived its two minutes
	ApprovalCodeUsed         Rule = "approval-code-used"         // the code already admitted its proposal
	ApprovalCodeMissing      Rule = "approval-code-missing"      // no code was asked for this proposal
	ApprovalRateLimited      Rule = "approval-rate-limited"      // too many codes asked for, open or guessed wrong in the window

	// External mini-apps (internal/door/externalapps, internal/shared/externalapp, public/external-apps.js): the
	// registry, identity tokens, the host bridge and the write-approval gate. The gate answers
	// approval-denied and approval-timed-out, the assistant's approval rules (internal/shared/commands).
	ExternalAppUnknown   Rule = "external-app-unknown"
	ExternalAppNoAuth    Rule = "external-app-no-auth"
	ExternalAppNotReady  Rule = "external-app-not-ready"
	ExternalAppNavigated Rule = "external-app-navigated"
	ExternalAppError     Rule = "external-app-error"
	ContextUnavailable   Rule = "context-unavailable"

	// The assistant's approvals (internal/core/assistant): what was approved no longer holds when it
	// would run, and the bound on requests waiting.
	RootChanged      Rule = "root-changed"       // another executor took the workspace root while the person was asked
	TooManyApprovals Rule = "too-many-approvals" // as many requests as the page shows already wait for the person

	// MCP clients at /mcp (internal/door/mcp): who may connect, and how many calls at once. A wrong
	// Origin is origin-refused, a bearer the host never minted bearer-refused, a foreign Host
	// host-refused, a slow body body-timeout.
	BearerMissing Rule = "bearer-missing" // no Authorization: Bearer header
	BearerRevoked Rule = "bearer-revoked" // the host revoked this client's bearer (or minted a newer one for its name)
	TooManyCalls  Rule = "too-many-calls" // a client has as many tool calls running as it may
	// MCPSessionUnknown answers an Mcp-Session-Id that names no open session: never opened,
	// closed, or idle past mcp.SessionIdle (404). The client opens a new one.
	MCPSessionUnknown Rule = "mcp-session-unknown"
	// MCPSessionForeign answers a request on a session another MCP client opened (403): a
	// session belongs to the bearer's client that opened it.
	MCPSessionForeign Rule = "mcp-session-foreign"

	// The filesystem-server primitives (internal/shared/executor): a file larger than the primitive reads
	// whole, and a file read as media that is no image or audio.
	FileTooLarge    Rule = "file-too-large"
	NotMedia        Rule = "not-media"
	MoveUnsupported Rule = "move-unsupported" // the workspace's storage cannot move this (a folder in the browser's)

	// A remote MCP extension (internal/door/extensionhost): a tool the server lists that cannot be offered
	// (outside the schema subset, or not admitted yet), a session that could not be made or
	// broke, and a tool result the server marked isError.
	ToolUnavailable Rule = "tool-unavailable"
	MCPUnreachable  Rule = "mcp-unreachable"
	MCPToolError    Rule = "mcp-tool-error"

	// An MCP Apps view's declared CSP domains (internal/shared/extensions.ViewPolicy): each domain the
	// view is not given is dropped with one of these, and the view runs without it.
	ViewDomainOutsideHosts Rule = "view-domain-outside-hosts" // a well-formed origin on a host bounds.hosts does not name
	ViewDomainMalformed    Rule = "view-domain-malformed"     // not scheme://host[:port]: a keyword, a path, another scheme
	ViewDomainWildcard     Rule = "view-domain-wildcard"      // "*" or *.example.com: wider than any exact host
	ViewDomainsTooMany     Rule = "view-domains-too-many"     // past MaxViewDomains, the rest are not read
)

// Refusal is a named "no". It is an error, and it marshals to the fields an answer envelope
// carries: {"refused": rule, "why": sentence}.
type Refusal struct {
	Rule Rule   `json:"refused"`
	Why  string `json:"why"`
}

// New returns a refusal for rule with a Why formatted as fmt.Sprintf would (by textf, which the page links instead of fmt).
func New(rule Rule, format string, args ...any) *Refusal {
	return &Refusal{Rule: rule, Why: textf.Sprintf(format, args...)}
}

// Error returns "rule: why", so a refusal logs as what it is.
func (r *Refusal) Error() string { return string(r.Rule) + ": " + r.Why }

// Is reports whether target is a refusal with the same rule, so errors.Is(err, refusal.Of(rule))
// matches any refusal of that rule whatever its sentence.
func (r *Refusal) Is(target error) bool {
	t, ok := target.(*Refusal)
	return ok && t.Rule == r.Rule && (t.Why == "" || t.Why == r.Why)
}

// Of returns a refusal of rule with no sentence, for use as an errors.Is target.
func Of(rule Rule) *Refusal { return &Refusal{Rule: rule} }

// As returns the refusal err is or wraps, if any.
func As(err error) (*Refusal, bool) {
	if err == nil {
		return nil, false // the audio path asks on every frame
	}
	return errors.AsType[*Refusal](err)
}

// RuleOf returns the rule id of the refusal err is or wraps, or "" when it is not a refusal.
func RuleOf(err error) Rule {
	if r, ok := As(err); ok {
		return r.Rule
	}
	return ""
}

// JSON returns the refusal as the body a JSON door answers with: {"ok":false,"refused":...,"why":...}.
func (r *Refusal) JSON() []byte {
	w := rawjson.NewObject(nil, true) // as json.Marshal writes it (TestJSONAgreesWithMarshal)
	w.Bool("ok", false)
	w.String("refused", string(r.Rule))
	w.String("why", r.Why)
	return w.Close()
}
