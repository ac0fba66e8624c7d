//go:build !js

package tests

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// Guests written to the standards, run unmodified: WebMCP as the draft defines it, the WebMCP
// polyfills from npm, and apps written for the original Voicebox.

//go:embed guests
var guests embed.FS

// guestResult is one case an app ran on itself, and what it saw go wrong.
type guestResult struct {
	Results []struct {
		Name   string
		OK     bool
		Detail string
	}
	Errors    []string
	Installed string // whose document.modelContext the app ended with
}

// openPage writes html at path and opens it as a mini-app (writeApp), returning its id once it
// registered at least tools tools.
func openPage(t *testing.T, tab *harness.Tab, path, html string, tools int) string {
	t.Helper()
	return writeApp(t, tab, path, html, tools)
}

// appResults waits for the app's #results[data-done] and reads it, from the frame's DOM.
func appResults(t *testing.T, tab *harness.Tab) guestResult {
	t.Helper()
	var raw string
	for i := 0; ; i++ {
		raw = harness.EvalInFrame[string](tab, "about:srcdoc", `(() => { const r = document.getElementById('results'); return r && r.dataset.done ? r.textContent : ''; })()`)
		if raw != "" {
			break
		}
		if i > 300 {
			t.Fatalf("the app wrote no results")
		}
		harness.Eval[bool](tab, `new Promise(r => setTimeout(() => r(true), 50))`)
	}
	var got guestResult
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("the app's results are not JSON: %v: %s", err, raw)
	}
	return got
}

// checkResults fails the test for every case that failed and every error the app saw.
func checkResults(t *testing.T, got guestResult, minCases int) {
	t.Helper()
	if len(got.Results) < minCases {
		t.Errorf("the app ran %d cases, want at least %d", len(got.Results), minCases)
	}
	for _, r := range got.Results {
		if !r.OK {
			t.Errorf("%s: %s", r.Name, r.Detail)
		}
	}
	for _, e := range got.Errors {
		t.Errorf("the app saw an uncaught error: %s", e)
	}
}

// refusedRule calls tool of appID from the page with args and returns the refusal's rule, or "ok".
func refusedRule(tab *harness.Tab, appID, tool, args string) string {
	return harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, %q, %s).then(() => 'ok', (e) => e.rule || String(e))`, appID, tool, args))
}

func TestWebMCPConformance(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	html, err := guests.ReadFile("guests/conformance.html")
	if err != nil {
		t.Fatal(err)
	}
	id := openPage(t, tab, "conformance.html", string(html), 1)
	got := appResults(t, tab)
	t.Logf("%d cases ran", len(got.Results))
	checkResults(t, got, 25)

	// What the app registered reached the worker's registry with its schema, under every spelling.
	tools := harness.Eval[[]string](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q)`, id))
	for _, want := range []string{"echo", "cart.add", "legacy", "needs_who", strings.Repeat("y", 128)} {
		if !contains(tools, want) {
			t.Errorf("the host lists %v, without %q", tools, want)
		}
	}
	for _, gone := range []string{"temp", "aborted", "patterned"} {
		if contains(tools, gone) {
			t.Errorf("the host still lists %q", gone)
		}
	}
	// navigator.modelContext with parameters: a call missing the required argument never runs.
	if got := refusedRule(tab, id, "needs_who", `{}`); got != "missing-argument" {
		t.Errorf("needs_who without who answered %q, want missing-argument", got)
	}
	// A pattern of document.modelContext holds for the model's calls too.
	for args, want := range map[string]string{`{"code": "ABC"}`: "invalid-argument-pattern", `{"code": "abc1"}`: "invalid-argument-pattern", `{"code": "abc"}`: "ok"} {
		if got := refusedRule(tab, id, "coded", args); got != want {
			t.Errorf("coded %s answered %q, want %q", args, got, want)
		}
	}
	if got := refusedRule(tab, id, "legacy", `{"n": "two"}`); got != "invalid-argument-type" {
		t.Errorf("legacy with a string answered %q, want invalid-argument-type", got)
	}
	// A dotted name reaches the model under a vendor-safe name, and a call by it runs the tool.
	ans := relay.Call(t, miniapp.ModelName(id, "cart.add"), map[string]any{"n": 2})
	if !ans.OK || !strings.Contains(string(ans.Observed), `"added":2`) {
		t.Fatalf("cart.add through the relay answered %s", ans.Raw)
	}
	if bad := relay.Call(t, miniapp.ModelName(id, "cart.add"), map[string]any{"n": 0}); bad.OK || bad.Refused != "invalid-argument-range" {
		t.Fatalf("cart.add with n=0 answered %s", bad.Raw)
	}
}

func TestAnAppWrittenForTheOriginalRuns(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	// The original Voicebox's style: window.voicebox, parameters, ready().
	page := `<!doctype html><title>Tally</title><p id="n">0</p><script>
window.voicebox.registerTool({
  name: 'add', description: 'Add to the tally',
  parameters: { type: 'object', properties: { by: { type: 'integer', minimum: 1 } }, required: ['by'] },
  execute: async ({ by }) => { const el = document.getElementById('n'); el.textContent = Number(el.textContent) + by; return { tally: Number(el.textContent) }; },
});
window.voicebox.ready();
</script>`
	id := openPage(t, tab, "tally.html", page, 1)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).ready`, id), appBound)
	got := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'add', {by: 3})`, id))
	if got["tally"] != 3.0 {
		t.Fatalf("add answered %v", got)
	}
	if rule := refusedRule(tab, id, "add", `{}`); rule != "missing-argument" {
		t.Fatalf("add without by answered %q", rule)
	}
	if shown := harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('n').textContent`); shown != "3" {
		t.Fatalf("the app shows %q", shown)
	}
}

// polyfill is the text of a pinned npm package's file, from the cache ./build.sh test fills.
func polyfill(t *testing.T, rel string) string {
	t.Helper()
	path := filepath.Join(harness.RepoRoot(), ".cache", "web", "node_modules", filepath.FromSlash(rel))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s is missing: ./build.sh test installs the pinned polyfills (tools/web/package.json) into .cache/web: %v", rel, err)
	}
	return string(data)
}

// polyfillApp is an app that loads a polyfill (inline, as a single-file app must), then registers
// one tool through whatever document.modelContext is now, one through navigator.modelContext and
// one through webMcp, each with a required argument, and reports what went wrong.
func polyfillApp(script string) string {
	return `<!doctype html><title>Polyfilled</title><pre id="results">running</pre>
<script>
window.__errors = [];
addEventListener('error', (e) => __errors.push(String(e.message)));
addEventListener('unhandledrejection', (e) => __errors.push('unhandled: ' + String(e.reason && e.reason.message || e.reason)));
</script>
<script>` + script + `</script>
<script>
(async () => {
  const results = [];
  const note = (name, detail) => results.push({ name, ok: !detail, detail: detail || '' });
  const schema = (key) => ({ type: 'object', properties: { [key]: { type: 'string' } }, required: [key] });
  try {
    await document.modelContext.registerTool({ name: 'via_document', description: 'through document.modelContext', inputSchema: schema('a'), execute: ({ a }) => ({ content: [{ type: 'text', text: 'document:' + a }] }) });
    note('document.modelContext.registerTool');
  } catch (err) { note('document.modelContext.registerTool', String(err && err.name) + ': ' + (err && err.message)); }
  try {
    await navigator.modelContext.registerTool({ name: 'via_navigator', description: 'through navigator.modelContext', inputSchema: schema('b'), execute: ({ b }) => 'navigator:' + b });
    note('navigator.modelContext.registerTool');
  } catch (err) { note('navigator.modelContext.registerTool', String(err && err.name) + ': ' + (err && err.message)); }
  const r = await webMcp.registerTool({ name: 'via_webmcp', description: 'through webMcp', parameters: schema('c'), execute: ({ c }) => 'webmcp:' + c }).result;
  note('webMcp.registerTool', r.ok ? '' : r.refused + ': ' + r.why);
  try {
    const names = (await document.modelContext.getTools()).map((t) => t.name).sort().join(',');
    note('getTools of the installed context lists what was registered through it', names.includes('via_document') ? '' : 'it lists ' + names);
  } catch (err) { note('getTools', String(err)); }
  const mc = document.modelContext;
  const installed = mc[Symbol.for('voicebox.modelContext')] ? 'voicebox' : mc.__isBrowserMcpServer ? 'mcp-b/global' : mc.__isWebMCPPolyfill ? 'mcp-b/webmcp-polyfill' : 'other';
  webMcp.ready();
  const box = document.getElementById('results');
  box.textContent = JSON.stringify({ results, errors: __errors, installed });
  box.dataset.done = '1';
})();
</script>`
}

func TestWebMCPPolyfillsCoexist(t *testing.T) {
	t.Parallel()
	// The strict polyfill finds document.modelContext installed and stays out of the way;
	// @mcp-b/global replaces it with its own, which mirrors every tool into the one it found.
	tests := []struct {
		name, file, installed string
	}{
		{"webmcp-polyfill", "@mcp-b/webmcp-polyfill/dist/index.iife.js", "voicebox"},
		{"global", "@mcp-b/global/dist/index.iife.js", "mcp-b/global"},
	}
	relay := harness.StartRelay(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := harness.NewTab(t)
			openWorkspace(t, tab, relay.URL)
			id := openPage(t, tab, tt.name+".html", polyfillApp(polyfill(t, tt.file)), 3)
			got := appResults(t, tab)
			checkResults(t, got, 4)
			if got.Installed != tt.installed {
				t.Errorf("document.modelContext is %s's, want %s's", got.Installed, tt.installed)
			}
			tools := harness.Eval[[]string](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q)`, id))
			for _, want := range []string{"via_document", "via_navigator", "via_webmcp"} {
				if !contains(tools, want) {
					t.Errorf("the host lists %v, without %q", tools, want)
				}
			}
			for tool, args := range map[string]string{"via_document": `{"a":"x"}`, "via_navigator": `{"b":"y"}`, "via_webmcp": `{"c":"z"}`} {
				if rule := refusedRule(tab, id, tool, `{}`); rule != "missing-argument" {
					t.Errorf("%s without its argument answered %q, want missing-argument", tool, rule)
				}
				if rule := refusedRule(tab, id, tool, args); rule != "ok" {
					t.Errorf("%s %s answered %q", tool, args, rule)
				}
			}
			out := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'via_document', {a: 'q'}).then(JSON.stringify)`, id))
			if !strings.Contains(out, "document:q") {
				t.Errorf("via_document answered %s", out)
			}
			if tt.name == "global" {
				// Its iframe transport announces itself to the parent: not our protocol, so the
				// card says it was ignored, and why.
				shown := harness.WaitFor[string](tab, fmt.Sprintf(`(() => { const s = document.querySelector('.app-card[data-app-id=%q] .app-ignored'); return s && !s.hidden ? s.textContent : ''; })()`, id), appBound)
				if !strings.Contains(shown, "1 message ignored: posted to the bridge's window") || !strings.Contains(shown, `type "mcp"`) {
					t.Errorf("the card says %q", shown)
				}
			}
			tab.Close()
		})
	}
}

func TestAModelContextInstalledAfterOursIsReadBack(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	// A library of the app's own replaces document.modelContext after the SDK, and mirrors
	// nothing into it: its tools reach the host through its getTools() and toolchange.
	page := `<!doctype html><title>Foreign</title><script>
(() => {
  const tools = new Map();
  const ctx = new EventTarget();
  ctx.registerTool = async (t) => { tools.set(t.name, t); ctx.dispatchEvent(new Event('toolchange')); };
  ctx.getTools = async () => [...tools.values()].map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, window, origin: self.origin }));
  ctx.executeTool = async (t, input) => JSON.stringify(await tools.get(t.name).execute(JSON.parse(input)));
  Object.defineProperty(document, 'modelContext', { value: ctx, configurable: true });
})();
document.modelContext.registerTool({ name: 'shout', description: 'Shout it', inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  execute: ({ q }) => q.toUpperCase() + '!' });
webMcp.registerTool({ name: 'more', description: 'Offer one more tool', execute: async () => {
  await document.modelContext.registerTool({ name: 'whisper', description: 'Whisper it', execute: () => 'psst' });
  return 'added';
} });
</script>`
	id := openPage(t, tab, "foreign.html", page, 2)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).includes('shout')`, id), appBound)
	if rule := refusedRule(tab, id, "shout", `{}`); rule != "missing-argument" {
		t.Fatalf("shout without q answered %q", rule)
	}
	if got := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'shout', {q: 'hi'})`, id)); got != "HI!" {
		t.Fatalf("shout answered %q", got)
	}
	harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'more', {})`, id))
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).includes('whisper')`, id), appBound)
	if got := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'whisper', {})`, id)); got != "psst" {
		t.Fatalf("whisper answered %q", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// guestHandler serves the protocol guests of tests/guests with the embedding headers an external
// app must send, naming host as the page that may frame them.
func guestHandler(host string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := guests.ReadFile("guests/" + strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil || !strings.HasSuffix(r.URL.Path, "-guest.html") {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "frame-ancestors 'self' "+host)
		h.Set("Cross-Origin-Embedder-Policy", "credentialless")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		w.Write([]byte(strings.ReplaceAll(string(data), "HOST", host)))
	})
}

func TestExternalGuestsInTheProtocolTheirAuthorUsed(t *testing.T) {
	t.Parallel()
	app := newOrigin(t)
	entry := func(name, file, protocol string) map[string]any {
		e := map[string]any{"name": name, "url": app.URL + "/" + file, "origin": app.URL}
		if protocol != "" {
			e["protocol"] = protocol
		}
		return e
	}
	reg, _ := json.Marshal(map[string]any{
		"vb":    entry("Voicebox guest", "voicebox-guest.html", ""),
		"tb":    entry("Thunderbolt guest", "thunderbolt-guest.html", "thunderbolt"),
		"rpc":   entry("JSON-RPC guest", "jsonrpc-guest.html", "jsonrpc"),
		"wrong": entry("Wrong protocol", "thunderbolt-guest.html", "voicebox"),
	})
	relay := harness.StartRelay(t, "MINI_APPS="+string(reg))
	app.serve(t, guestHandler(relay.URL))
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready' &&
		document.querySelector('#channel').dataset.state === 'connected'`, externalBound)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)

	for _, id := range []string{"vb", "tb", "rpc"} {
		t.Run(id, func(t *testing.T) {
			harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.externalApps.open(%q), true)`, id))
			// The handshake, and the tools listed after it.
			harness.WaitFor[bool](tab, fmt.Sprintf(`(() => { const s = voicebox.externalApps.state(%q); return s.live && s.tools.length === 2; })()`, id), externalBound)
			// The context, read in the protocol's shape.
			ctx := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.externalApps.context(%q)`, id))
			value, _ := ctx["value"].(map[string]any)
			if ctx["ok"] != true || !strings.HasSuffix(fmt.Sprint(value["title"]), "guest") || value["summary"] != "the label is none" {
				t.Fatalf("the context answered %v", ctx)
			}
			// A read-only call runs at once.
			if a := harness.Eval[callAnswer](tab, fmt.Sprintf(`voicebox.externalApps.callTool(%q, 'count', {})`, id)); !a.OK || a.Value.Text != "changed 0 times" {
				t.Fatalf("count answered %+v", a)
			}
			// A write call waits for the person; approved, it runs and says so.
			harness.Eval[bool](tab, fmt.Sprintf(`(window.__call = voicebox.externalApps.callTool(%q, 'set_label', {label: 'new'}), true)`, id))
			harness.WaitFor[bool](tab, fmt.Sprintf(`!!document.querySelector('.xa-card[data-app-id=%q] .xa-approval[data-tool="set_label"] .xa-approve')`, id), externalBound)
			harness.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('.xa-card[data-app-id=%q] .xa-approval[data-tool="set_label"] .xa-approve').click(), true)`, id))
			if a := harness.Eval[map[string]any](tab, `window.__call`); a["ok"] != true || fmt.Sprint(a["value"]) != "map[approval:approved text:label is new]" {
				t.Fatalf("the approved set_label answered %v", a)
			}
			ctx = harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.externalApps.context(%q)`, id))
			if value, _ := ctx["value"].(map[string]any); value["summary"] != "the label is new" {
				t.Fatalf("after the call the context says %v", ctx)
			}
			harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.externalApps.close(%q), true)`, id))
		})
	}

	t.Run("a request the host has no method for is answered -32601", func(t *testing.T) {
		harness.Eval[bool](tab, `(voicebox.externalApps.open('rpc'), true)`)
		harness.WaitFor[bool](tab, `voicebox.externalApps.state('rpc').live`, externalBound)
		ignored := harness.WaitFor[map[string]any](tab, `(() => { const g = voicebox.externalApps.state('rpc').stats.ignored; return g.total > 0 && g; })()`, externalBound)
		if !strings.Contains(fmt.Sprint(ignored["samples"]), "unknown method ui/teleport") {
			t.Fatalf("the ignored messages are %v", ignored)
		}
		harness.Eval[bool](tab, `(voicebox.externalApps.close('rpc'), true)`)
	})

	t.Run("a guest speaking another protocol than its entry says is told apart from a silent one", func(t *testing.T) {
		harness.Eval[bool](tab, `(voicebox.externalApps.open('wrong'), true)`)
		shown := harness.WaitFor[string](tab, `(() => { const s = document.querySelector('.xa-card[data-app-id="wrong"] .app-ignored'); return s && !s.hidden ? s.textContent : ''; })()`, externalBound)
		if !strings.Contains(shown, "ignored: wrong marker: \"thunderbolt-miniapp\" is the thunderbolt protocol") || !strings.Contains(shown, "method \"ui/initialize\"") {
			t.Fatalf("the card says %q", shown)
		}
		if harness.Eval[bool](tab, `voicebox.externalApps.state('wrong').live`) {
			t.Fatal("the app connected in the wrong protocol")
		}
	})
}

func TestAFolderAppLoadsItsSiblingsAndNothingElse(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	files := map[string]string{
		"outside.mjs":        `export const secret = 'outside';`,
		"clock/helper.mjs":   `import { shout } from './lib/util.mjs'; export const greet = (who) => shout('Hello, ' + who);`,
		"clock/lib/util.mjs": `export const shout = (s) => s + '!';`,
		"clock/img/logo.svg": `<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10"/></svg>`,
		"clock/style.css":    `#logo { width: 40px; }`,
		"clock/index.html": `<!doctype html><title>Folder clock</title>
<link rel="stylesheet" href="style.css">
<img id="logo" src="img/logo.svg">
<script type="module">
import { greet } from './helper.mjs';
const attempt = (p) => p.then(() => 'loaded', () => 'refused');
const img = document.getElementById('logo');
const imgLoaded = img.complete ? Promise.resolve(img.naturalWidth) : new Promise((r) => { img.onload = () => r(img.naturalWidth); img.onerror = () => r(0); });
const results = (async () => ({
  image: await imgLoaded,
  style: getComputedStyle(img).width,
  parent: await attempt(import('../outside.mjs')),
  dot: await attempt(import('./.secret.mjs')),
  rooted: await attempt(import('/outside.mjs')),
  api: await attempt(fetch('/api/health')),
  apiModule: await attempt(import('/api/health')),
}))();
await document.modelContext.registerTool({ name: 'greet', description: 'Greet someone', inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] }, execute: ({ who }) => greet(who) });
await document.modelContext.registerTool({ name: 'results', description: 'What loaded', execute: () => results });
</script>`,
	}
	for _, dir := range []string{"clock", "clock/lib", "clock/img"} {
		harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.mkdir', {path: %q}).then(() => true)`, dir))
	}
	for name, body := range files {
		content, _ := json.Marshal(body)
		harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: %q, content: %s}).then(() => true)`, name, content))
	}
	id := launchApp(t, tab, `{path: 'clock/index.html'}`, 2)
	if got := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'greet', {who: 'Ada'})`, id)); got != "Hello, Ada!" {
		t.Fatalf("greet answered %q", got)
	}
	got := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'results', {})`, id))
	want := map[string]any{"image": 20.0, "style": "40px", "parent": "refused", "dot": "refused", "rooted": "refused", "api": "refused", "apiModule": "refused"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: the app saw %v, want %v (all: %v)", k, got[k], v, got)
		}
	}

	// Saved to the shelf, the folder goes with it: with the workspace's copy gone, the shelf's
	// runs, siblings and all; deleted, all of it goes.
	saved := harness.Eval[map[string]any](tab, `voicebox.must('miniapps.save', {name: 'clock/index.html'})`)
	harness.Eval[bool](tab, `voicebox.must('files.delete', {path: 'clock/index.html'}).then(() => true)`)
	harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.miniApps.close(%q), true)`, id))
	appID := fmt.Sprint(saved["appId"])
	shelfID := launchApp(t, tab, fmt.Sprintf(`{name: %q}`, appID), 2)
	if st := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.list().then(l => l.find(e => e.appId === %q).source)`, shelfID)); st != "shelf" {
		t.Fatalf("the saved app comes from %q, want the shelf", st)
	}
	if got := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'greet', {who: 'Grace'})`, shelfID)); got != "Hello, Grace!" {
		t.Fatalf("from the shelf, greet answered %q", got)
	}
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('miniapps.delete', {id: %q}).then(() => true)`, shelfID))
	if n := harness.Eval[int](tab, `voicebox.miniApps.list().then(l => l.filter(e => e.source === 'shelf' && /clock/i.test(e.title + e.fileName)).length)`); n != 0 {
		t.Fatalf("the shelf still lists %d clock apps", n)
	}
}

// formApp is an app with two declarative tools: search answers through respondWith, note
// (toolautosubmit) with the values it was given. script runs first (a polyfill, or nothing).
func formApp(script string) string {
	return `<!doctype html><title>Forms</title><script>` + script + `</script>
<form toolname="search" tooldescription="Search the notes">
  <label>Words <input name="q" required toolparamdescription="the words to look for"></label>
  <select name="scope"><option>all</option><option>titles</option></select>
  <button>Search</button>
</form>
<form toolname="note" tooldescription="Add a note" toolautosubmit>
  <input name="text" required maxlength="20"> <input type="checkbox" name="pinned">
</form>
<script>
document.querySelector('form[toolname=search]').addEventListener('submit', (e) => {
  e.preventDefault();
  if (e.agentInvoked) e.respondWith(Promise.resolve({ found: e.target.q.value, scope: e.target.scope.value }));
});
</script>`
}

func TestFormsWithToolnameAreTools(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for _, tt := range []struct{ name, script string }{
		{"sdk", ""},
		// Its declarative forms never registered before: the polyfill stands aside for the SDK's
		// document.modelContext, and with it its form tools.
		{"webmcp-polyfill", polyfill(t, "@mcp-b/webmcp-polyfill/dist/index.iife.js")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tab := harness.NewTab(t)
			openWorkspace(t, tab, relay.URL)
			id := openPage(t, tab, "forms-"+tt.name+".html", formApp(tt.script), 2)
			got := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'search', {q: 'tea', scope: 'titles'}).then(JSON.stringify)`, id))
			if got != `{"found":"tea","scope":"titles"}` {
				t.Errorf("search answered %s", got)
			}
			if shown := harness.EvalInFrame[string](tab, "about:srcdoc", `document.querySelector('input[name=q]').value`); shown != "tea" {
				t.Errorf("the form shows %q; the call should have filled it", shown)
			}
			for args, want := range map[string]string{`{}`: "missing-argument", `{"q": "x", "scope": "everything"}`: "invalid-argument-enum"} {
				if rule := refusedRule(tab, id, "search", args); rule != want {
					t.Errorf("search %s answered %q, want %q", args, rule, want)
				}
			}
			got = harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.call(%q, 'note', {text: 'buy milk', pinned: true}).then(JSON.stringify)`, id))
			if got != `{"text":"buy milk","pinned":true}` {
				t.Errorf("note answered %s", got)
			}
			if rule := refusedRule(tab, id, "note", `{"text": "`+strings.Repeat("x", 21)+`"}`); rule != "invalid-argument-length" {
				t.Errorf("note over its maxlength answered %q", rule)
			}
			// A form that leaves the document takes its tool with it.
			harness.EvalInFrame[bool](tab, "about:srcdoc", `(document.querySelector('form[toolname=note]').remove(), true)`)
			harness.WaitFor[bool](tab, fmt.Sprintf(`!voicebox.miniApps.tools(%q).includes('note')`, id), appBound)
			tab.Close()
		})
	}
}

// TestTextAnAppWritesDoesNotSearchForForms holds the SDK's watch for declarative forms to what can
// move one: a tool that writes text (a score, a status line: most tools, on every call) does not
// have the SDK search the app's whole document again, while an element that comes with a form
// inside it still registers that form's tool. The app counts the SDK's searches in its own
// document (the SDK runs in the app's world, the test's evaluations in an isolated one).
func TestTextAnAppWritesDoesNotSearchForForms(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	counting := `const search = Document.prototype.querySelectorAll;
Document.prototype.querySelectorAll = function (selector) {
  if (selector === 'form[toolname]') document.documentElement.dataset.searches = String(Number(document.documentElement.dataset.searches || 0) + 1);
  return search.call(this, selector);
};`
	id := openPage(t, tab, "forms-counted.html", formApp(counting)+`<p id="status">ready</p>`, 2)
	searches := func() int {
		return harness.EvalInFrame[int](tab, "about:srcdoc", `new Promise((resolve) => setTimeout(resolve, 50)).then(() => Number(document.documentElement.dataset.searches || 0))`)
	}
	before := searches()
	harness.EvalInFrame[bool](tab, "about:srcdoc", `(document.getElementById('status').textContent = 'written', document.body.append('more text'), true)`)
	if after := searches(); after != before {
		t.Errorf("writing text searched the document for forms %d times", after-before)
	}
	harness.EvalInFrame[bool](tab, "about:srcdoc", `(() => {
		const box = document.createElement('div');
		box.innerHTML = '<form toolname="later" tooldescription="Comes later" toolautosubmit><input name="x"></form>';
		document.body.append(box);
		return true;
	})()`)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).includes('later')`, id), appBound)
	if after := searches(); after == before {
		t.Errorf("a form that came inside an element was registered without a search: the count does not count")
	}
}
