//go:build !js

package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestMCPAppsViewOpensForEveryCaller: an MCP client calls a remote tool that has a view (the
// pinned MCP Apps example server) as a model does, by its name alone, leaving out
// call_extension's optional extension. No view is open before; once the person approves, the page
// opens the tool's view and shows that call's result in it.
func TestMCPAppsViewOpensForEveryCaller(t *testing.T) {
	t.Parallel()
	host := startBasicServer(t)
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	raw := fmt.Sprintf(`{"id":"basic","name":"Basic MCP App","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":100},"tools":[],"mcp":{"url":%q}}`,
		host, "http://"+host+"/mcp")
	if tools := admitRemote(t, relay, token, raw, "basic"); !slices.Contains(tools, "basic__get-time") {
		t.Fatalf("the plan admits %v, want basic__get-time", tools)
	}
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	const appID = "view-basic-get-time"
	if open := harness.Eval[[]string](tab, `voicebox.miniApps.open()`); slices.Contains(open, appID) {
		t.Fatalf("the view is open before any call: %v", open)
	}

	client, _ := connectMCP(t, relay, "desk")
	answered := make(chan string, 1)
	go func() { // the call waits for the approval below; t.Fatal belongs to the test's goroutine
		ctx, cancel := context.WithTimeout(context.Background(), readyBound)
		defer cancel()
		res, err := client.CallTool(ctx, &mcp.CallToolParams{Name: "call_extension", Arguments: map[string]any{"name": "basic__get-time", "arguments": "{}"}})
		text := ""
		if err == nil && len(res.Content) > 0 {
			if c, ok := res.Content[0].(*mcp.TextContent); ok {
				text = c.Text
			}
		}
		answered <- text
	}()
	if summary := pendingApproval(t, tab); !strings.Contains(summary, "basic__get-time") {
		t.Fatalf("the client's call asks %q", summary)
	}
	clickApproval(t, tab, "approve")
	got := <-answered
	at := strings.Index(got, `"time":"`)
	if at < 0 {
		t.Fatalf("the client's call answered %q", got)
	}
	stamp, _, _ := strings.Cut(got[at+len(`"time":"`):], `"`)

	harness.WaitFor[bool](tab, fmt.Sprintf(`(s => !!s && s.mcp.initialized)(voicebox.miniApps.stats(%q))`, appID), readyBound)
	shown := ""
	for deadline := time.Now().Add(readyBound); time.Now().Before(deadline) && shown != stamp; time.Sleep(50 * time.Millisecond) {
		shown = harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('server-time').textContent`)
	}
	if shown != stamp {
		t.Fatalf("the view shows %q, not the client's call's result %q", shown, stamp)
	}
}
