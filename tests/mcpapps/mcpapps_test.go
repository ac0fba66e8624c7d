//go:build !js

package mcpapps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// appsServers is where ./build.sh test installs the pinned MCP Apps example servers
// (tools/mcp-apps/package.json).
var appsServers = filepath.Join(harness.RepoRoot(), ".cache", "mcp-apps", "node_modules", "@modelcontextprotocol")

// appsStartBound bounds an example server's start: the larger ones load for many seconds on a
// loaded machine before they listen.
const appsStartBound = 3 * harness.ReadyBound

// exampleServer is one MCP Apps example server of ext-apps 2.0.3 and what the test does with it.
type exampleServer struct {
	// name is the package's, @modelcontextprotocol/server-NAME.
	name string
	// viewNeeds says why the view cannot do its work on loopback alone (the network it needs);
	// such a server's tools and main tool are checked, its view is not opened.
	viewNeeds string
	// main is the server's main tool (the one with the view), args a model's arguments to it and
	// want what its answer holds.
	main, args, want string
	// rendered is true in the view's frame (an isolated world: its DOM only) once the view shows
	// what it is for.
	rendered string
	// callBack, when the view calls a tool of its server, starts that (in the frame's DOM; "" when
	// the view calls on its own) and calledBack is true in the frame once the answer is shown.
	// Views that call nothing leave calledBack "".
	callBack, calledBack string
	// callFails, when the view's call cannot be made in this host, says why: the test checks that
	// the view says the call failed (so a change that makes it work is seen) and reports it.
	callFails string
	// withPDF starts the server with a PDF the test writes; PDF_PATH in args is its path.
	withPDF bool
	// withResult opens the view with the main tool's call (input and result), as the page does
	// when the model calls it; without, the view starts empty and shows only what it calls.
	withResult bool
}

// The basic examples are one view written with six frameworks: a button that calls get-time.
const (
	clickGetTime  = `([...document.querySelectorAll('button')].find(b => /Get Server Time/.test(b.textContent)).click(), true)`
	basicRendered = `[...document.querySelectorAll('button')].some(b => /Get Server Time/.test(b.textContent))`
	basicShown    = `/\d{4}-\d\d-\d\dT\d\d:\d\d/.test(document.body.innerText) && !document.body.innerText.includes('[ERROR]')`
)

// exampleServers are the 19 example servers published for ext-apps 2.0.3.
var exampleServers = []exampleServer{
	{name: "basic-vanillajs", main: "get-time", args: `{}`, want: `"structuredContent":{"time":"`, rendered: basicRendered, callBack: clickGetTime, calledBack: basicShown},
	{name: "basic-preact", main: "get-time", args: `{}`, want: `"text":"2`, rendered: basicRendered, callBack: clickGetTime, calledBack: basicShown},
	{name: "basic-react", main: "get-time", args: `{}`, want: `"text":"2`, rendered: basicRendered, callBack: clickGetTime, calledBack: basicShown},
	{name: "basic-solid", main: "get-time", args: `{}`, want: `"text":"2`, rendered: basicRendered, callBack: clickGetTime, calledBack: basicShown},
	{name: "basic-svelte", main: "get-time", args: `{}`, want: `"text":"2`, rendered: basicRendered, callBack: clickGetTime, calledBack: basicShown},
	{name: "basic-vue", main: "get-time", args: `{}`, want: `"text":"2`, rendered: basicRendered, callBack: clickGetTime, calledBack: basicShown,
		callFails: "Vue's reactivity reads a property of window.parent, which throws (SecurityError) where the view's frame is cross-origin to its parent, as the sandbox keeps it"},
	{name: "budget-allocator", main: "get-budget-data", args: `{}`, want: `"categories"`, withResult: true,
		rendered: `document.querySelectorAll('#sliders-container input[type=range]').length > 0 && !!document.querySelector('#budget-chart')`},
	{name: "cohort-heatmap", main: "get-cohort-data", args: `{"metric":"retention"}`, want: `"cohorts"`, withResult: true,
		rendered:   `document.body.innerText.includes('%')`,
		calledBack: `document.body.innerText.includes('%')`},
	{name: "customer-segmentation", main: "get-customer-data", args: `{"segment":"All"}`, want: `"customers"`, withResult: true,
		// The view asks for its data itself, on a timer that may fire before its handshake ends.
		rendered:   `!!document.querySelector('#scatter-chart') && document.querySelectorAll('#legend *').length > 0`,
		calledBack: `document.querySelectorAll('#legend *').length > 0`},
	{name: "scenario-modeler", main: "get-scenario-data", args: `{}`, want: `"templates"`, withResult: true,
		rendered: `!!document.querySelector('canvas') && document.body.innerText.length > 50`},
	{name: "shadertoy", main: "render-shadertoy", args: `{"fragmentShader":"void mainImage(out vec4 c, in vec2 p) { c = vec4(p / iResolution.xy, 0.5, 1.0); }"}`, want: `"ok":true`, withResult: true,
		rendered: `!!document.querySelector('#canvas') && document.querySelector('#canvas').width > 0`},
	{name: "sheet-music", main: "play-sheet-music", args: `{"abcNotation":"X:1\nT:Scale\nM:4/4\nL:1/4\nK:C\nC D E F | G A B c |"}`, want: `"ok":true`, withResult: true,
		rendered: `!!document.querySelector('#sheet-music svg')`},
	{name: "system-monitor", main: "get-system-info", args: `{}`, want: `"hostname"`, withResult: true,
		rendered:   `document.querySelector('#info-hostname').textContent.trim().length > 0`,
		calledBack: `/\d+(\.\d+)?%/.test(document.querySelector('#memory-percent').textContent)`},
	{name: "threejs", main: "show_threejs_scene", args: `{}`, want: `"ok":true`, withResult: true,
		rendered: `!!document.querySelector('canvas')`},
	{name: "transcript", main: "transcribe", args: `{}`, want: `"ok":true`, withResult: true,
		rendered: `!!document.querySelector('#start-btn')`},
	// The server reads a PDF from arXiv unless given files: it is given one the test writes, and
	// the model asks for it by its path (PDF_PATH, filled in when the server starts).
	{name: "pdf", main: "display_pdf", args: `{"url":"PDF_PATH"}`, want: `"viewUUID"`, withResult: true, withPDF: true,
		rendered: `!!document.querySelector('canvas')`,
		// The viewer reads the PDF's bytes through read_pdf_bytes and shows its page count.
		calledBack: `/of\s*1\b/.test(document.body.innerText) && getComputedStyle(document.getElementById('error')).display === 'none'`},
	// These three answer offline, but their views (or the main tool's work) need the network.
	{name: "map", main: "show-map", args: `{"west":-0.5,"south":51.3,"east":0.3,"north":51.7}`, want: `Displaying globe`,
		viewNeeds: "the view loads CesiumJS and its map tiles from the network (and geocode asks OpenStreetMap's Nominatim)"},
	{name: "video-resource", main: "play_video", args: `{"videoId":"bunny-1mb"}`, want: `"videoUri"`,
		viewNeeds: "the server fetches the video the view reads from a CDN"},
	{name: "wiki-explorer", main: "get-first-degree-links", args: `{"url":"https://en.wikipedia.org/wiki/Model_Context_Protocol"}`, want: `fetch failed`,
		viewNeeds: "the server reads Wikipedia (its main tool answers, saying the fetch failed)"},
}

// startExampleServer starts example server name on a loopback port over Streamable HTTP and
// returns its host:port; it is stopped (by its PID) when the test ends.
func startExampleServer(t *testing.T, name string, args ...string) string {
	t.Helper()
	index := filepath.Join(appsServers, "server-"+name, "dist", "index.js")
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("the MCP Apps example server %s is not installed (%v): ./build.sh test installs it into .cache/mcp-apps", name, err)
	}
	return harness.StartListeningNode(t, "the example server "+name, false, appsStartBound, append([]string{index}, args...)...)
}

// onePagePDF is a PDF of one page that shows text: the objects, then a cross-reference table
// of their byte offsets.
func onePagePDF(text string) []byte {
	stream := fmt.Sprintf("BT /F1 24 Tf 72 720 Td (%s) Tj ET", text)
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return []byte(b.String())
}

// serverTools lists the tools the server at host offers any MCP client (the test's own
// session, straight to the server).
func serverTools(t *testing.T, host string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.ReadyBound)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "count", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + host + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", host, err)
	}
	defer s.Close()
	res, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list of %s: %v", host, err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// approveWhile approves each approval the page asks until cond holds in the view's frame or the
// bound passes; it reports whether cond held.
func approveWhile(tab *harness.Tab, cond string) bool {
	for deadline := time.Now().Add(harness.ReadyBound); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if harness.EvalInFrame[bool](tab, "about:srcdoc", `(() => { try { return !!(`+cond+`) } catch { return false } })()`) {
			return true
		}
		harness.Eval[bool](tab, `(() => { const b = document.querySelector('#approvals:not([hidden]) li.approval button.approve'); if (b) b.click(); return true })()`)
	}
	return false
}

// frameShows is the start of what the view's frame shows, text and markup, for a failure's message.
func frameShows(tab *harness.Tab) string {
	return harness.EvalInFrame[string](tab, "about:srcdoc", `(document.documentElement.dataset.errs || '') + document.body.innerText.slice(0, 400) + '\n--\n' + document.body.innerHTML.slice(0, 1200)`)
}

// TestMCPAppsExampleServers: each of the 19 MCP Apps example servers of ext-apps 2.0.3 (pinned
// npm packages) is started on loopback and admitted as a remote MCP extension: every tool it
// lists is offered and its main tool answers through the relay; unless the view needs the
// network, it opens in the page's sandbox and renders (a check of the frame's DOM), and a view
// that calls its server's tools has its call answered through the bridge and shows the answer.
// Each server is a subtest with a relay and a tab of its own (its own origin, so its tab holds
// its workspace with no other tab waiting on it), and they run at once; the table of outcomes is
// logged in the order of exampleServers.
func TestMCPAppsExampleServers(t *testing.T) {
	rows := make([]string, len(exampleServers))
	// A test's cleanup runs once its parallel subtests have all ended.
	t.Cleanup(func() {
		table := []string{"server | tools offered/total | main tool answers | view renders | view calls back"}
		for _, row := range rows {
			if row != "" {
				table = append(table, row)
			}
		}
		t.Logf("MCP Apps example servers of ext-apps 2.0.3:\n%s", strings.Join(table, "\n"))
	})
	for i, s := range exampleServers {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			runExampleServer(t, s, &rows[i])
		})
	}
}

// runExampleServer runs server s against a relay and a tab of its own and writes its row of the
// table of outcomes to row when it ends, passed or failed.
func runExampleServer(t *testing.T, s exampleServer, row *string) {
	offered, total, answers, renders, calls := 0, 0, "no", "no", "n/a"
	defer func() {
		*row = fmt.Sprintf("%s | %d/%d | %s | %s | %s", s.name, offered, total, answers, renders, calls)
	}()
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	var serverArgs []string
	if s.withPDF {
		pdf := filepath.Join(t.TempDir(), "one-page.pdf")
		if err := os.WriteFile(pdf, onePagePDF("Voicebox 1"), 0o644); err != nil {
			t.Fatal(err)
		}
		serverArgs = append(serverArgs, pdf)
		quoted, _ := json.Marshal(pdf)
		s.args = strings.ReplaceAll(s.args, `"PDF_PATH"`, string(quoted))
	}
	host := startExampleServer(t, s.name, serverArgs...)
	listed := serverTools(t, host)
	total = len(listed)
	id := strings.ReplaceAll(s.name, "-", "")
	raw := fmt.Sprintf(`{"id":%q,"name":%q,"runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":1000,"maxBytes":%d},"tools":[],"mcp":{"url":"http://%s/mcp"}}`,
		id, s.name, host, 8<<20, host)
	harness.AdmitRemote(t, relay, token, raw, id)
	offered = len(harness.OfferedTools(harness.GetListing(t, relay.URL), id))
	if offered != total {
		b, _ := json.Marshal(harness.GetListing(t, relay.URL))
		t.Errorf("%d of the %d tools %v are offered\n%s", offered, total, listed, harness.Clip(string(b)))
	}

	tool := id + "__" + s.main
	m := harness.PostAPI(t, relay.URL, "/api/extensions/call", token, fmt.Sprintf(`{"extension":%q,"tool":%q,"args":%s}`, id, tool, s.args))
	b, _ := json.Marshal(m)
	if m["ok"] != true || !strings.Contains(string(b), s.want) {
		t.Fatalf("%s%s answered %s, want ok and %q in it", s.main, s.args, harness.Clip(string(b)), s.want)
	}
	answers = "yes"
	if s.viewNeeds != "" {
		renders, calls = "not run: "+s.viewNeeds, ""
		return
	}

	// A tab of the shared browser each: a view that fails fails its own subtest.
	tab := harness.NewTab(t)
	harness.OpenWorkspace(t, tab, relay.URL)
	call := "{}"
	if s.withResult {
		observed, _ := json.Marshal(m["observed"])
		call = fmt.Sprintf(`{input: %s, result: %s}`, s.args, observed)
	}
	appID := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.openView(%q, %q, %s).then(r => r.appId)`, id, tool, call))
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, appID), harness.ReadyBound)
	if !approveWhile(tab, s.rendered) {
		t.Fatalf("the view never showed what it is for (%s); it shows:\n%s", s.rendered, frameShows(tab))
	}
	renders = "yes"

	if s.calledBack == "" {
		return
	}
	calls = "no"
	harness.EvalInFrame[bool](tab, "about:srcdoc", `(() => { const sc = document.createElement('script'); sc.textContent = "const e0 = console.error; console.error = (...a) => { document.documentElement.dataset.errs = (document.documentElement.dataset.errs || '') + a.map(x => x && x.stack || String(x)).join(' ') + ' | '; e0(...a); }"; document.head.append(sc); return true })()`)
	if s.callBack != "" {
		harness.EvalInFrame[bool](tab, "about:srcdoc", s.callBack)
	}
	if s.callFails != "" {
		if !approveWhile(tab, `document.body.innerText.includes('[ERROR]')`) {
			t.Fatalf("the view's call was expected to fail (%s); it shows:\n%s", s.callFails, frameShows(tab))
		}
		calls = "no: " + s.callFails
		return
	}
	if !approveWhile(tab, s.calledBack) {
		t.Fatalf("the view's call was never answered and shown (%s); it shows:\n%s\nthe relay's log of %s:\n%s", s.calledBack, frameShows(tab), id, extensionLog(relay, id))
	}
	if stats := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp`, appID)); stats["calls"].(float64) < 1 {
		t.Fatalf("the view shows an answer but made no call: %v", stats)
	}
	calls = "yes"
}

// extensionLog is the relay's log lines about extension id (its MCP session's requests, refusals
// and ends), the last 40, for a failure's message.
func extensionLog(relay *harness.Relay, id string) string {
	var lines []string
	for line := range strings.SplitSeq(relay.Stderr(), "\n") {
		if strings.Contains(line, `"extension":"`+id+`"`) {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
