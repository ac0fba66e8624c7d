//go:build !js

// Package harness starts what end-to-end tests need: the real relay binary on a free port, one
// headless Chromium per test binary with a tab per test, and a runner that executes a GOOS=js test
// binary inside a dedicated worker. Everything it starts, it stops.
package harness

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
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
	cmd *exec.Cmd

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

var addrLine = regexp.MustCompile(`^voicebox on (http://127\.0\.0\.1:\d+)$`)

// StartRelay starts bin/relay (built by ./build.sh build) with PORT=0 and the extra environment
// given, serving the checkout's public/, and stops it when the test ends.
func StartRelay(t testing.TB, env ...string) *Relay {
	t.Helper()
	root := RepoRoot()
	bin := filepath.Join(root, "bin", "relay")
	for _, need := range []string{bin, filepath.Join(root, "public", "voicebox.wasm")} {
		if _, err := os.Stat(need); err != nil {
			t.Fatalf("harness: %s is missing; run ./build.sh build first (./build.sh test does)", need)
		}
	}
	r := &Relay{}
	cmd := exec.Command(bin, "serve", "--public", filepath.Join(root, "public"))
	cmd.Env = append(os.Environ(), append([]string{"PORT=0"}, env...)...)
	cmd.Stderr = lockedWriter{r}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start relay: %v", err)
	}
	r.cmd = cmd
	t.Cleanup(func() { r.stop(t) })

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		m := addrLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("harness: relay printed %q, want its address; stderr: %s", line, r.Stderr())
		}
		r.URL = m[1]
	case <-time.After(relayStartBound):
		t.Fatalf("harness: relay printed no address within %v; stderr: %s", relayStartBound, r.Stderr())
	}
	return r
}

// stop ends the relay it started, by its PID: SIGTERM, then SIGKILL if it does not exit in time.
func (r *Relay) stop(t testing.TB) {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
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
