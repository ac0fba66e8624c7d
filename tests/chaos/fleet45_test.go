//go:build !js

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// leaveRounds is how many times a relay is stopped with one turn still running and another
// waiting for approval.
const leaveRounds = 10

// busyEvents is how many events the rest of the fleet publishes just before each stop, so the
// relay that hears them is still handing them to its pages when the stopped relay's last turn
// outcomes and its leave arrive (below outbound.QueueMessages: the stream that reads them keeps
// up).
const busyEvents = 800

// listsRun reports whether a runs event's data lists the run instance.
func listsRun(data, instance string) bool {
	var r struct {
		Runs []string `json:"runs"`
	}
	return json.Unmarshal([]byte(data), &r) == nil && slices.Contains(r.Runs, instance)
}

// holdingPage is a page's executor that holds a delete of the file set by hold, once, until the
// test lets it run (release): a turn kept running, its call in flight, across its relay's stop.
// Every other call runs at once.
type holdingPage struct {
	exec channel.Executor

	mu      sync.Mutex
	name    string        // the file whose delete is held; "" for none
	held    chan struct{} // closed once that delete arrived
	release chan struct{} // closed to let it run
}

// hold makes the next delete of name wait for the returned release, and returns it with the
// channel closed once that delete has arrived.
func (p *holdingPage) hold(name string) (held <-chan struct{}, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name, p.held, p.release = name, make(chan struct{}), make(chan struct{})
	r := p.release
	return p.held, sync.OnceFunc(func() { close(r) })
}

func (p *holdingPage) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	p.mu.Lock()
	var release chan struct{}
	if p.name != "" && call.Tool == string(executor.DeleteFile) && strings.Contains(string(call.Args), fmt.Sprintf("%q", p.name)) {
		release = p.release
		close(p.held)
		p.name = ""
	}
	p.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.exec.Execute(ctx, call)
}

// fleetEvents is <prefix>.events as a NATS client of the fleet hears it: each message's data and
// the run it names (the leave's Voicebox-Instance header), in the order heard, which is the
// order each relay published its own.
type fleetEvents struct {
	mu   sync.Mutex
	msgs [][2]string // data, instance
}

func (f *fleetEvents) add(m *nats.Msg) {
	if m.Header.Get("Voicebox-Relay") == "relay-busy" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, [2]string{string(m.Data), m.Header.Get("Voicebox-Instance")})
}

// leave returns the position of run instance's leave, or -1 when not heard yet.
func (f *fleetEvents) leave(instance string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.IndexFunc(f.msgs, func(m [2]string) bool { return m[0] == "leaving" && m[1] == instance })
}

// outcome returns the position of the outcome of turn id (its turn event), or -1 when not heard.
func (f *fleetEvents) outcome(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.IndexFunc(f.msgs, func(m [2]string) bool {
		return strings.HasPrefix(m[0], "event: turn\n") && strings.Contains(m[0], `"turnId":"`+id+`"`)
	})
}

// TestAStoppedRelaysLastTurnOutcomeComesBeforeItsLeave: relay A of a fleet, the page on relay B,
// is stopped (SIGTERM) with two turns answered 202: a delete approved and still running (the
// page holds its call) and one waiting for the person's approval, while the rest of the fleet
// keeps B's fleet events busy. A's shutdown settles the waiting one (nothing done) and waits for
// the running one's outcome (assistant.OutcomesWait): the page lets the held delete run once A
// says it waits for its turns' outcomes (assistant.OutcomesWaitLog), or once A says it leaves,
// so a relay that does not wait has closed its connection to the fleet, and lost the outcome, or
// at best sent it after its leave. A must say it leaves after both outcomes on <prefix>.events,
// and B's stream, the one the page follows, must give both before it says A's run is gone: the
// other way round, the page shows outcome-unknown and drops the real outcome arriving just after.
// leaveRounds rounds, each with a new run of A; the running delete was done, the waiting one not,
// and a delete through B is asked and done.
func TestAStoppedRelaysLastTurnOutcomeComesBeforeItsLeave(t *testing.T) {
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "fleet45", Relays: 1})
	b := fleet.Relays[0]
	page := &holdingPage{exec: executor.New(fsroot.NewMemory(), executor.Options{})}
	fleet.GoPageWith(b, page)
	token := b.HostToken(t)
	const name = "kept.txt"
	if got := fleetDo(b, token, http.MethodPost, "/api/turn", map[string]any{"action": map[string]string{"verb": "write_file", "name": name, "content": "still here"}}); !got.ok() {
		t.Fatalf("writing %s: %v", name, got)
	}
	stream := harness.FollowEvents(t, b)
	busy := fleet.Client()
	heard := &fleetEvents{}
	if _, err := busy.Subscribe("fleet45.events", heard.add); err != nil {
		t.Fatal(err)
	}
	if err := busy.Flush(); err != nil {
		t.Fatal(err)
	}

	for round := range leaveRounds {
		a := fleet.Add()
		waitFor(t, fmt.Sprintf("round %d: the page on B seen by A", round), func() bool { return a.Call(t, "now", map[string]string{}).OK })
		doomed := fmt.Sprintf("round-%d.txt", round)
		if got := fleetDo(b, token, http.MethodPost, "/api/turn", map[string]any{"action": map[string]string{"verb": "write_file", "name": doomed, "content": "to go"}}); !got.ok() {
			t.Fatalf("round %d: writing %s: %v", round, doomed, got)
		}

		// The running turn: a delete through A, approved, its call held by the page.
		held, release := page.hold(doomed)
		mark := stream.Len()
		running, instance := a.DeleteTurnAsync(t, doomed)
		if d := a.Decide(stream.Approval(t, mark), true); d.Status != http.StatusOK {
			t.Fatalf("round %d: approving the delete of %s through A: %+v", round, doomed, d)
		}
		select {
		case <-held:
		case <-time.After(patience):
			t.Fatalf("round %d: the approved delete of %s never reached the page", round, doomed)
		}
		// The waiting turn: a delete through A that nobody decides.
		waiting, _ := a.DeleteTurnAsync(t, name)
		from := 0
		waitFor(t, fmt.Sprintf("round %d: B listing A's run %s", round, instance), func() bool {
			_, from = stream.Find(0, "runs", func(d string) bool { return listsRun(d, instance) })
			return from >= 0
		})
		for i := range busyEvents {
			m := &nats.Msg{Subject: "fleet45.events", Data: fmt.Appendf(nil, "event: call\ndata: {\"tool\":\"read_file\",\"n\":%d}\n\n", i), Header: nats.Header{}}
			m.Header.Set("Voicebox-Relay", "relay-busy")
			busy.PublishMsg(m)
		}
		if err := busy.Flush(); err != nil {
			t.Fatal(err)
		}
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			a.Stop(t)
		}()
		waitFor(t, fmt.Sprintf("round %d: A saying it waits for its turns' outcomes, or that it leaves", round), func() bool {
			return strings.Contains(a.Stderr(), assistant.OutcomesWaitLog) || heard.leave(instance) >= 0
		})
		release()
		<-stopped

		waitFor(t, fmt.Sprintf("round %d: A saying on the fleet's events that it leaves", round), func() bool { return heard.leave(instance) >= 0 })
		leave := heard.leave(instance)
		for _, id := range []string{running, waiting} {
			if at := heard.outcome(id); at < 0 || at > leave {
				t.Fatalf("round %d: A said it leaves (message %d) before the outcome of its turn %s (message %d)\nA's log:\n%s", round, leave, id, at, a.Stderr())
			}
		}
		gone := -1
		waitFor(t, fmt.Sprintf("round %d: B saying A's run is gone", round), func() bool {
			_, gone = stream.Find(from, "runs", func(d string) bool { return !listsRun(d, instance) })
			return gone >= 0
		})
		for _, id := range []string{running, waiting} {
			if _, at := stream.Find(from, "turn", func(d string) bool { return strings.Contains(d, `"turnId":"`+id+`"`) }); at < 0 || at > gone {
				t.Fatalf("round %d: B's stream said A's run is gone (event %d) before the outcome of its turn %s (event %d): the page showed outcome-unknown\nA's log:\n%s\nB's log:\n%s", round, gone, id, at, a.Stderr(), b.Stderr())
			}
		}
		if d, _ := stream.Find(from, "turn", func(d string) bool { return strings.Contains(d, `"turnId":"`+running+`"`) }); !strings.Contains(d, `"ok":true`) {
			t.Fatalf("round %d: the approved delete running across A's stop ended so: %s", round, d)
		}
		if r := b.Call(t, "read-file", map[string]string{"path": doomed}); r.OK {
			t.Fatalf("round %d: %s is still there after its approved delete", round, doomed)
		}
		if r := b.Call(t, "read-file", map[string]string{"path": name}); !r.OK || !strings.Contains(string(r.Raw), "still here") {
			t.Fatalf("round %d: %s after a delete never approved: %s", round, name, r.Raw)
		}
	}

	// The next delete, through B, is asked, approved and done.
	mark := stream.Len()
	id, _ := b.DeleteTurnAsync(t, name)
	askID := stream.Approval(t, mark)
	if got := fleetDo(b, token, http.MethodPost, "/api/approvals/"+askID, map[string]bool{"approve": true}); got.err != nil || got.status != http.StatusOK {
		t.Fatalf("approving the delete through B: %v", got)
	}
	waitFor(t, "the approved delete's outcome on B's stream", func() bool {
		_, at := stream.Find(mark, "turn", func(d string) bool { return strings.Contains(d, `"turnId":"`+id+`"`) })
		return at >= 0
	})
	if _, at := stream.Find(mark, "turn", func(d string) bool {
		return strings.Contains(d, `"turnId":"`+id+`"`) && strings.Contains(d, `"ok":true`)
	}); at < 0 {
		t.Fatal("the approved delete through B did not succeed")
	}
	if r := b.Call(t, "read-file", map[string]string{"path": name}); r.OK {
		t.Fatalf("%s is still there after its approved delete", name)
	}
}

// asyncTurn sends relay a delete of name that waits for the person's approval, with Prefer:
// respond-async as the page does, and returns the turn's id and the run that took it.
func asyncTurn(t *testing.T, relay *harness.Relay, name string) (id, instance string) {
	t.Helper()
	return relay.DeleteTurnAsync(t, name)
}
