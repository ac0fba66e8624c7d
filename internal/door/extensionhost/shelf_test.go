package extensionhost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmshelf"
)

// withShelf gives f's runtime a copy of the sample shelf and returns its directory.
func (f *fixture) withShelf() string {
	f.t.Helper()
	dir := f.t.TempDir()
	for _, name := range []string{"manifest.json", "hash.wasm", "diff.wasm"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "catalogue", "shelf", name))
		if err != nil {
			f.t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	f.g.ShelfDir = dir
	return dir
}

// TestTheShelfThroughTheRuntime: the shelf's tools are listed among the admitted extensions and
// called through call_extension as wasm-shelf-ID; every refusal of the shelf reaches the caller.
func TestTheShelfThroughTheRuntime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := f.withShelf()
	_, m, body := f.do("GET", "/api/extensions", "", "")
	if m["ok"] != true || !strings.Contains(body, `"id":"wasm-shelf-hash"`) || !strings.Contains(body, `"id":"wasm-shelf-diff"`) || strings.Contains(body, dir) {
		t.Fatalf("the listing (which never names the shelf's path): %s", body)
	}
	m = f.call("wasm-shelf-hash", "hash", `{"input":"abc"}`)
	if observedField(m, "hex") != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" || observedField(m, "digest") == nil || observedField(m, "inputBytes") != 3.0 {
		t.Fatalf("hash: %v", m)
	}
	m = f.call("wasm-shelf-diff", "diff", `{"a":"one\ntwo\nthree\n","b":"one\n2\nthree\n"}`)
	blocks, _ := observedField(m, "blocks").([]any)
	if len(blocks) != 4 || blocks[1].(map[string]any)["op"] != "delete" || blocks[2].(map[string]any)["op"] != "insert" {
		t.Fatalf("diff: %v", m)
	}
	if !f.audited(ActCall, "wasm-shelf-diff", Allow, "") {
		t.Fatal("a shelf call is not audited")
	}
	for _, c := range []struct {
		name, ext, tool, args, rule string
		change                      func()
	}{
		{"an argument of the other ABI", "wasm-shelf-hash", "hash", `{"input":"x","a":"x"}`, "invalid-argument", nil},
		{"an input over its buffer", "wasm-shelf-hash", "hash", `{"input":"` + strings.Repeat("é", 4097) + `"}`, "over-budget", nil},
		{"a tool the shelf has not", "wasm-shelf-nope", "nope", `{}`, "unknown-tool", nil},
		{"the wrong tool name", "wasm-shelf-hash", "diff", `{}`, "unknown-tool", nil},
		{"a swapped module", "wasm-shelf-hash", "hash", `{"input":"x"}`, "digest-mismatch", func() {
			b, _ := os.ReadFile(filepath.Join(dir, "diff.wasm"))
			os.WriteFile(filepath.Join(dir, "hash.wasm"), b, 0o600)
		}},
		{"a module gone", "wasm-shelf-hash", "hash", `{"input":"x"}`, "wasm-unreadable", func() { os.Remove(filepath.Join(dir, "hash.wasm")) }},
		{"a manifest that is not JSON", "wasm-shelf-diff", "diff", `{"a":"","b":""}`, "shelf-unreadable", func() {
			os.WriteFile(filepath.Join(dir, wasmshelf.ManifestFile), []byte("{"), 0o600)
		}},
		{"no manifest", "wasm-shelf-diff", "diff", `{"a":"","b":""}`, "shelf-unavailable", func() { os.Remove(filepath.Join(dir, wasmshelf.ManifestFile)) }},
	} {
		if c.change != nil {
			c.change()
		}
		if m := f.call(c.ext, c.tool, c.args); m["refused"] != c.rule || m["why"] == "" {
			t.Errorf("%s: %v, want %s", c.name, m, c.rule)
		}
	}
	if !f.audited(ActCall, "wasm-shelf-hash", Refuse, "digest-mismatch") {
		t.Fatal("a refused shelf call is not audited")
	}
	_, m, _ = f.do("GET", "/api/extensions", "", "")
	shelf := m["extensions"].(map[string]any)["shelf"].(map[string]any)
	if shelf["ok"] != false || shelf["refused"] != "shelf-unavailable" {
		t.Fatalf("the listing's shelf: %v", shelf)
	}
}
