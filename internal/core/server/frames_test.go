package server

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFrameSrcNamesTheRegisteredOriginsAndNothingElse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"index.html", "mini-app-guest.js"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	frames := []string{"https://orders.example.com", "http://127.0.0.1:5190"}
	s, err := New(Config{Public: dir, Log: slog.New(slog.DiscardHandler), FrameOrigins: frames, Gate: NewGate()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)

	plain, err := New(Config{Public: dir, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tp := httptest.NewServer(plain)
	t.Cleanup(tp.Close)

	resp, _ := get(t, ts.URL+"/", nil)
	with := resp.Header.Get("Content-Security-Policy")
	apps := appFrameSource(strings.TrimPrefix(ts.URL, "http://")) // the page's mini-apps' own hosts
	if !strings.Contains(with, "frame-src 'self' "+apps+" https://orders.example.com http://127.0.0.1:5190;") {
		t.Fatalf("the page's CSP does not frame the registered origins: %q", with)
	}
	resp, _ = get(t, tp.URL+"/", nil)
	without := resp.Header.Get("Content-Security-Policy")
	// Apart from the registered origins (and the host in connect-src, which differs per server),
	// the two policies are the same: nothing else is loosened.
	norm := func(csp, host string) string {
		_, port, _ := strings.Cut(host, ":")
		return strings.ReplaceAll(strings.ReplaceAll(csp, host, "HOST"), ":"+port, ":PORT")
	}
	got := norm(strings.Replace(with, " https://orders.example.com http://127.0.0.1:5190", "", 1), strings.TrimPrefix(ts.URL, "http://"))
	if want := norm(without, strings.TrimPrefix(tp.URL, "http://")); got != want {
		t.Fatalf("registering apps changed more than frame-src:\n%s\n%s", got, want)
	}

	// The guest library is served to apps on other origins, without a session, under their COEP,
	// at its address and at the one apps published before it was renamed.
	for _, p := range []string{GuestPath, OldGuestPath} {
		resp, body := get(t, ts.URL+p, nil)
		if resp.StatusCode != 200 || body != "x" || resp.Header.Get("Cross-Origin-Resource-Policy") != "cross-origin" ||
			resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Fatalf("the guest library at %s answered %d %q with CORP %q", p, resp.StatusCode, body, resp.Header.Get("Cross-Origin-Resource-Policy"))
		}
	}
	if resp, _ := get(t, ts.URL+"/", nil); resp.StatusCode != 401 {
		t.Fatalf("with the gate on, the page answered %d without a session", resp.StatusCode)
	}
}
