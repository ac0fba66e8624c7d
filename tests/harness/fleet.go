//go:build !js

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// Fleet is the set-up the fleet's tests share: a NATS server with JetStream (fleettest, a
// nats-server process of its own) and relay processes (bin/relay) joined through it as one fleet,
// with the page holding the workspace on one of them. Start one with StartFleet; everything it
// starts (the server, the relays, a page, a NATS client) is stopped when the test ends, the
// relays before the server.
type Fleet struct {
	// NATS is the fleet's server, stopped and restarted by tests of a NATS restart; nil when
	// FleetOptions.NATS named servers the test runs itself.
	NATS *fleettest.Server
	// Prefix is the fleet's name on NATS (VOICEBOX_NATS_PREFIX): its subjects begin with it.
	Prefix string
	// Relays are the fleet's relays in the order started (relay A is Relays[0], B Relays[1], ...);
	// Restart replaces a relay's entry with its new process.
	Relays []*Relay

	t     testing.TB
	opts  FleetOptions
	ports []string // the port of each relay, when FleetOptions.Restartable
}

// FleetOptions say how StartFleet starts a fleet; the zero value is two relays on a fresh NATS
// server under the prefix "fleet".
type FleetOptions struct {
	// Prefix is the fleet's name on NATS (VOICEBOX_NATS_PREFIX); "fleet" when empty. A test that
	// publishes on the fleet's subjects names it, so that it can spell them out.
	Prefix string
	// Relays is how many relays start; 2 when 0. Add starts more later.
	Relays int
	// Named gives relay i the id "relay-" + the i-th letter (VOICEBOX_RELAY_ID: relay-a,
	// relay-b, ...), for a test that forges messages as a relay; otherwise each relay names
	// itself (its host name and a random suffix).
	Named bool
	// Restartable starts each relay on a port of its own held for the test (RestartablePort), so
	// that Restart brings it back where its pages reconnect.
	Restartable bool
	// Env is environment every relay gets beside the fleet's (VOICEBOX_LOOPBACK_AUTH=1, say).
	Env []string
	// Args are extra arguments of every relay's `relay serve` (--origin URL, say).
	Args []string
	// NATS names the servers the relays dial, for a test that runs its NATS itself (a cluster,
	// a server it kills with SIGKILL): relay i dials NATS[i], or the last one when there are
	// fewer (a comma-separated list of a cluster's URLs is one entry). No server is started then.
	NATS []string
}

// StartFleet starts a fleet as opts say and returns it once every relay listens; relays of one
// fleet find each other through NATS on their own, so a test waits for what it needs (GoPage and
// OpenPage wait until every relay routes to the page).
func StartFleet(t testing.TB, opts FleetOptions) *Fleet {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = "fleet"
	}
	if opts.Relays == 0 {
		opts.Relays = 2
	}
	f := &Fleet{Prefix: opts.Prefix, t: t, opts: opts}
	if len(opts.NATS) == 0 {
		f.NATS = fleettest.Start(t)
	}
	for range opts.Relays {
		f.Add()
	}
	return f
}

// Add starts one more relay of the fleet, the next in Relays, and returns it.
func (f *Fleet) Add() *Relay {
	f.t.Helper()
	i := len(f.Relays)
	port := ""
	if f.opts.Restartable {
		port = RestartablePort(f.t)
	}
	f.ports = append(f.ports, port)
	f.Relays = append(f.Relays, nil)
	return f.start(i, "")
}

// env is relay i's environment: the fleet's, then the test's.
func (f *Fleet) env(i int) []string {
	url := ""
	if f.NATS != nil {
		url = f.NATS.URL()
	} else {
		url = f.opts.NATS[min(i, len(f.opts.NATS)-1)]
	}
	env := []string{"VOICEBOX_NATS=" + url, "VOICEBOX_NATS_PREFIX=" + f.Prefix}
	if f.opts.Named {
		env = append(env, "VOICEBOX_RELAY_ID="+RelayID(i))
	}
	if f.ports[i] != "" {
		env = append(env, "PORT="+f.ports[i])
	}
	return append(env, f.opts.Env...)
}

// start starts relay i, with the state directory stateDir ("" for a fresh one).
func (f *Fleet) start(i int, stateDir string) *Relay {
	f.t.Helper()
	env := f.env(i)
	if stateDir != "" {
		env = append(env, "VOICEBOX_STATE_DIR="+stateDir)
	}
	r := StartRelayWith(f.t, f.opts.Args, env...)
	f.Relays[i] = r
	return r
}

// RelayID is the id FleetOptions.Named gives relay i: relay-a, relay-b, ...
func RelayID(i int) string { return "relay-" + string(rune('a'+i)) }

// Restart starts relay i again, as its operator would after a crash: it is killed first
// (SIGKILL, by its PID) unless it is down already, and comes back with its state directory and
// environment, on its port when the fleet is Restartable (a new run of the same relay). It
// returns the new process, which replaces Relays[i].
func (f *Fleet) Restart(i int) *Relay {
	f.t.Helper()
	old := f.Relays[i]
	old.Kill(f.t)
	return f.start(i, old.StateDir)
}

// Client connects a NATS client to the fleet's server (the first of FleetOptions.NATS) with the
// fleet's credentials, as a relay has them, and closes it when the test ends: what an attacker
// holding a leaked credential, or a side service gone wrong, has.
func (f *Fleet) Client(opts ...nats.Option) *nats.Conn {
	f.t.Helper()
	url := ""
	if f.NATS != nil {
		url = f.NATS.URL()
	} else {
		url = f.opts.NATS[0]
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		f.t.Fatalf("harness: connect to the fleet's NATS: %v", err)
	}
	f.t.Cleanup(nc.Close)
	return nc
}

// ExecSubject returns the subject on which the relay holding the page serves calls to it
// (<prefix>.exec.<lease>), read from the lease in the fleet's executor bucket as a NATS client
// with the fleet's credentials reads it (Client), failing the test when there is no lease.
func (f *Fleet) ExecSubject() string {
	f.t.Helper()
	js, err := jetstream.New(f.Client())
	if err != nil {
		f.t.Fatalf("harness: JetStream on the fleet's NATS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReadyBound)
	defer cancel()
	kv, err := js.KeyValue(ctx, f.Prefix+"_executor")
	if err != nil {
		f.t.Fatalf("harness: the fleet's executor bucket: %v", err)
	}
	slot, err := kv.Get(ctx, "slot")
	if err != nil {
		f.t.Fatalf("harness: the executor's lease: %v", err)
	}
	var lease struct{ ID string }
	if err := json.Unmarshal(slot.Value(), &lease); err != nil || lease.ID == "" {
		f.t.Fatalf("harness: the executor's lease: %s", slot.Value())
	}
	return f.Prefix + ".exec." + lease.ID
}

// RootFrame is the frame a page sends on /channel to say which root it holds: browser storage.
const RootFrame = `{"type":"root","kind":"opfs","name":"Browser storage"}`

// GoPage attaches a page in Go to relay on: a /channel socket with the relay's own origin that
// says it holds browser storage (RootFrame) and answers every call through the real door over an
// in-memory folder (hubtest, executor), and closes when the test ends. It returns once every
// running relay of the fleet (on too) routes a call to it.
func (f *Fleet) GoPage(on *Relay) *hubtest.Peer {
	f.t.Helper()
	return f.GoPageWith(on, executor.New(fsroot.NewMemory(), executor.Options{}))
}

// GoPageWith is GoPage with exec answering the calls behind the door (one that counts what it
// runs, say).
func (f *Fleet) GoPageWith(on *Relay, exec channel.Executor) *hubtest.Peer {
	f.t.Helper()
	page := hubtest.Serve(hubtest.Dial(f.t, on.URL, http.Header{"Origin": {on.URL}}, ReadyBound), exec)
	if err := page.WS.Write(context.Background(), websocket.MessageText, []byte(RootFrame)); err != nil {
		f.t.Fatalf("harness: the page's root frame: %v", err)
	}
	f.WaitRouted(on)
	return page
}

// OpenPage opens the real page on relay on in a tab of the shared Chromium (NewTab) and returns
// it once the page's workspace is open and listed (WorkspaceReady), its channel connected, and
// every running relay of the fleet (on too) routes a call to it.
func (f *Fleet) OpenPage(on *Relay) *Tab {
	f.t.Helper()
	tab := NewTab(f.t)
	OpenWorkspace(f.t, tab, on.URL)
	WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, ReadyBound)
	f.WaitRouted(on)
	return tab
}

// WaitRouted waits until a call through every running relay of the fleet (a "now" through
// /api/root/call with the host token) is answered by the page on relay page, failing the test at
// ReadyBound.
func (f *Fleet) WaitRouted(page *Relay) {
	f.t.Helper()
	for _, r := range f.Relays {
		if r.stopped {
			continue
		}
		what := "the page on " + page.URL + " seen by " + r.URL
		waitUntil(f.t, what, ReadyBound, func() bool { return r.Call(f.t, "now", map[string]string{}).OK })
	}
}

// waitUntil polls cond until it holds, failing the test at bound.
func waitUntil(t testing.TB, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(bound); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("harness: waited %v for %s", bound, what)
		}
	}
}

// Pause stops the relay's process (SIGSTOP, by its PID), as a process starved or paused is, and
// returns the function that lets it run again (SIGCONT); the test's end lets it run too, before
// the relay is stopped.
func (r *Relay) Pause(t testing.TB) (resume func()) {
	t.Helper()
	pid := r.PID()
	resume = func() { syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(resume)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("harness: SIGSTOP the relay: %v", err)
	}
	return resume
}

// Turn is a delete sent to a relay as a typed turn (POST /api/turn with the host token) that
// waits for the person's approval; its answer comes once the approval is decided or ends.
type Turn struct {
	status chan int
}

// DeleteTurn sends the relay a typed delete of name that waits for the person's approval, and
// returns at once; Turn.Status reads how it ended.
func (r *Relay) DeleteTurn(t testing.TB, name string) *Turn {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"action": map[string]string{"verb": "delete_file", "name": name}})
	token := r.HostToken(t)
	turn := &Turn{status: make(chan int, 1)}
	go func() {
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/api/turn", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-voicebox-host-token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			turn.status <- 0
			return
		}
		resp.Body.Close()
		turn.status <- resp.StatusCode
	}()
	return turn
}

// Status waits up to bound for the turn's answer and returns its HTTP status (0: the request
// failed without one), failing the test when there is none by then.
func (tu *Turn) Status(t testing.TB, bound time.Duration) int {
	t.Helper()
	select {
	case code := <-tu.status:
		return code
	case <-time.After(bound):
		t.Fatalf("harness: the turn had no answer within %v", bound)
		return 0
	}
}

// DeleteTurnAsync sends the relay a typed delete of name that waits for the person's approval
// with Prefer: respond-async, as the page does, and returns the pending turn's id and the run
// (instance) that took it; the turn's outcome comes later as a "turn" event.
func (r *Relay) DeleteTurnAsync(t testing.TB, name string) (turnID, instance string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"action": map[string]string{"verb": "delete_file", "name": name}})
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/api/turn", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", r.URL)
	req.Header.Set("x-voicebox-host-token", r.HostToken(t))
	req.Header.Set("Prefer", "respond-async")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var got struct {
		TurnID   string `json:"turnId"`
		Instance string `json:"instance"`
	}
	if json.Unmarshal(raw, &got); resp.StatusCode != http.StatusAccepted || got.TurnID == "" || got.Instance == "" {
		t.Fatalf("harness: a delete through %s answered %d %s, not a pending handle", r.URL, resp.StatusCode, raw)
	}
	return got.TurnID, got.Instance
}

// Decision is how a relay answered a person's decision on an approval.
type Decision struct {
	// Status is the answer's HTTP status; 0 when the request got none.
	Status int
	// Refused is the refusal's rule, if any (outcome-unknown, not-found, ...).
	Refused string
	// Body is the answer as sent, or the error that left the request without one.
	Body string
}

// Decide sends the person's decision on the approval id to the relay, as its page does (POST
// /api/approvals/<id> with the relay's origin), and returns the answer. It fails no test, so a
// test may decide from a goroutine of its own.
func (r *Relay) Decide(id string, approve bool) Decision {
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/api/approvals/"+id, strings.NewReader(fmt.Sprintf(`{"approve":%t}`, approve)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", r.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Decision{Body: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	d := Decision{Status: resp.StatusCode, Body: string(raw)}
	var body struct {
		Refused string `json:"refused"`
	}
	json.Unmarshal(raw, &body)
	d.Refused = body.Refused
	return d
}

// Wait polls the stream until an event named name, at position from or later, that match
// accepts (nil accepts any) has come, and returns its data and position, failing the test
// (saying what) at ReadyBound.
func (s *EventStream) Wait(t testing.TB, what string, from int, name string, match func(data string) bool) (string, int) {
	t.Helper()
	var data string
	at := -1
	waitUntil(t, what, ReadyBound, func() bool {
		data, at = s.Find(from, name, match)
		return at >= 0
	})
	return data, at
}

// Instance waits for the stream's hello and returns the run (instance) of the relay it names.
func (s *EventStream) Instance(t testing.TB) string {
	t.Helper()
	var hello struct {
		Instance string `json:"instance"`
	}
	s.Wait(t, "the relay's hello", 0, "hello", func(d string) bool {
		return json.Unmarshal([]byte(d), &hello) == nil && hello.Instance != ""
	})
	return hello.Instance
}

// Approval waits for an approval event at position from or later and returns the id of the
// request it shows.
func (s *EventStream) Approval(t testing.TB, from int) string {
	t.Helper()
	var ask struct {
		ID string `json:"id"`
	}
	s.Wait(t, "an approval on the stream", from, "approval", func(d string) bool {
		return json.Unmarshal([]byte(d), &ask) == nil && ask.ID != ""
	})
	return ask.ID
}

// Runs returns the runs a runs event's data lists.
func Runs(data string) []string {
	var r struct {
		Runs []string `json:"runs"`
	}
	json.Unmarshal([]byte(data), &r)
	return r.Runs
}
