//go:build !js

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// busyDecisions is how many made-up decisions a NATS client sends to the busy relay's own
// decisions subject while it is stopped: more than it holds there once it runs again.
const busyDecisions = 3000

// busyFor is how long the relay that asked for the approval is stopped: past the 2 s a decision
// waits for its answer (fleet.OpTimeout), within the lease TTL (5 s) after which the others
// would take it for gone.
const busyFor = 3 * time.Second

// TestADecisionThatFindsItsRelayBusyIsNeverSaidGone: relays A and B of a fleet, the page on A
// following A's events, a delete taken by B waiting for the person's approval. B is stopped
// (SIGSTOP, a process starved or paused), a NATS client floods B's own decisions subject, and
// the person approves on A. A cannot know whether B took the decision: it says outcome-unknown
// (503), never 404 not-found, which the person reads as "it timed out, nothing will happen"
// (on main it said so, and B, once running, took the decision and deleted the file). B runs
// again; the person decides again while the request waits (200), or is told it no longer waits
// only when the first decision was taken: either way the turn through B ends approved, the file
// deleted, exactly once.
func TestADecisionThatFindsItsRelayBusyIsNeverSaidGone(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	env := []string{"VOICEBOX_NATS=" + srv.URL(), "VOICEBOX_NATS_PREFIX=busy47"}
	a := harness.StartRelay(t, append(env, "VOICEBOX_RELAY_ID=relay-a")...)
	b := harness.StartRelay(t, append(env, "VOICEBOX_RELAY_ID=relay-b")...)
	resume := func() { syscall.Kill(b.PID(), syscall.SIGCONT) }
	t.Cleanup(resume) // before B is stopped for good, whatever happened
	page := hubtest.Serve(hubtest.Dial(t, a.URL, http.Header{"Origin": {a.URL}}, patience), executor.New(fsroot.NewMemory(), executor.Options{}))
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))
	waitFor(t, "the page on A seen by B", func() bool { return b.Call(t, "now", map[string]string{}).OK })
	if w := a.Call(t, "write-file", map[string]string{"path": "notes.txt", "content": "keep"}); !w.OK {
		t.Fatalf("writing notes.txt: %s", w.Raw)
	}
	stream := harness.FollowEvents(t, a)
	waitFor(t, "A's hello", func() bool { _, at := stream.Find(0, "hello", func(string) bool { return true }); return at >= 0 })

	turned := make(chan int, 1)
	token := b.HostToken(t)
	go func() {
		turn, _ := http.NewRequest(http.MethodPost, b.URL+"/api/turn", strings.NewReader(`{"action":{"verb":"delete_file","name":"notes.txt"}}`))
		turn.Header.Set("Content-Type", "application/json")
		turn.Header.Set("x-voicebox-host-token", token)
		r, err := http.DefaultClient.Do(turn)
		if err != nil {
			turned <- 0
			return
		}
		r.Body.Close()
		turned <- r.StatusCode
	}()
	var asked struct {
		ID string `json:"id"`
	}
	waitFor(t, "the delete's approval shown on A", func() bool {
		d, at := stream.Find(0, "approval", func(string) bool { return true })
		return at >= 0 && json.Unmarshal([]byte(d), &asked) == nil && asked.ID != ""
	})

	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := syscall.Kill(b.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	for i := range busyDecisions {
		nc.Publish("busy47.approvals.relay-b", []byte(fmt.Sprintf(`{"id":"ap-made-up-%d","approve":true}`, i)))
	}
	nc.Flush()
	status, rule := decide(t, a, asked.ID)
	time.Sleep(time.Until(stopped.Add(busyFor)))
	resume()
	t.Logf("the decision made while B was stopped: %d %s", status, rule)
	if status != http.StatusServiceUnavailable || rule != "outcome-unknown" {
		t.Fatalf("the decision made while B was stopped was answered %d %s; want 503 outcome-unknown (it may yet be taken)", status, rule)
	}

	// Decide again while it waits; "not found" only once the first was taken.
	var again int
	waitFor(t, "a decision made again to be answered for sure", func() bool {
		again, rule = decide(t, a, asked.ID)
		return again == http.StatusOK || again == http.StatusNotFound
	})
	t.Logf("decided again: %d %s", again, rule)
	select {
	case code := <-turned:
		if code != http.StatusOK {
			t.Fatalf("the approved turn through B answered %d", code)
		}
	case <-time.After(patience):
		t.Fatal("the approved turn through B never answered")
	}
	if r := a.Call(t, "read-file", map[string]string{"path": "notes.txt"}); r.OK {
		t.Fatalf("the approved delete did not run: %s", r.Raw)
	}
	if r := a.Call(t, "list-files", map[string]string{}); !r.OK {
		t.Fatalf("the page after it: %s", r.Raw)
	}
}

// decide approves the request id through relay, as its page does, and returns the status and
// the refusal's rule, if any.
func decide(t *testing.T, relay *harness.Relay, id string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, relay.URL+"/api/approvals/"+id, strings.NewReader(`{"approve":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", relay.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Refused string `json:"refused"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Refused
}

// TestAPageKeepsARequestWhoseDecisionIsUnknown: the page on A shows a delete taken by B waiting
// for approval; B is stopped (SIGSTOP) and the person presses Approve. The answer is
// outcome-unknown, so the page says so and keeps the request, its buttons live (before, it took
// the request away with "no request is waiting", and B, once running, deleted the file). B runs
// again: the request goes when its approval settles (pressed again if B never got the first),
// and the delete is done.
func TestAPageKeepsARequestWhoseDecisionIsUnknown(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	env := []string{"VOICEBOX_NATS=" + srv.URL(), "VOICEBOX_NATS_PREFIX=busy47p"}
	a := harness.StartRelay(t, append(env, "VOICEBOX_RELAY_ID=relay-a")...)
	b := harness.StartRelay(t, append(env, "VOICEBOX_RELAY_ID=relay-b")...)
	resume := func() { syscall.Kill(b.PID(), syscall.SIGCONT) }
	t.Cleanup(resume)
	tab := openPage(t, a)
	tab.Allow(`answered 503: .*/api/approvals/|status of 503`)
	waitFor(t, "the page on A seen by B", func() bool { return b.Call(t, "now", map[string]string{}).OK })
	if !harness.Eval[bool](tab, `voicebox.call('files.write', {path: 'notes.txt', content: 'keep'}).then(a => a.ok)`) {
		t.Fatal("writing notes.txt failed")
	}
	turned := make(chan int, 1)
	token := b.HostToken(t)
	go func() {
		turn, _ := http.NewRequest(http.MethodPost, b.URL+"/api/turn", strings.NewReader(`{"action":{"verb":"delete_file","name":"notes.txt"}}`))
		turn.Header.Set("Content-Type", "application/json")
		turn.Header.Set("x-voicebox-host-token", token)
		r, err := http.DefaultClient.Do(turn)
		if err != nil {
			turned <- 0
			return
		}
		r.Body.Close()
		turned <- r.StatusCode
	}()
	id := harness.WaitFor[string](tab, `(() => { const li = document.querySelector('#approvals li.approval'); return li ? li.dataset.approvalId : ''; })()`, patience)
	request := fmt.Sprintf(`document.querySelector('#approvals li.approval[data-approval-id=%q]')`, id)

	if err := syscall.Kill(b.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	harness.Eval[bool](tab, `(`+request+`.querySelector('button.approve').click(), true)`)
	told := harness.WaitFor[string](tab, `(() => { const n = document.querySelector('#notice'); return !n.hidden && n.textContent.includes('may or may not') ? n.textContent : ''; })()`, patience)
	kept := harness.Eval[bool](tab, `(() => { const li = `+request+`; return !!li && !li.querySelector('button.approve').disabled; })()`)
	time.Sleep(time.Until(stopped.Add(busyFor)))
	resume()
	t.Logf("the page said: %s", told)
	if !kept {
		t.Fatal("the page took the request away (or left its buttons off) though its decision's outcome is unknown")
	}
	harness.WaitFor[bool](tab, `(() => { const li = `+request+`;
		if (li && !li.querySelector('button.approve').disabled) li.querySelector('button.approve').click();
		return !li; })()`, patience)
	select {
	case code := <-turned:
		if code != http.StatusOK {
			t.Fatalf("the approved turn through B answered %d", code)
		}
	case <-time.After(patience):
		t.Fatal("the approved turn through B never answered")
	}
	if harness.Eval[bool](tab, `voicebox.call('files.read', {path: 'notes.txt'}).then(v => v.ok)`) {
		t.Fatal("notes.txt is still there after its approved delete")
	}
}
