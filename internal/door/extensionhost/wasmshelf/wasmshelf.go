// Package wasmshelf reads the WASM shelf: a directory of WebAssembly modules named by its
// manifest.json, each pinned by its sha256, as the original Voicebox keeps one. A shelf tool is
// admitted by its bytes, not by review: it is callable as soon as the module on disk hashes to
// the digest its manifest pins, and the bytes are hashed again at every call (the directory is
// writable by whoever runs the relay, so a check at reading says nothing about the bytes later).
//
// The shelf is where VOICEBOX_WASM_SHELF_DIR says (default: wasm-shelf in the state directory).
// Its manifest:
//
//	{"name": "...", "version": "...", "tools": [
//	  {"id": "hash", "wasm": "hash.wasm", "digest": "<sha256 hex>", "description": "...",
//	   "capability": "hash", "abi": "buffer-abi/1", "export": "sha256"}]}
//
// "export" is ours: without it, the original's two measured tools are driven as it drives them
// (hash: buffer-abi/1, export sha256; diff: buffer-abi/diff, export diff), and any other tool is
// admitted but not offered (an ABI nobody drives is not a mechanism).
//
// # Refusals
//
//	shelf-unavailable   no manifest.json in the shelf directory (or no directory)
//	shelf-unreadable    a manifest that is not the manifest's JSON, or over MaxManifestBytes
//	wasm-unreadable     a tool without an id or a module, or whose module cannot be read
//	digest-mismatch     a module whose sha256 is not the pinned one (both prefixes named)
//	wasm-invalid        a module that is not framed as WebAssembly
//	resource-exceeded   a module whose memories or tables, imported and defined, pass the
//	                    bounds together (wasmabi.CheckBytes)
//	unsupported-abi     an ABI Voicebox does not drive
//	bad-descriptor      an id that cannot name a tool, or one already taken
//
// A tool is listed with its verdict; only an admitted one with a known export is offered, as the
// extension wasm-shelf-ID with one tool ID.
package wasmshelf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmtool"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ManifestFile is the shelf's manifest, in the shelf directory.
const ManifestFile = "manifest.json"

// Bounds of a shelf.
const (
	// MaxManifestBytes bounds the manifest.
	MaxManifestBytes = 64 << 10
	// MaxTools bounds the tools one manifest names.
	MaxTools = 64
)

// DescriptorPrefix starts the extension id a shelf tool is listed and called as:
// wasm-shelf-hash for the tool hash, as the original lists it.
const DescriptorPrefix = "wasm-shelf-"

// DescriptorID is the descriptor id the shelf's calls carry to an executor that runs them (the
// page, when modules run there): its admitted set holds it with the wasm primitive.
const DescriptorID = "wasm-shelf"

// measured is the original's table of the tools it drives, by id: their ABI and export.
var measured = map[string]wasmabi.Spec{
	"hash": {ABI: wasmabi.ABI1, Export: "sha256"},
	"diff": {ABI: wasmabi.ABIDiff, Export: "diff"},
}

var idPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

type manifest struct {
	Name    string  `json:"name,omitempty"`
	Version string  `json:"version,omitempty"`
	Tools   []entry `json:"tools"`
}

type entry struct {
	ID          string `json:"id"`
	Wasm        string `json:"wasm"`
	Digest      string `json:"digest"`
	Description string `json:"description,omitempty"`
	Capability  string `json:"capability,omitempty"`
	ABI         string `json:"abi,omitempty"`
	Export      string `json:"export,omitempty"`
}

// Shelf is a shelf as read: its manifest's verdict, and each tool's.
type Shelf struct {
	OK      bool         `json:"ok"`
	Refused refusal.Rule `json:"refused,omitempty"`
	Why     string       `json:"why,omitempty"`
	Name    string       `json:"name,omitempty"`
	Version string       `json:"version,omitempty"`
	Tools   []Tool       `json:"tools"`
}

// Tool is one tool of a shelf with its verdict.
type Tool struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Capability  string `json:"capability,omitempty"`
	// Module is the module's path in the shelf directory.
	Module string `json:"module"`
	Digest string `json:"digest"`
	ABI    string `json:"abi,omitempty"`
	Export string `json:"export,omitempty"`
	// Admitted reports the module on disk hashed to Digest when the shelf was read.
	Admitted bool         `json:"admitted"`
	Refused  refusal.Rule `json:"refused,omitempty"`
	Why      string       `json:"why,omitempty"`
	// Offered reports an admitted tool with a known export: the model is offered it.
	Offered bool   `json:"offered"`
	Note    string `json:"note,omitempty"`
}

// Extension is the extension id the tool is listed and called as.
func (t *Tool) Extension() string { return DescriptorPrefix + t.ID }

// WasmTool is what a call of the tool runs.
func (t *Tool) WasmTool() extensions.WasmTool {
	return extensions.WasmTool{Module: t.Module, SHA256: t.Digest, Export: t.Export, ABI: t.ABI}
}

// ExtensionTool is the tool as an extension's: its ArgumentSchema is the one its ABI implies
// ({input}, or {a, b} for the diff).
func (t *Tool) ExtensionTool() *extensions.Tool {
	w := t.WasmTool()
	return &extensions.Tool{Name: t.ID, Description: t.Description, Primitive: extensions.Wasm, Wasm: &w}
}

// Manifest reads the shelf's manifest and what it says of each tool (its module, digest, ABI and
// export), without reading any module: what a call needs before it reads and hashes its own.
func Manifest(dir string) Shelf {
	s := Shelf{Tools: []Tool{}}
	raw, err := readManifest(dir)
	if err != nil {
		s.Refused, s.Why = refusal.RuleOf(err), err.(*refusal.Refusal).Why
		return s
	}
	var m manifest
	if err := strictjson.Decode(raw, &m); err != nil {
		s.Refused, s.Why = refusal.ShelfUnreadable, "the shelf's manifest.json is not the manifest's JSON ({\"tools\": [{\"id\", \"wasm\", \"digest\", ...}]}): "+strictjson.Problem(err)
		return s
	}
	if len(m.Tools) > MaxTools {
		s.Refused, s.Why = refusal.ShelfUnreadable, "the shelf's manifest names more than the 64 tools a shelf may hold"
		return s
	}
	if r := names.Check("the shelf's name", m.Name); r != nil {
		s.Refused, s.Why = r.Rule, r.Why
		return s
	}
	s.OK, s.Name, s.Version = true, m.Name, m.Version
	seen := map[string]bool{}
	for _, e := range m.Tools {
		s.Tools = append(s.Tools, toolOf(e, seen))
	}
	return s
}

// Read is Manifest with every module read and hashed: a tool is admitted when its bytes are the
// pinned ones. maxModuleBytes bounds a module's size (wasmtool.Limits.MaxModuleBytes).
func Read(dir string, maxModuleBytes int) Shelf {
	s := Manifest(dir)
	for i := range s.Tools {
		t := &s.Tools[i]
		if t.Refused != "" {
			continue
		}
		if _, err := ReadModule(dir, t, maxModuleBytes); err != nil {
			t.Refused, t.Why = refusal.RuleOf(err), err.(*refusal.Refusal).Why
			continue
		}
		t.Admitted = true
		t.Offered = t.Export != ""
		if !t.Offered {
			t.Note = "admitted, but its calling convention is undeclared (no export, and not one of the tools the original drives), so it is not offered"
		}
	}
	return s
}

// Find returns the tool id of s, or nil.
func (s *Shelf) Find(id string) *Tool {
	for i := range s.Tools {
		if s.Tools[i].ID == id {
			return &s.Tools[i]
		}
	}
	return nil
}

// ReadModule reads t's module from the shelf directory and checks its digest and its bytes:
// wasm-unreadable for a module that cannot be read there (missing, not a regular file, outside
// the directory), over-budget past limit, digest-mismatch for other bytes, then
// wasmabi.CheckBytes within wasmabi.MaxMemoryPages (wasm-invalid, resource-exceeded). Read
// admits through it and every call reads through it, wherever the module then runs.
func ReadModule(dir string, t *Tool, limit int) ([]byte, error) {
	b, err := wasmtool.ReadModule(dir, t.Module, limit)
	if err != nil {
		switch r, _ := refusal.As(err); {
		case r == nil:
			return nil, refusal.New(refusal.WasmUnreadable, "the module %s cannot be read", t.Module)
		case r.Rule == refusal.OutsideRoot || r.Rule == refusal.DotfileRefused || r.Rule == refusal.PathTooLong:
			return nil, refusal.New(refusal.WasmUnreadable, "the module of %s, %q, is not a file in the shelf directory: %s", t.ID, t.Module, r.Why)
		}
		return nil, err
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != t.Digest {
		return nil, refusal.New(refusal.DigestMismatch, "%s", wasmabi.MismatchWhy("the module "+t.Module, got, t.Digest))
	}
	if _, err := wasmabi.CheckBytes(b, wasmabi.MaxMemoryPages, false); err != nil {
		return nil, err
	}
	return b, nil
}

// toolOf reads one manifest entry: its ABI and export from the entry, else the measured table.
func toolOf(e entry, seen map[string]bool) Tool {
	t := Tool{ID: e.ID, Description: e.Description, Capability: e.Capability, Module: e.Wasm, Digest: e.Digest, ABI: e.ABI, Export: e.Export}
	switch {
	case e.ID == "" || e.Wasm == "":
		t.Refused, t.Why = refusal.WasmUnreadable, "the manifest names no module for this tool (it needs an id and a wasm path)"
		if t.ID == "" {
			t.ID = "(unnamed)"
		}
		return t
	case names.Check("", e.ID) != nil:
		t.ID = names.Escape(e.ID)
		t.Refused, t.Why = refusal.InvalidName, names.Check("a shelf tool's id", e.ID).Why
		return t
	case !idPattern.MatchString(e.ID):
		t.Refused, t.Why = refusal.BadDescriptor, "a shelf tool's id is 1 to 64 lower-case letters, digits or '_', starting with a letter"
		return t
	case seen[e.ID]:
		t.Refused, t.Why = refusal.BadDescriptor, "the manifest names this id twice; the first one is the tool"
		return t
	}
	seen[e.ID] = true
	m, isMeasured := measured[e.ID]
	if t.ABI == "" && isMeasured {
		t.ABI = m.ABI
	}
	if _, ok := wasmabi.LayoutOf(t.ABI); !ok && t.ABI != "" {
		t.Refused, t.Why = refusal.UnsupportedABI, "the manifest asks for ABI "+clip(t.ABI)+"; the ABIs are buffer-abi/1 and buffer-abi/diff"
		return t
	}
	if t.Export == "" && isMeasured && t.ABI == m.ABI {
		t.Export = m.Export
	}
	if t.ABI == "" && t.Export != "" {
		t.ABI = wasmabi.ABI1
	}
	return t
}

// readManifest reads the manifest: shelf-unavailable when there is none, shelf-unreadable when
// it is not a regular file of at most MaxManifestBytes.
func readManifest(dir string) ([]byte, error) {
	if dir == "" {
		return nil, refusal.New(refusal.ShelfUnavailable, "no WASM shelf is configured (VOICEBOX_WASM_SHELF_DIR)")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, refusal.New(refusal.ShelfUnavailable, "there is no shelf directory where VOICEBOX_WASM_SHELF_DIR says; a shelf is its manifest, and there is none")
	}
	defer root.Close()
	// O_NONBLOCK: a FIFO in the manifest's place must not hold the relay waiting for a writer.
	f, err := root.OpenFile(ManifestFile, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, refusal.New(refusal.ShelfUnavailable, "the shelf directory has no manifest.json; a shelf is its manifest, and there is none")
	}
	if err != nil {
		return nil, refusal.New(refusal.ShelfUnreadable, "the shelf's manifest.json cannot be opened")
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, refusal.New(refusal.ShelfUnreadable, "the shelf's manifest.json is not a regular file")
	} else if fi.Size() > MaxManifestBytes {
		return nil, refusal.New(refusal.ShelfUnreadable, "the shelf's manifest.json is %d bytes, over the bound of %d", fi.Size(), MaxManifestBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil || len(b) > MaxManifestBytes {
		return nil, refusal.New(refusal.ShelfUnreadable, "the shelf's manifest.json could not be read whole")
	}
	return b, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// DefaultDir is the shelf directory in stateDir when VOICEBOX_WASM_SHELF_DIR is not set.
func DefaultDir(stateDir string) string { return filepath.Join(stateDir, "wasm-shelf") }
