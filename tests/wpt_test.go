//go:build !js

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The web-platform-tests of WebMCP (tests/wpt, copied unmodified from wpt), each run as a mini-app:
// what the SDK's document.modelContext passes of the draft's own tests.

// wptFiles are the wpt files that run in one document, in tests/wpt/webmcp/imperative.
var wptFiles = []string{
	"executeTool-abort.https.html",
	"executeTool-events.https.html",
	"executeTool-input-validation.tentative.https.html",
	"executeTool-invalid-dictionary.https.html",
	"executeTool-self-unregistration.https.html",
	"object-arguments.https.html",
	"register_tool_invalid_subset_schema.tentative.https.html",
}

// wptMayFail are the subtests no script can pass in a sandboxed mini-app, and why: each stays
// failing for that reason alone. Every other subtest must pass.
var wptMayFail = map[string]string{
	// An event a script dispatches is never isTrusted.
	"toolactivated and toolcancel events are dispatched on window and document.modelContext during tool execution and cancellation": "isTrusted",
	// A mini-app is one document with no network: the child's /common/blank.html never loads.
	"toolactivated is dispatched at the ModelContext of the tool target document": "a same-origin child document",
	// It and executeTool-invalid-dictionary disagree: a string input that is not JSON is a
	// TypeError here ("hello") and UnknownError there ("invalid-json"). The SDK keeps the latter.
	"tool execution requires a JSON Object input argument; and Arrays are Objects": "contradicts executeTool-invalid-dictionary",
}

// wptMinPassed is the count of subtests that pass here, of wptTotal.
const (
	wptTotal     = 28
	wptMinPassed = 25
)

// wptPage turns a wpt file into one document: the harness and helpers inline in place of their
// <script src> tags (a mini-app has no network).
func wptPage(t *testing.T, root, file string, prelude string) string {
	t.Helper()
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	page := read("webmcp/imperative/" + file)
	inline := func(src, body string) {
		page = strings.ReplaceAll(page, `<script src="`+src+`"></script>`, "<script>\n"+body+"\n</script>")
	}
	inline("/resources/testharness.js", prelude+read("harness.js"))
	inline("/resources/testharnessreport.js", "")
	inline("/webmcp/resources/helpers.js", read("webmcp/resources/helpers.js"))
	inline("resources/helpers.js", read("webmcp/resources/helpers.js"))
	return page
}

// runWPT runs every file as a mini-app, with prelude before the harness, and returns each
// subtest's result by name. The files run at once, each a subtest with a relay and a tab of its
// own (its own origin, so no tab waits for another to let go of the workspace).
func runWPT(t *testing.T, prelude string) map[string]guestResult {
	root := filepath.Join(harness.RepoRoot(), "tests", "wpt")
	var mu sync.Mutex
	out := map[string]guestResult{}
	// t.Run returns once the parallel subtests it holds have all ended.
	t.Run("files", func(t *testing.T) {
		for _, file := range wptFiles {
			t.Run(file, func(t *testing.T) {
				t.Parallel()
				relay := harness.StartRelay(t)
				tab := harness.NewTab(t)
				tab.Allow(`.`) // the files provoke errors on purpose; what counts is #results
				openWorkspace(t, tab, relay.URL)
				id := openPage(t, tab, "wpt/"+file, wptPage(t, root, file, prelude), 0)
				harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).handshakes >= 1`, id), appBound)
				got := appResults(t, tab)
				mu.Lock()
				out[file] = got
				mu.Unlock()
			})
		}
	})
	return out
}

// tally counts the passed subtests and lists the failed ones, "file: name: detail".
func tally(results map[string]guestResult) (passed, total int, failed []string) {
	for _, file := range wptFiles {
		for _, r := range results[file].Results {
			total++
			if r.OK {
				passed++
			} else {
				failed = append(failed, file+": "+r.Name+": "+r.Detail)
			}
		}
	}
	return passed, total, failed
}

func TestWebMCPPassesItsWebPlatformTests(t *testing.T) {
	t.Parallel()
	results := runWPT(t, "")
	passed, total, failed := tally(results)
	t.Logf("WebMCP web-platform-tests: %d of %d subtests pass", passed, total)
	for _, f := range failed {
		t.Logf("failing: %s", f)
	}
	if total != wptTotal {
		t.Errorf("%d subtests ran, want %d", total, wptTotal)
	}
	for _, file := range wptFiles {
		for _, r := range results[file].Results {
			if !r.OK && wptMayFail[r.Name] == "" {
				t.Errorf("%s: %s: %s", file, r.Name, r.Detail)
			}
		}
	}
	if passed < wptMinPassed {
		t.Errorf("%d of %d subtests pass, want at least %d", passed, total, wptMinPassed)
	}
}

// TestWebMCPPolyfillWebPlatformTests runs the same files against @mcp-b/webmcp-polyfill (pinned
// in tools/web) in the same sandbox: the SDK's document.modelContext and its events are taken
// away before the polyfill installs its own. It records the polyfill's count beside ours
// (BENCHMARKS.md) and fails only if the files stop running.
func TestWebMCPPolyfillWebPlatformTests(t *testing.T) {
	t.Parallel()
	prelude := `delete document.modelContext; delete navigator.modelContext;
for (const k of ['ModelContext', 'ToolActivatedEvent', 'ToolCancelEvent']) delete window[k];
` + polyfill(t, "@mcp-b/webmcp-polyfill/dist/index.iife.js") + `
if (!document.modelContext || !document.modelContext.__isWebMCPPolyfill && document.modelContext[Symbol.for('voicebox.modelContext')]) throw new Error('the polyfill did not install');
`
	results := runWPT(t, prelude)
	passed, total, failed := tally(results)
	t.Logf("@mcp-b/webmcp-polyfill 5.1.0 on the WebMCP web-platform-tests: %d of %d subtests pass", passed, total)
	for _, f := range failed {
		t.Logf("failing: %s", f)
	}
	if total != wptTotal {
		t.Errorf("%d subtests ran, want %d", total, wptTotal)
	}
}
