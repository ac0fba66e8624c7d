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

func TestParseOrigin(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://Voicebox.Example.com":  "https://voicebox.example.com",
		"https://voicebox.example.com/": "https://voicebox.example.com",
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080",
		"voicebox.example.com":          "",
		"https://x/app":                 "",
		"https://x?q":                   "",
		"ws://x":                        "",
		"https://u:p@x":                 "",
	} {
		got, err := ParseOrigin(in)
		if (want == "") != (err != nil) || got != want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestOriginAdmission: the configured origin and the relay's own loopback origin pass on the
// page and /live; a third origin is refused origin-refused on both; a request with no Origin
// (navigation, curl) passes; /channel is left to the hub.
func TestOriginAdmission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html>"), 0o644)
	s, err := New(Config{Public: dir, Log: slog.New(slog.DiscardHandler), Origin: "https://voicebox.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("GET /channel", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hub") }))
	ts := httptest.NewServer(s)
	defer ts.Close()
	own := ts.URL // http://127.0.0.1:PORT
	tests := []struct {
		name, path, origin string
		upgrade            bool
		status             int
		rule               string
	}{
		{"no origin on the page", "/", "", false, 200, ""},
		{"the public origin on the page", "/", "https://voicebox.example.com", false, 200, ""},
		{"own loopback on the page", "/", own, false, 200, ""},
		{"a third origin on the page", "/", "http://localhost:1", false, 403, "origin-refused"},
		{"a third origin on the API", "/api/health", "https://evil.example", false, 403, "origin-refused"},
		{"a sandboxed frame's load", "/index.html", "null", false, 200, ""},
		{"the public origin on /live", "/live", "https://voicebox.example.com", true, 404, "not-found"},
		{"a third origin on /live", "/live", "https://evil.example", true, 403, "origin-refused"},
		{"no origin on /live", "/live", "", true, 403, "origin-refused"},
		{"null on /live", "/live", "null", true, 403, "origin-refused"},
		{"a third origin on another socket path", "/anything", "https://evil.example", true, 403, "origin-refused"},
		{"a third origin on /channel goes to the hub", "/channel", "https://evil.example", true, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.URL+tt.path, nil)
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.upgrade {
				req.Header.Set("Upgrade", "websocket")
				req.Header.Set("Connection", "Upgrade")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || (tt.rule != "" && !strings.Contains(string(b), `"refused":"`+tt.rule+`"`)) {
				t.Fatalf("answered %d %s, want %d %s", resp.StatusCode, b, tt.status, tt.rule)
			}
		})
	}
}
