//go:build !js

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/voicebox-go/voicebox/relay/hub/hubtest"
	"github.com/voicebox-go/voicebox/shared/executor"
	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// The fleet's chaos scenarios: relay processes (bin/relay) on a NATS that dies by SIGKILL
// mid-load, and on a three-node NATS cluster that loses a node mid-load. A NATS process is this
// test binary run again as TestFleetChaosNATSProcess, serving the embedded nats-server of the Go
// module, so it can be killed as a real nats-server would be.

// fleetChaosBound bounds every wait of the fleet's scenarios.
const fleetChaosBound = 30 * time.Second

// fleetChaosCallBound bounds one HTTP request of a scenario: one that has no answer by then has
// none, which is the fault the scenarios look for.
const fleetChaosCallBound = 20 * time.Second

// natsProcessEnv carries the port and the JetStream folder to TestFleetChaosNATSProcess.
const natsProcessEnv = "VOICEBOX_CHAOS_NATS"

// TestFleetChaosNATSProcess is the NATS server process of the fleet's scenarios; run as a test
// of its own it does nothing.
func TestFleetChaosNATSProcess(t *testing.T) {
	spec := os.Getenv(natsProcessEnv)
	if spec == "" {
		t.Skip("the NATS process of the fleet's chaos scenarios, started by them")
	}
	port, dir, _ := strings.Cut(spec, ",")
	p, _ := strconv.Atoi(port)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: p, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	select {} // until killed
}

// natsProcess is a NATS server in a process of its own, killed with SIGKILL and started again on
// its port with its JetStream folder.
type natsProcess struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func startNATSProcess(t *testing.T) *natsProcess {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	n := &natsProcess{t: t, port: port, dir: t.TempDir()}
	n.start()
	t.Cleanup(n.kill)
	return n
}

func (n *natsProcess) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

func (n *natsProcess) start() {
	n.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetChaosNATSProcess$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), natsProcessEnv+"="+strconv.Itoa(n.port)+","+n.dir)
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.cmd = cmd
	fleetWaitFor(n.t, "the NATS process accepting connections", func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(n.port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// kill ends the NATS process with SIGKILL (a no-op when it is not running).
func (n *natsProcess) kill() {
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGKILL)
	n.cmd.Wait()
	n.cmd = nil
}

// fleetWaitFor polls cond until it holds, failing the test at fleetChaosBound.
func fleetWaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(fleetChaosBound); !cond(); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", fleetChaosBound, what)
		}
	}
}

// fleetAnswer is one request's outcome: its status and JSON body, or the error that left it
// without an answer.
type fleetAnswer struct {
	status int
	body   map[string]any
	err    error
}

func (a fleetAnswer) ok() bool {
	return a.err == nil && a.status == http.StatusOK && a.body["ok"] == true
}

func (a fleetAnswer) rule() string {
	s, _ := a.body["refused"].(string)
	return s
}

func (a fleetAnswer) String() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	return fmt.Sprintf("%d %v", a.status, a.body)
}

// fleetDo sends one request to relay with the host token (and its own Origin), bounded by
// fleetChaosCallBound.
func fleetDo(relay *harness.Relay, token, method, path string, body any) fleetAnswer {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetChaosCallBound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, relay.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", relay.URL)
	req.Header.Set("x-voicebox-host-token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fleetAnswer{err: err}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := fleetAnswer{status: resp.StatusCode}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		a.err = fmt.Errorf("answered %d with %q, not JSON", resp.StatusCode, raw)
	}
	return a
}

// attachGoPage attaches a page in Go, executing on an in-memory folder, to relay.
func attachGoPage(t *testing.T, relay *harness.Relay) {
	t.Helper()
	ws := hubtest.Dial(t, relay.URL, http.Header{"Origin": {relay.URL}}, fleetChaosBound)
	hubtest.Serve(ws, executor.New(fsroot.NewMemory(), executor.Options{}))
}

// TestFleetChaosNATSKilledDuringWritesAndMints: two relays on one NATS, the page attached to A.
// Writes go through B (routed to A's page by NATS) and through A (its own page), and MCP
// clients are minted through both, while NATS is killed with SIGKILL and started again on its
// store. Every request gets exactly one answer: ok, or a refusal the fleet promises for it
// (fleet-unavailable, outcome-unknown); never none, never internal-error. A's own writes never
// fail. Once NATS is back: B routes again by itself; every write answered ok reads back with
// its content, every routed write refused fleet-unavailable did not happen; every client minted
// ok is listed by both relays.
func TestFleetChaosNATSKilledDuringWritesAndMints(t *testing.T) {
	t.Parallel()
	nats := startNATSProcess(t)
	env := []string{"VOICEBOX_NATS=" + nats.URL(), "VOICEBOX_NATS_PREFIX=chaoskill"}
	a, b := harness.StartRelay(t, env...), harness.StartRelay(t, env...)
	ta, tb := a.HostToken(t), b.HostToken(t)
	attachGoPage(t, a)
	fleetWaitFor(t, "B seeing A's page", func() bool {
		r := fleetDo(b, tb, http.MethodGet, "/api/root", nil)
		return r.err == nil && r.body["connected"] == true
	})

	const writers, writesEach, mints = 4, 24, 24
	type write struct {
		via, path, content string
		got                fleetAnswer
	}
	type mint struct {
		name string
		got  fleetAnswer
	}
	var mu sync.Mutex
	var writes []write
	var minted []mint
	answered := make(chan struct{}, writers*writesEach+mints)
	var load sync.WaitGroup
	for g := range writers {
		load.Go(func() {
			relay, token, via := b, tb, "B"
			if g == 0 {
				relay, token, via = a, ta, "A"
			}
			for i := range writesEach {
				w := write{via: via, path: fmt.Sprintf("w%d-%d.txt", g, i), content: fmt.Sprintf("content %d-%d", g, i)}
				w.got = fleetDo(relay, token, http.MethodPost, "/api/root/call", map[string]any{"tool": "write-file", "args": map[string]any{"path": w.path, "content": w.content}})
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
				answered <- struct{}{}
			}
		})
	}
	load.Go(func() {
		for i := range mints {
			relay, token := a, ta
			if i%2 == 1 {
				relay, token = b, tb
			}
			m := mint{name: fmt.Sprintf("chaos-%d", i)}
			m.got = fleetDo(relay, token, http.MethodPost, "/api/mcp/clients", map[string]any{"name": m.name})
			mu.Lock()
			minted = append(minted, m)
			mu.Unlock()
			answered <- struct{}{}
		}
	})
	for range 12 { // the load is under way
		<-answered
	}
	nats.kill()
	for range 12 { // requests made while NATS is dead
		<-answered
	}
	nats.start()
	load.Wait()

	fleetWaitFor(t, "B routing to A's page again", func() bool {
		return fleetDo(b, tb, http.MethodPost, "/api/root/call", map[string]any{"tool": "now", "args": map[string]any{}}).ok()
	})
	promised := map[string]bool{"fleet-unavailable": true, "outcome-unknown": true}
	refusedRouted := 0
	for _, w := range writes {
		switch {
		case w.got.err != nil:
			t.Errorf("a write of %s through %s had no answer: %v", w.path, w.via, w.got.err)
			continue
		case w.got.ok():
		case w.via == "A":
			t.Errorf("a write through A, the page's own relay, failed: %v", w.got)
			continue
		case !promised[w.got.rule()]:
			t.Errorf("a write of %s through B answered %v", w.path, w.got)
			continue
		}
		read := fleetDo(b, tb, http.MethodPost, "/api/root/call", map[string]any{"tool": "read-file", "args": map[string]any{"path": w.path}})
		switch {
		case w.got.ok() && !strings.Contains(fmt.Sprint(read.body["observed"]), w.content):
			t.Errorf("%s, written ok through %s, reads back %v", w.path, w.via, read)
		case w.got.rule() == "fleet-unavailable" && read.ok():
			t.Errorf("%s was refused fleet-unavailable through B, yet it was written: %v", w.path, read)
		}
		if !w.got.ok() {
			refusedRouted++
		}
	}
	for _, relay := range []*harness.Relay{a, b} {
		token := ta
		if relay == b {
			token = tb
		}
		list := fleetDo(relay, token, http.MethodGet, "/api/mcp/clients", nil)
		if !list.ok() {
			t.Fatalf("listing the clients on %s: %v", relay.URL, list)
		}
		names := map[string]bool{}
		clients, _ := list.body["clients"].([]any)
		for _, c := range clients {
			if c, ok := c.(map[string]any); ok {
				name, _ := c["name"].(string)
				names[name] = true
			}
		}
		for _, m := range minted {
			switch {
			case m.got.err != nil:
				t.Errorf("minting %s had no answer: %v", m.name, m.got.err)
			case m.got.ok() && !names[m.name]:
				t.Errorf("%s, minted ok, is not listed by %s: %v", m.name, relay.URL, names)
			case !m.got.ok() && m.got.rule() != "fleet-unavailable":
				t.Errorf("minting %s answered %v", m.name, m.got)
			}
		}
	}
	t.Logf("%d writes (%d routed ones refused while NATS was dead), %d mints", len(writes), refusedRouted, len(minted))
}
