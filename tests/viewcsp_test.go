//go:build !js

package tests

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// pongServer answers every request "pong" to any origin (the view's frame is an opaque one), and
// counts them.
func pongServer(t *testing.T, hits *atomic.Int64) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write([]byte("pong"))
	}))
	t.Cleanup(ts.Close)
	return ts
}

// cspView is a view that fetches each of targets once and writes what happened (the body, or the
// error and the CSP violations it saw) into #results, as the guests do.
const cspView = `<!doctype html><meta charset="utf-8"><title>reach</title><pre id="results"></pre><script>
const seen = [];
document.addEventListener('securitypolicyviolation', (e) => seen.push(e.violatedDirective + ' ' + e.blockedURI));
(async () => {
  const results = [];
  for (const [name, url] of TARGETS) {
    try {
      const r = await fetch(url);
      results.push({name, ok: true, detail: await r.text()});
    } catch (err) {
      await new Promise((r) => setTimeout(r, 50)); // the violation event is queued after the rejection
      results.push({name, ok: false, detail: String(err) + ' | ' + seen.join(', ')});
    }
  }
  const out = document.getElementById('results');
  out.textContent = JSON.stringify({results, errors: []});
  out.dataset.done = '1';
  // The handshake once the results are written, so the test knows the frame is there to read.
  addEventListener('message', (e) => {
    if (e.data && e.data.id === 1) parent.postMessage({jsonrpc: '2.0', method: 'ui/notifications/initialized'}, '*');
  });
  parent.postMessage({jsonrpc: '2.0', id: 1, method: 'ui/initialize', params: {appInfo: {name: 'reach', version: '1'}, appCapabilities: {}, protocolVersion: '2026-01-26'}}, '*');
})();
</script>`

// TestMCPAppsViewDeclaredDomains: a view whose resource declares connectDomains, one within the
// extension's bounds.hosts and one outside (and a wildcard), shown in the sandbox: its fetch to
// the allowed loopback host is answered, the other is blocked by the bridge's CSP before any
// request leaves, and the view's card says which domains were dropped and why.
func TestMCPAppsViewDeclaredDomains(t *testing.T) {
	t.Parallel()
	var allowedHits, otherHits atomic.Int64
	allowed, other := pongServer(t, &allowedHits), pongServer(t, &otherHits)
	view := strings.Replace(cspView, "TARGETS", fmt.Sprintf(`[['allowed', %q], ['other', %q]]`, allowed.URL+"/ping", other.URL+"/ping"), 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "reach", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://reach/view.html"}}, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shown"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "ui://reach/view.html", Name: "view", MIMEType: "text/html;profile=mcp-app"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: view,
				Meta: mcp.Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []any{allowed.URL, other.URL, "*"}}}}}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	host := strings.TrimPrefix(ts.URL, "http://")
	allowedHost := strings.TrimPrefix(allowed.URL, "http://")

	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	admitRemote(t, relay, token, fmt.Sprintf(`{"id":"reach","name":"Reach","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q,%q],"maxRequests":100},"tools":[],"mcp":{"url":%q}}`, host, allowedHost, ts.URL), "reach")

	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	appID := harness.Eval[string](tab, `voicebox.miniApps.openView('reach', 'reach__show').then(r => r.appId)`)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, appID), readyBound)
	if src := harness.Eval[string](tab, `document.querySelector('iframe.bridge').src`); !strings.Contains(src, "&view=") {
		t.Fatalf("the view's bridge is framed without its policy token: %s", src)
	}
	got := appResults(t, tab)
	outcome := map[string]string{}
	for _, r := range got.Results {
		outcome[r.Name] = fmt.Sprint(r.OK) + " " + r.Detail
	}
	if outcome["allowed"] != "true pong" || allowedHits.Load() != 1 {
		t.Errorf("the fetch to the allowed host: %q (%d requests reached it)", outcome["allowed"], allowedHits.Load())
	}
	if !strings.HasPrefix(outcome["other"], "false ") || !strings.Contains(outcome["other"], "connect-src "+other.URL) || otherHits.Load() != 0 {
		t.Errorf("the fetch to the host outside the plan: %q (%d requests reached it)", outcome["other"], otherHits.Load())
	}
	card := harness.Eval[string](tab, fmt.Sprintf(`(() => { const d = [...document.querySelectorAll('#open-apps section')].find(s => s.querySelector('.view-csp-dropped') && s.textContent.includes('reach')); return d ? d.querySelector('.view-csp-dropped').textContent + ' | ' + d.querySelector('.view-csp-given').textContent : ''; })()`))
	for _, want := range []string{strings.TrimPrefix(other.URL, "http://"), "view-domain-outside-hosts", "view-domain-wildcard", "2 domains", allowed.URL} {
		if !strings.Contains(card, want) {
			t.Errorf("the view's card says %q, without %q", card, want)
		}
	}
	harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.miniApps.close(%q), true)`, appID))
	harness.WaitFor[bool](tab, `document.querySelectorAll('iframe.bridge').length === 0`, readyBound)
}
