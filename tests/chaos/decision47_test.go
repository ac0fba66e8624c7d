//go:build !js

package chaos

import (
	"fmt"
	"net/http"
	"testing"
	"time"

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
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "busy47", Named: true})
	a, b := fleet.Relays[0], fleet.Relays[1]
	fleet.GoPage(a)
	if w := a.Call(t, "write-file", map[string]string{"path": "notes.txt", "content": "keep"}); !w.OK {
		t.Fatalf("writing notes.txt: %s", w.Raw)
	}
	stream := harness.FollowEvents(t, a)
	stream.Instance(t) // A's hello

	turn := b.DeleteTurn(t, "notes.txt")
	asked := stream.Approval(t, 0)

	nc := fleet.Client()
	resume := b.Pause(t)
	stopped := time.Now()
	for i := range busyDecisions {
		nc.Publish("busy47.approvals.relay-b", []byte(fmt.Sprintf(`{"id":"ap-made-up-%d","approve":true}`, i)))
	}
	nc.Flush()
	status, rule := decide(t, a, asked)
	time.Sleep(time.Until(stopped.Add(busyFor)))
	resume()
	t.Logf("the decision made while B was stopped: %d %s", status, rule)
	if status != http.StatusServiceUnavailable || rule != "outcome-unknown" {
		t.Fatalf("the decision made while B was stopped was answered %d %s; want 503 outcome-unknown (it may yet be taken)", status, rule)
	}

	// Decide again while it waits; "not found" only once the first was taken.
	var again int
	waitFor(t, "a decision made again to be answered for sure", func() bool {
		again, rule = decide(t, a, asked)
		return again == http.StatusOK || again == http.StatusNotFound
	})
	t.Logf("decided again: %d %s", again, rule)
	if code := turn.Status(t, patience); code != http.StatusOK {
		t.Fatalf("the approved turn through B answered %d", code)
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
	d := relay.Decide(id, true)
	if d.Status == 0 {
		t.Fatal(d.Body)
	}
	return d.Status, d.Refused
}

// TestAPageKeepsARequestWhoseDecisionIsUnknown: the page on A shows a delete taken by B waiting
// for approval; B is stopped (SIGSTOP) and the person presses Approve. The answer is
// outcome-unknown, so the page says so and keeps the request, its buttons live (before, it took
// the request away with "no request is waiting", and B, once running, deleted the file). B runs
// again: the request goes when its approval settles (pressed again if B never got the first),
// and the delete is done.
func TestAPageKeepsARequestWhoseDecisionIsUnknown(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "busy47p", Named: true})
	a, b := fleet.Relays[0], fleet.Relays[1]
	tab := fleet.OpenPage(a)
	tab.Allow(`answered 503: .*/api/approvals/|status of 503`)
	if !harness.Eval[bool](tab, `voicebox.call('files.write', {path: 'notes.txt', content: 'keep'}).then(a => a.ok)`) {
		t.Fatal("writing notes.txt failed")
	}
	turn := b.DeleteTurn(t, "notes.txt")
	id := harness.WaitFor[string](tab, `(() => { const li = document.querySelector('#approvals li.approval'); return li ? li.dataset.approvalId : ''; })()`, patience)
	request := fmt.Sprintf(`document.querySelector('#approvals li.approval[data-approval-id=%q]')`, id)

	resume := b.Pause(t)
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
	if code := turn.Status(t, patience); code != http.StatusOK {
		t.Fatalf("the approved turn through B answered %d", code)
	}
	if harness.Eval[bool](tab, `voicebox.call('files.read', {path: 'notes.txt'}).then(v => v.ok)`) {
		t.Fatal("notes.txt is still there after its approved delete")
	}
}
