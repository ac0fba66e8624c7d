package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/session"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"", "", true},
		{"127.0.0.1", "127.0.0.1/32", true},
		{"10.0.0.0/8, fd00::/8", "10.0.0.0/8,fd00::/8", true},
		{"10.1.2.3/8", "10.0.0.0/8", true},
		{"::1", "::1/128", true},
		{"10.0.0.0/8,,", "10.0.0.0/8", true},
		{"proxy.example", "", false},
		{"10.0.0.0/33", "", false},
	} {
		got, err := ParseTrustedProxies(tt.in)
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		if (err == nil) != tt.ok || strings.Join(s, ",") != tt.want {
			t.Errorf("ParseTrustedProxies(%q) = %v, %v; want %q ok=%v", tt.in, s, err, tt.want, tt.ok)
		}
	}
}

// TestRequestInfo reads the client and the scheme from forwarding headers only when the peer is
// trusted, and walks the hops from the right past trusted proxies.
func TestRequestInfo(t *testing.T) {
	t.Parallel()
	trusted, _ := ParseTrustedProxies("10.0.0.0/8,fd00::/8")
	s := &Server{cfg: Config{TrustedProxies: trusted}}
	for _, tt := range []struct {
		name, peer string
		header     map[string]string
		client     string
		https      bool
		keepID     bool
	}{
		{"untrusted peer: headers ignored", "192.0.2.1:5000", map[string]string{"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https", "X-Request-Id": "abc"}, "192.0.2.1", false, false},
		{"untrusted peer: Forwarded ignored", "192.0.2.1:5000", map[string]string{"Forwarded": "for=203.0.113.9;proto=https"}, "192.0.2.1", false, false},
		{"trusted peer, no headers", "10.0.0.2:5000", nil, "10.0.0.2", false, false},
		{"trusted X-Forwarded-*", "10.0.0.2:5000", map[string]string{"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https", "X-Request-Id": "edge-42"}, "203.0.113.9", true, true},
		{"a spoofed hop left of the real client", "10.0.0.2:5000", map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.9"}, "203.0.113.9", false, false},
		{"trusted hops are skipped", "10.0.0.2:5000", map[string]string{"X-Forwarded-For": "203.0.113.9, 10.0.0.7"}, "203.0.113.9", false, false},
		{"only trusted hops: the leftmost", "10.0.0.2:5000", map[string]string{"X-Forwarded-For": "10.0.0.9, 10.0.0.7"}, "10.0.0.9", false, false},
		{"the nearest proxy's proto counts", "10.0.0.2:5000", map[string]string{"X-Forwarded-Proto": "https, http"}, "10.0.0.2", false, false},
		{"Forwarded wins over X-Forwarded-*", "10.0.0.2:5000", map[string]string{"Forwarded": `for="[2001:db8::17]:4711";proto=https, for=10.0.0.7`, "X-Forwarded-For": "198.51.100.1", "X-Forwarded-Proto": "http"}, "2001:db8::17", true, false},
		{"an obfuscated Forwarded hop", "10.0.0.2:5000", map[string]string{"Forwarded": "for=_hidden<script>"}, "_hiddenscript", false, false},
		{"an IPv6 trusted peer", "[fd00::1]:5000", map[string]string{"X-Forwarded-For": "203.0.113.9:41000"}, "203.0.113.9", false, false},
		{"a malformed request id is replaced", "10.0.0.2:5000", map[string]string{"X-Request-Id": "a b\nc"}, "10.0.0.2", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			info := s.requestInfo(r)
			if info.client != tt.client || info.https != tt.https {
				t.Fatalf("client %q https %v, want %q %v", info.client, info.https, tt.client, tt.https)
			}
			if keep := info.id == r.Header.Get("X-Request-Id"); keep != tt.keepID || info.id == "" {
				t.Fatalf("request id %q (incoming %q), kept %v want %v", info.id, r.Header.Get("X-Request-Id"), keep, tt.keepID)
			}
		})
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the JSON log lines written so far.
func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// TestForwardedHeadersCountOnlyFromATrustedProxy redeems a ticket through a relay that trusts no
// proxy and through one that trusts the test's own address, with the same forwarding headers:
// only the second makes the cookie Secure, sends HSTS and logs the forwarded client.
func TestForwardedHeadersCountOnlyFromATrustedProxy(t *testing.T) {
	t.Parallel()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tt := range []struct {
		name    string
		trusted []netip.Prefix
		secure  bool
		client  string
	}{
		{"untrusted", nil, false, "127.0.0.1"},
		{"trusted", loopback, true, "203.0.113.9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html>"), 0o644)
			var logs lockedBuffer
			gate := NewGate()
			s, err := New(Config{Public: dir, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Gate: gate, HSTS: true, TrustedProxies: tt.trusted})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s)
			defer ts.Close()
			for _, header := range []map[string]string{
				{"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"},
				{"Forwarded": "for=203.0.113.9;proto=https"},
			} {
				resp, _ := do(t, "GET", ts.URL+"/?bootstrap="+newTicket(t, gate), header, "")
				cookies := resp.Cookies()
				if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
					t.Fatalf("redeem: %d %v", resp.StatusCode, cookies)
				}
				if cookies[0].Secure != tt.secure {
					t.Errorf("%v: cookie Secure %v, want %v", header, cookies[0].Secure, tt.secure)
				}
				if hsts := resp.Header.Get("Strict-Transport-Security") != ""; hsts != tt.secure {
					t.Errorf("%v: HSTS %v, want %v", header, hsts, tt.secure)
				}
				id := resp.Header.Get(RequestIDHeader)
				found := false
				for _, line := range logs.lines(t) {
					if line["msg"] == "request" && line["request_id"] == id {
						found = true
						if line["client"] != tt.client || line["scheme"] != map[bool]string{true: "https", false: "http"}[tt.secure] {
							t.Errorf("%v: logged %v, want client %s", header, line, tt.client)
						}
					}
				}
				if !found {
					t.Errorf("no request line with id %q", id)
				}
			}
			for _, line := range logs.lines(t) {
				if line["msg"] == "session started" && line["client"] != tt.client {
					t.Errorf("session started for %v, want client %s", line["client"], tt.client)
				}
			}
		})
	}
}

// TestSessionRoutes: listing, revoking and minting need the host token; a session is listed by
// its ID; a minted address starts the configured base and signs in once; without the gate the
// listing is empty and minting is refused gate-off.
func TestSessionRoutes(t *testing.T) {
	t.Parallel()
	const token = "the-host-token"
	host := map[string]string{HostTokenHeader: token}
	hostJSON := map[string]string{HostTokenHeader: token, "Content-Type": "application/json"}
	gate := NewGate()
	ts := echoServer(t, 0, Config{Gate: gate, HostToken: func(s string) bool { return s == token }, BootstrapBase: "https://voicebox.example.com"})
	resp, _ := do(t, "GET", ts.URL+"/?bootstrap="+newTicket(t, gate), nil, "")
	cookie := resp.Cookies()[0]
	withSession := map[string]string{"Cookie": SessionCookieName("") + "=" + cookie.Value}
	if cookie.MaxAge <= 0 {
		t.Fatalf("the cookie has no Max-Age: %+v", cookie)
	}

	for _, tt := range []struct {
		method, path string
		header       map[string]string
		status       int
	}{
		{"GET", "/api/sessions", nil, 401},
		{"GET", "/api/sessions", withSession, 403},
		{"POST", "/api/bootstrap", withSession, 403},
		{"DELETE", "/api/sessions", withSession, 403},
		{"DELETE", "/api/sessions/0123456789abcdef", withSession, 403},
		{"DELETE", "/api/sessions/0123456789abcdef", host, 404},
	} {
		header, body := tt.header, ""
		if StateChanging(tt.method) {
			header, body = map[string]string{"Content-Type": "application/json"}, "{}"
			maps.Copy(header, tt.header)
		}
		if resp, m := do(t, tt.method, ts.URL+tt.path, header, body); resp.StatusCode != tt.status {
			t.Errorf("%s %s: %d %v, want %d", tt.method, tt.path, resp.StatusCode, m, tt.status)
		}
	}

	_, m := do(t, "GET", ts.URL+"/api/sessions", host, "")
	list, _ := m["sessions"].([]any)
	if m["gate"] != true || len(list) != 1 {
		t.Fatalf("GET /api/sessions: %v", m)
	}
	entry := list[0].(map[string]any)
	if b, _ := json.Marshal(m); strings.Contains(string(b), cookie.Value) || entry["id"] != session.ID(cookie.Value) {
		t.Fatalf("the listing %s shows the secret or not the ID", b)
	}

	_, m = do(t, "POST", ts.URL+"/api/bootstrap", map[string]string{HostTokenHeader: token, "Content-Type": "application/json"}, "{}")
	url, _ := m["url"].(string)
	ticket, ok := strings.CutPrefix(url, "https://voicebox.example.com/?bootstrap=")
	if !ok || len(ticket) != 64 || m["expires"] == nil {
		t.Fatalf("POST /api/bootstrap: %v", m)
	}
	if resp, _ := do(t, "GET", ts.URL+"/?bootstrap="+ticket, nil, ""); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the minted ticket: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", ts.URL+"/?bootstrap="+ticket, nil, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the minted ticket twice: %d", resp.StatusCode)
	}

	if resp, m := do(t, "DELETE", ts.URL+"/api/sessions/"+entry["id"].(string), hostJSON, "{}"); resp.StatusCode != 200 || m["id"] != entry["id"] {
		t.Fatalf("revoke: %d %v", resp.StatusCode, m)
	}
	if resp, _ := do(t, "GET", ts.URL+"/", withSession, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the revoked session opened the page: %d", resp.StatusCode)
	}
	if resp, m := do(t, "DELETE", ts.URL+"/api/sessions", hostJSON, "{}"); resp.StatusCode != 200 || m["revoked"] != float64(1) {
		t.Fatalf("revoke all: %d %v", resp.StatusCode, m)
	}

	open := echoServer(t, 0, Config{HostToken: func(s string) bool { return s == token }})
	if _, m := do(t, "GET", open.URL+"/api/sessions", host, ""); m["gate"] != false || len(m["sessions"].([]any)) != 0 {
		t.Fatalf("without the gate: %v", m)
	}
	for _, probe := range []struct{ method, path string }{{"POST", "/api/bootstrap"}, {"DELETE", "/api/sessions"}, {"DELETE", "/api/sessions/x"}} {
		if resp, m := do(t, probe.method, open.URL+probe.path, hostJSON, "{}"); resp.StatusCode != http.StatusConflict || m["refused"] != "gate-off" {
			t.Errorf("%s %s without the gate: %d %v", probe.method, probe.path, resp.StatusCode, m)
		}
	}
}
