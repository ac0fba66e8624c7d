package extensionhost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmshelf"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxWasmArgumentBytes bounds the arguments of a wasm tool (the shelf's or an extension's) as
// JSON, in place of toolschema.MaxArgumentBytes: their inputs' buffers (wasmabi) bound the bytes
// that reach the module, two of 64 KiB for a diff, which JSON's escaping can make several times
// longer.
const MaxWasmArgumentBytes = 1 << 20

// Shelf reads the WASM shelf (ShelfDir) afresh, every module hashed: each tool with its verdict.
func (rt *Runtime) Shelf() wasmshelf.Shelf {
	return wasmshelf.Read(rt.ShelfDir, rt.wasm().Limits().MaxModuleBytes)
}

// shelfEntries lists the shelf's offered tools as the original lists them among the admitted
// extensions: wasm-shelf-ID with one tool ID.
func shelfEntries(s wasmshelf.Shelf) []Entry {
	var out []Entry
	for i := range s.Tools {
		t := &s.Tools[i]
		if !t.Offered {
			continue
		}
		info := toolInfo(t.ExtensionTool())
		info.Description = t.Description + " (wasm shelf, digest " + t.Digest[:12] + "...)"
		out = append(out, Entry{ID: t.Extension(), Name: "wasm shelf: " + t.ID, Description: t.Description, Tools: []ToolInfo{info}, OK: true})
	}
	return out
}

// callShelf runs tool of the shelf's extension id (wasm-shelf-ID): the manifest read afresh, the
// arguments checked against the schema its ABI implies, the module read and hashed again, then
// run where modules run.
func (rt *Runtime) callShelf(ctx context.Context, log *slog.Logger, id, tool string, args json.RawMessage, note *callNote) (json.RawMessage, error) {
	note.primitive = extensions.Wasm
	shelf := wasmshelf.Manifest(rt.ShelfDir)
	if !shelf.OK {
		return nil, refusal.New(shelf.Refused, "%s", shelf.Why)
	}
	t := shelf.Find(strings.TrimPrefix(id, wasmshelf.DescriptorPrefix))
	if t == nil || t.ID != tool {
		return nil, refusal.New(refusal.UnknownTool, "the WASM shelf has no tool %q as %s", tool, id)
	}
	if t.Refused != "" {
		return nil, refusal.New(t.Refused, "%s", t.Why)
	}
	if t.Export == "" {
		return nil, refusal.New(refusal.UnsupportedABI, "the shelf's tool %s declares no export, and is not one the original drives, so it cannot be called", t.ID)
	}
	schema, err := toolschema.Parse(t.ExtensionTool().ArgumentSchema())
	if err != nil {
		return nil, refusal.New(refusal.InternalError, "the relay could not build the arguments of %s", t.ID)
	}
	argMap, err := schema.ValidateWithin(args, MaxWasmArgumentBytes)
	if err != nil {
		return nil, err
	}
	w := t.WasmTool()
	inputs, err := wasmInputs(w.Spec().ABI, argMap)
	if err != nil {
		return nil, err
	}
	note.observed = map[string]any{"module": w.Module, "digest": w.SHA256, "abi": w.Spec().ABI, "inputBytes": inputBytes(inputs)}
	module, err := wasmshelf.ReadModule(rt.ShelfDir, t, rt.wasm().Limits().MaxModuleBytes)
	if err != nil {
		return nil, err
	}
	return rt.runWasm(ctx, log, wasmshelf.DescriptorID, json.RawMessage(`{}`), w, module, inputs, note)
}

// Where modules run (Runtime.WasmPlacement).
const (
	// WasmInRelay runs modules in the relay, on wazero (the default).
	WasmInRelay = "relay"
	// WasmInPage runs modules in the page that holds the root, in a Worker it terminates at the
	// deadline; the call carries the module's bytes (at most wasmabi.MaxPageModuleBytes).
	WasmInPage = "page"
)

// runWasm runs a module whose bytes were read and hashed for this call, where WasmPlacement says:
// for descriptor (with its bounds, which the call echoes) when it goes to the page.
func (rt *Runtime) runWasm(ctx context.Context, log *slog.Logger, descriptor string, bounds json.RawMessage, w extensions.WasmTool, module []byte, inputs [][]byte, note *callNote) (json.RawMessage, error) {
	var out *wasmabi.Output
	var err error
	if rt.WasmPlacement == WasmInPage {
		note.observed["placement"] = WasmInPage
		out, err = rt.runInPage(ctx, descriptor, bounds, w, module, inputs)
	} else {
		out, err = rt.wasm().Call(ctx, module, w, inputs)
	}
	if err != nil {
		log.Info("extension call refused", "primitive", extensions.Wasm, "module", w.Module, "refused", refusal.RuleOf(err), "err", err.Error())
		return nil, err
	}
	return rt.wasmAnswer(log, w, out, note)
}

// runInPage sends the module and its inputs to the root's executor as a wasm call, and reads
// back what it observed.
func (rt *Runtime) runInPage(ctx context.Context, descriptor string, bounds json.RawMessage, w extensions.WasmTool, module []byte, inputs [][]byte) (*wasmabi.Output, error) {
	if len(module) > wasmabi.MaxPageModuleBytes {
		return nil, refusal.New(refusal.OverBudget, "the module is %d bytes; a module sent to the page is at most %d", len(module), wasmabi.MaxPageModuleBytes)
	}
	if rt.Ask == nil {
		return nil, refusal.New(refusal.NoRoot, "modules run in the page, and no page holds the root")
	}
	spec := w.Spec()
	args, err := json.Marshal(executor.WasmArgs{Module: module, Digest: w.SHA256, ABI: spec.ABI, Export: spec.Export, Inputs: inputs})
	if err != nil {
		return nil, refusal.New(refusal.InternalError, "the relay could not encode the call")
	}
	rt.mu.Lock()
	rt.seq++
	callID := fmt.Sprintf("ext-%d", rt.seq)
	rt.mu.Unlock()
	a := rt.Ask(ctx, wire.Call{CallID: callID, Tool: string(executor.Wasm), DescriptorID: descriptor, Args: args, BoundsEcho: bounds})
	if err := a.Err(); err != nil {
		return nil, err
	}
	var out wasmabi.Output
	if err := json.Unmarshal(a.Observed, &out); err != nil {
		return nil, refusal.New(refusal.InternalError, "the page answered the wasm call with something that is not its output")
	}
	return &out, nil
}

// wasmAnswer is the observation of a wasm call: its output, and which bytes ran on what.
func (rt *Runtime) wasmAnswer(log *slog.Logger, w extensions.WasmTool, out *wasmabi.Output, note *callNote) (json.RawMessage, error) {
	note.observed["returned"], note.observed["outputBytes"] = out.Returned, out.Bytes
	log.Info("extension call", "primitive", extensions.Wasm, "module", w.Module, "inputBytes", note.observed["inputBytes"], "outputBytes", out.Bytes)
	return json.Marshal(struct {
		*wasmabi.Output
		Digest     string `json:"digest"`
		InputBytes any    `json:"inputBytes"`
	}{out, w.SHA256, note.observed["inputBytes"]})
}
