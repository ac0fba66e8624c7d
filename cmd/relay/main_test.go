package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestListenAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, flag, port, want string
		ok                     bool
		gated                  bool
	}{
		{"0.0.0.0 with the gate", "0.0.0.0:8787", "", "0.0.0.0:8787", true, true},
		{"a name with the gate", "example.com:8787", "", "example.com:8787", true, true},
		{"default", "", "", "127.0.0.1:8787", true, false},
		{"PORT", "", "9000", "127.0.0.1:9000", true, false},
		{"PORT=0 takes a free port", "", "0", "127.0.0.1:0", true, false},
		{"--addr wins over PORT", "127.0.0.1:9100", "9000", "127.0.0.1:9100", true, false},
		{"--addr without host", ":9200", "", "127.0.0.1:9200", true, false},
		{"localhost", "localhost:9300", "", "localhost:9300", true, false},
		{"IPv6 loopback", "[::1]:9400", "", "[::1]:9400", true, false},
		{"public address refused", "0.0.0.0:8787", "", "", false, false},
		{"other host refused", "192.0.2.1:8787", "", "", false, false},
		{"name refused", "example.com:8787", "", "", false, false},
		{"bad port", "", "http", "", false, false},
		{"port out of range", "", "70000", "", false, false},
		{"no port", "127.0.0.1", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := listenAddr(tt.flag, tt.port, tt.gated)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("listenAddr(%q, %q) = %q, %v; want %q, ok=%v", tt.flag, tt.port, got, err, tt.want, tt.ok)
			}
		})
	}
}

// TestServeOnAFreePort starts the real serve command with PORT=0, reads the address it prints,
// asks it for its health, and shuts it down.
func TestServeOnAFreePort(t *testing.T) {
	public := t.TempDir()
	if err := os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PORT", "0")
	t.Setenv("VOICEBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- serveUntil(ctx, []string{"--public", public}, outW, &stderr)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v (stderr %s)", err, stderr.String())
	}
	m := regexp.MustCompile(`^voicebox on (http://127\.0\.0\.1:(\d+))\n$`).FindStringSubmatch(line)
	if m == nil || m[2] == "0" {
		t.Fatalf("printed %q, want the real port", line)
	}
	go io.Copy(io.Discard, outR)
	resp, err := http.Get(m[1] + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health answered %d", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("serve exited %d after shutdown (stderr %s)", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not shut down")
	}
}

func TestHelpListsEveryFlagAndVariable(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := run([]string{"--help"}, &out, io.Discard); code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	for _, want := range []string{"serve", "-addr", "-public", "PORT", "VOICEBOX_PUBLIC_DIR",
		"pair", "-revoke", "-list", "-state-dir", "-extensions-dir", "-hello-bound-ms", "VOICEBOX_STATE_DIR", "VOICEBOX_EXTENSIONS_DIR", "VOICEBOX_HELLO_BOUND_MS", "VOICEBOX_LOOPBACK_AUTH",
		"env", "-relay", "-bearer-file", "-root",
		"sessions", "ticket", "-all", "-session-lifetime", "VOICEBOX_SESSION_LIFETIME", "-trusted-proxy", "VOICEBOX_TRUSTED_PROXY",
		"-acme-host", "VOICEBOX_ACME_HOST", "-acme-email", "VOICEBOX_ACME_EMAIL", "-acme-directory", "VOICEBOX_ACME_DIRECTORY",
		"-acme-http-addr", "VOICEBOX_ACME_HTTP_ADDR", "-log-format", "VOICEBOX_LOG_FORMAT", "-origin", "VOICEBOX_ORIGIN",
		"-tls-cert", "VOICEBOX_TLS_CERT", "-tls-key", "VOICEBOX_TLS_KEY", ".relay.sock", "VOICEBOX_LIVE_PROVIDER", "LIVE_PROVIDER",
		"mcp-token", "Flags of mcp:", "VOICEBOX_MCP_BEARER_FILE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestToolCheckIsACommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	decl := filepath.Join(dir, "tool.json")
	os.WriteFile(decl, []byte(`{"name":"set_score","description":"Set the score.","parameters":{"type":"object","properties":{"points":{"type":"integer","minimum":0}},"required":["points"]}}`), 0o644)
	args := filepath.Join(dir, "args.json")
	os.WriteFile(args, []byte(`{"points":-1}`), 0o644)
	var out bytes.Buffer
	if code := run([]string{"tool-check", decl}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), `"ok": true`) {
		t.Fatalf("tool-check of a good declaration: exit %d, %s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"tool-check", decl, args}, &out, io.Discard); code != 1 || !strings.Contains(out.String(), `"invalid-argument-range"`) {
		t.Fatalf("tool-check of out-of-range arguments: exit %d, %s", code, out.String())
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if code := run([]string{"frobnicate"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "frobnicate") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeBanner: the second line says what the gate's posture is; with the gate on it is a
// one-time bootstrap address that redeems into a session.
func TestServeBanner(t *testing.T) {
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "")
	stdout, stderr := serveOnce(t, filepath.Join(t.TempDir(), "state"))
	if strings.Contains(stdout, "loopback gate off") || !strings.Contains(stderr, "loopback gate off: any process on this machine") {
		t.Fatalf("gate off: the warning belongs on stderr; stdout %q, stderr %q", stdout, stderr)
	}

	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "1")
	url, out := startServe(t, filepath.Join(t.TempDir(), "state"))
	line, _ := out.ReadString('\n')
	m := regexp.MustCompile(`(http://\S+/\?bootstrap=[0-9a-f]{64}) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("gate on printed %q", line)
	}
	if resp, err := http.Get(url + "/"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("/ without a session: %v %v", resp, err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(m[1])
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("redeeming: %v %v", resp, err)
	}
	resp, err = client.Get(m[1])
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("redeeming twice: %v %v", resp, err)
	}
}

// serveOnce runs serve until it has printed its address, stops it, and returns all it wrote to
// stdout and stderr.
func serveOnce(t *testing.T, stateDir string) (stdout, stderr string) {
	t.Helper()
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	var errOut syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- serveUntil(ctx, []string{"--addr", "127.0.0.1:0", "--public", public, "--extensions-dir", stateDir}, outW, &errOut)
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	first, err := br.ReadString('\n')
	cancel()
	if err != nil {
		t.Fatalf("no address line: %v; serve said: %s", err, errOut.String())
	}
	rest, _ := io.ReadAll(br) // until serve returns and closes stdout
	<-exit
	return first + string(rest), errOut.String()
}

func TestPairCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	var out bytes.Buffer
	if code := run([]string{"pair", "--state-dir", dir, "box"}, &out, io.Discard); code != 0 {
		t.Fatalf("pair exited %d", code)
	}
	bearer := strings.TrimSpace(out.String())
	out.Reset()
	if code := run([]string{"pair", "--state-dir", dir, "--list"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "box") || strings.Contains(out.String(), bearer[4:]) {
		t.Fatalf("pair --list: exit %d, %q", code, out.String())
	}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no name", []string{}, 2},
		{"two names", []string{"a", "b"}, 2},
		{"list with a name", []string{"--list", "a"}, 2},
		{"a bad name", []string{"a b"}, 1},
		{"revoke unknown", []string{"--revoke", "nobody"}, 1},
		{"revoke", []string{"--revoke", "box"}, 0},
		{"revoke again", []string{"--revoke", "box"}, 1},
	}
	for _, tt := range tests {
		if code := run(append([]string{"pair", "--state-dir", dir}, tt.args...), io.Discard, io.Discard); code != tt.code {
			t.Errorf("%s: exit %d, want %d", tt.name, code, tt.code)
		}
	}
}

// TestTheStateDirectoryKeepsItsOldName: --extensions-dir and VOICEBOX_EXTENSIONS_DIR still name
// the state directory, flags win over the environment, and the old and new names may not name
// different directories.
func TestTheStateDirectoryKeepsItsOldName(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	tests := []struct {
		name       string
		flags      stateDirFlags
		state, old string // the environment
		want       string // "" for a conflict
	}{
		{"--state-dir", stateDirFlags{dir: a}, "", "", a},
		{"--extensions-dir", stateDirFlags{alias: a}, "", "", a},
		{"both, the same", stateDirFlags{dir: a, alias: a}, "", "", a},
		{"both, different", stateDirFlags{dir: a, alias: b}, "", "", ""},
		{"VOICEBOX_STATE_DIR", stateDirFlags{}, a, "", a},
		{"VOICEBOX_EXTENSIONS_DIR", stateDirFlags{}, "", a, a},
		{"both variables, different", stateDirFlags{}, a, b, ""},
		{"a flag wins over the environment", stateDirFlags{alias: a}, b, "", a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("VOICEBOX_STATE_DIR", tt.state)
			t.Setenv("VOICEBOX_EXTENSIONS_DIR", tt.old)
			got, err := tt.flags.path()
			if tt.want == "" {
				if !errors.Is(err, errStateDirConflict) {
					t.Fatalf("path() = %q, %v; want the conflict refused", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("path() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Setenv("VOICEBOX_STATE_DIR", "")
	t.Setenv("VOICEBOX_EXTENSIONS_DIR", "")
	var out bytes.Buffer
	if code := run([]string{"pair", "--extensions-dir", a, "box"}, &out, io.Discard); code != 0 {
		t.Fatalf("pair --extensions-dir exited %d", code)
	}
	out.Reset()
	if code := run([]string{"pair", "--state-dir", a, "--list"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "box") {
		t.Fatalf("the pairing made under the old name is not listed under the new one: %q", out.String())
	}
	var stderr bytes.Buffer
	if code := serveUntil(context.Background(), []string{"--addr", "127.0.0.1:0", "--public", base, "--state-dir", a, "--extensions-dir", b}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "name different directories") {
		t.Fatalf("serve with two state directories: exit %d, %q", code, stderr.String())
	}
}

// TestEveryCommandAnswersHelp: `relay COMMAND --help` (and -h) exits 0 for every command, as Go's
// own tools do, printing on stdout the command's summary and each of its flags; the top-level
// help lists every flag of every command too.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Parallel()
	var all bytes.Buffer
	if code := run([]string{"help"}, &all, io.Discard); code != 0 {
		t.Fatalf("help exited %d", code)
	}
	for _, c := range subcommands {
		for _, ask := range []string{"--help", "-h"} {
			var out, errOut bytes.Buffer
			if code := run([]string{c.name, ask}, &out, &errOut); code != 0 {
				t.Errorf("relay %s %s exited %d; stderr %q", c.name, ask, code, errOut.String())
				continue
			}
			if !strings.Contains(out.String(), c.summary) {
				t.Errorf("relay %s %s does not give its summary:\n%s", c.name, ask, out.String())
			}
			if c.flags == nil {
				continue
			}
			c.flags().VisitAll(func(f *flag.Flag) {
				if !strings.Contains(out.String(), "-"+f.Name) {
					t.Errorf("relay %s %s does not list -%s", c.name, ask, f.Name)
				}
			})
		}
		if c.flags != nil {
			section := all.String()[strings.Index(all.String(), "Flags of "+c.name+":"):]
			c.flags().VisitAll(func(f *flag.Flag) {
				if !strings.Contains(section, "-"+f.Name) {
					t.Errorf("relay help does not list %s's -%s", c.name, f.Name)
				}
			})
		}
	}
	if !strings.Contains(all.String(), "approval-code [--state-dir DIR] [--nats URL]") {
		t.Errorf("relay help's line for approval-code omits --nats")
	}
}

// TestOnlyRelayMCPKeepsGosCollector: every command's process tunes its collector but the stdio
// bridge's, whose small heap does better at Go's default (BENCHMARKS.md, "relay mcp made lean").
func TestOnlyRelayMCPKeepsGosCollector(t *testing.T) {
	for _, args := range [][]string{nil, {"serve"}, {"--workspace", "x"}, {"env"}, {"mcp-token", "a"}} {
		if !tunesCollector(args) {
			t.Errorf("relay %v keeps Go's collector; it should tune it", args)
		}
	}
	if tunesCollector([]string{"mcp", "--bearer-file", "f"}) {
		t.Error("relay mcp tunes its collector")
	}
}
