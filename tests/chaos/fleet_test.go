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
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	coreserver "github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
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

// natsProcessEnv carries a natsSpec, in JSON, to TestFleetChaosNATSProcess.
const natsProcessEnv = "VOICEBOX_CHAOS_NATS"

// natsSpec is what a NATS process serves: its client port and JetStream folder, and for a node
// of a cluster its name, its cluster port and the cluster ports of the others.
type natsSpec struct {
	Port        int    `json:"port"`
	Dir         string `json:"dir"`
	Name        string `json:"name,omitempty"`
	ClusterPort int    `json:"clusterPort,omitempty"`
	Routes      []int  `json:"routes,omitempty"`
}

// TestFleetChaosNATSProcess is the NATS server process of the fleet's scenarios; run as a test
// of its own it does nothing.
func TestFleetChaosNATSProcess(t *testing.T) {
	raw := os.Getenv(natsProcessEnv)
	if raw == "" {
		t.Skip("the NATS process of the fleet's chaos scenarios, started by them")
	}
	var spec natsSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	opts := &server.Options{Host: "127.0.0.1", Port: spec.Port, JetStream: true, StoreDir: spec.Dir, NoLog: true, NoSigs: true, ServerName: spec.Name}
	if spec.ClusterPort != 0 {
		opts.Cluster = server.ClusterOpts{Name: "chaos", Host: "127.0.0.1", Port: spec.ClusterPort}
		for _, p := range spec.Routes {
			u, _ := url.Parse("nats-route://127.0.0.1:" + strconv.Itoa(p))
			opts.Routes = append(opts.Routes, u)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	select {} // until killed
}

// freePort returns a loopback port nobody listens on now, its listener closed as a relay's is
// (coreserver.ReleaseOnClose: a program this process forks meanwhile does not keep it listening).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer coreserver.ReleaseOnClose(l).Close()
	return l.Addr().(*net.TCPAddr).Port
}

// natsProcess is a NATS server in a process of its own, killed with SIGKILL and started again on
// its port with its JetStream folder.
type natsProcess struct {
	t    *testing.T
	spec natsSpec
	cmd  *exec.Cmd
}

func startNATSProcess(t *testing.T) *natsProcess {
	t.Helper()
	n := &natsProcess{t: t, spec: natsSpec{Port: freePort(t), Dir: t.TempDir()}}
	n.start()
	t.Cleanup(n.kill)
	return n
}

// startNATSCluster starts three NATS processes as one cluster (the JetStream meta group needs
// all three to begin).
func startNATSCluster(t *testing.T) []*natsProcess {
	t.Helper()
	nodes := make([]*natsProcess, 3)
	for i := range nodes {
		nodes[i] = &natsProcess{t: t, spec: natsSpec{Port: freePort(t), Dir: t.TempDir(), Name: "n" + strconv.Itoa(i), ClusterPort: freePort(t)}}
	}
	for i, n := range nodes {
		for j, o := range nodes {
			if i != j {
				n.spec.Routes = append(n.spec.Routes, o.spec.ClusterPort)
			}
		}
		n.start()
		t.Cleanup(n.kill)
	}
	return nodes
}

func (n *natsProcess) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.spec.Port) }

func (n *natsProcess) start() {
	n.t.Helper()
	spec, _ := json.Marshal(n.spec)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetChaosNATSProcess$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), natsProcessEnv+"="+string(spec))
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.cmd = cmd
	fleetWaitFor(n.t, "the NATS process accepting connections", func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(n.spec.Port), time.Second)
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

// countingPage is a page in Go executing on an in-memory folder that counts how many times each
// file was written: no call may run twice.
type countingPage struct {
	exec   channel.Executor
	mu     sync.Mutex
	writes map[string]int
}

func (p *countingPage) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	if call.Tool == "write-file" {
		var args struct{ Path string }
		json.Unmarshal(call.Args, &args)
		p.mu.Lock()
		p.writes[args.Path]++
		p.mu.Unlock()
	}
	return p.exec.Execute(ctx, call)
}

// fleetWrite is one write of the load and how it ended.
type fleetWrite struct {
	via, path, content string
	got                fleetAnswer
}

// fleetMint is one MCP client minted by the load and how it ended.
type fleetMint struct {
	name string
	got  fleetAnswer
}

// fleetLoadCounts size the load of a fleet scenario: writers write writesEach files each (the
// first through A, the page's own relay, the others through B), while mints MCP clients are
// minted through A and B in turn. Below hoststate.MaxMCPClients.
const (
	fleetWriters    = 4
	fleetWritesEach = 24
	fleetMints      = 24
)

// runFleetLoad runs the load on a and b (the page on a), calling fault once 12 requests were
// answered, and mend (when not nil) once 12 more were; it returns every write and mint with its
// answer once the load is done.
func runFleetLoad(t *testing.T, a, b *harness.Relay, fault, mend func()) ([]fleetWrite, []fleetMint) {
	t.Helper()
	ta, tb := a.HostToken(t), b.HostToken(t)
	var mu sync.Mutex
	var writes []fleetWrite
	var minted []fleetMint
	answered := make(chan struct{}, fleetWriters*fleetWritesEach+fleetMints)
	var load sync.WaitGroup
	for g := range fleetWriters {
		load.Go(func() {
			relay, token, via := b, tb, "B"
			if g == 0 {
				relay, token, via = a, ta, "A"
			}
			for i := range fleetWritesEach {
				w := fleetWrite{via: via, path: fmt.Sprintf("w%d-%d.txt", g, i), content: fmt.Sprintf("content %d-%d", g, i)}
				w.got = fleetDo(relay, token, http.MethodPost, "/api/root/call", map[string]any{"tool": "write-file", "args": map[string]any{"path": w.path, "content": w.content}})
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
				answered <- struct{}{}
			}
		})
	}
	load.Go(func() {
		for i := range fleetMints {
			relay, token := a, ta
			if i%2 == 1 {
				relay, token = b, tb
			}
			m := fleetMint{name: fmt.Sprintf("chaos-%d", i)}
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
	fault()
	for range 12 { // requests made after the fault
		<-answered
	}
	if mend != nil {
		mend()
	}
	load.Wait()
	return writes, minted
}

// checkFleetLoad checks what the load left once the fault is over: B routes to the page again;
// every request had exactly one answer, ok or a refusal the fleet promises (fleet-unavailable,
// no-page, outcome-unknown), and A's own writes never failed; every write answered ok reads back
// with its content and was run once; a routed write refused as not run never ran; every client
// minted ok is listed by both relays, once their listing is answered (while a cluster elects
// leaders it may be refused fleet-unavailable).
func checkFleetLoad(t *testing.T, a, b *harness.Relay, page *countingPage, writes []fleetWrite, minted []fleetMint) {
	t.Helper()
	ta, tb := a.HostToken(t), b.HostToken(t)
	fleetWaitFor(t, "B routing to A's page again", func() bool {
		return fleetDo(b, tb, http.MethodPost, "/api/root/call", map[string]any{"tool": "now", "args": map[string]any{}}).ok()
	})
	// What the fleet promises a routed call when NATS fails under it (docs/scaling.md):
	// fleet-unavailable (B cannot reach NATS), no-page (the page's relay was not subscribed on the
	// server B reached, while it moved: nothing ran), outcome-unknown (the connection dropped
	// with the call in flight).
	promised := map[string]bool{"fleet-unavailable": true, "no-page": true, "outcome-unknown": true}
	nothingRan := map[string]bool{"fleet-unavailable": true, "no-page": true}
	refused := 0
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
		case nothingRan[w.got.rule()] && read.ok():
			t.Errorf("%s was refused %s through B, yet it was written: %v", w.path, w.got.rule(), read)
		}
		if !w.got.ok() {
			refused++
		}
	}
	page.mu.Lock()
	for path, n := range page.writes {
		if n > 1 {
			t.Errorf("%s was written %d times by one call", path, n)
		}
	}
	page.mu.Unlock()
	for _, relay := range []*harness.Relay{a, b} {
		token := ta
		if relay == b {
			token = tb
		}
		// While the cluster elects leaders for what the lost node led (NATS begins an election
		// only after 4 to 9 s without the leader's heartbeat, longer than fleet.OpTimeout), the
		// listing is refused fleet-unavailable, "try again in a moment": the test, like a
		// person, asks again until the store answers.
		var list fleetAnswer
		electing := 0
		fleetWaitFor(t, "the clients listed by "+relay.URL, func() bool {
			list = fleetDo(relay, token, http.MethodGet, "/api/mcp/clients", nil)
			if list.rule() == "fleet-unavailable" {
				electing++
				return false
			}
			return true
		})
		if electing > 0 {
			t.Logf("listing the clients on %s was refused fleet-unavailable %d times before the store answered", relay.URL, electing)
		}
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
	t.Logf("%d writes (%d routed ones refused), %d mints", len(writes), refused, len(minted))
}

// startFleetOn starts relays A and B on the NATS at urlA and urlB with the extra environment,
// a counting page on A, and waits until B routes to it.
func startFleetOn(t *testing.T, urlA, urlB string, env ...string) (a, b *harness.Relay, page *countingPage) {
	t.Helper()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "chaos", NATS: []string{urlA, urlB}, Env: env})
	page = &countingPage{exec: executor.New(fsroot.NewMemory(), executor.Options{}), writes: map[string]int{}}
	fleet.GoPageWith(fleet.Relays[0], page)
	return fleet.Relays[0], fleet.Relays[1], page
}

// TestFleetChaosNATSKilledDuringWritesAndMints: two relays on one NATS, the page attached to A,
// under the load of runFleetLoad; NATS is killed with SIGKILL mid-load and started again on its
// store. checkFleetLoad holds.
func TestFleetChaosNATSKilledDuringWritesAndMints(t *testing.T) {
	t.Parallel()
	nats := startNATSProcess(t)
	a, b, page := startFleetOn(t, nats.URL(), nats.URL())
	writes, minted := runFleetLoad(t, a, b, nats.kill, nats.start)
	checkFleetLoad(t, a, b, page, writes, minted)
}

// TestFleetChaosClusterLosesANode: two relays on a three-node NATS cluster, the fleet's state
// kept with three replicas (VOICEBOX_NATS_REPLICAS=3); A is given every node, B only the first
// (it learns the others from the cluster). The first node is killed with SIGKILL mid-load and
// stays dead: B moves to another. checkFleetLoad holds: no call lost or run twice, nothing
// minted lost.
func TestFleetChaosClusterLosesANode(t *testing.T) {
	t.Parallel()
	nodes := startNATSCluster(t)
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.URL()
	}
	a, b, page := startFleetOn(t, strings.Join(urls, ","), nodes[0].URL(), "VOICEBOX_NATS_REPLICAS=3")
	writes, minted := runFleetLoad(t, a, b, nodes[0].kill, nil)
	checkFleetLoad(t, a, b, page, writes, minted)
}
