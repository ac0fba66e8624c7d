//go:build !js

package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// shelfIn writes a WASM shelf into a new directory: the sample shelf's hash and diff, and the
// modules of the wasmtool fixtures named (each a buffer-abi/1 tool of the same id, export run).
func shelfIn(t testing.TB, fixtures ...string) string {
	t.Helper()
	dir := t.TempDir()
	root := harness.RepoRoot()
	type entry struct {
		ID     string `json:"id"`
		Wasm   string `json:"wasm"`
		Digest string `json:"digest"`
		ABI    string `json:"abi,omitempty"`
		Export string `json:"export,omitempty"`
	}
	var tools []entry
	add := func(id, src, abi, export string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, id+".wasm"), b, 0o600)
		sum := sha256.Sum256(b)
		tools = append(tools, entry{id, id + ".wasm", hex.EncodeToString(sum[:]), abi, export})
	}
	add("hash", filepath.Join(root, "catalogue", "shelf", "hash.wasm"), "", "")
	add("diff", filepath.Join(root, "catalogue", "shelf", "diff.wasm"), "", "")
	for _, f := range fixtures {
		add(f, filepath.Join(root, "internal", "door", "extensionhost", "wasmtool", "testdata", f+".wasm"), "buffer-abi/1", "run")
	}
	b, _ := json.Marshal(map[string]any{"name": "test shelf", "tools": tools})
	os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o600)
	return dir
}

// shelfCall calls a shelf tool through POST /api/extensions/call with the host token.
func shelfCall(t testing.TB, relay *harness.Relay, token, id, args string) map[string]any {
	t.Helper()
	return postAPI(t.(*testing.T), relay.URL, "/api/extensions/call", token, fmt.Sprintf(`{"extension":"wasm-shelf-%s","tool":%q,"args":%s}`, id, id, args))
}

// TestShelfModulesRunInThePage: with --wasm-placement page, the shelf's modules run in a Worker
// of the page that holds the workspace: the hash answers SHA-256 and the diff its blocks, and
// the audit says where they ran.
func TestShelfModulesRunInThePage(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_WASM_SHELF_DIR="+shelfIn(t), "VOICEBOX_WASM_PLACEMENT=page")
	token := relay.HostToken(t)
	if m := shelfCall(t, relay, token, "hash", `{"input":"abc"}`); m["refused"] != "no-page" && m["refused"] != "no-root" {
		t.Fatalf("with no page to run it: %v", m)
	}
	openExecutor(t, relay)
	m := shelfCall(t, relay, token, "hash", `{"input":"abc"}`)
	obs, _ := m["observed"].(map[string]any)
	if obs["hex"] != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" || obs["returned"] != 32.0 {
		t.Fatalf("hash in the page: %v", m)
	}
	m = shelfCall(t, relay, token, "diff", `{"a":"one\ntwo\nthree\n","b":"one\n2\nthree\nfour\n"}`)
	obs, _ = m["observed"].(map[string]any)
	blocks, _ := obs["blocks"].([]any)
	if len(blocks) != 5 || blocks[4].(map[string]any)["op"] != "insert" {
		t.Fatalf("diff in the page: %v", m)
	}
	audit, _ := os.ReadFile(filepath.Join(relay.StateDir, ".extensions-audit.jsonl"))
	if !strings.Contains(string(audit), `"placement":"page"`) {
		t.Fatalf("the audit does not say the module ran in the page:\n%s", audit)
	}
}
