package server

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newTestServer serves a public directory holding a page, a wasm module and its precompressed
// siblings (with distinct bytes, so a test can tell which one was served).
func newTestServer(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(Config{Public: dir, Build: "test-build", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("GET /api/test-panic", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

var pageFiles = map[string]string{
	"index.html":        "<!doctype html><title>Voicebox</title>",
	"app.js":            "console.log('app')",
	"styles.css":        "body{}",
	"voicebox.wasm":     "\x00asm-raw",
	"voicebox.wasm.br":  "brotli-bytes",
	"voicebox.wasm.gz":  gzipped(" \x00asm-gz"),
	".hidden.js":        "secret",
	"sub/inner.html":    "<p>inner</p>",
	"notes/readme.text": "not a served type",
}

func gzipped(s string) string {
	var b strings.Builder
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// A bare Transport asks for no encoding of its own, so the test sees what the server sent.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestStaticFiles(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, pageFiles)
	tests := []struct {
		name, path, accept    string
		status                int
		ctype, encoding, body string
	}{
		{"root is the page", "/", "", 200, "text/html; charset=utf-8", "", "<!doctype html><title>Voicebox</title>"},
		{"script", "/app.js", "", 200, "text/javascript; charset=utf-8", "", "console.log('app')"},
		{"style", "/styles.css", "", 200, "text/css; charset=utf-8", "", "body{}"},
		{"nested page", "/sub/inner.html", "", 200, "text/html; charset=utf-8", "", "<p>inner</p>"},
		{"wasm raw without accept-encoding", "/voicebox.wasm", "", 200, "application/wasm", "", "\x00asm-raw"},
		{"wasm brotli", "/voicebox.wasm", "gzip, deflate, br", 200, "application/wasm", "br", "brotli-bytes"},
		{"wasm gzip when br is not accepted", "/voicebox.wasm", "gzip", 200, "application/wasm", "gzip", gzipped(" \x00asm-gz")},
		{"wasm br refused by quality", "/voicebox.wasm", "br;q=0, gzip", 200, "application/wasm", "gzip", gzipped(" \x00asm-gz")},
		{"wasm identity when both refused", "/voicebox.wasm", "br;q=0, gzip;q=0", 200, "application/wasm", "", "\x00asm-raw"},
		{"missing file", "/nope.js", "", 404, "application/json; charset=utf-8", "", ""},
		{"dotfile is not served", "/.hidden.js", "", 404, "application/json; charset=utf-8", "", ""},
		{"unserved type", "/notes/readme.text", "", 404, "application/json; charset=utf-8", "", ""},
		{"precompressed sibling is not served by name", "/voicebox.wasm.br", "", 404, "application/json; charset=utf-8", "", ""},
		{"directory", "/sub", "", 404, "application/json; charset=utf-8", "", ""},
		{"encoded traversal", "/..%2f..%2fetc%2fpasswd", "", 404, "application/json; charset=utf-8", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := get(t, ts.URL+tt.path, map[string]string{"Accept-Encoding": tt.accept})
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tt.status, body)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tt.ctype)
			}
			if got := resp.Header.Get("Content-Encoding"); got != tt.encoding {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.encoding)
			}
			if tt.status == 404 {
				assertRefusal(t, body, "not-found")
				return
			}
			if body != tt.body {
				t.Errorf("body = %q, want %q", body, tt.body)
			}
			if strings.HasSuffix(tt.path, ".wasm") && resp.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Vary = %q, want Accept-Encoding", resp.Header.Get("Vary"))
			}
		})
	}
}

func assertRefusal(t *testing.T, body, rule string) {
	t.Helper()
	var got struct {
		OK      *bool  `json:"ok"`
		Refused string `json:"refused"`
		Why     string `json:"why"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", body, err)
	}
	if got.OK == nil || *got.OK || got.Refused != rule || got.Why == "" {
		t.Fatalf("body = %s, want ok:false refused:%s with a why", body, rule)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, pageFiles)
	resp, body := get(t, ts.URL+"/api/health", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got["ok"] != true || got["build"] != "test-build" || len(got) != 2 {
		t.Fatalf("health = %s", body)
	}
}

func TestUnknownRoutesAnswerJSON404(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, pageFiles)
	for _, tt := range []struct{ method, path string }{
		{"GET", "/api/nothing"},
		{"GET", "/api/"},
		{"POST", "/"},
		{"POST", "/api/health/extra"},
		{"DELETE", "/index.html"},
	} {
		var sent io.Reader
		if StateChanging(tt.method) {
			sent = strings.NewReader("{}")
		}
		req, _ := http.NewRequest(tt.method, ts.URL+tt.path, sent)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s %s: status %d, want 404", tt.method, tt.path, resp.StatusCode)
			continue
		}
		assertRefusal(t, string(body), "not-found")
	}
}

func TestPanicAnswersJSON500AndServerKeepsServing(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, pageFiles)
	resp, body := get(t, ts.URL+"/api/test-panic", nil)
	if resp.StatusCode != 500 {
		t.Fatalf("status = %d, want 500", resp.StatusCode)
	}
	assertRefusal(t, body, "internal-error")
	if strings.Contains(body, "boom") {
		t.Fatalf("the panic value leaked to the client: %s", body)
	}
	if resp, _ := get(t, ts.URL+"/api/health", nil); resp.StatusCode != 200 {
		t.Fatalf("after a panic, health answered %d", resp.StatusCode)
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, pageFiles)
	host := strings.TrimPrefix(ts.URL, "http://")
	for _, path := range []string{"/", "/app.js", "/api/health", "/api/nothing"} {
		resp, _ := get(t, ts.URL+path, nil)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{
			"default-src 'none'",
			"script-src 'self' 'wasm-unsafe-eval'",
			"worker-src 'self'",
			"connect-src 'self' ws://" + host,
			"frame-src 'self'",
			"frame-ancestors 'self'",
		} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "'unsafe-eval'") {
			t.Errorf("%s: CSP allows inline code or eval: %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: nosniff %q, referrer %q", path, h.Get("X-Content-Type-Options"), h.Get("Referrer-Policy"))
		}
	}
}

func TestHostHeaderIsNotEchoedUnlessPlain(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	setSecurityHeaders(h, "evil.example; script-src *", "/", nil, "")
	if csp := h.Get("Content-Security-Policy"); strings.Contains(csp, "evil") || strings.Contains(csp, "script-src *") {
		t.Fatalf("a hostile Host header reached the policy: %q", csp)
	}
}

func TestAcceptsEncoding(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		header, token string
		want          bool
	}{
		{"br", "br", true},
		{"gzip, deflate, br, zstd", "br", true},
		{"BR", "br", true},
		{"br;q=0.5", "br", true},
		{"br;q=0", "br", false},
		{"br; q=0.000", "br", false},
		{"gzip", "br", false},
		{"", "gzip", false},
		{"xbr", "br", false},
	} {
		if got := acceptsEncoding(tt.header, tt.token); got != tt.want {
			t.Errorf("acceptsEncoding(%q, %q) = %v, want %v", tt.header, tt.token, got, tt.want)
		}
	}
}

func TestNewRefusesAMissingPublicDirectory(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Public: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Fatal("New accepted a missing public directory")
	}
}
