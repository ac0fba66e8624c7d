package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestThePageHasOneLoopbackName: the page's files asked for under another loopback name than the
// printed one (localhost, another 127.x) are redirected, with their path and query, to the
// printed address (GET and HEAD, 307); the API, /mcp, a socket's upgrade, a state change and a
// mini-app's own host are answered where they were asked.
func TestThePageHasOneLoopbackName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html>"), 0o644)
	ts := httptest.NewUnstartedServer(nil)
	printed := "http://" + ts.Listener.Addr().String()
	s, err := New(Config{Public: dir, Log: slog.New(slog.DiscardHandler), BootstrapBase: printed})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("GET /api/listing", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	s.Handle("GET /mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	ts.Config.Handler = s
	ts.Start()
	defer ts.Close()
	port := ts.URL[strings.LastIndexByte(ts.URL, ':')+1:]
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range []struct {
		name, method, host, path string
		header                   map[string]string
		status                   int // 0: not redirected, whatever the answer
		location                 string
	}{
		{"the page under localhost", "GET", "localhost:" + port, "/?bootstrap=x", nil, 307, printed + "/?bootstrap=x"},
		{"a file under localhost", "HEAD", "localhost:" + port, "/main.js", nil, 307, printed + "/main.js"},
		{"another loopback address", "GET", "127.0.0.2:" + port, "/", nil, 307, printed + "/"},
		{"localhost without a port", "GET", "localhost", "/", nil, 307, printed + "/"},
		{"the printed address", "GET", strings.TrimPrefix(printed, "http://"), "/", nil, 200, ""},
		{"the API under localhost", "GET", "localhost:" + port, "/api/listing", nil, 200, ""},
		{"/mcp under localhost", "GET", "localhost:" + port, "/mcp", nil, 200, ""},
		{"a socket's upgrade under localhost", "GET", "localhost:" + port, "/", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}, 0, ""},
		{"a state change under localhost", "POST", "localhost:" + port, "/", map[string]string{"Content-Type": "application/json"}, 0, ""},
		{"a mini-app's own host", "GET", "app-0123abcd.localhost:" + port, "/", nil, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, nil)
			req.Host = tt.host
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if tt.status == 0 { // answered where it was asked, whatever the answer
				if resp.StatusCode == http.StatusTemporaryRedirect || resp.Header.Get("Location") != "" {
					t.Errorf("%s %s Host %s was redirected to %q", tt.method, tt.path, tt.host, resp.Header.Get("Location"))
				}
				return
			}
			if resp.StatusCode != tt.status || resp.Header.Get("Location") != tt.location {
				t.Errorf("%s %s Host %s: %d Location %q, want %d %q", tt.method, tt.path, tt.host, resp.StatusCode, resp.Header.Get("Location"), tt.status, tt.location)
			}
		})
	}
}
