package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestAppHost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		host string
		want bool
	}{
		{"app-0123456789abcdef.localhost", true},
		{"app-0123456789abcdef.localhost:8787", true},
		{"app-0123456789abcdef.localhost:0", true},
		{"app-0123456789ABCDEF.localhost:8787", false}, // browsers send the name in lower case
		{"app-0123456789abcde.localhost:8787", false},
		{"app-0123456789abcdef0.localhost:8787", false},
		{"app-0123456789abcdeg.localhost:8787", false},
		{"x.app-0123456789abcdef.localhost:8787", false},
		{"app-0123456789abcdef.localhost.evil.example", false},
		{"app-0123456789abcdef.example", false},
		{"localhost:8787", false},
		{"127.0.0.1:8787", false},
		{"evil.localhost:8787", false},
		{"app-.localhost", false},
		{"app-0000000000000000.localhost: ", false},
		{"app-0000000000000000.localhost:123456", false},
		{"", false},
	} {
		if got := AppHost(tt.host); got != tt.want {
			t.Errorf("AppHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func FuzzAppHost(f *testing.F) {
	for _, s := range []string{"app-0123456789abcdef.localhost:8787", "localhost", "app-.localhost", "[::1]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !AppHost(host) {
			return
		}
		// What passes goes into policies and names a site of its own: a plain name, one label
		// under localhost, and at most a port after it.
		if !safeHost(host) || !strings.HasPrefix(host, AppHostPrefix) || strings.Count(host, ".") != 1 {
			t.Fatalf("AppHost(%q) is true", host)
		}
		if !strings.HasSuffix(appHostAsPage(host), strings.TrimPrefix(host, host[:strings.Index(host, AppHostDomain)+len(AppHostDomain)])) {
			t.Fatalf("appHostAsPage(%q) = %q lost the port", host, appHostAsPage(host))
		}
	})
}

// getHost fetches path from ts with the Host header host.
func getHost(t *testing.T, ts *httptest.Server, method, host, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestAppHostServesTheBridgeAndNothingElse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{"index.html": "page", "mini-app-bridge.html": "bridge", "mini-app-bridge.js": "bridge script", "rules.js": "rules", "names.js": "names", "main.js": "page script"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The gate is on: the page needs a session, an app host's bridge never does (the session
	// cookie is not sent to another site).
	s, err := New(Config{Public: dir, Log: slog.New(slog.DiscardHandler), Gate: NewGate(), Origin: "https://voicebox.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	const app = "app-00ff00ff00ff00ff.localhost:8787"

	resp, body := getHost(t, ts, http.MethodGet, app, BridgePath, nil)
	if resp.StatusCode != 200 || body != "bridge" {
		t.Fatalf("the bridge on an app host answered %d %q", resp.StatusCode, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"connect-src 'none'", "frame-ancestors 'self' http://127.0.0.1:8787 http://localhost:8787 https://voicebox.example.com"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the bridge's CSP %q lacks %q", csp, want)
		}
	}
	if xfo := resp.Header.Get("X-Frame-Options"); xfo != "" {
		t.Errorf("the bridge carries X-Frame-Options %q, which would keep the page from framing it", xfo)
	}
	for path, want := range map[string]string{"/mini-app-bridge.js": "bridge script", "/rules.js": "rules", "/names.js": "names"} {
		if resp, body := getHost(t, ts, http.MethodGet, app, path, nil); resp.StatusCode != 200 || body != want {
			t.Fatalf("%s on an app host answered %d %q", path, resp.StatusCode, body)
		}
	}

	for _, tt := range []struct{ method, path string }{
		{http.MethodGet, "/"},
		{http.MethodGet, "/index.html"},
		{http.MethodGet, "/main.js"},
		{http.MethodGet, "/mini-app-sdk.js"},
		{http.MethodGet, "/api/health"},
		{http.MethodGet, "/api/root"},
		{http.MethodGet, "/channel"},
		{http.MethodGet, "/mini-app-bridge.html/../index.html"},
		{http.MethodPost, BridgePath},
	} {
		resp, body := getHost(t, ts, tt.method, app, tt.path, map[string]string{"Origin": "http://" + app})
		if resp.StatusCode != 404 || !strings.Contains(body, `"refused":"not-found"`) {
			t.Errorf("%s %s on an app host answered %d %s", tt.method, tt.path, resp.StatusCode, body)
		}
	}

	// The page's own host still needs a session, for the bridge too.
	if resp, _ := getHost(t, ts, http.MethodGet, "127.0.0.1:8787", BridgePath, nil); resp.StatusCode != 401 {
		t.Fatalf("the bridge on the page's host answered %d without a session", resp.StatusCode)
	}
	// Another subdomain of localhost is no app host: the gate stops it like any page request.
	if resp, _ := getHost(t, ts, http.MethodGet, "evil.localhost:8787", BridgePath, nil); resp.StatusCode != 401 {
		t.Fatalf("evil.localhost's bridge answered %d without a session", resp.StatusCode)
	}
}

func TestPageFramesAppHostsOnlyFromALoopbackName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		host, want string
	}{
		{"127.0.0.1:8787", "frame-src 'self' http://*.localhost:8787;"},
		{"localhost:8787", "frame-src 'self' http://*.localhost:8787;"},
		{"localhost", "frame-src 'self' http://*.localhost;"},
		{"voicebox.example.com", "frame-src 'self';"},
		{"192.168.1.5:8787", "frame-src 'self';"},
		{"[::1]:8787", "frame-src 'self';"},
		{"localhost:87x", "frame-src 'self';"},
	} {
		h := http.Header{}
		setSecurityHeaders(h, tt.host, "/", nil, "")
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, tt.want) {
			t.Errorf("Host %s: CSP %q lacks %q", tt.host, csp, tt.want)
		}
		h = http.Header{}
		setSecurityHeaders(h, tt.host, BridgePath, nil, "")
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self'") || strings.Contains(csp, "*") {
			t.Errorf("Host %s: the bridge's CSP %q", tt.host, csp)
		}
	}
}

// importFrom finds the relative modules a script imports: import ... from './x.js'.
var importFrom = regexp.MustCompile(`(?m)\bfrom\s+'\./([a-z0-9-]+\.js)'`)

// The bridge on an app host loads its modules from that host: every module it imports, and
// every one those import, is one AppHostFiles serves.
func TestAppHostFilesHoldTheBridgesImports(t *testing.T) {
	t.Parallel()
	public := filepath.Join("..", "..", "..", "public")
	seen := map[string]bool{}
	todo := []string{"mini-app-bridge.js"}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		if !slices.Contains(AppHostFiles, "/"+name) {
			t.Errorf("the bridge loads %s, which an app host does not serve", name)
		}
		src, err := os.ReadFile(filepath.Join(public, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range importFrom.FindAllStringSubmatch(string(src), -1) {
			todo = append(todo, m[1])
		}
	}
	if !seen["rules.js"] {
		t.Fatalf("the walk found %v; it should have reached rules.js", seen)
	}
}
