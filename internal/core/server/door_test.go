package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// echoServer serves a JSON route that reads {name} through the door (with a bound of max bytes)
// and answers what it read.
func echoServer(t *testing.T, max int64, cfg Config) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html><title>page</title>"), 0o644)
	cfg.Public, cfg.Log = dir, slog.New(slog.DiscardHandler)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("POST /api/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name string `json:"name"`
		}
		if !ReadJSON(w, r, max, &body) {
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "name": body.Name})
	}))
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, method, url string, header map[string]string, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{}
	if len(body) > 64<<10 {
		// As curl does for a large body: the relay refuses one over its bound by the headers and
		// closes without reading it, so a client that writes it anyway races that close.
		req.Header.Set("Expect", "100-continue")
		tr.ExpectContinueTimeout = time.Minute
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	if m == nil {
		m = map[string]any{"text": string(raw)}
	}
	return resp, m
}

func TestJSONDoor(t *testing.T) {
	t.Parallel()
	ts := echoServer(t, 0, Config{})
	small := echoServer(t, 64, Config{})
	jsonType := map[string]string{"Content-Type": "application/json"}
	tests := []struct {
		name   string
		url    string
		header map[string]string
		body   string
		status int
		rule   refusal.Rule
		echo   string
	}{
		{"a JSON object", ts.URL, jsonType, `{"name":"box"}`, 200, "", "box"},
		{"a JSON type with a charset", ts.URL, map[string]string{"Content-Type": "application/json; charset=utf-8"}, `{"name":"a"}`, 200, "", "a"},
		{"a charset spelled otherwise", ts.URL, map[string]string{"Content-Type": "application/json;charset=UTF8"}, `{"name":"c"}`, 200, "", "c"},
		{"a JSON type in UTF-16", ts.URL, map[string]string{"Content-Type": "application/json; charset=utf-16"}, `{"name":"x"}`, 415, refusal.UnsupportedContentType, ""},
		{"a JSON type in Latin-1", ts.URL, map[string]string{"Content-Type": "application/json; charset=iso-8859-1"}, `{"name":"x"}`, 415, refusal.UnsupportedContentType, ""},
		{"a +json type", ts.URL, map[string]string{"Content-Type": "application/merge-patch+json"}, `{"name":"b"}`, 200, "", "b"},
		{"empty body, no type", ts.URL, nil, "", 415, refusal.UnsupportedContentType, ""},
		{"empty body with a JSON type", ts.URL, jsonType, "", 400, refusal.BodyRequired, ""},
		{"only white space with a JSON type", ts.URL, jsonType, " \n", 400, refusal.BodyRequired, ""},
		{"{} with a JSON type", ts.URL, jsonType, "{}", 200, "", ""},
		{"text/plain", ts.URL, map[string]string{"Content-Type": "text/plain"}, `{"name":"x"}`, 415, refusal.UnsupportedContentType, ""},
		{"a form", ts.URL, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `name=x`, 415, refusal.UnsupportedContentType, ""},
		{"a body with no type", ts.URL, nil, `{"name":"x"}`, 415, refusal.UnsupportedContentType, ""},
		{"a type that does not parse", ts.URL, map[string]string{"Content-Type": "application/json; ="}, `{}`, 415, refusal.UnsupportedContentType, ""},
		{"over 1 MiB", ts.URL, jsonType, `{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, 413, refusal.BodyTooLarge, ""},
		{"over the route's own bound", small.URL, jsonType, `{"name":"` + strings.Repeat("a", 64) + `"}`, 413, refusal.BodyTooLarge, ""},
		{"within the route's own bound", small.URL, jsonType, `{"name":"short"}`, 200, "", "short"},
		{"syntax error", ts.URL, jsonType, `{"name":`, 400, refusal.MalformedJSON, ""},
		{"not an object", ts.URL, jsonType, `["box"]`, 400, refusal.MalformedJSON, ""},
		{"null", ts.URL, jsonType, `null`, 400, refusal.MalformedJSON, ""},
		{"two objects", ts.URL, jsonType, `{"name":"a"}{"name":"b"}`, 400, refusal.MalformedJSON, ""},
		{"an unknown property", ts.URL, jsonType, `{"name":"a","admin":true}`, 400, refusal.MalformedJSON, ""},
		{"a property of the wrong type", ts.URL, jsonType, `{"name":7}`, 400, refusal.MalformedJSON, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, m := do(t, http.MethodPost, tt.url+"/api/echo", tt.header, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.status, m)
			}
			if tt.rule != "" {
				if m["ok"] != false || m["refused"] != string(tt.rule) || m["why"] == "" || len(m) != 3 {
					t.Fatalf("answer %v, want a %s refusal", m, tt.rule)
				}
				return
			}
			if m["ok"] != true || m["name"] != tt.echo {
				t.Fatalf("answer %v, want name %q", m, tt.echo)
			}
		})
	}
}

func TestLoopbackGate(t *testing.T) {
	t.Parallel()
	const token = "the-host-token"
	gate := NewGate()
	ts := echoServer(t, 0, Config{Gate: gate, HostToken: func(s string) bool { return s == token }})
	ticket := newTicket(t, gate)
	if len(ticket) != 64 || strings.Trim(ticket, "0123456789abcdef") != "" {
		t.Fatalf("ticket %q is not 64 hex digits", ticket)
	}

	// Redeeming answers 303 to / with the session cookie.
	resp, _ := do(t, http.MethodGet, ts.URL+"/?bootstrap="+ticket, nil, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("redeem: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookieName("") {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" || len(session.Value) != 64 {
		t.Fatalf("session cookie %+v (Set-Cookie %q)", session, resp.Header.Values("Set-Cookie"))
	}
	if session.Value == ticket {
		t.Fatal("the session is the ticket")
	}
	withSession := map[string]string{"Cookie": SessionCookieName("") + "=" + session.Value}

	tests := []struct {
		name, method, path string
		header             map[string]string
		body               string
		status             int
		rule               refusal.Rule
	}{
		{"a spent ticket", "GET", "/?bootstrap=" + ticket, nil, "", 401, ""},
		{"an invented ticket", "GET", "/?bootstrap=" + strings.Repeat("ab", 32), nil, "", 401, ""},
		{"the page without a session", "GET", "/", nil, "", 401, ""},
		{"a page file without a session", "GET", "/index.html", nil, "", 401, ""},
		{"the API without a session", "POST", "/api/echo", map[string]string{"Content-Type": "application/json"}, `{"name":"x"}`, 401, refusal.LoopbackUnauthenticated},
		{"an unknown API route without a session", "GET", "/api/nothing", nil, "", 401, refusal.LoopbackUnauthenticated},
		{"a wrong session", "GET", "/api/nothing", map[string]string{"Cookie": SessionCookieName("") + "=" + strings.Repeat("0", 64)}, "", 401, refusal.LoopbackUnauthenticated},
		{"a wrong host token", "GET", "/", map[string]string{HostTokenHeader: "nope"}, "", 401, ""},
		{"health stays open", "GET", "/api/health", nil, "", 200, ""},
		{"the page with the session", "GET", "/", withSession, "", 200, ""},
		{"the API with the session", "POST", "/api/echo", map[string]string{"Content-Type": "application/json", "Cookie": withSession["Cookie"]}, `{"name":"x"}`, 200, ""},
		{"the API with the host token", "POST", "/api/echo", map[string]string{"Content-Type": "application/json", HostTokenHeader: token}, `{"name":"x"}`, 200, ""},
		{"the page with the host token", "GET", "/", map[string]string{HostTokenHeader: token}, "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, m := do(t, tt.method, ts.URL+tt.path, tt.header, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.status, m)
			}
			if tt.status != 401 {
				return
			}
			if tt.rule != "" {
				if m["refused"] != string(tt.rule) || m["ok"] != false {
					t.Fatalf("answer %v, want %s", m, tt.rule)
				}
				return
			}
			if text, _ := m["text"].(string); !strings.Contains(text, "bootstrap") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Fatalf("the 401 page (%s) says %q", resp.Header.Get("Content-Type"), text)
			}
			if len(resp.Cookies()) != 0 {
				t.Fatal("a refused request got a cookie")
			}
		})
	}
}

// TestBootstrapKeepsTheOtherParameters: redeeming a bootstrap link drops only the ticket; the
// link's other query parameters reach the page, as written and in order (as the original's
// redirect does). A used link opened again by a signed-in browser lands on the page too; without
// a session it stays refused.
func TestBootstrapKeepsTheOtherParameters(t *testing.T) {
	t.Parallel()
	gate := NewGate()
	ts := echoServer(t, 0, Config{Gate: gate})
	tests := []struct{ name, query, want string }{
		{"the ticket alone", "bootstrap=%s", "/"},
		{"a parameter after it", "bootstrap=%s&folder=docs", "/?folder=docs"},
		{"parameters around it, kept as written", "b=2&bootstrap=%s&a=x%%20y&flag", "/?b=2&a=x%20y&flag"},
		{"an escaped spelling of the name is the ticket too", "b%%6Fotstrap=%s&keep=1", "/?keep=1"},
		{"a repeated ticket is dropped twice", "bootstrap=%s&bootstrap=other&x=1", "/?x=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticket := newTicket(t, gate)
			query := strings.Replace(tt.query, "%s", ticket, 1)
			query = strings.ReplaceAll(query, "%%", "%")
			resp, _ := do(t, http.MethodGet, ts.URL+"/?"+query, nil, "")
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != tt.want {
				t.Fatalf("redeem %q: %d to %q, want 303 to %q", query, resp.StatusCode, resp.Header.Get("Location"), tt.want)
			}
			var cookie string
			for _, c := range resp.Cookies() {
				if c.Name == SessionCookieName("") {
					cookie = c.Value
				}
			}
			// The same link again: a signed-in browser is sent on, a stranger is refused.
			again, _ := do(t, http.MethodGet, ts.URL+"/?"+query, map[string]string{"Cookie": SessionCookieName("") + "=" + cookie}, "")
			if again.StatusCode != http.StatusSeeOther || again.Header.Get("Location") != tt.want || len(again.Cookies()) != 0 {
				t.Fatalf("a used link with a session: %d to %q (cookies %v)", again.StatusCode, again.Header.Get("Location"), again.Cookies())
			}
			if stranger, _ := do(t, http.MethodGet, ts.URL+"/?"+query, nil, ""); stranger.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a used link without a session: %d, want 401", stranger.StatusCode)
			}
		})
	}
}

// newTicket mints a ticket on gate or fails the test.
func newTicket(t testing.TB, gate *Gate) string {
	t.Helper()
	tk, err := gate.NewTicket()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestTheSessionCookieIsTheDeployments: two deployments' gates on one host set two cookie names
// (vb_session_ and 12 hex digits), one deployment one; a gate reads only its own name, and the
// old vb_session when its own is absent (a session signed in before the upgrade), never another
// deployment's; the old name is never set.
func TestTheSessionCookieIsTheDeployments(t *testing.T) {
	t.Parallel()
	if SessionCookieName("fleet-a") != SessionCookieName("fleet-a") || SessionCookieName("fleet-a") == SessionCookieName("fleet-b") {
		t.Fatal("one deployment's name differs, or two deployments share one")
	}
	if n := SessionCookieName("x"); !strings.HasPrefix(n, LegacySessionCookie+"_") || len(n) != len(LegacySessionCookie)+1+sessionCookieHexLen {
		t.Fatalf("the name %q", n)
	}
	store := session.NewStore(session.Options{})
	a, b := NewDeploymentGate(store, "a"), NewDeploymentGate(store, "b") // one store, so only the name keeps them apart
	ts := echoServer(t, 0, Config{Gate: a})
	resp, _ := do(t, http.MethodGet, ts.URL+"/?bootstrap="+newTicket(t, a), nil, "")
	var tok string
	for _, c := range resp.Cookies() {
		if c.Name == LegacySessionCookie {
			t.Fatal("the old name was set")
		}
		if c.Name == a.Cookie() {
			tok = c.Value
		}
	}
	if tok == "" {
		t.Fatalf("no %s cookie: %q", a.Cookie(), resp.Header.Values("Set-Cookie"))
	}
	for _, c := range []struct {
		gate   *Gate
		cookie string
		in     bool
	}{
		{a, a.Cookie() + "=" + tok, true},
		{b, a.Cookie() + "=" + tok, false},
		{a, LegacySessionCookie + "=" + tok, true},
		{a, a.Cookie() + "=" + strings.Repeat("0", 64) + "; " + LegacySessionCookie + "=" + tok, false}, // its own name first
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Cookie", c.cookie)
		if got := c.gate.Session(r); got != c.in {
			t.Fatalf("gate %s with %q: session %v, want %v", c.gate.Cookie(), c.cookie, got, c.in)
		}
	}
}
