package extensions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/relay/extensions/wasmtool"
	"github.com/voicebox-go/voicebox/relay/server"
	"github.com/voicebox-go/voicebox/shared/channel"
	"github.com/voicebox-go/voicebox/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/wire"
)

// Registry is the relay's view of extensions: the store, the shipped catalogue, the loaded
// (admitted) descriptors with their request budgets, and how calls run.
type Registry struct {
	Store   *Store
	Fetcher *Fetcher
	// Ask sends a file-primitive call to the root's executor; nil refuses such calls no-root.
	Ask func(ctx context.Context, c wire.Call) wire.Answer
	// Console receives approval codes; it is the relay's own console, never an HTTP response.
	Console io.Writer
	Log     *slog.Logger
	// Wasm runs wasm tools; nil means a runner with the default limits, made at the first call.
	Wasm *wasmtool.Runner
	// Publish, when set, gets the admitted set as a control frame (channel.MarshalAdmitted)
	// after every Reload, in order; the relay hands it to the hub (Hub.SetAdmitted), which sends
	// it to whoever holds the root, so their doors verify extension calls against it.
	Publish func(frame []byte)
	// Changed, when set, is told of every change a person or the model makes through the
	// registry: what ("proposed", "admitted", "denied", "revoked", "dismissed") and the
	// extension's id. The relay passes it on to the page's event stream, so the Extensions panel
	// follows. It must not block.
	Changed func(what, id string)

	reloadMu sync.Mutex // one Reload at a time, so frames are published in order

	mu       sync.Mutex
	loaded   map[string]Loaded
	schemas  map[string]map[string]*toolschema.Schema // by descriptor id, then tool name
	budgets  map[string]*Budget
	problems []Problem
	seq      uint64
	wasmOnce sync.Once
}

// noParams is the schema of a tool that declares no params: it takes no arguments.
var noParams = mustSchema(`{"type":"object","additionalProperties":false}`)

// changed tells Changed.
func (g *Registry) changed(what, id string) {
	if g.Changed != nil {
		g.Changed(what, id)
	}
}

// Stage stages raw as a proposal (Store.Stage) and says so to Changed.
func (g *Registry) Stage(raw []byte) (*extensions.Descriptor, error) {
	d, err := g.Store.Stage(raw)
	if err == nil {
		g.changed("proposed", d.ID)
	}
	return d, err
}

func mustSchema(raw string) *toolschema.Schema {
	s, err := toolschema.Parse([]byte(raw))
	if err != nil {
		panic(err)
	}
	return s
}

// toolSchemas compiles the params of d's tools (Admit has checked they are in the subset).
func toolSchemas(d *extensions.Descriptor) (map[string]*toolschema.Schema, error) {
	out := map[string]*toolschema.Schema{}
	for _, t := range d.Tools {
		out[t.Name] = noParams
		if len(t.Params) > 0 {
			s, err := toolschema.Parse(t.Params)
			if err != nil {
				return nil, err
			}
			out[t.Name] = s
		}
	}
	return out, nil
}

// Reload reads the store again: only ledger-backed descriptors that pass the gate are loaded.
func (g *Registry) Reload() error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	if err := g.reload(); err != nil {
		return err
	}
	if g.Publish != nil {
		g.Publish(g.AdmittedFrame())
	}
	return nil
}

func (g *Registry) reload() error {
	l, p, err := g.Store.Load()
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.loaded, g.schemas, g.problems = map[string]Loaded{}, map[string]map[string]*toolschema.Schema{}, p
	if g.budgets == nil {
		g.budgets = map[string]*Budget{}
	}
	for _, x := range l {
		schemas, err := toolSchemas(x.Descriptor)
		if err != nil {
			r, ok := refusal.As(err)
			if !ok {
				r = refusal.New(refusal.InvalidToolParameters, "%s", err)
			}
			g.problems = append(g.problems, Problem{x.Descriptor.ID, r.Rule, r.Why})
			continue
		}
		g.loaded[x.Descriptor.ID] = x
		g.schemas[x.Descriptor.ID] = schemas
		if _, ok := g.budgets[x.Descriptor.ID]; !ok {
			g.budgets[x.Descriptor.ID] = NewBudget(x.Descriptor.Bounds.MaxRequests)
		}
	}
	for _, x := range g.problems {
		g.logger().Warn("extension not loaded", "id", x.ID, "refused", x.Rule, "why", x.Why)
	}
	return nil
}

func (g *Registry) wasm() *wasmtool.Runner {
	g.wasmOnce.Do(func() {
		if g.Wasm == nil {
			g.Wasm = wasmtool.New(wasmtool.Limits{})
		}
	})
	return g.Wasm
}

func (g *Registry) logger() *slog.Logger {
	if g.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Log
}

// Admitted returns the admitted set an executor verifies extension calls against: each loaded
// descriptor's id and bounds.
func (g *Registry) Admitted() wire.AdmittedMap {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := wire.AdmittedMap{}
	for id, x := range g.loaded {
		m[id] = extensions.BoundsJSON(x.Descriptor.Bounds)
	}
	return m
}

// AdmittedFrame returns the admitted set as the control frame executors read: each loaded
// descriptor's bounds and the primitives of its tools that run on the root's executor (http-get
// and wasm run in the relay, so an executor never runs them for an extension).
func (g *Registry) AdmittedFrame() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	set := map[string]channel.AdmittedEntry{}
	for id, x := range g.loaded {
		e := channel.AdmittedEntry{Bounds: extensions.BoundsJSON(x.Descriptor.Bounds), Primitives: []string{}}
		for _, t := range x.Descriptor.Tools {
			switch t.Primitive {
			case extensions.Now, extensions.ReadFile, extensions.WriteFile, extensions.ListFiles:
				if !slices.Contains(e.Primitives, string(t.Primitive)) {
					e.Primitives = append(e.Primitives, string(t.Primitive))
				}
			}
		}
		set[id] = e
	}
	return channel.MarshalAdmitted(set)
}

func (g *Registry) loadedTools(except string) []string {
	var names []string
	for id, x := range g.loaded {
		if id == except {
			continue
		}
		for _, t := range x.Descriptor.Tools {
			names = append(names, t.Name)
		}
	}
	return names
}

// ToolInfo describes an admitted tool for the model.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Primitive   string          `json:"primitive"`
	Params      json.RawMessage `json:"params,omitempty"`
	// URL is an http-get tool's URL template: where its requests go.
	URL string `json:"url,omitempty"`
}

// Entry describes one extension in a listing.
type Entry struct {
	ID          string           `json:"id"`
	Name        string           `json:"name,omitempty"`
	Description string           `json:"description,omitempty"`
	Tools       []ToolInfo       `json:"tools,omitempty"`
	OK          bool             `json:"ok"`
	Refused     refusal.Rule     `json:"refused,omitempty"`
	Why         string           `json:"why,omitempty"`
	Plan        *extensions.Plan `json:"plan,omitempty"`
}

// Listing is what ListExtensions returns.
type Listing struct {
	Admitted           []Entry   `json:"admitted"`
	Pending            []Entry   `json:"pending"`
	Catalogue          []Entry   `json:"catalogue"`
	PresentNotAdmitted []Problem `json:"presentNotAdmitted"`
}

func entryOf(raw []byte, id string, placement extensions.Placement, existing []string) Entry {
	d, r := extensions.Parse(raw)
	if r != nil {
		return Entry{ID: id, Refused: r.Rule, Why: r.Why}
	}
	e := Entry{ID: d.ID, Name: d.Name, Description: d.Description}
	for _, t := range d.Tools {
		e.Tools = append(e.Tools, ToolInfo{t.Name, t.Description, string(t.Primitive), t.Params, t.URL})
	}
	if r := extensions.Admit(d, placement, existing); r != nil {
		e.Refused, e.Why = r.Rule, r.Why
		return e
	}
	p := extensions.Disclose(d, placement, raw)
	e.OK, e.Plan = true, &p
	return e
}

// Catalogue returns the shipped descriptors with their gate verdicts.
func (g *Registry) Catalogue() []Entry {
	var out []Entry
	names, _ := fs.Glob(catalogue.Files, "*.json")
	sort.Strings(names)
	for _, n := range names {
		raw, _ := fs.ReadFile(catalogue.Files, n)
		out = append(out, entryOf(raw, strings.TrimSuffix(n, ".json"), extensions.Machine, nil))
	}
	return out
}

func catalogueRaw(id string) ([]byte, bool) {
	if !extensions.ValidID(id) {
		return nil, false
	}
	raw, err := fs.ReadFile(catalogue.Files, id+".json")
	return raw, err == nil
}

// ListExtensions returns the admitted extensions (with their tools), the pending proposals with
// their verdicts and plans, the catalogue, and the files present but not admitted. It is what the
// list_extensions tool answers.
func (g *Registry) ListExtensions() Listing {
	g.mu.Lock()
	l := Listing{Admitted: []Entry{}, Pending: []Entry{}, PresentNotAdmitted: append([]Problem{}, g.problems...)}
	ids := make([]string, 0, len(g.loaded))
	for id := range g.loaded {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		l.Admitted = append(l.Admitted, entryOf(g.loaded[id].Raw, id, extensions.Machine, g.loadedTools(id)))
	}
	existing := g.loadedTools("")
	g.mu.Unlock()
	for _, id := range g.Store.ProposalIDs() {
		_, raw, err := g.Store.Proposal(id)
		if err != nil {
			r, _ := refusal.As(err)
			l.Pending = append(l.Pending, Entry{ID: id, Refused: r.Rule, Why: r.Why})
			continue
		}
		l.Pending = append(l.Pending, entryOf(raw, id, extensions.Machine, existing))
	}
	l.Catalogue = g.Catalogue()
	return l
}

// CallExtension runs tool of admitted extension id with args (a JSON object) and returns its
// observation or a refusal. Staged, denied or revoked extensions are refused not-admitted; the
// arguments are validated against the tool's params (toolschema, the same rules as mini-app
// tools; a tool without params takes no arguments) before the call is routed by primitive. It is
// what the call_extension tool runs.
func (g *Registry) CallExtension(ctx context.Context, id, tool string, args json.RawMessage) (json.RawMessage, error) {
	g.mu.Lock()
	x, ok := g.loaded[id]
	budget := g.budgets[id]
	schema := g.schemas[id][tool]
	g.seq++
	callID := fmt.Sprintf("ext-%d", g.seq)
	g.mu.Unlock()
	if !ok {
		return nil, refusal.New(refusal.NotAdmitted, "extension %q is not admitted; a human must admit it in the Extensions panel first", id)
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
	argMap, err := schema.Validate(args)
	if err != nil {
		return nil, err
	}
	if args, err = json.Marshal(argMap); err != nil { // hand on exactly what was checked
		return nil, refusal.New(refusal.InvalidToolArguments, "the arguments cannot be encoded again")
	}
	log := g.logger().With("extension", id, "tool", tool)
	switch t.Primitive {
	case extensions.HTTPGet:
		u := t.URL
		for k, v := range argMap {
			u = strings.ReplaceAll(u, "{"+k+"}", url.QueryEscape(fmt.Sprint(v)))
		}
		if len(x.Descriptor.Bounds.Secrets) > 0 {
			log = log.With("secrets", SecretNames(x.Descriptor))
		}
		res, err := g.Fetcher.Fetch(ctx, x.Descriptor, u, budget)
		if err != nil {
			log.Info("extension call refused", "url", Redact(u), "refused", refusal.RuleOf(err), "err", err.Error())
			return nil, err
		}
		log.Info("extension call", "url", Redact(u), "status", res.Status, "via", strings.Join(res.Via, " -> "), "servedBy", res.ServedBy)
		return json.Marshal(res)
	case extensions.Wasm:
		return g.callWasm(ctx, log, t, argMap)
	case extensions.ReadFile, extensions.WriteFile, extensions.ListFiles, extensions.Now:
		if g.Ask == nil {
			return nil, refusal.New(refusal.NoRoot, "no root executor is connected to run %s", t.Primitive)
		}
		a := g.Ask(ctx, wire.Call{CallID: callID, Tool: string(t.Primitive), DescriptorID: id, Args: args, BoundsEcho: extensions.BoundsJSON(x.Descriptor.Bounds)})
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

// WasmInput is the argument whose string value (as UTF-8 bytes) a wasm tool gets as its input.
const WasmInput = "input"

// callWasm runs a wasm tool in the relay: its module is read afresh from the extensions
// directory (where the admitted descriptor lives) and its digest checked again on every call.
func (g *Registry) callWasm(ctx context.Context, log *slog.Logger, t *extensions.Tool, args map[string]any) (json.RawMessage, error) {
	input := ""
	if v, ok := args[WasmInput]; ok {
		s, isString := v.(string)
		if !isString {
			return nil, refusal.New(refusal.InvalidArgumentType, "argument %q of a wasm tool is a string (its input)", WasmInput)
		}
		input = s
	}
	runner := g.wasm()
	module, err := wasmtool.ReadModule(g.Store.Dir(), t.Wasm.Module, runner.Limits().MaxModuleBytes)
	if err == nil {
		var out *wasmtool.Output
		if out, err = runner.Call(ctx, module, *t.Wasm, []byte(input)); err == nil {
			log.Info("extension call", "primitive", extensions.Wasm, "module", t.Wasm.Module, "inputBytes", len(input), "outputBytes", out.Bytes)
			return json.Marshal(out)
		}
	}
	log.Info("extension call refused", "primitive", extensions.Wasm, "module", t.Wasm.Module, "refused", refusal.RuleOf(err), "err", err.Error())
	return nil, err
}

const maxDecisionBody = 4 << 10

// Register adds the extension routes to srv; check is the host-token check.
//
//	GET  /api/extensions                      listing: admitted, pending, catalogue, presentNotAdmitted
//	GET  /api/extensions/catalogue            the shipped descriptors with verdicts
//	GET  /api/extensions/{proposals|catalogue}/{id}/plan
//	POST /api/extensions/sideload, /local     stage a descriptor (the body) as a proposal
//	POST /api/extensions/stage-catalogue      {id}: stage a catalogue descriptor as a proposal
//	POST /api/extensions/admit                (host token) {id, decision: "admit"|"deny", confirm: true}
//	POST /api/extensions/approval-request     {id}: print a one-time code on the relay's console
//	POST /api/extensions/approve              {id, code}
//	POST /api/extensions/revoke               {id}
//	POST /api/extensions/dismiss              {id}: remove a waiting proposal (admits nothing)
//	POST /api/extensions/call                 (host token) {extension, tool, args}
func (g *Registry) Register(srv *server.Server, check func(string) bool) {
	srv.Handle("GET /api/extensions", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "extensions": g.ListExtensions()})
	}))
	srv.Handle("GET /api/extensions/catalogue", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "catalogue": g.Catalogue()})
	}))
	srv.Handle("GET /api/extensions/{kind}/{id}/plan", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var raw []byte
		switch r.PathValue("kind") {
		case "proposals":
			_, b, err := g.Store.Proposal(id)
			if err != nil {
				writeErr(w, err)
				return
			}
			raw = b
		case "catalogue":
			b, ok := catalogueRaw(id)
			if !ok {
				server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "the catalogue has no %q", id))
				return
			}
			raw = b
		default:
			server.NotFound(w)
			return
		}
		g.mu.Lock()
		existing := g.loadedTools(id)
		g.mu.Unlock()
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "entry": entryOf(raw, id, extensions.Machine, existing)})
	}))
	stage := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var raw json.RawMessage
		if !server.ReadJSON(w, r, extensions.MaxDescriptorBytes, &raw) {
			return
		}
		d, err := g.Stage(raw)
		if err != nil {
			writeErr(w, err)
			return
		}
		g.mu.Lock()
		existing := g.loadedTools(d.ID)
		g.mu.Unlock()
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "staged": d.ID, "entry": entryOf(raw, d.ID, extensions.Machine, existing)})
	})
	srv.Handle("POST /api/extensions/sideload", stage)
	srv.Handle("POST /api/extensions/local", stage)
	srv.Handle("POST /api/extensions/stage-catalogue", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID string `json:"id"`
		}
		if !server.ReadJSON(w, r, maxDecisionBody, &body) {
			return
		}
		raw, ok := catalogueRaw(body.ID)
		if !ok {
			server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "the catalogue has no %q", body.ID))
			return
		}
		if err := g.Store.StageCatalogue(raw, catalogue.Files); err != nil {
			writeErr(w, err)
			return
		}
		g.changed("proposed", body.ID)
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "staged": body.ID})
	}))
	srv.Handle("POST /api/extensions/admit", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !server.RequireHostToken(w, r, check) {
			return
		}
		var body struct {
			ID       string `json:"id"`
			Decision string `json:"decision"`
			Confirm  bool   `json:"confirm"`
		}
		if !server.ReadJSON(w, r, maxDecisionBody, &body) {
			return
		}
		if (body.Decision != "admit" && body.Decision != "deny") || (body.Decision == "admit" && !body.Confirm) {
			server.WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.InvalidArgument, "say decision \"admit\" with confirm true, or decision \"deny\""))
			return
		}
		g.mu.Lock()
		existing := g.loadedTools(body.ID)
		g.mu.Unlock()
		plan, err := g.Store.Decide(body.ID, body.Decision == "admit", "host-token", existing)
		if err != nil {
			writeErr(w, err)
			return
		}
		g.Reload()
		g.changed(map[bool]string{true: "admitted", false: "denied"}[body.Decision == "admit"], body.ID)
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "decision": body.Decision, "plan": plan})
	}))
	srv.Handle("POST /api/extensions/approval-request", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID string `json:"id"`
		}
		if !server.ReadJSON(w, r, maxDecisionBody, &body) {
			return
		}
		code, err := g.Store.RequestCode(body.ID, server.Requester(r))
		if err != nil {
			writeErr(w, err)
			return
		}
		if g.Console != nil {
			fmt.Fprintf(g.Console, "voicebox: approval code for extension %s: %s (valid %s; `relay approval-code` shows it again)\n", body.ID, code, CodeLifetime)
		}
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "expiresInMs": CodeLifetime.Milliseconds(), "where": "the relay's console"})
	}))
	srv.Handle("POST /api/extensions/approve", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID   string `json:"id"`
			Code string `json:"code"`
		}
		if !server.ReadJSON(w, r, maxDecisionBody, &body) {
			return
		}
		g.mu.Lock()
		existing := g.loadedTools(body.ID)
		g.mu.Unlock()
		plan, err := g.Store.Approve(body.ID, strings.TrimSpace(body.Code), existing)
		if err != nil {
			writeErr(w, err)
			return
		}
		g.Reload()
		g.changed("admitted", body.ID)
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "plan": plan})
	}))
	// Revocation only takes authority away, so the page may do it without the host token.
	srv.Handle("POST /api/extensions/revoke", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID string `json:"id"`
		}
		if !server.ReadJSON(w, r, maxDecisionBody, &body) {
			return
		}
		if err := g.Store.Revoke(body.ID); err != nil {
			writeErr(w, err)
			return
		}
		g.Reload()
		g.changed("revoked", body.ID)
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "revoked": true})
	}))
	// Dismissing a proposal only takes it away (it admits nothing), so the page may do it
	// without the host token: a proposal the gate refused, or one nobody wants.
	srv.Handle("POST /api/extensions/dismiss", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID string `json:"id"`
		}
		if !server.ReadJSON(w, r, maxDecisionBody, &body) {
			return
		}
		if err := g.Store.Dismiss(body.ID); err != nil {
			writeErr(w, err)
			return
		}
		g.changed("dismissed", body.ID)
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "dismissed": true})
	}))
	srv.Handle("POST /api/extensions/call", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !server.RequireHostToken(w, r, check) {
			return
		}
		var body struct {
			Extension string          `json:"extension"`
			Tool      string          `json:"tool"`
			Args      json.RawMessage `json:"args"`
		}
		if !server.ReadJSON(w, r, 0, &body) {
			return
		}
		out, err := g.CallExtension(r.Context(), body.Extension, body.Tool, body.Args)
		if err != nil {
			resp := map[string]any{"ok": false, "refused": refusal.RuleOf(err), "why": err.Error()}
			if rr, ok := refusal.As(err); ok {
				resp["why"] = rr.Why
			}
			if be, ok := err.(*wire.BudgetError); ok {
				resp["budget"] = be.Budget
			}
			server.WriteJSON(w, http.StatusOK, resp)
			return
		}
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "observed": out})
	}))
}

func writeErr(w http.ResponseWriter, err error) {
	if r, ok := refusal.As(err); ok {
		status := http.StatusBadRequest
		switch r.Rule {
		case refusal.NotFound:
			status = http.StatusNotFound
		case refusal.PermissionDenied, refusal.ApprovalPlanChanged, refusal.ApprovalCodeWrong, refusal.ApprovalCodeExhausted,
			refusal.ApprovalCodeExpired, refusal.ApprovalCodeUsed, refusal.ApprovalCodeMissing:
			status = http.StatusForbidden
		case refusal.ApprovalRateLimited:
			status = http.StatusTooManyRequests
		}
		server.WriteRefusal(w, status, r)
		return
	}
	server.WriteRefusal(w, http.StatusInternalServerError, refusal.New(refusal.InternalError, "the relay could not update its extension state"))
}
