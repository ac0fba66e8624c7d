package extensionhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost/mcphost"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmshelf"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmtool"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Runtime is the relay's running set of extensions: the loaded (admitted) descriptors with
// their request budgets, and how their calls run. It reads what is admitted from Admissions.
type Runtime struct {
	// Admissions holds the proposals, the ledger and the admitted descriptors.
	Admissions *Admissions
	// Fetcher runs http-get tools.
	Fetcher *Fetcher
	// Ask sends a file-primitive call to the root's executor; nil refuses such calls no-root.
	Ask func(ctx context.Context, c wire.Call) wire.Answer
	// Console receives approval codes; it is the relay's own console, never an HTTP response.
	Console io.Writer
	// Log receives a line for every call and every descriptor not loaded; nil discards them.
	Log *slog.Logger
	// Wasm runs wasm tools; nil means a runner with the default limits, made at the first call.
	Wasm *wasmtool.Runner
	// ShelfDir is the WASM shelf's directory (wasmshelf); "" means there is no shelf.
	ShelfDir string
	// Changed, when set, is told of every change a person or the model makes through the
	// runtime: what ("proposed", "admitted", "denied", "revoked", "dismissed") and the
	// extension's id. The relay passes it on to the page's event stream, so the Extensions panel
	// follows. It must not block.
	Changed func(what, id string)
	// WasmPlacement is where modules run: WasmInRelay ("" too) on wazero, or WasmInPage, in a
	// Worker of the page that holds the root (through Ask), which the page terminates at the
	// deadline.
	WasmPlacement string
	// Publish, when set, gets the admitted set as a control frame (channel.MarshalAdmitted)
	// after every Reload, in order; the relay hands it to the hub (Hub.SetAdmitted), which sends
	// it to whoever holds the root, so their doors verify extension calls against it.
	Publish func(frame []byte)
	// MCPRetryInterval is how long a remote MCP extension without a session waits before a call
	// tries to make one again; zero means mcphost.MCPRetryInterval.
	MCPRetryInterval time.Duration

	bg       sync.WaitGroup // the remote MCP sessions' background work (dials, listings, reconnections), waited for by Close
	reloadMu sync.Mutex     // one Reload at a time, so frames are published in order

	mu       sync.Mutex
	loaded   map[string]Loaded
	schemas  map[string]map[string]*toolschema.Schema // by descriptor id, then tool name
	budgets  map[string]*Budget
	problems []Problem
	mcp      map[string]*mcphost.Session // the sessions of loaded remote MCP extensions, by id
	views    viewGrants                  // views' CSP grants, by token (viewpolicy.go)
	seq      uint64
	wasmOnce sync.Once
}

// changed tells Changed.
func (rt *Runtime) changed(what, id string) {
	if rt.Changed != nil {
		rt.Changed(what, id)
	}
}

// Stage stages raw as a proposal (Admissions.Stage) and says so to Changed. Exactly what is
// admitted already is refused already-admitted at once (admittedAlready), whichever door
// proposed it.
func (rt *Runtime) Stage(raw []byte) (*extensions.Descriptor, error) {
	if d, err := rt.admittedAlready(raw); err != nil {
		return d, err
	}
	d, err := rt.Admissions.Stage(raw)
	if err == nil {
		rt.changed("proposed", d.ID)
	}
	return d, err
}

// StageCatalogue stages the shipped descriptor raw with its modules (Admissions.StageCatalogue),
// refusing exactly what is admitted already as Stage does, and says so to Changed.
func (rt *Runtime) StageCatalogue(raw []byte, fsys fs.FS) error {
	if _, err := rt.admittedAlready(raw); err != nil {
		return err
	}
	d, _ := extensions.Parse(raw)
	if err := rt.Admissions.StageCatalogue(raw, fsys); err != nil {
		return err
	}
	rt.changed("proposed", d.ID)
	return nil
}

// admittedAlready refuses (already-admitted, audited) raw when an extension of its id is loaded
// from the very same bytes: a proposal of it could only wait for a decision and then be refused
// duplicate-tool against itself. A changed descriptor of an admitted id (a new version) is
// staged as usual.
func (rt *Runtime) admittedAlready(raw []byte) (*extensions.Descriptor, error) {
	d, r := extensions.Parse(raw)
	if r != nil {
		return nil, nil // Stage refuses it, with its rule
	}
	if !rt.isAdmitted(d.ID, raw) {
		return nil, nil
	}
	return d, rt.Admissions.refuseStage(d.ID, refusal.New(refusal.AlreadyAdmitted,
		"the extension %s is admitted already, exactly as proposed: it is listed under Admitted (revoke it there first to decide on it again)", d.ID))
}

// isAdmitted reports whether the extension id is loaded from exactly raw.
func (rt *Runtime) isAdmitted(id string, raw []byte) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	x, ok := rt.loaded[id]
	return ok && bytes.Equal(x.Raw, raw)
}

// toolSchemas compiles the argument schemas of d's tools: their own parameter schema, or the one
// their primitive implies (extensions.Tool.ArgumentSchema). Admit has checked they parse.
func toolSchemas(d *extensions.Descriptor) (map[string]*toolschema.Schema, error) {
	out := map[string]*toolschema.Schema{}
	for i := range d.Tools {
		s, err := toolschema.Parse(d.Tools[i].ArgumentSchema())
		if err != nil {
			return nil, err
		}
		out[d.Tools[i].Name] = s
	}
	return out, nil
}

// Reload reads the store again: only ledger-backed descriptors that pass the gate are loaded.
func (rt *Runtime) Reload() error {
	rt.reloadMu.Lock()
	defer rt.reloadMu.Unlock()
	if err := rt.reload(); err != nil {
		return err
	}
	if rt.Publish != nil {
		rt.Publish(rt.AdmittedFrame())
	}
	return nil
}

func (rt *Runtime) reload() error {
	l, p, err := rt.Admissions.Load()
	if err != nil {
		return err
	}
	rt.mu.Lock()
	stale := rt.reloadLocked(l, p)
	rt.mu.Unlock()
	for _, c := range stale {
		c.Close()
	}
	return nil
}

// reloadLocked loads l and records p with rt.mu held, starts a session for every loaded remote
// MCP extension that has none for its exact descriptor, and returns the sessions to close (of
// revoked or changed descriptors).
func (rt *Runtime) reloadLocked(l []Loaded, p []Problem) (stale []*mcphost.Session) {
	rt.loaded, rt.schemas, rt.problems = map[string]Loaded{}, map[string]map[string]*toolschema.Schema{}, p
	if rt.budgets == nil {
		rt.budgets = map[string]*Budget{}
	}
	for _, x := range l {
		schemas, err := toolSchemas(x.Descriptor)
		if err != nil {
			r, ok := refusal.As(err)
			if !ok {
				r = refusal.New(refusal.InvalidToolParameters, "%s", err)
			}
			rt.problems = append(rt.problems, Problem{x.Descriptor.ID, r.Rule, r.Why})
			continue
		}
		rt.loaded[x.Descriptor.ID] = x
		rt.schemas[x.Descriptor.ID] = schemas
		if _, ok := rt.budgets[x.Descriptor.ID]; !ok {
			rt.budgets[x.Descriptor.ID] = NewBudget(x.Descriptor.Bounds.MaxRequests)
		}
	}
	for _, x := range rt.problems {
		rt.logger().Warn("extension not loaded", "id", x.ID, "refused", x.Rule, "why", x.Why)
	}
	if rt.mcp == nil {
		rt.mcp = map[string]*mcphost.Session{}
	}
	for id, c := range rt.mcp {
		x, ok := rt.loaded[id]
		switch {
		case ok && x.Descriptor.MCP != nil && extensions.Disclose(x.Descriptor, extensions.Machine, x.Raw).Hash == c.Hash():
		case ok && c.SameServer(x.Descriptor):
			c.Admit(x.Descriptor, x.Raw) // a new plan of the same server and bounds: the session stays, its tools change
		default:
			stale = append(stale, c)
			delete(rt.mcp, id)
		}
	}
	for id, x := range rt.loaded {
		if x.Descriptor.MCP != nil && rt.mcp[id] == nil {
			c := rt.newMCPSession(x, rt.budgets[id])
			rt.mcp[id] = c
			rt.bg.Go(c.Connect)
		}
	}
	return stale
}

// unlessStillLoaded checks that the store still holds loaded id's descriptor as it was loaded
// (raw). When it does not (the file was removed or edited by hand), the runtime reloads at once,
// so the extension stops running everywhere (the executors get the new admitted set) and is
// listed once, by what the store holds now; the problem that says why is returned. A store that
// cannot be read now (a fleet's, away) leaves what runs as it is: nil.
func (rt *Runtime) unlessStillLoaded(id string, raw []byte) *Problem {
	now, err := rt.Admissions.AdmittedFile(id)
	if err == nil && bytes.Equal(now, raw) || refusal.RuleOf(err) == refusal.FleetUnavailable {
		return nil
	}
	if err := rt.Reload(); err != nil {
		rt.logger().Warn("extensions: a descriptor changed by hand, and the reload failed", "id", id, "err", err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.loaded[id]; ok {
		return nil // put back as admitted meanwhile
	}
	defer rt.changed("stopped", id) // after the unlock: the page's panel lists it again
	for _, p := range rt.problems {
		if p.ID == id {
			return &p
		}
	}
	return &Problem{id, refusal.DescriptorMissing, "its descriptor file is gone from the state directory; put the file back as it was admitted, or revoke it"}
}

// Close ends the sessions of remote MCP extensions and waits for their background work (dials,
// listings, reconnections), so nothing of theirs writes after it returns. The runtime may be
// reloaded afterwards, which starts them again.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	conns := rt.mcp
	rt.mcp = nil
	rt.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	rt.bg.Wait()
}

func (rt *Runtime) wasm() *wasmtool.Runner {
	rt.wasmOnce.Do(func() {
		if rt.Wasm == nil {
			rt.Wasm = wasmtool.New(wasmtool.Limits{})
		}
	})
	return rt.Wasm
}

func (rt *Runtime) logger() *slog.Logger {
	if rt.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return rt.Log
}

// Admitted returns the admitted set an executor verifies extension calls against: each loaded
// descriptor's id and bounds.
func (rt *Runtime) Admitted() wire.AdmittedMap {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	m := wire.AdmittedMap{}
	for id, x := range rt.loaded {
		m[id] = extensions.BoundsJSON(x.Descriptor.Bounds)
	}
	return m
}

// AdmittedFrame returns the admitted set as the control frame executors read: each loaded
// descriptor's bounds and the primitives of its tools that run on the root's executor. http-get
// always runs in the relay; wasm runs there too unless WasmPlacement is WasmInPage, and then the
// set also holds the shelf's descriptor (wasmshelf.DescriptorID) with wasm.
func (rt *Runtime) AdmittedFrame() []byte {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	inPage := rt.WasmPlacement == WasmInPage
	set := map[string]channel.AdmittedEntry{}
	for id, x := range rt.loaded {
		e := channel.AdmittedEntry{Bounds: extensions.BoundsJSON(x.Descriptor.Bounds), Primitives: []string{}}
		for _, t := range x.Descriptor.Tools {
			switch p := t.Primitive; {
			case p == extensions.Now || p == extensions.ReadFile || p == extensions.WriteFile || p == extensions.ListFiles,
				p == extensions.Wasm && inPage:
				if !slices.Contains(e.Primitives, string(p)) {
					e.Primitives = append(e.Primitives, string(p))
				}
			}
		}
		set[id] = e
	}
	if inPage {
		set[wasmshelf.DescriptorID] = channel.AdmittedEntry{Bounds: json.RawMessage(`{}`), Primitives: []string{string(extensions.Wasm)}}
	}
	return channel.MarshalAdmitted(set)
}

// existingTools returns the names of the loaded tools of every descriptor but except: what an
// admission of except must not collide with.
func (rt *Runtime) existingTools(except string) []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.loadedTools(except)
}

// loadedTools is existingTools with rt.mu held.
func (rt *Runtime) loadedTools(except string) []string {
	var names []string
	for id, x := range rt.loaded {
		if id == except {
			continue
		}
		for _, t := range x.Descriptor.Tools {
			names = append(names, t.Name)
		}
	}
	return names
}

// CallExtension runs tool of admitted extension id with args (a JSON object) and returns its
// observation or a refusal. Staged, denied or revoked extensions are refused not-admitted; the
// arguments are validated against the tool's argument schema (toolschema, the same rules as
// mini-app tools) and laid over what the descriptor binds (extensions.Tool.CallArgs) before the
// call is routed by primitive. Every call, answered or refused, is audited. It is what the
// call_extension tool runs.
func (rt *Runtime) CallExtension(ctx context.Context, id, tool string, args json.RawMessage) (json.RawMessage, error) {
	var note callNote
	out, err := rt.call(ctx, id, tool, args, &note)
	rec := AuditRecord{Act: ActCall, ID: id, Tool: tool, Primitive: string(note.primitive), Observed: note.observed}
	if err != nil {
		rec.Rule, rec.Why = ruleWhy(err)
	}
	rt.Admissions.Audit(rec)
	return out, err
}

// callNote is what a call tells the audit about itself.
type callNote struct {
	primitive extensions.Primitive
	observed  map[string]any
}

// CheckArguments validates args for tool of admitted extension id as its call would (the tool's
// argument schema: toolschema's subset for a descriptor's tools, the full JSON Schema of a remote
// MCP tool), calling nothing; nil when they pass, or when the tool is not known here (the call
// answers that). The assistant checks before it asks a person to approve a call, so nobody is
// asked to approve arguments the call would refuse.
func (rt *Runtime) CheckArguments(id, tool string, args json.RawMessage) error {
	rt.mu.Lock()
	x, ok := rt.loaded[id]
	schema := rt.schemas[id][tool]
	c := rt.mcp[id]
	rt.mu.Unlock()
	switch {
	case !ok:
		return nil
	case x.Descriptor.MCP != nil && c != nil:
		name, _ := strings.CutPrefix(tool, id+extensions.MCPToolSeparator)
		return c.CheckArguments(name, args)
	case schema != nil:
		maxArgs := toolschema.MaxArgumentBytes
		for _, t := range x.Descriptor.Tools {
			if t.Name == tool && t.Primitive == extensions.Wasm {
				maxArgs = MaxWasmArgumentBytes
			}
		}
		_, err := schema.ValidateWithin(args, maxArgs)
		return err
	}
	return nil
}

func (rt *Runtime) call(ctx context.Context, id, tool string, args json.RawMessage, note *callNote) (json.RawMessage, error) {
	if strings.HasPrefix(id, wasmshelf.DescriptorPrefix) {
		return rt.callShelf(ctx, rt.logger().With("extension", id, "tool", tool), id, tool, args, note)
	}
	rt.mu.Lock()
	x, ok := rt.loaded[id]
	budget := rt.budgets[id]
	schema := rt.schemas[id][tool]
	rt.seq++
	callID := fmt.Sprintf("ext-%d", rt.seq)
	rt.mu.Unlock()
	if !ok {
		return nil, refusal.New(refusal.NotAdmitted, "extension %q is not admitted; a human must admit it in the Extensions panel first", id)
	}
	if p := rt.unlessStillLoaded(id, x.Raw); p != nil {
		return nil, refusal.New(p.Rule, "extension %q no longer runs: %s", id, p.Why)
	}
	if x.Descriptor.MCP != nil {
		return rt.callMCP(ctx, x.Descriptor, tool, args, note)
	}
	var t *extensions.Tool
	for i := range x.Descriptor.Tools {
		if x.Descriptor.Tools[i].Name == tool {
			t = &x.Descriptor.Tools[i]
		}
	}
	if t == nil || schema == nil {
		return nil, refusal.New(refusal.UnknownTool, "extension %s has no tool %q", id, tool)
	}
	note.primitive = t.Primitive
	maxArgs := toolschema.MaxArgumentBytes
	if t.Primitive == extensions.Wasm {
		maxArgs = MaxWasmArgumentBytes
	}
	argMap, err := schema.ValidateWithin(args, maxArgs)
	if err != nil {
		return nil, err
	}
	call := t.CallArgs(argMap)
	log := rt.logger().With("extension", id, "tool", tool)
	switch t.Primitive {
	case extensions.HTTPGet:
		u := t.URL
		if u != "" {
			for k, v := range argMap {
				u = strings.ReplaceAll(u, "{"+k+"}", url.QueryEscape(fmt.Sprint(v)))
			}
		} else {
			u, _ = call["url"].(string)
		}
		if secrets := extensions.AllSecrets(x.Descriptor); len(secrets) > 0 {
			log = log.With("secrets", secretNames(secrets))
		}
		note.observed = map[string]any{"url": Redact(u)}
		res, err := rt.Fetcher.Fetch(ctx, x.Descriptor, t, u, budget)
		if err != nil {
			log.Info("extension call refused", "url", Redact(u), "refused", refusal.RuleOf(err), "err", err.Error())
			return nil, err
		}
		maps.Copy(note.observed, map[string]any{"status": res.Status, "servedBy": res.ServedBy, "via": res.Via, "request": res.Request, "bytes": len(res.Body)})
		log.Info("extension call", "url", Redact(u), "status", res.Status, "via", strings.Join(res.Via, " -> "), "servedBy", res.ServedBy, "request", res.Request)
		return json.Marshal(res)
	case extensions.Wasm:
		return rt.callWasm(ctx, log, x.Descriptor, t, call, note)
	case extensions.ReadFile, extensions.WriteFile, extensions.ListFiles, extensions.Now:
		if rt.Ask == nil {
			return nil, refusal.New(refusal.NoRoot, "no root executor is connected to run %s", t.Primitive)
		}
		execArgs, err := executorArgs(x.Descriptor, t, argMap, call)
		if err != nil {
			return nil, err
		}
		if p, ok := call["path"].(string); ok {
			note.observed = map[string]any{"path": p}
		}
		a := rt.Ask(ctx, wire.Call{CallID: callID, Tool: string(t.Primitive), DescriptorID: id, Args: execArgs, BoundsEcho: extensions.BoundsJSON(x.Descriptor.Bounds)})
		log.Info("extension call", "primitive", t.Primitive, "ok", a.OK, "refused", a.Refused)
		if !a.OK {
			r := refusal.New(a.Refused, "%s", a.Why)
			if a.Budget != nil {
				return nil, &wire.BudgetError{Refusal: r, Budget: *a.Budget}
			}
			return nil, r
		}
		return a.Observed, nil
	}
	return nil, refusal.New(refusal.UnknownPrimitive, "the relay has no primitive %s", t.Primitive)
}

// executorArgs are the arguments a file primitive's call carries to the root's executor: a tool
// with a parameter schema hands on exactly what was checked; the original's form hands on the
// primitive's own arguments (read-file {path}, write-file {path, content}, list-files {dir},
// now {}). A write over the descriptor's maxBytes is refused over-budget here, as the original
// does; without one, the executor's own bound holds.
func executorArgs(d *extensions.Descriptor, t *extensions.Tool, validated, call map[string]any) (json.RawMessage, error) {
	if content, ok := call["content"].(string); ok && t.Primitive == extensions.WriteFile && d.Bounds.MaxBytes > 0 && len(content) > d.Bounds.MaxBytes {
		return nil, refusal.New(refusal.OverBudget, "a write of %d bytes is over the extension's bounds.maxBytes (%d)", len(content), d.Bounds.MaxBytes)
	}
	out := validated
	if t.Bound() != nil || len(t.Params) == 0 {
		out = map[string]any{}
		switch t.Primitive {
		case extensions.ReadFile:
			out["path"] = call["path"]
		case extensions.WriteFile:
			out["path"], out["content"] = call["path"], call["content"]
		case extensions.ListFiles:
			if p, ok := call["path"]; ok {
				out["dir"] = p
			}
		}
	}
	b, err := json.Marshal(out) // hand on exactly what was checked
	if err != nil {
		return nil, refusal.New(refusal.InvalidToolArguments, "the arguments cannot be encoded again")
	}
	return b, nil
}

// callWasm runs a wasm tool of descriptor d: its module is read afresh from the extensions
// directory (where the admitted descriptor lives) and its digest checked again on every call.
// Its inputs are the arguments its ABI names (extensions.Tool.ArgumentSchema), as UTF-8 bytes.
func (rt *Runtime) callWasm(ctx context.Context, log *slog.Logger, d *extensions.Descriptor, t *extensions.Tool, args map[string]any, note *callNote) (json.RawMessage, error) {
	inputs, err := wasmInputs(t.Wasm.Spec().ABI, args)
	if err != nil {
		return nil, err
	}
	note.observed = map[string]any{"module": t.Wasm.Module, "digest": t.Wasm.SHA256, "abi": t.Wasm.Spec().ABI, "inputBytes": inputBytes(inputs)}
	module, err := rt.Admissions.ReadModule(t.Wasm.Module, rt.wasm().Limits().MaxModuleBytes)
	if err != nil {
		log.Info("extension call refused", "primitive", extensions.Wasm, "module", t.Wasm.Module, "refused", refusal.RuleOf(err), "err", err.Error())
		return nil, err
	}
	return rt.runWasm(ctx, log, d.ID, extensions.BoundsJSON(d.Bounds), *t.Wasm, module, inputs, note)
}

// wasmInputs are the inputs of a call of abi from its arguments: input for buffer-abi/1, a and b
// for buffer-abi/diff, each a string (its UTF-8 bytes); one that is missing is empty.
func wasmInputs(abi string, args map[string]any) ([][]byte, error) {
	names := []string{"input"}
	if abi == wasmabi.ABIDiff {
		names = []string{"a", "b"}
	}
	inputs := make([][]byte, len(names))
	for i, k := range names {
		v, ok := args[k]
		if !ok {
			continue
		}
		s, isString := v.(string)
		if !isString {
			return nil, refusal.New(refusal.InvalidArgumentType, "argument %q of a wasm tool is a string (an input)", k)
		}
		inputs[i] = []byte(s)
	}
	return inputs, nil
}

func inputBytes(inputs [][]byte) int {
	n := 0
	for _, in := range inputs {
		n += len(in)
	}
	return n
}
