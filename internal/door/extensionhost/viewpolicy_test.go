package extensionhost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/mcphost"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// cspServer is a go-sdk MCP server whose one tool, "show", has a view declaring csp(own) in its
// resource's _meta.ui.csp, own being the server's own origin (http://127.0.0.1:port).
func cspServer(t *testing.T, csp func(own string) map[string]any) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "csp", Version: "1"}, nil)
	var own atomic.Value
	srv.AddTool(&mcp.Tool{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://show/view.html"}}, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shown"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "ui://show/view.html", Name: "view", MIMEType: mcphost.ViewMIMEType},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: mcphost.ViewMIMEType, Text: "<!doctype html><p>view</p>",
				Meta: mcp.Meta{"ui": map[string]any{"csp": csp(own.Load().(string))}}}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	own.Store(ts.URL)
	t.Cleanup(ts.Close)
	return ts
}

// readView admits ts as extension id (both admissions) and reads its view.
func (f *fixture) readView(ts *httptest.Server, id string) View {
	f.t.Helper()
	u, _ := url.Parse(ts.URL)
	f.admit(mcpDescriptor(id, u.Host, ts.URL, 100, ""))
	f.waitFor("the view's tool staged", func(l Listing) bool { return len(pendingTools(l, id)) > 0 })
	f.admitPending(id)
	f.waitFor("the view's tool offered", func(l Listing) bool { return len(offered(admittedEntry(l, id))) == 1 })
	code, m, body := f.do("POST", "/api/extensions/view", "", `{"extension":"`+id+`","tool":"`+id+`__show"}`)
	if code != 200 {
		f.t.Fatalf("the view: %d %s", code, body)
	}
	var v View
	b, _ := json.Marshal(m["view"])
	if err := json.Unmarshal(b, &v); err != nil {
		f.t.Fatal(err)
	}
	return v
}

// bridgeConnect is the connect-src of the bridge framed with ?view=token.
func (f *fixture) bridgeConnect(token string) string {
	f.t.Helper()
	resp, err := http.Get(f.url + server.BridgePath + "?view=" + url.QueryEscape(token))
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	for p := range strings.SplitSeq(resp.Header.Get("Content-Security-Policy"), "; ") {
		if strings.HasPrefix(p, "connect-src ") {
			return p
		}
	}
	return ""
}

// TestViewPolicyIsTheIntersectionWithTheHosts: a view declaring its own server's host, hosts
// outside the plan and malformed domains is given its own host only, in its bridge's connect-src
// through the token, and says what it dropped; revoking the extension takes the grant back.
func TestViewPolicyIsTheIntersectionWithTheHosts(t *testing.T) {
	t.Parallel()
	// The server first: cleanups run last first, and the session must end before it closes.
	ts := cspServer(t, func(own string) map[string]any {
		return map[string]any{
			"connectDomains":  []any{5, own, "https://evil.example", "*", "data:"},
			"resourceDomains": []any{own + "/path", "'unsafe-eval'"},
			"frameDomains":    "https://evil.example",
		}
	})
	f := newFixture(t)
	t.Cleanup(f.g.Close)
	v := f.readView(ts, "viewed")
	ownHost := ts.URL
	if v.Policy == "" || !slices.Equal(v.CSP.ConnectDomains, []string{ownHost}) || len(v.CSP.ResourceDomains) != 0 {
		t.Fatalf("granted %+v (policy %q), want connect to %s only", v.CSP, v.Policy, ownHost)
	}
	rules := map[string][]refusal.Rule{}
	for _, d := range v.Dropped {
		rules[d.Field] = append(rules[d.Field], d.Rule)
	}
	want := map[string][]refusal.Rule{
		"connectDomains":  {refusal.ViewDomainMalformed, refusal.ViewDomainOutsideHosts, refusal.ViewDomainWildcard, refusal.ViewDomainMalformed},
		"resourceDomains": {refusal.ViewDomainMalformed, refusal.ViewDomainMalformed},
		"frameDomains":    {refusal.ViewDomainMalformed},
	}
	if fmt.Sprint(rules) != fmt.Sprint(want) {
		t.Fatalf("dropped %v, want %v\n%+v", rules, want, v.Dropped)
	}
	if got := f.bridgeConnect(v.Policy); got != "connect-src "+ownHost {
		t.Fatalf("the bridge with the view's token: %q", got)
	}
	for _, tok := range []string{"", "nope", v.Policy + "0", strings.ToUpper(v.Policy)} {
		if got := f.bridgeConnect(tok); got != "connect-src 'none'" {
			t.Fatalf("the bridge with token %q: %q", tok, got)
		}
	}
	if code, _, body := f.do("POST", "/api/extensions/revoke", "tok", `{"id":"viewed"}`); code != 200 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if got := f.bridgeConnect(v.Policy); got != "connect-src 'none'" {
		t.Fatalf("after revocation: %q", got)
	}
}

// TestViewPolicyHostileDeclarations: declarations that must never widen the bridge: no domain
// at all, all outside, 1,000 domains; none gets a token past its own host.
func TestViewPolicyHostileDeclarations(t *testing.T) {
	t.Parallel()
	many := make([]any, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("https://h%d.example", i)
	}
	cases := []struct {
		name        string
		csp         map[string]any
		wantDropped int
	}{
		{"nothing declared", nil, 0},
		{"only outside hosts and keywords", map[string]any{"connectDomains": []any{"*", "https:", "http://*", "'self'", "ws:", "https://evil.example/"}}, 6},
		{"1,000 domains", map[string]any{"connectDomains": many}, extensions.MaxViewDomains + 1},
		{"csp is a string", map[string]any{"connectDomains": "*"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := cspServer(t, func(string) map[string]any { return c.csp })
			f := newFixture(t)
			t.Cleanup(f.g.Close)
			v := f.readView(s, "hostile")
			if v.Policy != "" || len(v.CSP.Directives()) != 0 || len(v.Dropped) != c.wantDropped {
				t.Fatalf("policy %q, granted %+v, %d dropped (want %d)", v.Policy, v.CSP, len(v.Dropped), c.wantDropped)
			}
			for _, d := range v.Dropped {
				if d.Rule == "" || d.Why == "" || len(d.Domain) > 200 {
					t.Fatalf("a drop without its reason: %+v", d)
				}
			}
		})
	}
}
