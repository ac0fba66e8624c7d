//go:build !js

package hostile

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// stdioBridge is `relay mcp` (bin/relay) serving r with a bearer of its own, driven line by line
// as a client on its stdin and stdout would. It ends with the test.
type stdioBridge struct {
	t       *testing.T
	stdin   io.WriteCloser
	answers chan map[string]any

	mu     sync.Mutex
	stderr strings.Builder
}

func (b *stdioBridge) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.Write(p)
}

// Stderr is what the bridge has written to its standard error so far.
func (b *stdioBridge) Stderr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String()
}

func startStdioBridge(t *testing.T, r *harness.Relay) *stdioBridge {
	t.Helper()
	bearerFile := filepath.Join(t.TempDir(), "bearer")
	if err := os.WriteFile(bearerFile, []byte(r.MintMCPBearer(t, "stdio")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(harness.RepoRoot(), "bin", "relay"), "mcp", "--relay", r.URL, "--bearer-file", bearerFile)
	b := &stdioBridge{t: t, answers: make(chan map[string]any, 16)}
	b.stdin, _ = cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = b
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		b.stdin.Close()
		select {
		case <-exited:
		case <-time.After(mcpBound):
			cmd.Process.Kill()
			<-exited
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m)
			if _, answer := m["id"]; answer {
				b.answers <- m // notifications carry no id
			}
		}
		close(b.answers)
	}()
	return b
}

// send writes line to the bridge's stdin.
func (b *stdioBridge) send(line string) {
	b.t.Helper()
	if _, err := io.WriteString(b.stdin, line+"\n"); err != nil {
		b.t.Fatalf("writing to the bridge: %v", err)
	}
}

// next is the bridge's next answer (a line with an id), what naming what it answers.
func (b *stdioBridge) next(what string) map[string]any {
	b.t.Helper()
	select {
	case m, ok := <-b.answers:
		if !ok {
			b.t.Fatalf("the bridge ended after %s; stderr: %s", what, b.Stderr())
		}
		return m
	case <-time.After(mcpBound):
		b.t.Fatalf("no answer to %s", what)
	}
	return nil
}

// TestTheStdioBridgePassesNoCallItsServerWouldRefuse: `relay mcp` passes its client's tools/call
// lines to the relay as bytes (issue 38), past the SDK's server that checked them before. A call
// before the client has initialized, one after a notifications/initialized sent with no
// initialize before it, and one after an initialize the bridge refused, are still refused there
// (the file is not read); a call whose
// params are no object gets the relay's JSON-RPC error (-32602) with the client's id; a call answered and
// then cancelled, and a cancellation naming no call, add no second answer; and the next call is
// served.
func TestTheStdioBridgePassesNoCallItsServerWouldRefuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.md"), []byte("the secret text"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := harness.StartRelay(t, "VOICEBOX_WORKSPACE="+dir)
	waitFor(t, "the workspace to hold the root", func() bool { return rootKind(t, r) == "machine" })
	b := startStdioBridge(t, r)
	read := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"read_file","arguments":{"name":"secret.md"}}}`
	}
	b.send(read(`"early"`))
	m := b.next("a call before initialize")
	if m["id"] != "early" || m["error"] == nil || strings.Contains(mustJSON(m), "the secret text") {
		t.Fatalf("a call before initialize answered %v", m)
	}
	b.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.send(read(`"unasked"`))
	m = b.next("a call after initialized with no initialize")
	if m["id"] != "unasked" || m["error"] == nil || strings.Contains(mustJSON(m), "the secret text") {
		t.Fatalf("a call after initialized with no initialize answered %v", m)
	}
	b.send(`{"jsonrpc":"2.0","id":"bad-init","method":"initialize","params":"x"}`)
	if m := b.next("an initialize with params that are no object"); m["error"] == nil {
		t.Fatalf("an initialize with params that are no object answered %v", m)
	}
	b.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.send(read(`"refused-init"`))
	m = b.next("a call after a refused initialize")
	if m["id"] != "refused-init" || m["error"] == nil || strings.Contains(mustJSON(m), "the secret text") {
		t.Fatalf("a call after a refused initialize answered %v", m)
	}
	b.send(mcpInit)
	if m := b.next("initialize"); m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	b.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.send(`{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":["read_file"]}`)
	m = b.next("params that are no object")
	e, _ := m["error"].(map[string]any)
	if m["id"] != "odd" || e["code"] != float64(-32602) {
		t.Fatalf("params that are no object answered %v", m)
	}
	b.send(read(`7`))
	if m := b.next("a read"); m["id"] != float64(7) || !strings.Contains(mustJSON(m), "the secret text") {
		t.Fatalf("a read answered %v", m)
	}
	b.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	b.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}`)
	b.send(read(`8`))
	if m := b.next("the read after the cancellations"); m["id"] != float64(8) || !strings.Contains(mustJSON(m), "the secret text") {
		t.Fatalf("the read after the cancellations answered %v (a second answer to 7?)", m)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
