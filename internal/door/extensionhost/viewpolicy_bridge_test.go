package extensionhost

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/server"
)

// grants are fixed answers by view token, standing in for the runtime's ViewSources (which has
// tests of its own against a real MCP server).
type grants map[string]map[string][]string

// bridgeServer is a server whose bridge gains what g grants, as BridgePolicy grants a view's;
// nil grants nothing.
func bridgeServer(t *testing.T, g grants) *server.Server {
	t.Helper()
	s, err := server.New(server.Config{Public: t.TempDir(), Build: "test-build", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.AddBridgePolicy(func(h http.Header, r *http.Request) {
		token := r.URL.Query().Get("view")
		if token == "" || len(token) > maxViewToken {
			return
		}
		widenViewPolicy(h, g[token])
	})
	return s
}

func bridgePolicyFor(t *testing.T, s *server.Server, query string) string {
	t.Helper()
	req := httptest.NewRequest("GET", server.BridgePath+query, nil)
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
	if csp := bridgePolicyFor(t, bridgeServer(t, nil), "?view=tok"); directive(csp, "connect-src") != "connect-src 'none'" {
		t.Fatalf("no grant: %q", csp)
	}
	s := bridgeServer(t, grants{
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
			"script-src":  "script-src 'self' 'unsafe-inline' data: https://cdn.example",
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

// TestEveryBridgeBlocksPeerConnections: every bridge (an app's, a folder app's, a view's with a
// grant or without) carries the Connection-Allowlist with webrtc=block; a view's grant adds its
// origins as whole-origin patterns and nothing a grant may not name.
func TestEveryBridgeBlocksPeerConnections(t *testing.T) {
	t.Parallel()
	s := bridgeServer(t, grants{
		"tok":     {"connect-src": {"http://127.0.0.1:4100", "ws://127.0.0.1:4100", "wss://a.example"}, "img-src": {"https://cdn.example"}, "base-uri": {"https://base.example"}},
		"hostile": {"connect-src": {"*", "https://a.example\" \"https://b.example", "data:"}, "sandbox": {"https://c.example"}},
	})
	allowlist := func(query string) string {
		req := httptest.NewRequest("GET", server.BridgePath+query, nil)
		req.Host = "app-0123456789abcdef.localhost:8787"
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Header().Get("Connection-Allowlist")
	}
	for query, want := range map[string]string{
		"":                                  server.BridgeConnections,
		"?files=" + strings.Repeat("a", 32): server.BridgeConnections,
		"?view=unknown":                     server.BridgeConnections,
		"?view=hostile":                     server.BridgeConnections,
		"?view=tok":                         `(response-origin "http://127.0.0.1:4100/*" "https://a.example/*" "https://cdn.example/*");webrtc=block`,
	} {
		if got := allowlist(query); got != want {
			t.Errorf("bridge%s: Connection-Allowlist %q, want %q", query, got, want)
		}
	}
}
