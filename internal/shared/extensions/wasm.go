package extensions

import (
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// WasmTool names a wasm tool's module by digest, its call export and its ABI (buffer-abi/1 when
// none is named; see internal/shared/wasmabi). Parse reads it in either of two forms and fills the first
// four fields from the second:
//
//	ours            {"module", "sha256", "export", "abi"}
//	the original's  {"path", "digest", "abi", "call": {"export"}, "input", "inputA", "inputB",
//	                "output"}: its layout written out, which must be the ABI's documented one
//
// The module is a path relative to the extensions directory; its bytes are hashed again at
// admission and at every call.
type WasmTool struct {
	Module string `json:"module,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Export string `json:"export,omitempty"`
	ABI    string `json:"abi,omitempty"`

	Path   string      `json:"path,omitempty"`
	Digest string      `json:"digest,omitempty"`
	Call   *WasmCall   `json:"call,omitempty"`
	Input  *WasmBuffer `json:"input,omitempty"`
	InputA *WasmBuffer `json:"inputA,omitempty"`
	InputB *WasmBuffer `json:"inputB,omitempty"`
	Output *WasmBuffer `json:"output,omitempty"`
}

// WasmCall is the original's call: the export a tool calls.
type WasmCall struct {
	Export string `json:"export"`
}

// WasmBuffer is one buffer of the original's written-out layout: its address and size (Bytes for
// buffer-abi/1's fixed answer, MaxBytes otherwise).
type WasmBuffer struct {
	Addr     uint32 `json:"addr"`
	MaxBytes uint32 `json:"maxBytes,omitempty"`
	Bytes    uint32 `json:"bytes,omitempty"`
}

// Spec returns what a call of the tool runs.
func (w *WasmTool) Spec() wasmabi.Spec {
	abi := w.ABI
	if abi == "" {
		abi = wasmabi.ABI1
	}
	return wasmabi.Spec{ABI: abi, Export: w.Export}
}

// parseWasm fills the tool's module, digest and export from the original's form, refusing
// bad-descriptor when both forms name one and disagree, or the wasm field sits on a tool of
// another primitive.
func parseWasm(t *Tool) *refusal.Refusal {
	w := t.Wasm
	if w == nil {
		return nil
	}
	if t.Primitive != Wasm {
		return refusal.New(refusal.BadDescriptor, "tool %s has a wasm field but is a %s tool", clip(t.Name), clip(string(t.Primitive)))
	}
	fill := func(name string, ours *string, theirs string) *refusal.Refusal {
		switch {
		case theirs == "":
		case *ours == "":
			*ours = theirs
		case *ours != theirs:
			return refusal.New(refusal.BadDescriptor, "wasm tool %s names its %s twice, differently", clip(t.Name), name)
		}
		return nil
	}
	export := ""
	if w.Call != nil {
		export = w.Call.Export
	}
	for _, r := range []*refusal.Refusal{fill("module", &w.Module, w.Path), fill("digest", &w.SHA256, w.Digest), fill("export", &w.Export, export)} {
		if r != nil {
			return r
		}
	}
	return nil
}

// wasmABI is the gate's unsupported-abi rule: an ABI Voicebox drives, and a written-out layout
// that is that ABI's documented one (an ABI nobody drives is not a mechanism).
func wasmABI(t *Tool) *refusal.Refusal {
	if t.Primitive != Wasm || t.Wasm == nil {
		return nil
	}
	w := t.Wasm
	layout, ok := wasmabi.LayoutOf(w.ABI)
	if !ok {
		return refusal.New(refusal.UnsupportedABI, "wasm tool %s asks for ABI %q; the ABIs are %s and %s", t.Name, clip(w.ABI), wasmabi.ABI1, wasmabi.ABIDiff)
	}
	want := map[string]*WasmBuffer{}
	if layout.ABI == wasmabi.ABI1 {
		want["input"] = &WasmBuffer{Addr: layout.Inputs[0].Offset, MaxBytes: layout.Inputs[0].MaxBytes}
		want["output"] = &WasmBuffer{Addr: layout.Output.Offset, Bytes: layout.Output.MaxBytes}
	} else {
		want["inputA"] = &WasmBuffer{Addr: layout.Inputs[0].Offset, MaxBytes: layout.Inputs[0].MaxBytes}
		want["inputB"] = &WasmBuffer{Addr: layout.Inputs[1].Offset, MaxBytes: layout.Inputs[1].MaxBytes}
		want["output"] = &WasmBuffer{Addr: layout.Output.Offset, MaxBytes: layout.Output.MaxBytes}
	}
	for name, got := range map[string]*WasmBuffer{"input": w.Input, "inputA": w.InputA, "inputB": w.InputB, "output": w.Output} {
		if got == nil {
			continue
		}
		if want[name] == nil || *got != *want[name] {
			return refusal.New(refusal.UnsupportedABI, "wasm tool %s writes out a %s buffer that is not %s's documented layout; only that layout is driven", t.Name, name, layout.ABI)
		}
	}
	return nil
}
