package extensionhost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/relay/extensionhost/wasmtool"
	"github.com/voicebox-go/voicebox/shared/channel"
	"github.com/voicebox-go/voicebox/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/wire"
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
	// Publish, when set, gets the admitted set as a control frame (channel.MarshalAdmitted)
	// after every Reload, in order; the relay hands it to the hub (Hub.SetAdmitted), which sends
	// it to whoever holds the root, so their doors verify extension calls against it.
	Publish func(frame []byte)

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
	defer rt.mu.Unlock()
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
	return nil
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
// descriptor's bounds and the primitives of its tools that run on the root's executor (http-get
// and wasm run in the relay, so an executor never runs them for an extension).
func (rt *Runtime) AdmittedFrame() []byte {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	set := map[string]channel.AdmittedEntry{}
	for id, x := range rt.loaded {
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
// arguments are validated against the tool's params (toolschema, the same rules as mini-app
// tools; a tool without params takes no arguments) before the call is routed by primitive. It is
// what the call_extension tool runs.
func (rt *Runtime) CallExtension(ctx context.Context, id, tool string, args json.RawMessage) (json.RawMessage, error) {
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
	log := rt.logger().With("extension", id, "tool", tool)
	switch t.Primitive {
	case extensions.HTTPGet:
		u := t.URL
		for k, v := range argMap {
			u = strings.ReplaceAll(u, "{"+k+"}", url.QueryEscape(fmt.Sprint(v)))
		}
		if len(x.Descriptor.Bounds.Secrets) > 0 {
			log = log.With("secrets", SecretNames(x.Descriptor))
		}
		res, err := rt.Fetcher.Fetch(ctx, x.Descriptor, u, budget)
		if err != nil {
			log.Info("extension call refused", "url", Redact(u), "refused", refusal.RuleOf(err), "err", err.Error())
			return nil, err
		}
		log.Info("extension call", "url", Redact(u), "status", res.Status, "via", strings.Join(res.Via, " -> "), "servedBy", res.ServedBy)
		return json.Marshal(res)
	case extensions.Wasm:
		return rt.callWasm(ctx, log, t, argMap)
	case extensions.ReadFile, extensions.WriteFile, extensions.ListFiles, extensions.Now:
		if rt.Ask == nil {
			return nil, refusal.New(refusal.NoRoot, "no root executor is connected to run %s", t.Primitive)
		}
		a := rt.Ask(ctx, wire.Call{CallID: callID, Tool: string(t.Primitive), DescriptorID: id, Args: args, BoundsEcho: extensions.BoundsJSON(x.Descriptor.Bounds)})
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
func (rt *Runtime) callWasm(ctx context.Context, log *slog.Logger, t *extensions.Tool, args map[string]any) (json.RawMessage, error) {
	input := ""
	if v, ok := args[WasmInput]; ok {
		s, isString := v.(string)
		if !isString {
			return nil, refusal.New(refusal.InvalidArgumentType, "argument %q of a wasm tool is a string (its input)", WasmInput)
		}
		input = s
	}
	runner := rt.wasm()
	module, err := wasmtool.ReadModule(rt.Admissions.Dir(), t.Wasm.Module, runner.Limits().MaxModuleBytes)
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
