package executor

import (
	"context"
	"encoding/hex"
	"encoding/json"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/sha"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Wasm is the primitive that runs a WebAssembly module where the executor is, for the relay: a
// WASM shelf tool, or an extension's wasm tool, when modules run in the page. The relay has read
// the module and checked its digest; the executor checks it again, and the module runs under
// wasmabi's ABIs, checks and bounds. It is not among Primitives: only a call whose descriptor
// the relay admitted with it reaches it, and an executor without a WasmRunner refuses it.
const Wasm Primitive = "wasm"

// WasmArgs are the arguments of a wasm call: the module's bytes, the sha256 they must hash to,
// what to call, and one input per buffer of the ABI.
type WasmArgs struct {
	Module []byte   `json:"module"` // base64 in JSON
	Digest string   `json:"digest"`
	ABI    string   `json:"abi"`
	Export string   `json:"export"`
	Inputs [][]byte `json:"inputs"` // each base64 in JSON
}

// WasmRunner runs a module for the wasm primitive. Run compiles module (wasm-invalid when it does
// not compile); then, when refuse is set, answers it (the executor found the module unfit after
// compiling, in wasmabi's order); otherwise it instantiates the module with no imports (its link
// error is import-undeclared), writes each input at its buffer of layout, calls export with their
// lengths and reads back the output buffer. A trap is wasm-trapped; a run past ctx's end, or
// wasmabi.Deadline, is stopped and refused time-exceeded. hasResult is false for an export that
// returns nothing.
type WasmRunner interface {
	Run(ctx context.Context, module []byte, export string, layout wasmabi.Layout, inputs [][]byte, refuse *refusal.Refusal) (returned int64, hasResult bool, out []byte, err error)
}

// wasm runs the wasm primitive: the module checked in wasmabi's order, then run by the runner.
func (e *Executor) wasm(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	if e.opts.Wasm == nil {
		return nil, auditNote{}, refusal.New(refusal.UnknownTool, "this executor runs no WebAssembly; the relay runs its modules itself")
	}
	var a WasmArgs
	if err := strictjson.DecodeStruct(raw, &a); err != nil {
		return nil, auditNote{}, refusal.New(refusal.InvalidToolArguments, "a wasm call is {module, digest, abi, export, inputs}: %s", strictjson.Problem(err))
	}
	note := auditNote{Bytes: int64(len(a.Module))}
	if len(a.Module) > wasmabi.MaxPageModuleBytes {
		return nil, note, refusal.New(refusal.OverBudget, "the module is %d bytes; a module run here is at most %d", len(a.Module), wasmabi.MaxPageModuleBytes)
	}
	sum := sha.Sum256(a.Module)
	if got := hex.EncodeToString(sum[:]); got != a.Digest {
		return nil, note, refusal.New(refusal.DigestMismatch, "%s", wasmabi.MismatchWhy("the module sent", got, a.Digest))
	}
	layout, ok := wasmabi.LayoutOf(a.ABI)
	if !ok {
		return nil, note, refusal.New(refusal.UnsupportedABI, "%q is not an ABI Voicebox drives", a.ABI)
	}
	// A Worker cannot stop a memory.grow while the module runs: every memory must declare its
	// maximum. Refused here, the module never reaches the Worker, which would allocate every
	// memory it declares.
	shape, err := wasmabi.CheckBytes(a.Module, wasmabi.MaxMemoryPages, true)
	if err != nil {
		return nil, note, err
	}
	refuse := unfit(shape, layout, a.Export, a.Inputs)
	returned, hasResult, out, err := e.opts.Wasm.Run(ctx, a.Module, a.Export, layout, a.Inputs, refuse)
	if err != nil {
		return nil, note, err
	}
	o, err := layout.Result(returned, hasResult, out)
	if err != nil {
		return nil, note, err
	}
	return appendOutput(nil, o), note, nil
}

// StrictFields lists the arguments' members for strictjson.
func (a *WasmArgs) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "module", Into: &a.Module}, {Name: "digest", Into: &a.Digest}, {Name: "abi", Into: &a.ABI},
		{Name: "export", Into: &a.Export}, {Name: "inputs", Into: &a.Inputs}}
}

// appendOutput writes what a module's call observed as json.Marshal writes a wasmabi.Output
// (TestWasmOutputAgreesWithJSON).
func appendOutput(dst []byte, o *wasmabi.Output) []byte {
	w := rawjson.NewObject(dst, true)
	w.String("abi", o.ABI)
	w.Int("returned", o.Returned)
	w.Int("bytes", int64(o.Bytes))
	if o.Hex != "" {
		w.String("hex", o.Hex)
	}
	if o.Text != nil {
		w.String("text", *o.Text)
	}
	if len(o.Blocks) > 0 {
		w.Value("blocks", blockList(o.Blocks))
	}
	if o.Truncated {
		w.Bool("truncated", true)
	}
	return w.Close()
}

type blockList []wasmabi.Block

func (l blockList) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, b := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		w := rawjson.NewObject(dst, true)
		w.String("op", b.Op)
		w.Uint("aLine", uint64(b.ALine))
		w.Uint("aCount", uint64(b.ACount))
		w.Uint("bLine", uint64(b.BLine))
		w.Uint("bCount", uint64(b.BCount))
		dst = w.Close()
	}
	return append(dst, ']')
}

// unfit is the first of wasmabi's checks after compiling that the module fails, or nil: its
// imports, the inputs, its memory and export.
func unfit(s wasmabi.Shape, l wasmabi.Layout, export string, inputs [][]byte) *refusal.Refusal {
	if s.FirstImport != "" {
		return refusal.New(refusal.ImportUndeclared, "the module imports %s (%d imports); %s modules import nothing", s.FirstImport, s.Imports, l.ABI)
	}
	for _, err := range []error{l.CheckInputs(inputs), l.CheckMemory(s), l.CheckExports(s, export)} {
		if r, ok := refusal.As(err); ok {
			return r
		}
	}
	return nil
}
