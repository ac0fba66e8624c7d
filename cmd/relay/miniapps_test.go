package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const miniAppSecret = "orders-secret-of-at-least-thirty-two-bytes"

func TestServeRefusesAMalformedMiniAppRegistry(t *testing.T) {
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	for _, tt := range []struct{ registry, want string }{
		{`{"orders": {"name": "Orders", "url": "http://127.0.0.1:5190/"}}`, `MINI_APPS: entry "orders": field "origin"`},
		{`{"orders": {"name": "Orders", "url": "http://127.0.0.1:5190/", "origin": "http://127.0.0.1:5190", "icon": "rocket"}}`, `entry "orders": field "icon"`},
		{`[1]`, `MINI_APPS: not a JSON object`},
	} {
		t.Setenv("MINI_APPS", tt.registry)
		var stderr bytes.Buffer
		code := serveUntil(context.Background(), []string{"--addr", "127.0.0.1:0", "--public", public, "--state-dir", filepath.Join(t.TempDir(), "s")}, io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("MINI_APPS=%s: exit %d, stderr %q; want it to say %q", tt.registry, code, stderr.String(), tt.want)
		}
	}
	t.Setenv("MINI_APPS", "")
	var stderr bytes.Buffer
	code := serveUntil(context.Background(), []string{"--addr", "127.0.0.1:0", "--public", public, "--mini-apps", filepath.Join(t.TempDir(), "absent.json")}, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--mini-apps") {
		t.Errorf("a missing --mini-apps file: exit %d, %q", code, stderr.String())
	}
	// An app at the page's own origin would be same-origin with it: refused at start.
	t.Setenv("MINI_APPS", `{"own": {"name": "Own", "url": "https://vb.example.com/x", "origin": "https://vb.example.com"}}`)
	stderr.Reset()
	code = serveUntil(context.Background(), []string{"--addr", "127.0.0.1:0", "--public", public, "--origin", "https://vb.example.com", "--state-dir", filepath.Join(t.TempDir(), "s")}, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `mini-app "own": field "origin"`) {
		t.Errorf("an app at the page's origin: exit %d, %q", code, stderr.String())
	}
}

func TestServeListsMiniAppsFramesThemAndMintsTokens(t *testing.T) {
	t.Setenv("MINI_APPS", `{"ignored": {}}`) // the file wins over the environment
	file := filepath.Join(t.TempDir(), "mini-apps.json")
	os.WriteFile(file, []byte(`{"orders": {"name": "Order Book", "url": "http://127.0.0.1:5190/", "origin": "http://127.0.0.1:5190",
		"capabilities": ["auth"], "audience": "orders-app", "secret": "`+miniAppSecret+`"}}`), 0o600)
	base, _ := startServe(t, filepath.Join(t.TempDir(), "state"), "--mini-apps", file)

	resp, err := http.Get(base + "/mini-apps")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"id":"orders"`) || strings.Contains(string(body), miniAppSecret) {
		t.Fatalf("GET /mini-apps: %d %s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, " http://127.0.0.1:5190;") || !strings.HasPrefix(csp[strings.Index(csp, "frame-src"):], "frame-src 'self' http://*.localhost:") {
		t.Fatalf("the CSP does not frame the app: %q", csp)
	}

	resp, err = http.Post(base+"/mini-apps/orders/token", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Token     string
		ExpiresAt int64
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	claims := &jwt.RegisteredClaims{}
	_, err = jwt.ParseWithClaims(tok.Token, claims, func(*jwt.Token) (any, error) { return []byte(miniAppSecret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience("orders-app"), jwt.WithIssuer(base), jwt.WithExpirationRequired())
	if err != nil {
		t.Fatalf("the token (issuer should be %s): %v", base, err)
	}
	if left := time.Until(claims.ExpiresAt.Time); left <= 0 || left > 10*time.Minute || tok.ExpiresAt != claims.ExpiresAt.UnixMilli() {
		t.Fatalf("the token expires at %v (answer says %d)", claims.ExpiresAt, tok.ExpiresAt)
	}
}

func TestHelpNamesTheMiniAppSettings(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	run([]string{"--help"}, &out, io.Discard)
	for _, want := range []string{"-mini-apps", "MINI_APPS", "check-app"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestShutdownIsNotHeldByAnIdleConnection: a connection that never sends a request (a browser's
// preconnect) does not keep the relay from shutting down cleanly within its grace.
func TestShutdownIsNotHeldByAnIdleConnection(t *testing.T) {
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	t.Setenv("MINI_APPS", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		exit <- serveUntil(ctx, []string{"--addr", "127.0.0.1:0", "--public", public, "--state-dir", filepath.Join(t.TempDir(), "s")}, outW, io.Discard)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, outR)
	addr := strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "voicebox on ")), "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(100 * time.Millisecond) // the server has accepted it
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("serve exited %d with an idle connection open", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}
