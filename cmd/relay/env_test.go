package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/porttest"
)

// startServe runs the real serve command on a free port with its own state directory and returns
// the relay's URL and the host token.
func startServe(t testing.TB, stateDir string, extra ...string) (url string, stdout *bufio.Reader) {
	t.Helper()
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	args := append([]string{"--addr", "127.0.0.1:0", "--public", public, "--state-dir", stateDir}, extra...)
	var errOut syncBuffer
	go func() {
		exit <- serveUntil(ctx, args, outW, &errOut)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		go io.Copy(io.Discard, outR)
		select {
		case <-exit:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	br := bufio.NewReader(outR)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v; serve said: %s", err, errOut.String())
	}
	m := regexp.MustCompile(`^voicebox on (http://\S+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("printed %q", line)
	}
	return m[1], br
}

func hostToken(t testing.TB, stateDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, ".host-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func rootCall(t testing.TB, url, token, tool string, args map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"tool": tool, "args": args})
	req, _ := http.NewRequest(http.MethodPost, url+"/api/root/call", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Voicebox-Host-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v", tool, resp.StatusCode, m)
	}
	return m
}

func waitMachine(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/api/root")
		if err == nil {
			var m map[string]any
			json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if m["kind"] == "machine" && m["connected"] == true {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the environment never held the root")
}

// checkEnvironment runs write-file then read-file on the machine's directory, and a symbolic
// link escape that must be refused.
func checkEnvironment(t *testing.T, url, token, root, outside string) {
	t.Helper()
	if got := rootCall(t, url, token, "write-file", map[string]any{"path": "notes/a.txt", "content": "from the relay"}); got["ok"] != true {
		t.Fatalf("write-file: %v", got)
	}
	if b, err := os.ReadFile(filepath.Join(root, "notes", "a.txt")); err != nil || string(b) != "from the relay" {
		t.Fatalf("the directory holds %q, %v", b, err)
	}
	got := rootCall(t, url, token, "read-file", map[string]any{"path": "notes/a.txt"})
	if obs, _ := got["observed"].(map[string]any); got["ok"] != true || obs["content"] != "from the relay" {
		t.Fatalf("read-file: %v", got)
	}
	escapes := []struct {
		name, tool string
		args       map[string]any
	}{
		{"read through a file link", "read-file", map[string]any{"path": "secret-link"}},
		{"read through a folder link", "read-file", map[string]any{"path": "out/secret.txt"}},
		{"write through a folder link", "write-file", map[string]any{"path": "out/secret.txt", "content": "overwritten"}},
		{"write a new file through a folder link", "write-file", map[string]any{"path": "out/new.txt", "content": "planted"}},
		{"list through a folder link", "list-files", map[string]any{"dir": "out"}},
	}
	for _, e := range escapes {
		if got := rootCall(t, url, token, e.tool, e.args); got["ok"] != false || got["refused"] != "outside-root" {
			t.Errorf("%s: %v, want outside-root", e.name, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "outside" {
		t.Errorf("the outside file now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file was planted outside the root")
	}
}

// envDirs makes the environment's directory with links pointing outside it.
func envDirs(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "secret-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func pairBearerFile(t testing.TB, stateDir, name string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run([]string{"pair", "--state-dir", stateDir, name}, &out, &errOut); code != 0 {
		t.Fatalf("relay pair: exit %d: %s", code, errOut.String())
	}
	bearer := strings.TrimSpace(out.String())
	if !strings.HasPrefix(bearer, "vbx_") || strings.Contains(errOut.String(), bearer) {
		t.Fatalf("relay pair printed %q / %q", out.String(), errOut.String())
	}
	f := filepath.Join(t.TempDir(), "bearer")
	os.WriteFile(f, out.Bytes(), 0o600)
	return f
}

func TestEnvInProcess(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, stateDir)
	bearerFile := pairBearerFile(t, stateDir, "box")
	root, outside := envDirs(t)
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	var envErr bytes.Buffer
	go func() {
		exit <- envUntil(ctx, []string{"--relay", url, "--bearer-file", bearerFile, "--root", root}, io.Discard, &envErr, nil)
	}()
	waitMachine(t, url)
	checkEnvironment(t, url, hostToken(t, stateDir), root, outside)
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("env exited %d after cancel: %s", code, envErr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("env did not stop")
	}
	bearer, _ := os.ReadFile(bearerFile)
	if strings.Contains(envErr.String(), strings.TrimSpace(string(bearer))) {
		t.Fatal("the environment logged its bearer")
	}
}

// TestEnvRefusedStops: a revoked bearer stops the environment instead of retrying forever.
func TestEnvRefusedStops(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, stateDir)
	bearerFile := pairBearerFile(t, stateDir, "box")
	if code := run([]string{"pair", "--state-dir", stateDir, "--revoke", "box"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("relay pair --revoke exited %d", code)
	}
	var envErr bytes.Buffer
	code := envUntil(context.Background(), []string{"--relay", url, "--bearer-file", bearerFile, "--root", t.TempDir()}, io.Discard, &envErr, nil)
	if code != 1 || !strings.Contains(envErr.String(), "bearer-refused") {
		t.Fatalf("exit %d, stderr %s", code, envErr.String())
	}
}

// TestEnvBinary runs the built relay binary as the environment and stops it with SIGTERM.
func TestEnvBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "relay")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, stateDir)
	bearerFile := pairBearerFile(t, stateDir, "box")
	root, outside := envDirs(t)
	cmd := exec.Command(bin, "env", "--relay", url, "--bearer-file", bearerFile, "--root", root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitMachine(t, url)
	checkEnvironment(t, url, hostToken(t, stateDir), root, outside)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("env exited with %v after SIGINT: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("env did not stop on SIGINT")
	}
}

// TestEnvReconnectsAndIsReplaced: the environment comes back after the relay restarts on the same
// port, and stops when a second environment with the same pairing takes the root.
func TestEnvReconnectsAndIsReplaced(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	public := t.TempDir()
	bearerFile := pairBearerFile(t, stateDir, "box")

	url, stopFirst := startServeStoppable(t, stateDir, public, restartableAddr(t))
	addr := strings.TrimPrefix(url, "http://")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	var envErr syncBuffer
	go func() {
		exit <- envUntil(ctx, []string{"--relay", url, "--bearer-file", bearerFile, "--root", t.TempDir()}, io.Discard, &envErr, nil)
	}()
	waitMachine(t, url)
	stopFirst()
	url2, _ := startServeStoppable(t, stateDir, public, addr)
	waitMachine(t, url2)
	if got := rootCall(t, url2, hostToken(t, stateDir), "now", nil); got["ok"] != true {
		t.Fatalf("after the restart: %v", got)
	}

	// A second environment with the same bearer is newer, so it wins; the first stops.
	go envUntil(ctx, []string{"--relay", url2, "--bearer-file", bearerFile, "--root", t.TempDir()}, io.Discard, io.Discard, nil)
	select {
	case code := <-exit:
		if code != 1 || !strings.Contains(envErr.String(), "newer executor") {
			t.Fatalf("the replaced environment exited %d: %s", code, envErr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the replaced environment kept running")
	}
}

// restartableAddr is a loopback address for a relay that a test stops and starts again on the same
// port. It lies below Linux's ephemeral range (32768 and up), so that while the relay is stopped no
// outgoing connection of another process can be given that port as its own and keep the second
// start from listening there (seen under load: "bind: address already in use").
func restartableAddr(t *testing.T) string {
	t.Helper()
	port, err := porttest.Restartable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// startServeStoppable is startServe on a given address, with a function that stops it.
func startServeStoppable(t *testing.T, stateDir, public, addr string) (string, func()) {
	t.Helper()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	var errOut syncBuffer
	go func() {
		exit <- serveUntil(ctx, []string{"--addr", addr, "--public", public, "--state-dir", stateDir}, outW, &errOut)
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v; serve said: %s", err, errOut.String())
	}
	go io.Copy(io.Discard, br)
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case <-exit:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	t.Cleanup(stop)
	return strings.TrimSpace(strings.TrimPrefix(line, "voicebox on ")), stop
}

// syncBuffer is a bytes.Buffer safe to write from one goroutine and read from another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHelloBoundIsConfigurable: the flag and the variable both set how long a silent connection
// is kept before its refusal (well under the 5 s default), and bad values are usage errors.
func TestHelloBoundIsConfigurable(t *testing.T) {
	tests := []struct {
		name, env string
		args      []string
	}{
		{"flag", "", []string{"--hello-bound-ms", "150"}},
		{"variable", "150", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("VOICEBOX_HELLO_BOUND_MS", tt.env)
			url, _ := startServe(t, filepath.Join(t.TempDir(), "state"), tt.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/channel", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.CloseNow()
			_, frame, err := ws.Read(ctx)
			if err != nil || !strings.Contains(string(frame), `"refused":"executor-unauthenticated"`) {
				t.Fatalf("read %q, %v", frame, err)
			}
			_, _, err = ws.Read(ctx)
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("then %v, want 1008", err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Fatalf("refused after %v: the bound was not applied", d)
			}
		})
	}
	for _, bad := range []struct{ env, flag string }{{"abc", ""}, {"0", ""}, {"", "-5"}} {
		t.Setenv("VOICEBOX_HELLO_BOUND_MS", bad.env)
		args := []string{"--addr", "127.0.0.1:0", "--state-dir", t.TempDir()}
		if bad.flag != "" {
			args = append(args, "--hello-bound-ms", bad.flag)
		}
		if code := serveUntil(context.Background(), args, io.Discard, io.Discard); code != 2 {
			t.Errorf("env %q flag %q: exit %d, want 2", bad.env, bad.flag, code)
		}
	}
}
