package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRequest measures what ServeHTTP adds to a small JSON answer: the request id, the
// forwarding check, the security headers and the request's JSON log line (written to a
// discarding writer), with and without the gate's session lookup.
func BenchmarkRequest(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html>"), 0o644)
	gate := NewGate()
	for _, bc := range []struct {
		name string
		gate *Gate
	}{{"open", nil}, {"gated-session", gate}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := New(Config{Public: dir, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Gate: bc.gate,
				HostToken: func(string) bool { return false }})
			if err != nil {
				b.Fatal(err)
			}
			s.Handle("GET /api/bench", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
			}))
			req := httptest.NewRequest("GET", "/api/bench", nil)
			if bc.gate != nil {
				tok, _, _, _ := gate.store.Redeem(newTicket(b, gate), "")
				req.Header.Set("Cookie", SessionCookieName("")+"="+tok)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
