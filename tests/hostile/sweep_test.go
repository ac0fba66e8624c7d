//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// The route sweep: every route the relay registers (routeDoors, so a route added tomorrow is
// swept too) is sent the generic hostile requests, with the gate on. Requests without a
// credential, and bodies that are not what any route reads: truncated JSON, JSON of every wrong
// type, unknown and wrongly typed fields, NUL bytes and bytes that are no UTF-8, nesting 100,000
// deep, and a body over server.MaxBodyBytes. Each is answered: never a hang, never a 5xx
// (internal-error is a handler that broke), a refusal always named {rule, why}; the relay
// serves the next request.

// sweepBodies are the malformed bodies every route is sent, by what they are.
func sweepBodies() []struct{ what, body string } {
	return []struct{ what, body string }{
		{"truncated JSON", `{"id":`},
		{"a JSON array", `[]`},
		{"a JSON string", `"x"`},
		{"a JSON number", `123`},
		{"JSON null", `null`},
		{"an unknown field", `{"surprise":1}`},
		{"fields of the wrong types", `{"id":{"$gt":""},"name":[1],"kind":true,"code":1.5e308,"tools":"all","token":null,"html":7}`},
		{"NUL and no UTF-8", "{\"id\":\"a\x00b\xff\xfe\"}"},
		{"nesting 100,000 deep", strings.Repeat("[", 100000)},
		{"a body over the bound", `{"id":"` + strings.Repeat("a", server.MaxBodyBytes+1024) + `"}`},
	}
}

// patternParam is a wildcard of a route pattern.
var patternParam = regexp.MustCompile(`\{[^}]*\}`)

// sweepTarget turns a route door ("route GET /api/x/{id}") into a method and a path to attack,
// its wildcards filled with fill; ok is false for doors that are no relay route.
func sweepTarget(door, fill string) (method, path, host string, ok bool) {
	pattern, ok := strings.CutPrefix(door, "route ")
	if !ok {
		return "", "", "", false
	}
	if rest, appHost := strings.CutPrefix(pattern, "app host "); appHost {
		pattern, host = rest, "app-0123456789abcdef.localhost"
	}
	method, path, hasMethod := strings.Cut(pattern, " ")
	if !hasMethod {
		method, path = http.MethodPost, pattern+"no-such-route" // the catch-all "/"
	}
	path = patternParam.ReplaceAllString(path, fill)
	return method, path, host, true
}

// gateExempt reports whether the gate lets path through without a session (they admit by
// bearer, or hold nothing: see internal/core/server's gate), or the path is served before the gate.
func gateExempt(path, host string) bool {
	if host != "" || strings.HasPrefix(path, server.AppFilesPath) {
		return true
	}
	switch path {
	case "/api/health", "/api/ready", "/channel", "/mcp", server.GuestPath, server.OldGuestPath:
		return true
	}
	return !strings.HasPrefix(path, "/api/") && path != "/live"
}

// expectContinueBytes is the body size past which the sweep asks the relay before sending it
// (Expect: 100-continue), as curl does past 1 MiB.
const expectContinueBytes = 64 << 10

// continueClient waits for the relay's 100 Continue (or its refusal) as long as a request may
// take, never sending a body the relay has not asked for.
var continueClient = &http.Client{Timeout: patience, Transport: &http.Transport{ExpectContinueTimeout: patience}}

// sweepOne sends one request and checks its answer: a status below 500 within patience, and a
// named refusal whenever it refuses with JSON. It returns the status and the rule.
func sweepOne(t *testing.T, relay *harness.Relay, what, method, path, host string, header map[string]string, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, relay.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = strings.Replace(host, "localhost", "localhost:"+relay.Port(), 1)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := plainClient
	if len(body) > expectContinueBytes {
		// As curl does for a large body: the relay refuses an oversized one by its headers and
		// closes the connection without reading it, so a client that writes it anyway races
		// that close (a reset can swallow the answer). Asking first, it reads the refusal.
		req.Header.Set("Expect", "100-continue")
		client = continueClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// A socket the relay closes on an oversized body before reading it is an answer too,
		// but only after it said so: the status must have come.
		t.Errorf("%s %s, %s: no answer: %v", method, path, what, err)
		return 0, ""
	}
	defer resp.Body.Close()
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ctype == "text/event-stream" {
		return resp.StatusCode, "" // a stream is served; it is not read to its end
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<10))
	var m struct {
		OK      *bool  `json:"ok"`
		Refused string `json:"refused"`
		Why     string `json:"why"`
	}
	if resp.StatusCode >= 500 {
		t.Errorf("%s %s, %s: %d %.300s", method, path, what, resp.StatusCode, b)
	}
	if ctype == "application/json" && resp.StatusCode >= 400 {
		if json.Unmarshal(b, &m) != nil || m.Refused == "" || m.Why == "" || m.Refused == "internal-error" {
			t.Errorf("%s %s, %s: %d without a named refusal: %.300s", method, path, what, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, m.Refused
}

// TestEveryRouteRefusesMalformedInputByName: see the sweep above.
func TestEveryRouteRefusesMalformedInputByName(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_LOOPBACK_AUTH=1")
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}
	n := 0
	for _, door := range routeDoors(t) {
		// The wildcards are filled with a hostile segment (a climb and 300 bytes) once, and with
		// a plain one for the bodies, so that they reach the handler rather than the path's check.
		method, path, host, ok := sweepTarget(door, "%2e%2e%2F"+strings.Repeat("z", 300))
		if !ok {
			continue
		}
		_, plain, _, _ := sweepTarget(door, "x")
		n++
		t.Run(door, func(t *testing.T) {
			// No credential, gate on: every /api route refuses it by name; the page's own
			// addresses (the live socket among them) tell a person how to sign in, in words.
			status, rule := sweepOne(t, relay, "no credential", method, path, host, nil, `{}`)
			if !gateExempt(path, host) && (status != http.StatusUnauthorized || (strings.HasPrefix(path, "/api/") && rule != "loopback-unauthenticated")) {
				t.Errorf("%s %s without a session answered %d %q, want 401 loopback-unauthenticated", method, path, status, rule)
			}
			sweepOne(t, relay, "a hostile path", method, path, host, token, `{}`)
			for _, b := range sweepBodies() {
				sweepOne(t, relay, b.what, method, plain, host, token, b.body)
			}
			if r := send(t, nil, http.MethodGet, relay.URL+"/api/health", nil, ""); r.status != http.StatusOK {
				t.Fatalf("after %s: /api/health answered %d %s", door, r.status, r.body)
			}
		})
	}
	if n < 40 {
		t.Fatalf("swept %d routes; the relay has more", n)
	}
	served(t, relay)
}
