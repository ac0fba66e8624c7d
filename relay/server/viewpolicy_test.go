package server

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/extensions"
)

// grants is a ViewPolicies of fixed answers, standing in for relay/extensionhost's (which has
// tests of its own against a real MCP server).
type grants map[string]map[string][]string

func (g grants) ViewSources(token string) map[string][]string { return g[token] }

func bridgePolicyFor(t *testing.T, s *Server, query string) string {
	t.Helper()
	req := httptest.NewRequest("GET", BridgePath+query, nil)
	req.Host = "app-0123456789abcdef.localhost:8787"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Header().Get("Content-Security-Policy")
}

func directive(csp, name string) string {
	for p := range strings.SplitSeq(csp, "; ") {
		if d, _, _ := strings.Cut(p, " "); d == name {
			return p
		}
	}
	return ""
}

func TestViewPolicyWidensTheBridgeForItsTokenOnly(t *testing.T) {
	t.Parallel()
	s := newFilesServer(t)
	if csp := bridgePolicyFor(t, s, "?view=tok"); directive(csp, "connect-src") != "connect-src 'none'" {
		t.Fatalf("no ViewPolicies set: %q", csp)
	}
	s.SetViewPolicies(grants{
		"tok": {"connect-src": {"http://127.0.0.1:4100"}, "img-src": {"https://cdn.example"}, "script-src": {"https://cdn.example"}},
		"hostile": {
			"connect-src":     {"*", "'unsafe-eval'", "https://a.example; script-src *", "data:", "https://a.example/path", "HTTPS://UPPER.example", "javascript://x"},
			"sandbox":         {"https://a.example"},
			"frame-ancestors": {"https://evil.example"},
			"default-src":     {"https://evil.example"},
		},
	})
	cases := []struct {
		query string
		want  map[string]string
	}{
		{"", map[string]string{"connect-src": "connect-src 'none'", "img-src": "img-src data: blob:"}},
		{"?view=unknown", map[string]string{"connect-src": "connect-src 'none'"}},
		{"?view=tok", map[string]string{
			"connect-src": "connect-src http://127.0.0.1:4100",
			"img-src":     "img-src data: blob: https://cdn.example",
			"script-src":  "script-src 'self' 'unsafe-inline' https://cdn.example",
			"frame-src":   "frame-src 'none'",
			"default-src": "default-src 'none'",
		}},
		{"?view=hostile", map[string]string{"connect-src": "connect-src 'none'", "default-src": "default-src 'none'", "sandbox": ""}},
		{"?view=" + strings.Repeat("t", maxViewToken+1), map[string]string{"connect-src": "connect-src 'none'"}},
	}
	for _, c := range cases {
		csp := bridgePolicyFor(t, s, c.query)
		for name, want := range c.want {
			if got := directive(csp, name); got != want {
				t.Errorf("bridge%s: %s is %q, want %q (policy %q)", c.query, name, got, want, csp)
			}
		}
		if strings.Count(csp, "frame-ancestors") != 1 || strings.Contains(csp, "evil") {
			t.Errorf("bridge%s: policy %q", c.query, csp)
		}
	}
}

func TestViewDirectivesAreTheSharedRulesOnes(t *testing.T) {
	t.Parallel()
	if !slices.Equal(viewDirectives, extensions.ViewDirectives) {
		t.Fatalf("server widens %v, the shared rule grants %v", viewDirectives, extensions.ViewDirectives)
	}
}

// TestEveryBridgeBlocksPeerConnections: every bridge (an app's, a folder app's, a view's with a
// grant or without) carries the Connection-Allowlist with webrtc=block; a view's grant adds its
// origins as whole-origin patterns and nothing a grant may not name.
func TestEveryBridgeBlocksPeerConnections(t *testing.T) {
	t.Parallel()
	s := newFilesServer(t)
	s.SetViewPolicies(grants{
		"tok":     {"connect-src": {"http://127.0.0.1:4100", "ws://127.0.0.1:4100", "wss://a.example"}, "img-src": {"https://cdn.example"}, "base-uri": {"https://base.example"}},
		"hostile": {"connect-src": {"*", "https://a.example\" \"https://b.example", "data:"}, "sandbox": {"https://c.example"}},
	})
	allowlist := func(query string) string {
		req := httptest.NewRequest("GET", BridgePath+query, nil)
		req.Host = "app-0123456789abcdef.localhost:8787"
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Header().Get("Connection-Allowlist")
	}
	for query, want := range map[string]string{
		"":                                  BridgeConnections,
		"?files=" + strings.Repeat("a", 32): BridgeConnections,
		"?view=unknown":                     BridgeConnections,
		"?view=hostile":                     BridgeConnections,
		"?view=tok":                         `(response-origin "http://127.0.0.1:4100/*" "https://a.example/*" "https://cdn.example/*");webrtc=block`,
	} {
		if got := allowlist(query); got != want {
			t.Errorf("bridge%s: Connection-Allowlist %q, want %q", query, got, want)
		}
	}
}
