//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestAViewCannotWidenItsPolicyBeyondTheHosts: an MCP Apps view whose resource declares, in
// _meta.ui.csp, everything that could widen its sandbox's policy: "*", schemes alone, wildcards,
// CSP keywords, a second directive smuggled into a domain, a host with a path, a list that is
// not a list, and 1,000 domains. It is given nothing (no policy token), each drop is named, the
// drops are bounded, a bridge framed with a guessed token keeps connect-src 'none', and the
// relay serves the next request.
func TestAViewCannotWidenItsPolicyBeyondTheHosts(t *testing.T) {
	t.Parallel()
	many := make([]any, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("https://h%d.example", i)
	}
	var own string // the server's own origin, known once it listens
	srv := mcp.NewServer(&mcp.Implementation{Name: "wide", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://wide/view.html"}}, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shown"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "ui://wide/view.html", Name: "view", MIMEType: "text/html;profile=mcp-app"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			csp := map[string]any{
				"connectDomains": []any{"*", "data:", "blob:", "http:", "https:", "ws:", "'self'", "'unsafe-eval'",
					"http://*", "https://*.example", strings.Replace(own, "127.0.0.1", "*", 1),
					own + "/path", own + "?q", own + "; script-src *", own + " https://evil.example", "javascript:alert(1)", "ftp://" + strings.TrimPrefix(own, "http://"),
					"http://user@" + strings.TrimPrefix(own, "http://")},
				"resourceDomains": many,
				"frameDomains":    "*",
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: "<!doctype html><p>wide</p>",
				Meta: mcp.Meta{"ui": map[string]any{"csp": csp}}}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	own = ts.URL
	host := strings.TrimPrefix(ts.URL, "http://")

	relay := harness.StartRelay(t)
	desc := fmt.Sprintf(`{"id":"wide","name":"Wide","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":100},"tools":[],"mcp":{"url":%q}}`, host, ts.URL)
	if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(desc), false); r.status != http.StatusOK {
		t.Fatalf("sideload: %d %s", r.status, r.body)
	}
	admit := map[string]any{"id": "wide", "decision": "admit", "confirm": true}
	if r := postJSON(t, relay, "/api/extensions/admit", admit, true); r.status != http.StatusOK {
		t.Fatalf("admit: %d %s", r.status, r.body)
	}
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}
	waitFor(t, "the server's tools staged", func() bool {
		return strings.Contains(send(t, nil, http.MethodGet, relay.URL+"/api/extensions", token, "").body, `"wide__show"`)
	})
	if r := postJSON(t, relay, "/api/extensions/admit", admit, true); r.status != http.StatusOK {
		t.Fatalf("admit the tools: %d %s", r.status, r.body)
	}
	var view reply
	waitFor(t, "the view read", func() bool {
		view = postJSON(t, relay, "/api/extensions/view", map[string]string{"extension": "wide", "tool": "wide__show"}, true)
		return view.status == http.StatusOK
	})

	v, _ := view.m["view"].(map[string]any)
	if v["policy"] != nil || fmt.Sprint(v["csp"]) != "map[]" {
		t.Fatalf("the view was given %v (policy %v)", v["csp"], v["policy"])
	}
	dropped, _ := v["dropped"].([]any)
	named := map[string]bool{"view-domain-malformed": true, "view-domain-wildcard": true, "view-domain-outside-hosts": true, "view-domains-too-many": true}
	seen := map[string]int{}
	for _, d := range dropped {
		m, _ := d.(map[string]any)
		rule, _ := m["refused"].(string)
		if !named[rule] || m["why"] == "" {
			t.Fatalf("a drop without a named rule: %v", m)
		}
		seen[rule]++
	}
	// 64 read (18 connect domains, 46 resource domains), one summary, the frameDomains string.
	if len(dropped) != 64+1+1 || seen["view-domains-too-many"] != 1 || seen["view-domain-wildcard"] < 4 || seen["view-domain-outside-hosts"] < 40 {
		t.Fatalf("%d drops: %v", len(dropped), seen)
	}

	port := relay.URL[strings.LastIndex(relay.URL, ":")+1:]
	for _, guess := range []string{"", strings.Repeat("0", 32), "../api", url.QueryEscape("x; connect-src *"), strings.Repeat("a", 10000)} {
		req, err := http.NewRequest(http.MethodGet, relay.URL+"/mini-app-bridge.html?view="+guess, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "app-0123456789abcdef.localhost:" + port
		resp, err := plainClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		for p := range strings.SplitSeq(csp, "; ") {
			if strings.HasPrefix(p, "connect-src") && p != "connect-src 'none'" {
				t.Fatalf("the bridge with view=%.40s has the policy %q", guess, csp)
			}
		}
		if resp.StatusCode == http.StatusOK && !strings.Contains(csp, "connect-src 'none'") {
			t.Fatalf("the bridge with view=%.40s has the policy %q", guess, csp)
		}
	}
	served(t, relay)
}
