package miniapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// Bounds of the registry and of a call.
const (
	// MaxToolsPerApp bounds the tools one app has registered at a time; the next is refused
	// too-many-tools and the registered ones keep working.
	MaxToolsPerApp = 16
	// MaxAppIDLength bounds an app id, which is 1 to 64 of [a-zA-Z0-9._-].
	MaxAppIDLength = 64
	// MaxOutputBytes bounds the result an app returns for one call; a larger one is refused
	// tool-output-over-budget.
	MaxOutputBytes = 65536
	// ToolTimeout bounds how long an app may take to answer one call; a slower one is refused
	// tool-timeout.
	ToolTimeout = 5000 * time.Millisecond
	// BridgeHandshakeTimeout bounds how long the page waits for an app's bridge frame to say it
	// is ready (its bridge_ready message) once the frame is made. The page enforces it
	// (public/mini-apps.js): a frame on a per-app host (app-<hex>.localhost) that is silent by
	// then is taken for a host that does not load in this browser, and the app starts again on
	// the shared app host, its card saying so; one silent on the shared host is stopped
	// mini-app-frame-timeout, its card saying what failed.
	BridgeHandshakeTimeout = 8000 * time.Millisecond
	// MaxRegistrationBytes bounds one app's registered declarations together, counted in their
	// normal form (Declaration.JSON): the original Voicebox takes an app's tools in one
	// registration body of at most 64 KiB. A registration that would pass it is refused
	// body-too-large and the registered tools keep working.
	MaxRegistrationBytes = 65536
	// MessageBudget bounds the messages one open app may send within MessageBudgetWindow: over
	// its port, to its bridge, or to the page from any frame inside it (an external app: from its
	// frame). An answer to a call the app was sent is free. The page enforces it
	// (public/mini-apps.js, the bridge, public/external-apps.js): the first message over it stops
	// the app, refusal.MessageBudgetExceeded. A real app sends a handful per document (its
	// handshake, one per tool, ready) or per action; a flood sends tens of thousands a second.
	MessageBudget = 500
	// MessageBudgetWindow is the window MessageBudget and MessageByteBudget count in: the last
	// MessageBudgetWindow before each message, whenever it began (a window that began at a first
	// message let a burst across its end through twice over).
	MessageBudgetWindow = time.Second
	// MessageByteBudget bounds the bytes one open app may send within MessageBudgetWindow,
	// beside MessageBudget's count (an answer to a call the app was sent is free of both: a
	// result has its own bound, MaxOutputBytes, where it is read). The realm that receives a
	// message charges it, without serialising it again (public/message-budget.js): a string by
	// its length, binary data by its byteLength, anything else by a walk of at most
	// MaxSizedValues values (keys and strings by their length, other values 8 bytes each); a
	// message with more values than that is charged more than the whole budget. The first
	// message over it stops the app as MessageBudget does, refusal.MessageBudgetExceeded, saying
	// bytes. A real app's messages are envelopes, declarations (MaxDeclarationBytes) and results;
	// 8 MiB messages at 200 a second, well under the count, held the page's main thread up to
	// 1.5 s each time.
	MessageByteBudget = 4 << 20
	// MaxPortRefusalSamples bounds the refused messages of one app's port to the page's worker
	// that are kept to show, with their rule and why (the first ones); the rest are counted by
	// rule (public/app-port.js, internal/engine's frames).
	MaxPortRefusalSamples = 5
	// MaxSizedValues bounds the values the estimate of one message's bytes visits (see
	// MessageByteBudget), so sizing a message costs the page at most that many steps.
	MaxSizedValues = 4096
)

// Reasons a call's answer carries when the app passes a bound. The bridge in the page says the same.
var (
	outputOverBudget = textf.Sprintf("output over budget (max %dKB)", MaxOutputBytes/1024)
	timedOut         = func(d time.Duration) string {
		return textf.Sprintf("tool execution timed out after %dms", d.Milliseconds())
	}
)

// App carries a validated call to the app that owns the tool: in the page, to its frame.
type App interface {
	// CallTool runs tool with args, which passed the tool's schema and are re-encoded from the
	// validated value (so the app reads exactly what was checked). It should return when ctx is
	// done; the registry answers tool-timeout then whether or not it does. A returned
	// *refusal.Refusal is passed on as it is; any other error becomes exec-threw.
	CallTool(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
}

// PromptApp is an App whose CallTool returns as soon as its ctx is done (with ctx's error), as
// the page's frames do (they wait for the answer or ctx, whichever is first). The registry calls
// it on the caller's goroutine: no goroutine and channel of its own per call, whose fresh stack
// grew again on every call (copystack, about 15 us a call of the page worker's wasm). Its
// answers are bounded as any App's; it must not block past ctx, since nothing else then answers
// tool-timeout.
type PromptApp interface {
	App
	// ReturnsWhenDone marks the promise; it is never called.
	ReturnsWhenDone()
}

// Registry holds the tools of the open apps. It is safe for concurrent use.
type Registry struct {
	builtins map[string]bool
	timeout  time.Duration // ToolTimeout; tests shorten it

	mu     sync.RWMutex
	apps   map[string]*appEntry
	byName map[string]toolRef // model-facing name -> tool
}

type appEntry struct {
	app   App
	tools []*Declaration // in registration order
	bytes int            // the tools' normal forms together, against MaxRegistrationBytes
}

type toolRef struct {
	appID string
	decl  *Declaration
}

// NewRegistry returns an empty registry. builtins are the names of the host's own tools, which no
// app tool may take.
func NewRegistry(builtins ...string) *Registry {
	b := make(map[string]bool, len(builtins))
	for _, n := range builtins {
		b[n] = true
	}
	return &Registry{builtins: b, timeout: ToolTimeout, apps: map[string]*appEntry{}, byName: map[string]toolRef{}}
}

// Open makes appID an open app with no tools, served by app. Opening an id that is already open
// replaces its App and drops its tools.
func (r *Registry) Open(appID string, app App) error {
	if err := checkAppID(appID); err != nil {
		return err
	}
	if app == nil {
		return refusal.New(refusal.InvalidAppID, "app %q has no App to call", appID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(appID)
	r.apps[appID] = &appEntry{app: app}
	return nil
}

// Close drops appID and its tools; calls to them are unknown-tool from then on.
func (r *Registry) Close(appID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(appID)
	delete(r.apps, appID)
}

func (r *Registry) dropLocked(appID string) {
	if e, ok := r.apps[appID]; ok {
		for _, d := range e.tools {
			delete(r.byName, ModelName(appID, d.Name))
		}
		e.tools, e.bytes = nil, 0
	}
}

// Register checks one declaration and adds it to appID's tools. It is refused when the declaration
// is (see ParseDeclaration), when the app already has a tool of that name (invalid-tool-name), when
// the app has MaxToolsPerApp tools (too-many-tools), when its tools would pass
// MaxRegistrationBytes together (body-too-large), or when appID is not open (invalid-app-id).
// A refusal never changes the tools already registered.
func (r *Registry) Register(appID string, raw []byte) (*Declaration, error) {
	d, err := ParseDeclaration(raw)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.apps[appID]
	if !ok {
		return nil, refusal.New(refusal.InvalidAppID, "no app %q is open", appID)
	}
	if err := r.addLocked(appID, e, d); err != nil {
		return nil, err
	}
	return d, nil
}

func (r *Registry) addLocked(appID string, e *appEntry, d *Declaration) error {
	if slices.ContainsFunc(e.tools, func(t *Declaration) bool { return t.Name == d.Name }) {
		return refusal.New(refusal.InvalidToolName, "app %q already has a tool named %q", appID, d.Name)
	}
	if len(e.tools) >= MaxToolsPerApp {
		return refusal.New(refusal.TooManyTools,
			"app %q already has %d tools, the most an app may register; %q is refused", appID, MaxToolsPerApp, d.Name)
	}
	size := len(d.JSON())
	if e.bytes+size > MaxRegistrationBytes {
		return refusal.New(refusal.BodyTooLarge,
			"app %q's tools would take %d bytes with %q, over the bound of %d for one app's registration; %q is refused",
			appID, e.bytes+size, d.Name, MaxRegistrationBytes, d.Name)
	}
	name := ModelName(appID, d.Name)
	if r.builtins[name] {
		return refusal.New(refusal.InvalidToolName, "tool %q of app %q would be offered as %q, a built-in tool", d.Name, appID, name)
	}
	if other, ok := r.byName[name]; ok {
		return refusal.New(refusal.InvalidToolName,
			"tool %q of app %q would be offered as %q, which tool %q of app %q already is", d.Name, appID, name, other.decl.Name, other.appID)
	}
	e.tools = append(e.tools, d)
	e.bytes += size
	r.byName[name] = toolRef{appID, d}
	return nil
}

// Replace swaps appID's tools for the declarations given, checked one by one in order as Register
// would; the result holds one error per declaration, nil for each one accepted. A bad declaration
// costs only itself.
func (r *Registry) Replace(appID string, raws []json.RawMessage) ([]error, error) {
	decls := make([]*Declaration, len(raws))
	errs := make([]error, len(raws))
	for i, raw := range raws {
		if decls[i], errs[i] = ParseDeclaration(raw); errs[i] != nil {
			errs[i] = AtIndex(i, errs[i])
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.apps[appID]
	if !ok {
		return nil, refusal.New(refusal.InvalidAppID, "no app %q is open", appID)
	}
	r.dropLocked(appID)
	for i, d := range decls {
		if errs[i] == nil {
			if err := r.addLocked(appID, e, d); err != nil {
				errs[i] = AtIndex(i, err)
			}
		}
	}
	return errs, nil
}

// Unregister removes one tool of appID and reports whether it was there.
func (r *Registry) Unregister(appID, tool string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.apps[appID]
	if !ok {
		return false
	}
	i := slices.IndexFunc(e.tools, func(t *Declaration) bool { return t.Name == tool })
	if i < 0 {
		return false
	}
	e.bytes -= len(e.tools[i].JSON())
	e.tools = slices.Delete(e.tools, i, i+1)
	delete(r.byName, ModelName(appID, tool))
	return true
}

// Tools returns appID's tools in registration order.
func (r *Registry) Tools(appID string) []*Declaration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.apps[appID]; ok {
		return slices.Clone(e.tools)
	}
	return nil
}

// FunctionDeclarations returns the open apps' tools as the live model is offered them, ordered by
// app id and then by registration, named as the package doc describes.
func (r *Registry) FunctionDeclarations() []tool.Declaration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.apps))
	for id := range r.apps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []tool.Declaration
	for _, id := range ids {
		for _, d := range r.apps[id].tools {
			out = append(out, tool.Declaration{Name: ModelName(id, d.Name), Description: d.Description, Parameters: d.Parameters.JSON()})
		}
	}
	return out
}

// IsOpen reports whether appID is open.
func (r *Registry) IsOpen(appID string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.apps[appID]
	return ok
}

// Apps returns the ids of the open apps, sorted.
func (r *Registry) Apps() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.apps))
	for id := range r.apps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Resolve returns the app and tool a model-facing name stands for, or unknown-tool.
func (r *Registry) Resolve(name string) (appID, tool string, err error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ref, ok := r.byName[name]
	if !ok {
		return "", "", refusal.New(refusal.UnknownTool, "no open app offers a tool named %q", clip(name))
	}
	return ref.appID, ref.decl.Name, nil
}

// Dispatch answers one call by its model-facing name: unknown-tool for a name no open app offers,
// an argument refusal (see toolschema.Schema.Validate) for bad arguments, and otherwise the app's
// result, bounded to MaxOutputBytes and ToolTimeout. It always returns exactly one of a result or
// a refusal.
func (r *Registry) Dispatch(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	r.mu.RLock()
	ref, ok := r.byName[name]
	var app App
	if ok {
		app = r.apps[ref.appID].app
	}
	r.mu.RUnlock()
	if !ok {
		return nil, refusal.New(refusal.UnknownTool, "no open app offers a tool named %q", clip(name))
	}
	valid, err := ref.decl.Parameters.Validate(args)
	if err != nil {
		return nil, err
	}
	out, err := encodeArgs(valid)
	if err != nil {
		return nil, err
	}
	return r.call(ctx, app, ref.decl.Name, out)
}

// Validate checks args against the schema of tool of appID, the check Dispatch makes, and returns
// them re-encoded from the validated value, without calling the app: the page's in-app agents
// (WebMCP executeTool) are held to the one validator too. unknown-tool when appID has no such tool.
func (r *Registry) Validate(appID, tool string, args json.RawMessage) (json.RawMessage, error) {
	r.mu.RLock()
	var decl *Declaration
	if e, ok := r.apps[appID]; ok {
		if i := slices.IndexFunc(e.tools, func(t *Declaration) bool { return t.Name == tool }); i >= 0 {
			decl = e.tools[i]
		}
	}
	r.mu.RUnlock()
	if decl == nil {
		return nil, refusal.New(refusal.UnknownTool, "app %q has no tool named %q", clip(appID), clip(tool))
	}
	valid, err := decl.Parameters.Validate(args)
	if err != nil {
		return nil, err
	}
	return encodeArgs(valid)
}

// encodeArgs writes validated arguments as encoding/json does without HTML escaping; their depth
// is toolschema's MaxArgumentDepth at most.
func encodeArgs(valid map[string]any) (json.RawMessage, error) {
	out, ok := rawjson.AppendValue(nil, valid, false)
	if !ok {
		return nil, refusal.New(refusal.InvalidToolArguments, "the arguments do not encode: a value JSON cannot hold")
	}
	return out, nil
}

type result struct {
	out json.RawMessage
	err error
}

func (r *Registry) call(ctx context.Context, app App, tool string, args json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var res result
	if p, ok := app.(PromptApp); ok {
		res = callPrompt(ctx, p, tool, args)
		if res.err != nil && ctx.Err() != nil {
			return nil, r.expired(ctx, tool)
		}
	} else {
		done := make(chan result, 1) // buffered: a late answer never blocks the app's goroutine
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- result{err: refusal.New(refusal.ExecThrew, "tool %q panicked: %v", tool, p)}
				}
			}()
			out, err := app.CallTool(ctx, tool, args)
			done <- result{out, err}
		}()
		select {
		case res = <-done:
		case <-ctx.Done():
			return nil, r.expired(ctx, tool)
		}
	}
	if res.err != nil {
		if rf, ok := refusal.As(res.err); ok {
			return nil, rf
		}
		return nil, refusal.New(refusal.ExecThrew, "tool %q failed: %s", tool, clip(res.err.Error()))
	}
	if len(res.out) > MaxOutputBytes {
		return nil, refusal.New(refusal.ToolOutputOverBudget, "%s", outputOverBudget)
	}
	if len(bytes.TrimSpace(res.out)) == 0 {
		return json.RawMessage("null"), nil
	}
	if !rawjson.Valid(res.out) {
		return nil, refusal.New(refusal.ExecThrew, "tool %q answered with something that is not JSON", tool)
	}
	return res.out, nil
}

// callPrompt calls app on this goroutine; a panic is exec-threw, as on the App's own goroutine.
func callPrompt(ctx context.Context, app PromptApp, tool string, args json.RawMessage) (res result) {
	defer func() {
		if p := recover(); p != nil {
			res = result{err: refusal.New(refusal.ExecThrew, "tool %q panicked: %v", tool, p)}
		}
	}()
	out, err := app.CallTool(ctx, tool, args)
	return result{out, err}
}

// expired is the refusal of a call whose ctx ended before its app answered: tool-timeout, for
// the registry's deadline or the caller's going away.
func (r *Registry) expired(ctx context.Context, tool string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return refusal.New(refusal.ToolTimeout, "%s", timedOut(r.timeout))
	}
	return refusal.New(refusal.ToolTimeout, "the call to tool %q was abandoned before it answered", tool)
}

// ModelName is the name the live model is offered for tool of appID: tool under the scope
// app_HHHHHHHH__, HHHHHHHH being tool.Digest(appID) (see the package doc and tool.ModelName).
func ModelName(appID, name string) string {
	return ScopedName(Scope(appID), name)
}

// Scope is the scope of appID's tools, app_HHHHHHHH__ (see ModelName).
func Scope(appID string) string { return "app_" + tool.Digest(appID) + "__" }

// ScopeLength is the length of every Scope.
const ScopeLength = len("app_") + tool.DigestLength + len("__")

// ScopedName is ModelName given the app's Scope in place of its id: a tool of the set the relay
// holds is known there by its model-facing name alone, whose first ScopeLength bytes are the scope.
func ScopedName(scope, name string) string {
	if strings.Contains(name, ".") {
		// The vendors take no dots: a WebMCP name with one keeps its start with each dot as _,
		// and the digest of the name as written keeps it apart from the name spelled with _.
		keep := min(len(name), tool.MaxModelName-len(scope)-tool.DigestLength-1)
		return scope + strings.ReplaceAll(name[:keep], ".", "_") + "_" + tool.Digest(name)
	}
	return tool.ModelName(scope, name)
}

func checkAppID(id string) error {
	if r := names.Check("the app id", id); r != nil {
		return r
	}
	ok := len(id) >= 1 && len(id) <= MaxAppIDLength
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if !ok {
		return refusal.New(refusal.InvalidAppID, "app id %q must be 1 to %d of a-z, A-Z, 0-9, ., _ and -", clip(id), MaxAppIDLength)
	}
	return nil
}
