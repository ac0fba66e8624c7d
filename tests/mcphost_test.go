//go:build !js

package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// basicServer is where ./build.sh test installs the pinned MCP Apps example server
// (tools/web/package.json).
var basicServer = filepath.Join(harness.RepoRoot(), ".cache", "web", "node_modules", "@modelcontextprotocol", "server-basic-vanillajs", "dist", "index.js")

// startBasicServer starts the real MCP Apps server from npm on a loopback port over Streamable
// HTTP and returns its host:port; it is stopped (by its PID) when the test ends.
func startBasicServer(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(basicServer); err != nil {
		t.Fatalf("the MCP Apps example server is not installed (%v): ./build.sh test installs it into .cache/web", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	port := harness.RestartablePort(t)
	cmd := exec.Command(node, basicServer)
	cmd.Env = append(os.Environ(), "PORT="+port, "NODE_ENV=production")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") {
				listening <- true
			}
		}
		close(listening)
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatal("the MCP Apps server ended before it listened")
		}
	case <-time.After(readyBound):
		t.Fatal("the MCP Apps server did not say it listens")
	}
	return "127.0.0.1:" + port
}

// TestRealMCPAppsServerAsExtension: the MCP Apps example server from npm
// (@modelcontextprotocol/server-basic-vanillajs, pinned), started on loopback over Streamable
// HTTP, admitted as a remote MCP extension: its tool called through the relay, its view named,
// a budget exhausted, and a server outside the plan's hosts refused at the gate.
func TestRealMCPAppsServerAsExtension(t *testing.T) {
	t.Parallel()
	host := startBasicServer(t)
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	descriptor := func(id, url string, maxRequests int) string {
		return fmt.Sprintf(`{"id":%q,"name":"Basic MCP App","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":%d},"tools":[],"mcp":{"url":%q}}`,
			id, host, maxRequests, url)
	}

	tools := admitRemote(t, relay, token, descriptor("basic", "http://"+host+"/mcp", 100), "basic")
	if !slices.Contains(tools, "basic__get-time") {
		t.Fatalf("the plan admits %v, want basic__get-time", tools)
	}
	l := getListing(t, relay.URL)
	admitted, _ := l["admitted"].([]any)
	var view string
	for _, a := range admitted {
		if e := a.(map[string]any); e["id"] == "basic" {
			view = fmt.Sprint(e["tools"].([]any)[0].(map[string]any)["view"])
		}
	}
	if view != "ui://get-time/mcp-app.html" {
		t.Fatalf("the tool's view is %q", view)
	}
	m := postAPI(t, relay.URL, "/api/extensions/call", token, `{"extension":"basic","tool":"basic__get-time","args":{}}`)
	obs, _ := m["observed"].(map[string]any)
	structured, _ := obs["structuredContent"].(map[string]any)
	if stamp, _ := structured["time"].(string); m["ok"] != true || !strings.Contains(stamp, "T") {
		t.Fatalf("get-time: %v", m)
	}
	if m := postAPI(t, relay.URL, "/api/extensions/call", token, `{"extension":"basic","tool":"basic__get-time","args":[1]}`); m["refused"] != "invalid-tool-arguments" {
		t.Fatalf("arguments that are no object: %v", m)
	}

	// A small budget runs out, and says so.
	admitRemote(t, relay, token, descriptor("tight", "http://"+host+"/mcp", 10), "tight")
	var last map[string]any
	for range 10 {
		if last = postAPI(t, relay.URL, "/api/extensions/call", token, `{"extension":"tight","tool":"tight__get-time","args":{}}`); last["refused"] == "budget-exhausted" {
			break
		}
	}
	if last["refused"] != "budget-exhausted" {
		t.Fatalf("10 requests never ran out: %v", last)
	}

	// Its view, in the sandbox: initialised, sized, and its own tools/call through approval.
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	appID := harness.Eval[string](tab, `voicebox.miniApps.openView('basic', 'basic__get-time').then(r => r.appId)`)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, appID), readyBound)
	harness.EvalInFrame[bool](tab, "about:srcdoc", `(document.getElementById('get-time-btn').click(), true)`)
	if summary := pendingApproval(t, tab); !strings.Contains(summary, "basic__get-time") {
		t.Fatalf("the view's call asks %q", summary)
	}
	clickApproval(t, tab, "approve")
	shown := ""
	for deadline := time.Now().Add(readyBound); time.Now().Before(deadline) && !strings.Contains(shown, "T"); time.Sleep(50 * time.Millisecond) {
		shown = harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('server-time').textContent`)
	}
	if !strings.Contains(shown, "T") || strings.Contains(shown, "ERROR") {
		t.Fatalf("the view shows %q after its call", shown)
	}
	if stats := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp`, appID)); stats["calls"] != float64(1) {
		t.Fatalf("the view's stats: %v", stats)
	}

	// An MCP client (as a model would) calls the tool: once the person approves, the page shows
	// that call's result in the view.
	loads := harness.Eval[int](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).loads`, appID))
	client, _ := connectMCP(t, relay, "desk")
	answered := make(chan map[string]any, 1)
	go func() { // the call waits for the approval below; t.Fatal belongs to the test's goroutine
		got := map[string]any{}
		ctx, cancel := context.WithTimeout(context.Background(), readyBound)
		defer cancel()
		res, err := client.CallTool(ctx, &mcp.CallToolParams{Name: "call_extension", Arguments: map[string]any{"extension": "basic", "name": "basic__get-time", "arguments": "{}"}})
		if err == nil && len(res.Content) > 0 {
			if text, ok := res.Content[0].(*mcp.TextContent); ok {
				json.Unmarshal([]byte(text.Text), &got)
			}
		}
		answered <- got
	}()
	if summary := pendingApproval(t, tab); !strings.Contains(summary, "basic__get-time") {
		t.Fatalf("the client's call asks %q", summary)
	}
	clickApproval(t, tab, "approve")
	got := <-answered
	structured, _ = got["structuredContent"].(map[string]any)
	stamp, _ := structured["time"].(string)
	if stamp == "" {
		t.Fatalf("the client's call answered %v", got)
	}
	harness.WaitFor[bool](tab, fmt.Sprintf(`(s => s.loads > %d && s.mcp.initialized)(voicebox.miniApps.stats(%q))`, loads, appID), readyBound)
	for deadline := time.Now().Add(readyBound); time.Now().Before(deadline) && shown != stamp; time.Sleep(50 * time.Millisecond) {
		shown = harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('server-time').textContent`)
	}
	if shown != stamp {
		t.Fatalf("the view shows %q, not the client's call's result %q", shown, stamp)
	}

	// The server under a name the plan does not list is refused before anything is sent.
	if m := postAPI(t, relay.URL, "/api/extensions/sideload", "", descriptor("aside", strings.Replace("http://"+host+"/mcp", "127.0.0.1", "localhost", 1), 10)); m["refused"] != "under-declared" {
		t.Fatalf("a server outside bounds.hosts: %v", m)
	}
}

// extAppsView is the test view (guests/mcp-apps-view.html) with the pinned ext-apps SDK inlined:
// its bundle's closing export becomes the object ExtApps, so the view is one self-contained
// document, as a ui:// resource must be.
func extAppsView(t *testing.T) string {
	t.Helper()
	return extAppsPage(t, "guests/mcp-apps-view.html")
}

// extAppsPage is the guest page name with the pinned ext-apps SDK inlined at its /*EXT_APPS*/.
func extAppsPage(t *testing.T, name string) string {
	t.Helper()
	bundle, err := os.ReadFile(filepath.Join(harness.RepoRoot(), ".cache", "web", "node_modules", "@modelcontextprotocol", "ext-apps", "dist", "src", "app-with-deps.js"))
	if err != nil {
		t.Fatalf("the ext-apps SDK is not installed (%v): ./build.sh test installs it into .cache/web", err)
	}
	js := string(bundle)
	at := strings.LastIndex(js, "export{")
	if at < 0 {
		t.Fatal("the ext-apps bundle has no closing export")
	}
	list := strings.TrimSuffix(strings.TrimSpace(js[at+len("export{"):]), ";")
	var fields []string
	for _, pair := range strings.Split(strings.TrimSuffix(list, "}"), ",") {
		local, name, ok := strings.Cut(strings.TrimSpace(pair), " as ")
		if !ok {
			name = local
		}
		fields = append(fields, name+":"+local)
	}
	page, err := guests.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(page), "/*EXT_APPS*/", js[:at]+"\nconst ExtApps={"+strings.Join(fields, ",")+"};\n", 1)
}

// TestMCPAppsViewWrittenHere: a view written with @modelcontextprotocol/ext-apps (pinned), served
// as the ui:// resource of a go-sdk server's tool and admitted as a remote MCP extension, shown in
// the sandbox: the handshake, the host context, the tool's input and result, a tools/call to its
// own server through approval, one to another server's tool refused, -32601 for a method the host
// does not have, and a teardown when closed. The same document opened as a workspace mini-app
// gets the same host, its tools/call going to the assistant's catalogue.
func TestMCPAppsViewWrittenHere(t *testing.T) {
	t.Parallel()
	view := extAppsView(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "views", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + args.Text}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://show/view.html"}}, InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "ui://show/view.html", Name: "view", MIMEType: "text/html;profile=mcp-app"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: view}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	host := strings.TrimPrefix(ts.URL, "http://")

	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	admitRemote(t, relay, token, fmt.Sprintf(`{"id":"local","name":"Views","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":100,"maxBytes":2097152},"tools":[],"mcp":{"url":%q}}`, host, ts.URL), "local")

	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	appID := harness.Eval[string](tab, `voicebox.miniApps.openView('local', 'local__show', {input: {city: 'Paris'}, result: {content: [{type: 'text', text: 'sunny'}]}}).then(r => r.appId)`)
	if summary := pendingApproval(t, tab); !strings.Contains(summary, "local__echo") {
		t.Fatalf("the view's call asks %q", summary)
	}
	clickApproval(t, tab, "approve")
	checkResults(t, appResults(t, tab), 9)
	stats := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q)`, appID))
	if m := stats["mcp"].(map[string]any); m["initialized"] != true || m["calls"] != float64(2) || stats["dropped"] != float64(0) {
		t.Fatalf("the view's stats: %v", stats)
	}
	harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.miniApps.close(%q), true)`, appID))
	if n := harness.Eval[float64](tab, fmt.Sprintf(`voicebox.miniApps.open().includes(%q) ? -1 : document.querySelectorAll('iframe.bridge').length`, appID)); n < 0 {
		t.Fatal("the closed view is still open")
	}
	// Its frame goes after its teardown; the next tab's frame must be the only srcdoc.
	harness.WaitFor[bool](tab, `document.querySelectorAll('iframe.bridge').length === 0`, readyBound)

	// The same document as a mini-app of the workspace.
	local := harness.NewTab(t)
	openWorkspace(t, local, relay.URL)
	content, _ := json.Marshal(view)
	harness.Eval[bool](local, fmt.Sprintf(`voicebox.must('files.write', {path: 'view.html', content: %s}).then(() => true)`, content))
	id := harness.Eval[string](local, `voicebox.miniApps.launch({path: 'view.html'}).then(r => r.appId)`)
	harness.WaitFor[bool](local, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, id), readyBound)
	checkResults(t, appResults(t, local), 5)
	if m := harness.Eval[map[string]any](local, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp`, id)); m["initialized"] != true || m["calls"] != float64(1) {
		t.Fatalf("the mini-app's stats: %v", m)
	}
}

// TestHostileMCPAppsView: a view that pushes at the MCP Apps host, opened as a workspace
// mini-app: a tools/call before its handshake (held until it ends, then served), a javascript:
// link (-32602), a
// resources/read the host does not serve (-32601), a ui/message that only fills the command box
// (nothing is sent), and a flood of size changes that stops it (message-budget-exceeded) while
// the page keeps working.
func TestHostileMCPAppsView(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	page, err := guests.ReadFile("guests/mcp-apps-hostile.html")
	if err != nil {
		t.Fatal(err)
	}
	content, _ := json.Marshal(string(page))
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: 'hostile-view.html', content: %s}).then(() => true)`, content))
	id := harness.Eval[string](tab, `voicebox.miniApps.launch({path: 'hostile-view.html'}).then(r => r.appId)`)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, id), readyBound)
	checkResults(t, appResults(t, tab), 6)
	if got := harness.Eval[string](tab, `document.getElementById('command').value`); got != "delete every file" {
		t.Fatalf("the command box holds %q", got)
	}
	if n := harness.Eval[int](tab, `document.querySelectorAll('#turns li').length`); n != 0 {
		t.Fatalf("a view's message was sent to the assistant: %d turns", n)
	}
	harness.EvalInFrame[bool](tab, "about:srcdoc", `(document.getElementById('flood').click(), true)`)
	rule := harness.WaitFor[string](tab, fmt.Sprintf(`(() => { const s = voicebox.miniApps.stats(%q); return s && s.stopped && s.stopped.rule; })()`, id), readyBound)
	if rule != "message-budget-exceeded" {
		t.Fatalf("the flood stopped the view with %q", rule)
	}
	if ok := harness.Eval[bool](tab, `voicebox.call('files.list', {dir: ''}).then(a => a.ok)`); !ok {
		t.Fatal("the page no longer lists files after the flood")
	}
}
