package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"net/http/httptest"
)

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1:8787": true, "127.0.0.1": true, "127.1.2.3:80": true, "[::1]:8787": true, "[::1]": true,
		"localhost": true, "localhost:8787": true, "LOCALHOST.:8787": true, "app-1a2b3c4d.localhost:8787": true,
		"a.b.localhost": true, "[::ffff:127.0.0.1]:1": true,
		"evil.example": false, "evil.example:8787": false, "localhost.evil.example": false, "evillocalhost": false,
		"10.0.0.1": false, "0.0.0.0:8787": false, "[::]:8787": false, "": false, "127.0.0.1.nip.io": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestHostAdmission sends requests to a server on 127.0.0.1 with the Host headers a browser, a
// reverse proxy and a DNS-rebinding page would send.
func TestHostAdmission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html>"), 0o644)
	s, err := New(Config{Public: dir, Log: slog.New(slog.DiscardHandler), Origin: "https://voicebox.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	s.Handle("GET /api/listing", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++; io.WriteString(w, "{}") }))
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, tt := range []struct {
		name, host string
		status     int
	}{
		{"the relay's own address", strings.TrimPrefix(ts.URL, "http://"), 200},
		{"localhost", "localhost", 200},
		{"a mini-app's own host", "app-0123abcd.localhost:1", 200},
		{"the public origin behind a proxy", "voicebox.example.com", 200},
		{"the public origin with a port", "voicebox.example.com:443", 200},
		{"a rebinding page", "evil.example", 421},
		{"a rebinding page with the port", "evil.example:" + ts.URL[strings.LastIndexByte(ts.URL, ':')+1:], 421},
		{"a name that merely starts like localhost", "localhost.evil.example", 421},
		{"a subdomain of the public origin", "x.voicebox.example.com", 421},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := reached
			req, _ := http.NewRequest("GET", ts.URL+"/api/listing", nil)
			req.Host = tt.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("answered %d %s, want %d", resp.StatusCode, b, tt.status)
			}
			if tt.status == 421 && (!strings.Contains(string(b), `"refused":"host-refused"`) || reached != before) {
				t.Fatalf("refused as %s, handler reached %d times", b, reached-before)
			}
		})
	}
}

// FuzzLoopbackHost: whatever a Host header holds, LoopbackHost admits only loopback addresses and
// names under localhost, and never panics.
func FuzzLoopbackHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8787", "[::1]", "localhost.", "app-1.localhost:1", "evil.example", "[::ffff:127.0.0.1]:1", "[", "::1", "%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !LoopbackHost(host) {
			return
		}
		name := hostName(host)
		if a, err := netip.ParseAddr(name); err == nil {
			if !a.Unmap().IsLoopback() {
				t.Fatalf("admitted %q, address %s", host, a)
			}
			return
		}
		if name != "localhost" && !strings.HasSuffix(name, ".localhost") {
			t.Fatalf("admitted %q as %q", host, name)
		}
	})
}
