//go:build !js

// Package harness starts what end-to-end tests need: the real relay binary on a free port, one
// headless Chromium per test binary with a tab per test, and a runner that executes a GOOS=js test
// binary inside a dedicated worker. Everything it starts, it stops.
package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/porttest"
)

// RepoRoot returns the checkout's top directory (the one holding go.mod).
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("harness: cannot find its own source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Relay is a relay process started by StartRelay.
type Relay struct {
	// URL is the page's address, http://127.0.0.1:PORT.
	URL string
	// StateDir is the relay's host state directory (VOICEBOX_STATE_DIR), a fresh one per
	// relay unless the environment given names one.
	StateDir string
	cmd      *exec.Cmd
	stopped  bool
	// stateGiven says the test named StateDir (VOICEBOX_STATE_DIR) rather than the harness.
	stateGiven bool
	lines      <-chan string

	mu     sync.Mutex
	stderr bytes.Buffer
}

// Stderr returns what the relay has written to its standard error so far.
func (r *Relay) Stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

type lockedWriter struct{ r *Relay }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.stderr.Write(p)
}

// relayStartBound bounds how long the relay may take to print its address.
const relayStartBound = 15 * time.Second

// addrLine is the relay's first line; a relay bound to every address ([::] or 0.0.0.0) is reached
// on 127.0.0.1.
var addrLine = regexp.MustCompile(`^voicebox on http://(?:127\.0\.0\.1|0\.0\.0\.0|\[::\]):(\d+)$`)

// RestartablePort is a free loopback port for a relay that a test stops and starts again on the
// same port (pass "PORT="+port to both starts). It lies below Linux's ephemeral range (32768 and
// up), so that while the relay is down no outgoing connection of another process can be given
// that port as its own and keep the second start from listening there; and it is held by this
// process until it exits (porttest), so no other test, of this binary or another, is given it.
func RestartablePort(t testing.TB) string {
	t.Helper()
	port, err := porttest.Restartable()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return strconv.Itoa(port)
}

// StartRelay starts bin/relay (built by ./build.sh build) with PORT=0 and the extra environment
// given, serving the checkout's public/, and stops it when the test ends.
func StartRelay(t testing.TB, env ...string) *Relay {
	t.Helper()
	return StartRelayWith(t, nil, env...)
}

// StartRelayWith is StartRelay with extra arguments for `relay serve` (an --addr overrides
// PORT=0; Relay.URL is then on 127.0.0.1 all the same).
func StartRelayWith(t testing.TB, args []string, env ...string) *Relay {
	t.Helper()
	return startRelayOf(t, filepath.Join(RepoRoot(), "bin", "relay"), args, env)
}

// StartRelayOf is StartRelay of another build's relay binary, bin (main's, say, so that a
// benchmark measures a change and its base side by side), serving this checkout's public/.
func StartRelayOf(t testing.TB, bin string, env ...string) *Relay {
	t.Helper()
	return startRelayOf(t, bin, nil, env)
}

func startRelayOf(t testing.TB, bin string, args, env []string) *Relay {
	t.Helper()
	root := RepoRoot()
	for _, need := range []string{bin, filepath.Join(root, "public", "voicebox.wasm")} {
		if _, err := os.Stat(need); err != nil {
			t.Fatalf("harness: %s is missing; run ./build.sh build first (./build.sh test does)", need)
		}
	}
	r := newRelay(t, env)
	r.start(t, func(stateDir string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"serve", "--public", filepath.Join(root, "public")}, args...)...)
		cmd.Env = append(os.Environ(), append([]string{"PORT=0", "VOICEBOX_STATE_DIR=" + stateDir}, env...)...)
		return cmd
	}, portChosen(args, env))
	return r
}

// newRelay is a Relay whose state directory is the one env names, or a fresh one.
func newRelay(t testing.TB, env []string) *Relay {
	r := &Relay{StateDir: filepath.Join(t.TempDir(), "state")}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "VOICEBOX_STATE_DIR="); ok {
			r.StateDir, r.stateGiven = v, true
		}
	}
	return r
}

// portChosen says whether the caller chose the relay's port (PORT= in env, or --addr in args),
// as a test that restarts a relay on its port does.
func portChosen(args, env []string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PORT=") && kv != "PORT=0" {
			return true
		}
	}
	for _, a := range args {
		if a == "--addr" || strings.HasPrefix(a, "--addr=") {
			return true
		}
	}
	return false
}

// StartRelayNoFile is StartRelay with the relay's descriptor limit (RLIMIT_NOFILE, soft and hard)
// set to nofile, for the cases that exhaust descriptors without exhausting the machine's. The
// relay runs under sh, which sets the limit and execs it (Relay.PID is the relay's).
func StartRelayNoFile(t testing.TB, nofile int, env ...string) *Relay {
	t.Helper()
	root := RepoRoot()
	bin := filepath.Join(root, "bin", "relay")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("harness: %s is missing; run ./build.sh build first (./build.sh test does)", bin)
	}
	r := newRelay(t, env)
	r.start(t, func(stateDir string) *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile), bin, "serve", "--public", filepath.Join(root, "public"))
		cmd.Env = append(os.Environ(), append([]string{"PORT=0", "VOICEBOX_STATE_DIR=" + stateDir}, env...)...)
		return cmd
	}, portChosen(nil, env))
	return r
}

// StartAlone copies the relay binary bin into an empty temporary folder and starts it there as
// a host would run a release: `relay serve` with no flags, the folder its working directory and
// its HOME, nothing beside it, and only PATH, PORT=0 and a fresh VOICEBOX_STATE_DIR in its
// environment. It stops it when the test ends.
func StartAlone(t testing.TB, bin string) *Relay {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatalf("harness: %v; run ./build.sh build (or dist) first", err)
	}
	alone := filepath.Join(dir, filepath.Base(bin))
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRelay(t, nil)
	r.start(t, func(stateDir string) *exec.Cmd {
		cmd := exec.Command(alone, "serve")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "PORT=0", "VOICEBOX_STATE_DIR=" + stateDir}
		return cmd
	}, false)
	return r
}

// Ports a relay of this binary listened on. The tabs of a test binary share one browser
// profile, which keeps an origin's storage (OPFS, IndexedDB, local storage) after its tabs close,
// and an origin is a scheme, host and port: a relay on a port an earlier relay of the binary had
// would serve a page that finds the earlier test's files (a "Download all" with a file no step
// of its test wrote). The kernel does hand a freed port out again (a few hundred relays a binary
// over the ~14,000 ports it gives bind: a repeat is likely in every run), so start takes only
// ports no earlier relay had, unless the test chose the port itself to restart a relay on it.
var portsListened = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// relayStartAttempts bounds the starts of one relay whose port an earlier relay had.
const relayStartAttempts = 20

// start runs the process command makes as r's relay, stops it when the test ends, and reads the
// address it prints. A relay given a port an earlier relay of this binary listened on is stopped
// and started again (with a fresh state directory, unless the test named one), unless
// portChosen.
func (r *Relay) start(t testing.TB, command func(stateDir string) *exec.Cmd, portChosen bool) {
	t.Helper()
	t.Cleanup(func() { r.stop(t) })
	for range relayStartAttempts {
		r.startOnce(t, command(r.StateDir))
		portsListened.Lock()
		again := portsListened.m[r.Port()] && !portChosen
		portsListened.m[r.Port()] = true
		portsListened.Unlock()
		if !again {
			return
		}
		r.stop(t)
		r.stopped = false
		r.mu.Lock()
		r.stderr.Reset()
		r.mu.Unlock()
		if !r.stateGiven {
			r.StateDir = filepath.Join(t.TempDir(), "state")
		}
	}
	t.Fatalf("harness: %d relays in a row were given ports earlier relays of this binary had", relayStartAttempts)
}

// startOnce runs cmd as r's process and reads the address it prints.
func (r *Relay) startOnce(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	DieWithTest(cmd)
	cmd.Stderr = lockedWriter{r}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start relay: %v", err)
	}
	r.cmd = cmd

	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	r.lines = lines
	select {
	case line := <-lines:
		m := addrLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("harness: relay printed %q, want its address; stderr: %s", line, r.Stderr())
		}
		r.URL = "http://127.0.0.1:" + m[1]
	case <-time.After(relayStartBound):
		t.Fatalf("harness: relay printed no address within %v; stderr: %s", relayStartBound, r.Stderr())
	}
}

// NextLine returns the next line the relay prints after its address, waiting up to bound.
func (r *Relay) NextLine(t testing.TB, bound time.Duration) string {
	t.Helper()
	select {
	case line := <-r.lines:
		return line
	case <-time.After(bound):
		t.Fatalf("harness: the relay printed nothing more within %v", bound)
		return ""
	}
}

// HostToken returns the relay's host token, as the host (who can read the state directory) has it.
func (r *Relay) HostToken(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.StateDir, ".host-token"))
	if err != nil {
		t.Fatalf("harness: read the host token: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// MintMCPBearer mints a bearer for the MCP client name through the host-token route.
func (r *Relay) MintMCPBearer(t testing.TB, name string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name})
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/api/mcp/clients", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Voicebox-Host-Token", r.HostToken(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Bearer string `json:"bearer"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK || m.Bearer == "" {
		t.Fatalf("harness: minting an MCP bearer answered %d (%v)", resp.StatusCode, err)
	}
	return m.Bearer
}

// Call runs a call on whichever executor holds the relay's root (POST /api/root/call with the
// host token) and returns the answer envelope's fields.
func (r *Relay) Call(t testing.TB, tool string, args any) Answer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "args": args})
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/api/root/call", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-voicebox-host-token", r.HostToken(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("harness: call %s: %v", tool, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("harness: call %s answered %d %s", tool, resp.StatusCode, raw)
	}
	a.Raw = raw
	return a
}

// Answer is an answer envelope as the tests read it.
type Answer struct {
	CallID   string          `json:"callId"`
	OK       bool            `json:"ok"`
	Observed json.RawMessage `json:"observed"`
	Refused  string          `json:"refused"`
	Why      string          `json:"why"`
	Raw      []byte          `json:"-"`
}

// Stop stops the relay now, as its operator would (SIGTERM), and fails the test if it does not
// exit cleanly.
func (r *Relay) Stop(t testing.TB) {
	t.Helper()
	r.stop(t)
}

// Kill ends the relay at once (SIGKILL), as a crash would: it says nothing to anyone, its
// sockets drop and its fleet lease is left to expire. It waits for the process to be gone.
func (r *Relay) Kill(t testing.TB) {
	t.Helper()
	if r.cmd == nil || r.cmd.Process == nil || r.stopped {
		return
	}
	r.stopped = true
	r.cmd.Process.Kill()
	r.cmd.Wait()
}

// PID returns the relay process's id, for tests that read its state from /proc.
func (r *Relay) PID() int { return r.cmd.Process.Pid }

// Port returns the port the relay listens on.
func (r *Relay) Port() string {
	return r.URL[strings.LastIndexByte(r.URL, ':')+1:]
}

// stop ends the relay it started, by its PID: SIGTERM, then SIGKILL if it does not exit in time.
// It does nothing the second time.
func (r *Relay) stop(t testing.TB) {
	if r.cmd == nil || r.cmd.Process == nil || r.stopped {
		return
	}
	r.stopped = true
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil && !t.Failed() {
			t.Errorf("harness: relay exited with %v after SIGTERM; stderr: %s", err, r.Stderr())
		}
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-done
		t.Errorf("harness: relay did not stop within 10s of SIGTERM and was killed")
	}
}
