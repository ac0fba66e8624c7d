package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// fakeRunner stands in for a Worker: it answers refuse when it is given one, and otherwise the
// sha256 of the first input, as the shelf's hash module would.
type fakeRunner struct {
	runs   int
	refuse *refusal.Refusal
	export string
}

func (f *fakeRunner) Run(_ context.Context, module []byte, export string, layout wasmabi.Layout, inputs [][]byte, refuse *refusal.Refusal) (int64, bool, []byte, error) {
	f.runs++
	f.refuse, f.export = refuse, export
	if refuse != nil {
		return 0, false, nil, refuse
	}
	sum := sha256.Sum256(inputs[0])
	return 32, true, sum[:], nil
}

func shelfModule(t *testing.T, name string) ([]byte, string) {
	t.Helper()
	b, err := fs.ReadFile(catalogue.Files, "shelf/"+name)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

func wasmCall(t *testing.T, e *executor.Executor, a executor.WasmArgs) (json.RawMessage, error) {
	t.Helper()
	raw, _ := json.Marshal(a)
	return e.Execute(context.Background(), wire.Call{CallID: "c1", Tool: string(executor.Wasm), DescriptorID: "wasm-shelf", Args: raw, BoundsEcho: json.RawMessage(`{}`)})
}

// TestTheWasmPrimitive: the executor checks what the relay sent in wasmabi's order before its
// runner runs anything, and hands the runner the first refusal a compiled module would meet.
func TestTheWasmPrimitive(t *testing.T) {
	t.Parallel()
	hash, digest := shelfModule(t, "hash.wasm")
	diff, diffDigest := shelfModule(t, "diff.wasm")
	good := executor.WasmArgs{Module: hash, Digest: digest, ABI: wasmabi.ABI1, Export: "sha256", Inputs: [][]byte{[]byte("abc")}}

	if _, err := wasmCall(t, executor.New(nil, executor.Options{}), good); refusal.RuleOf(err) != refusal.UnknownTool {
		t.Fatalf("an executor without a runner: %v", err)
	}
	run := &fakeRunner{}
	e := executor.New(nil, executor.Options{Wasm: run})
	out, err := wasmCall(t, e, good)
	var o wasmabi.Output
	if err != nil || json.Unmarshal(out, &o) != nil || o.Hex != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" || run.refuse != nil || run.export != "sha256" {
		t.Fatalf("a good call: %s, %v (runner given %v)", out, err, run.refuse)
	}
	for _, c := range []struct {
		name    string
		change  func(a *executor.WasmArgs)
		want    refusal.Rule
		reached bool // whether the runner was asked (to compile) at all
	}{
		{"other bytes", func(a *executor.WasmArgs) { a.Module = diff }, refusal.DigestMismatch, false},
		{"an ABI nobody drives", func(a *executor.WasmArgs) { a.ABI = "wasi" }, refusal.UnsupportedABI, false},
		{"not a module", func(a *executor.WasmArgs) {
			a.Module = []byte("not wasm")
			s := sha256.Sum256(a.Module)
			a.Digest = hex.EncodeToString(s[:])
		}, refusal.WasmInvalid, false},
		{"an input over its buffer", func(a *executor.WasmArgs) { a.Inputs = [][]byte{make([]byte, wasmabi.MaxInputBytes+1)} }, refusal.OverBudget, true},
		{"two inputs for one", func(a *executor.WasmArgs) { a.Inputs = [][]byte{nil, nil} }, refusal.InvalidArgument, true},
		{"no such export", func(a *executor.WasmArgs) { a.Export = "nope" }, refusal.UnsupportedABI, true},
		{"the diff module as buffer-abi/1", func(a *executor.WasmArgs) { a.Module, a.Digest, a.Export = diff, diffDigest, "diff" }, refusal.UnsupportedABI, true},
		{"memories past the bound together", func(a *executor.WasmArgs) {
			a.Module = wasmabitest.MultiMemory(wasmabitest.Memory{Min: 4096, Max: 4096})
			s := sha256.Sum256(a.Module)
			a.Digest, a.Export = hex.EncodeToString(s[:]), "run"
		}, refusal.ResourceExceeded, false},
		{"memories whose maxima pass the bound together", func(a *executor.WasmArgs) {
			a.Module = wasmabitest.MultiMemory(wasmabitest.Memory{Min: 0, Max: 4096})
			s := sha256.Sum256(a.Module)
			a.Digest, a.Export = hex.EncodeToString(s[:]), "run"
		}, refusal.ResourceExceeded, false},
		{"a module over the page's bound", func(a *executor.WasmArgs) {
			a.Module = make([]byte, wasmabi.MaxPageModuleBytes+1)
			s := sha256.Sum256(a.Module)
			a.Digest = hex.EncodeToString(s[:])
		}, refusal.OverBudget, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			run.runs, run.refuse = 0, nil
			a := good
			c.change(&a)
			_, err := wasmCall(t, e, a)
			if refusal.RuleOf(err) != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
			if (run.runs > 0) != c.reached || c.reached && (run.refuse == nil || run.refuse.Rule != c.want) {
				t.Fatalf("runner asked %d times with %v", run.runs, run.refuse)
			}
		})
	}
	if _, err := e.Execute(context.Background(), wire.Call{CallID: "c2", Tool: "wasm", DescriptorID: "wasm-shelf", Args: json.RawMessage(`{"module":"AA","grant":1}`), BoundsEcho: json.RawMessage(`{}`)}); refusal.RuleOf(err) != refusal.InvalidToolArguments {
		t.Fatalf("an unknown field: %v", err)
	}
}
