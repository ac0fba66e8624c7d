//go:build !js

package hostile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// shelfEntry is one tool of a manifest a case writes.
type shelfEntry struct {
	ID     string `json:"id"`
	Wasm   string `json:"wasm"`
	Digest string `json:"digest"`
	ABI    string `json:"abi,omitempty"`
	Export string `json:"export,omitempty"`
}

// hostileShelf writes a shelf: the sample's hash, and each wasmtool fixture named as a
// buffer-abi/1 tool of its own name (export run).
func hostileShelf(t testing.TB, fixtures ...string) string {
	t.Helper()
	dir := t.TempDir()
	root := harness.RepoRoot()
	tools := []shelfEntry{}
	add := func(id, src, abi, export string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, id+".wasm"), b, 0o600)
		sum := sha256.Sum256(b)
		tools = append(tools, shelfEntry{id, id + ".wasm", hex.EncodeToString(sum[:]), abi, export})
	}
	add("hash", filepath.Join(root, "catalogue", "shelf", "hash.wasm"), "", "")
	for _, f := range fixtures {
		add(f, filepath.Join(root, "internal", "door", "extensionhost", "wasmtool", "testdata", f+".wasm"), "buffer-abi/1", "run")
	}
	writeManifest(t, dir, tools)
	return dir
}

func writeManifest(t testing.TB, dir string, tools []shelfEntry) {
	b, _ := json.Marshal(map[string]any{"tools": tools})
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// callShelf calls tool id of the shelf (wasm-shelf-id) with the host token.
func callShelf(t testing.TB, relay *harness.Relay, id, args string) reply {
	t.Helper()
	return postJSON(t, relay, "/api/extensions/call", json.RawMessage(fmt.Sprintf(`{"extension":"wasm-shelf-%s","tool":%q,"args":%s}`, id, id, args)), true)
}

// hashServed checks that the shelf still answers a good call: sha256 of "abc".
func hashServed(t testing.TB, relay *harness.Relay) {
	t.Helper()
	r := callShelf(t, relay, "hash", `{"input":"abc"}`)
	if obs, _ := r.m["observed"].(map[string]any); obs["hex"] != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("the next call of the shelf answered %s", r.body)
	}
}

// TestHostileModulesInThePageAreStoppedAndTheNextCallRuns: with modules running in the page,
// a module that loops (in its export or its start function) is stopped at the deadline by
// terminating its Worker, a trap answers wasm-trapped, a module that asks for imports fails to
// link, and a memory the page cannot bound is refused before it runs; after each, the next call
// runs.
func TestHostileModulesInThePageAreStoppedAndTheNextCallRuns(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_WASM_SHELF_DIR="+hostileShelf(t, "loop", "startloop", "trap", "import", "grow", "bigmem", "overflow", "signature"), "VOICEBOX_WASM_PLACEMENT=page")
	tab := harness.NewTab(t)
	openPage(t, tab, relay.URL)
	waitFor(t, "the page to hold the root", func() bool { return rootKind(t, relay) == "opfs" })
	hashServed(t, relay)
	for _, c := range []struct {
		fixture, rule, why string
	}{
		{"loop", "time-exceeded", "its worker was terminated"},
		{"startloop", "time-exceeded", "its worker was terminated"},
		{"trap", "wasm-trapped", "unreachable"},
		{"import", "import-undeclared", "LinkError"},
		{"grow", "resource-exceeded", "maximum"},
		{"bigmem", "resource-exceeded", "65 memory pages"},
		{"overflow", "over-budget", "answer bytes"},
		{"signature", "unsupported-abi", "i32"},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			r := callShelf(t, relay, c.fixture, `{"input":"x"}`)
			if !r.refused(http.StatusOK, c.rule) || !strings.Contains(r.m["why"].(string), c.why) {
				t.Fatalf("%s answered %s, want %s (%q)", c.fixture, r.body, c.rule, c.why)
			}
			hashServed(t, relay)
		})
	}
	served(t, relay)
}

// TestHostileModulesInTheRelayAreStoppedAndTheNextCallRuns: the same modules where modules run
// by default, in the relay on wazero: a loop is stopped at the deadline, a memory grown past the
// bound stops the call, a trap and a link answer by name; the relay serves on.
func TestHostileModulesInTheRelayAreStoppedAndTheNextCallRuns(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_WASM_SHELF_DIR="+hostileShelf(t, "loop", "trap", "import", "grow"))
	for fixture, rule := range map[string]string{"loop": "time-exceeded", "trap": "wasm-trapped", "import": "import-undeclared", "grow": "resource-exceeded"} {
		if r := callShelf(t, relay, fixture, `{"input":"x"}`); !r.refused(http.StatusOK, rule) {
			t.Fatalf("%s answered %s, want %s", fixture, r.body, rule)
		}
		hashServed(t, relay)
	}
	served(t, relay)
}

// TestAShelfModuleWithManyMemoriesIsRefusedWhereverItRuns: a module under the multi-memory
// proposal whose exported memory is one page and whose eight others are 4,096 pages each (2 GiB a
// browser allocates when it instantiates it) is not admitted on the shelf and is refused
// resource-exceeded at its call with modules in the relay and in the page; the next call runs.
func TestAShelfModuleWithManyMemoriesIsRefusedWhereverItRuns(t *testing.T) {
	t.Parallel()
	multi := wasmabitest.MultiMemory(slices.Repeat([]wasmabitest.Memory{{Min: 4096, Max: 4096}}, 8)...)
	for _, placement := range []string{"relay", "page"} {
		t.Run(placement, func(t *testing.T) {
			dir := hostileShelf(t)
			os.WriteFile(filepath.Join(dir, "multi.wasm"), multi, 0o600)
			sum := sha256.Sum256(multi)
			hash, _ := os.ReadFile(filepath.Join(dir, "hash.wasm"))
			hashSum := sha256.Sum256(hash)
			writeManifest(t, dir, []shelfEntry{{ID: "hash", Wasm: "hash.wasm", Digest: hex.EncodeToString(hashSum[:])},
				{ID: "multi", Wasm: "multi.wasm", Digest: hex.EncodeToString(sum[:]), ABI: "buffer-abi/1", Export: "run"}})
			relay := harness.StartRelay(t, "VOICEBOX_WASM_SHELF_DIR="+dir, "VOICEBOX_WASM_PLACEMENT="+placement)
			if placement == "page" {
				tab := harness.NewTab(t)
				openPage(t, tab, relay.URL)
				waitFor(t, "the page to hold the root", func() bool { return rootKind(t, relay) == "opfs" })
			}
			hashServed(t, relay)
			for range 2 {
				c := callShelf(t, relay, "multi", `{"input":"x"}`)
				if why, _ := c.m["why"].(string); !c.refused(http.StatusOK, "resource-exceeded") || !strings.Contains(why, "32769 memory pages (9 memories") {
					t.Fatalf("the call answered %s", c.body)
				}
				hashServed(t, relay)
			}
			r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}, "")
			shelf, _ := r.m["extensions"].(map[string]any)["shelf"].(map[string]any)
			tools, _ := shelf["tools"].([]any)
			if len(tools) != 2 || tools[1].(map[string]any)["refused"] != "resource-exceeded" || tools[1].(map[string]any)["admitted"] != false {
				t.Fatalf("the shelf admitted the module: %v", shelf)
			}
			served(t, relay)
		})
	}
}

// TestAHostileShelfIsRefusedByName: what can sit in the shelf directory, a manifest far too
// large, a FIFO or a link out of the directory for a manifest, modules outside the directory,
// too large or swapped for others, is refused by name, never read whole, never waited on; the
// relay goes on serving.
func TestAHostileShelfIsRefusedByName(t *testing.T) {
	t.Parallel()
	dir := hostileShelf(t)
	relay := harness.StartRelay(t, "VOICEBOX_WASM_SHELF_DIR="+dir)
	hashServed(t, relay)
	good, _ := os.ReadFile(filepath.Join(dir, "hash.wasm"))
	sum := sha256.Sum256(good)
	digest := hex.EncodeToString(sum[:])
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "hash.wasm"), good, 0o600)
	os.WriteFile(filepath.Join(outside, "manifest.json"), []byte(`{"tools":[]}`), 0o600)

	shelfRule := func() (string, string) {
		r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}, "")
		shelf, _ := r.m["extensions"].(map[string]any)["shelf"].(map[string]any)
		rule, _ := shelf["refused"].(string)
		return rule, r.body
	}
	manifest := filepath.Join(dir, "manifest.json")
	for _, c := range []struct {
		name, rule string
		set        func()
	}{
		{"a manifest of 64 MiB", "shelf-unreadable", func() { os.WriteFile(manifest, make([]byte, 64<<20), 0o600) }},
		{"a FIFO for a manifest", "shelf-unreadable", func() {
			os.Remove(manifest)
			if err := syscall.Mkfifo(manifest, 0o600); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}},
		{"a link out of the shelf for a manifest", "shelf-unreadable", func() {
			os.Remove(manifest)
			os.Symlink(filepath.Join(outside, "manifest.json"), manifest)
		}},
		{"no manifest", "shelf-unavailable", func() { os.Remove(manifest) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.set()
			if rule, body := shelfRule(); rule != c.rule {
				t.Fatalf("the listing's shelf: %s", body)
			}
			if r := callShelf(t, relay, "hash", `{"input":"abc"}`); !r.refused(http.StatusOK, c.rule) {
				t.Fatalf("a call answered %s", r.body)
			}
			served(t, relay)
		})
	}
	os.Remove(manifest)
	os.WriteFile(filepath.Join(dir, "big.wasm"), make([]byte, 8<<20), 0o600)
	os.Symlink(filepath.Join(outside, "hash.wasm"), filepath.Join(dir, "link.wasm"))
	os.WriteFile(filepath.Join(dir, "other.wasm"), append(append([]byte{}, good...), 0), 0o600)
	writeManifest(t, dir, []shelfEntry{
		{ID: "hash", Wasm: "hash.wasm", Digest: digest},
		{ID: "escape", Wasm: "../" + filepath.Base(outside) + "/hash.wasm", Digest: digest, Export: "sha256"},
		{ID: "link", Wasm: "link.wasm", Digest: digest, Export: "sha256"},
		{ID: "big", Wasm: "big.wasm", Digest: digest, Export: "sha256"},
		{ID: "swapped", Wasm: "other.wasm", Digest: digest, Export: "sha256"},
	})
	for id, rule := range map[string]string{"escape": "wasm-unreadable", "link": "wasm-unreadable", "big": "over-budget", "swapped": "digest-mismatch"} {
		if r := callShelf(t, relay, id, `{"input":"abc"}`); !r.refused(http.StatusOK, rule) {
			t.Errorf("%s answered %s, want %s", id, r.body, rule)
		}
	}
	hashServed(t, relay)
	served(t, relay)
}
