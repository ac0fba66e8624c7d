package fleet

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// lastEvents is how many events a leaving run publishes just before it leaves: enough that the
// relay hearing them is still handing them out when the leave arrives.
const lastEvents = 2000

// frameLog is a relay's catalogue named instance that holds no approval and keeps every event
// delivered to it, in order.
type frameLog struct {
	instance string
	mu       sync.Mutex
	frames   []string
}

func (s *frameLog) DeliverEvent(frame []byte) {
	name, data := eventParts(frame)
	s.mu.Lock()
	s.frames = append(s.frames, name+" "+string(data))
	s.mu.Unlock()
}
func (s *frameLog) DecideLocal(string, bool) bool { return false }
func (s *frameLog) Instance() string              { return s.instance }

// index returns the position of the first frame delivered that is want, or -1.
func (s *frameLog) index(want string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Index(s.frames, want)
}

// logged joins the fleet on srv under prefix with a lease TTL no wait reaches and starts its
// Events, whose deliveries are kept in order.
func logged(t *testing.T, srv *fleettest.Server, prefix, instance string) (*Events, *frameLog) {
	t.Helper()
	f, err := Connect(Config{URL: srv.URL(), Prefix: prefix, LeaseTTL: longLease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	s := &frameLog{instance: instance}
	e, err := f.NewEvents(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, s
}

// TestALeaveIsHeardAfterTheRunsLastEvents: a run publishes lastEvents events (an approval asked,
// steps, the approval settled, its turn's outcome) and closes at once. The relay that hears it
// hands every one of them to its pages before it tells them the run is gone, and never ends the
// approval as its requester's going: the leave cannot overtake the run's last events.
func TestALeaveIsHeardAfterTheRunsLastEvents(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	a, sa := logged(t, srv, "leave1", "run-a")
	b, _ := member(t, srv, "leave1", "run-b", longLease)
	until(t, "A hearing run-b", func() bool { return heardRun(a, "run-b") })
	knownLongAgo(a)
	a.tellRuns()
	if sa.index(`runs {"runs":["run-a","run-b"]}`) < 0 {
		t.Fatal("A's pages were not told both runs")
	}

	deadline := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	b.PublishEvent([]byte(fmt.Sprintf("event: approval\ndata: {\"id\":\"ap-b\",\"deadline\":%q}\n\n", deadline)))
	for i := range lastEvents {
		b.PublishEvent([]byte(fmt.Sprintf("event: step\ndata: {\"n\":%d}\n\n", i)))
	}
	b.PublishEvent([]byte("event: approval-settled\ndata: {\"id\":\"ap-b\",\"outcome\":\"approved\"}\n\n"))
	b.PublishEvent([]byte("event: turn\ndata: {\"turnId\":\"turn-b\",\"ok\":true}\n\n"))
	b.Close()

	gone := `runs {"runs":["run-a"]}`
	until(t, "A's pages told run-b is gone", func() bool { return sa.index(gone) >= 0 })
	turn := sa.index(`turn {"turnId":"turn-b","ok":true}`)
	if turn < 0 || turn > sa.index(gone) {
		t.Fatalf("A's pages were told run-b is gone before its turn's outcome (turn at %d, gone at %d)", turn, sa.index(gone))
	}
	sa.mu.Lock()
	defer sa.mu.Unlock()
	for _, f := range sa.frames {
		if strings.Contains(f, RequesterGone) {
			t.Fatalf("an approval its run settled before leaving was ended as its requester's going: %s", f)
		}
	}
}

// TestAForgedLeaveOfALiveRunIsNotBelieved: a NATS client that is no relay says B's live run
// leaves (as B and as another relay, on events and on presence), says so of a run nobody heard,
// and makes up a run of B's, heard alive, then says it leaves as B. B's run answers that it
// lives, so A still lists it; the made-up run is forgotten (nobody answers for it) but B answers
// for itself, so none of B's approvals end. When B really leaves, A forgets it at once.
func TestAForgedLeaveOfALiveRunIsNotBelieved(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	a, sa := logged(t, srv, "leave2", "run-a")
	b, _ := member(t, srv, "leave2", "run-b", longLease)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	bID := b.f.ID()
	presence(t, nc, "leave2", bID, "run-made-up", "")
	until(t, "A hearing run-b and the made-up run", func() bool { return heardRun(a, "run-b") && heardRun(a, "run-made-up") })
	knownLongAgo(a)
	deadline := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	b.PublishEvent([]byte(fmt.Sprintf("event: approval\ndata: {\"id\":\"ap-b\",\"deadline\":%q}\n\n", deadline)))

	presence(t, nc, "leave2", bID, "run-b", leavingMessage)
	leave(t, nc, "leave2", bID, "run-b")
	leave(t, nc, "leave2", "relay-other", "run-b")
	leave(t, nc, "leave2", bID, "run-never")
	leave(t, nc, "leave2", bID, "run-made-up")
	// The forged leaves were taken before B's next event (NATS had them first: flushed); then
	// the checks they started ended.
	b.PublishEvent([]byte("event: step\ndata: {}\n\n"))
	until(t, "A taking B's event after the forged leaves, and checking them", func() bool {
		a.peerMu.Lock()
		defer a.peerMu.Unlock()
		r, ok := a.runs["run-b"]
		_, madeUp := a.runs["run-made-up"]
		return sa.index("step {}") >= 0 && ok && !r.checking && !madeUp
	})
	if runs, known := a.LiveRuns(); !known || !slices.Equal(runs, []string{"run-a", "run-b"}) {
		t.Fatalf("after forged leaves of run-b, A lists %v (known %v)", runs, known)
	}
	a.endSilent()
	a.peerMu.Lock()
	_, asked := a.asked["ap-b"]
	left := a.left[bID]
	a.peerMu.Unlock()
	if !asked || left {
		t.Fatalf("a forged leave ended B's approval (still asked %v, B taken as left %v)", asked, left)
	}

	b.Close()
	until(t, "A forgetting run-b once it really left", func() bool {
		runs, known := a.LiveRuns()
		return known && slices.Equal(runs, []string{"run-a"})
	})
	until(t, "A's pages told run-b left", func() bool { return sa.index(`runs {"runs":["run-a"]}`) >= 0 })
	until(t, "B's approval ended on A: B left", func() bool {
		return sa.index(`approval-settled {"id":"ap-b","outcome":"requester-gone"}`) >= 0
	})
}
