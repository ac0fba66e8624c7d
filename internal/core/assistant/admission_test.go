package assistant_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/server"
)

// TestApprovalsAndEventsAreAdmittedLikeThePage: with the session gate on, deciding an approval,
// listing them, reading the event stream and running a turn all need the page's session (a
// foreign origin is refused even with it), as every other page route does.
func TestApprovalsAndEventsAreAdmittedLikeThePage(t *testing.T) {
	t.Parallel()
	gate := server.NewGate()
	srv, err := server.New(server.Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler), Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(hub.Options{})
	defer h.Close()
	cat := assistant.New(assistant.Options{Holder: h})
	defer cat.Close()
	cat.Register(srv)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	// A session, as the page gets one: redeem a ticket.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(ts.URL + "/?" + server.BootstrapParam + "=" + url.QueryEscape(newTicket(t, gate)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == gate.Cookie() {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie")
	}
	do := func(method, path, body, origin string, withSession bool) int {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // ends an event stream once its status is read
		req, _ := http.NewRequestWithContext(ctx, method, ts.URL+path, bytes.NewReader([]byte(body)))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if withSession {
			req.AddCookie(cookie)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/api/approvals/ap-0123", `{"approve":true}`},
		{"GET", "/api/approvals", ""},
		{"GET", "/api/events", ""},
		{"POST", "/api/turn", `{"transcript":"list files"}`},
		{"GET", "/api/assistant", ""},
	}
	for _, r := range routes {
		if code := do(r.method, r.path, r.body, "", false); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a session answered %d, want 401", r.method, r.path, code)
		}
		if code := do(r.method, r.path, r.body, "https://evil.example", true); code != http.StatusForbidden {
			t.Errorf("%s %s from a foreign origin answered %d, want 403", r.method, r.path, code)
		}
		if code := do(r.method, r.path, r.body, ts.URL, true); code == http.StatusUnauthorized || code == http.StatusForbidden {
			t.Errorf("%s %s from the page with its session answered %d", r.method, r.path, code)
		}
	}
}

// newTicket mints a ticket on gate or fails the test.
func newTicket(t testing.TB, gate *server.Gate) string {
	t.Helper()
	tk, err := gate.NewTicket()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
