package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/approval"
)

// runsWaitBound bounds every wait of these tests.
const runsWaitBound = 10 * time.Second

// longLease is a lease TTL no wait of these tests reaches: what changes within it is not a lease
// running out.
const longLease = time.Minute

// runsSink is a relay's catalogue named instance that holds no approval and keeps the runs
// events delivered to it.
type runsSink struct {
	instance string
	told     chan string
}

func (s *runsSink) DeliverEvent(frame []byte) {
	if name, data := eventParts(frame); name == runsEvent {
		s.told <- string(data)
	}
}
func (s *runsSink) DecideLocal(string, bool) bool { return false }
func (s *runsSink) Instance() string              { return s.instance }

// member joins the fleet on srv under prefix with the lease TTL and starts its Events.
func member(t *testing.T, srv *fleettest.Server, prefix, instance string, ttl time.Duration) (*Events, *runsSink) {
	t.Helper()
	f, err := Connect(Config{URL: srv.URL(), Prefix: prefix, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	s := &runsSink{instance: instance, told: make(chan string, 256)}
	e, err := f.NewEvents(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, s
}

// until polls cond until it holds, or fails after runsWaitBound.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(runsWaitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, runsWaitBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// presence says on the fleet's presence subject, as relay from's run instance, what (a heartbeat,
// or leavingMessage, which is ignored there).
func presence(t *testing.T, nc *nats.Conn, prefix, from, instance, what string) {
	t.Helper()
	m := &nats.Msg{Subject: prefix + ".presence", Data: []byte(what), Header: nats.Header{}}
	m.Header.Set(relayHeader, from)
	m.Header.Set(instanceHeader, instance)
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
}

// leave says on the fleet's events subject, as relay from's run instance, that it leaves.
func leave(t *testing.T, nc *nats.Conn, prefix, from, instance string) {
	t.Helper()
	m := &nats.Msg{Subject: prefix + ".events", Data: []byte(leavingMessage), Header: nats.Header{}}
	m.Header.Set(relayHeader, from)
	m.Header.Set(instanceHeader, instance)
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
}

// knownLongAgo makes e's lease TTL since joining pass, once connected (a test of its bounds, with a TTL no wait
// reaches, could not wait it out).
func knownLongAgo(e *Events) {
	e.f.mu.Lock()
	e.f.joined = e.f.joined.Add(-2 * e.f.cfg.LeaseTTL)
	e.f.mu.Unlock()
	e.peerMu.Lock()
	e.began = e.began.Add(-2 * e.f.cfg.LeaseTTL)
	e.peerMu.Unlock()
}

// heardRun reports whether e records the run instance.
func heardRun(e *Events, instance string) bool {
	e.peerMu.Lock()
	defer e.peerMu.Unlock()
	_, ok := e.runs[instance]
	return ok
}

// TestTheFleetsLiveRunsAreKnownAfterALeaseTTL: two relays each list both runs once a lease TTL
// has passed since they joined, never before (a run not yet heard would be missing), and each
// tells its pages the list in a runs event. When one relay stops without a word (its heartbeats
// end), the other lists itself alone, and tells its pages so.
func TestTheFleetsLiveRunsAreKnownAfterALeaseTTL(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	const ttl = time.Second
	a, sa := member(t, srv, "runs1", "run-a", ttl)
	if runs, known := a.LiveRuns(); known {
		t.Fatalf("a relay that just joined claims to know the fleet's runs: %v", runs)
	}
	b, _ := member(t, srv, "runs1", "run-b", ttl)
	if runs, known := b.LiveRuns(); known {
		t.Fatalf("a relay that just joined claims to know the fleet's runs: %v", runs)
	}
	both := `{"runs":["run-a","run-b"]}`
	// A may be told its own run alone first (B's first beat not yet heard), then both.
	for told := ""; told != both; {
		select {
		case told = <-sa.told:
			if told != both && told != `{"runs":["run-a"]}` {
				t.Fatalf("A's pages were told %s", told)
			}
		case <-time.After(runsWaitBound):
			t.Fatal("A's pages were never told both runs")
		}
	}
	if runs, known := a.LiveRuns(); !known || !slices.Equal(runs, []string{"run-a", "run-b"}) {
		t.Fatalf("A's live runs: %v (known %v)", runs, known)
	}
	until(t, "B knowing both runs", func() bool {
		runs, known := b.LiveRuns()
		return known && slices.Equal(runs, []string{"run-a", "run-b"})
	})

	// B stops without saying it leaves: its heartbeats end, and its connection with them.
	close(b.stop)
	<-b.done
	b.f.nc.Close()
	select {
	case told := <-sa.told:
		if told != `{"runs":["run-a"]}` {
			t.Fatalf("after B fell silent A's pages were told %s", told)
		}
	case <-time.After(runsWaitBound):
		t.Fatal("A's pages were never told B's run is gone")
	}
}

// TestALeavingRunIsForgottenAtOnce: a run that says it leaves is no longer listed, with a lease
// TTL no wait of the test reaches: the leaving message, not silence, ended it (nobody answers for
// its relay any more); the pages are told.
func TestALeavingRunIsForgottenAtOnce(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	a, sa := member(t, srv, "runs2", "run-a", longLease)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	presence(t, nc, "runs2", "relay-x", "run-x", "")
	until(t, "A hearing run-x", func() bool { return heardRun(a, "run-x") })
	if runs, known := a.LiveRuns(); known {
		t.Fatalf("within a lease TTL of joining A claims to know the fleet's runs: %v", runs)
	}
	knownLongAgo(a)
	if runs, known := a.LiveRuns(); !known || !slices.Equal(runs, []string{"run-a", "run-x"}) {
		t.Fatalf("the live runs: %v (known %v)", runs, known)
	}
	a.tellRuns() // the next beat's, without waiting a quarter of a minute for it
	if told := <-sa.told; told != `{"runs":["run-a","run-x"]}` {
		t.Fatalf("A's pages were told %s", told)
	}

	// Said on presence (as a relay of an older version does) it is not heard: the leave that
	// counts comes on events, after the run's last event.
	presence(t, nc, "runs2", "relay-x", "run-x", leavingMessage)
	leave(t, nc, "runs2", "relay-x", "run-x")
	select {
	case told := <-sa.told:
		if told != `{"runs":["run-a"]}` {
			t.Fatalf("after run-x left A's pages were told %s", told)
		}
	case <-time.After(runsWaitBound):
		t.Fatal("A's pages were never told run-x left")
	}
	if runs, known := a.LiveRuns(); !known || !slices.Equal(runs, []string{"run-a"}) {
		t.Fatalf("after run-x left, the live runs: %v (known %v)", runs, known)
	}
}

// TestTheLiveRunsAreBounded: a fleet with more runs than approval.MaxLiveRuns lists none (the
// page then waits as it would without the list), and a relay records no more than it could list
// whatever names are made up on the presence subject; malformed names are not recorded at all.
// Once the extra runs fall silent for a lease TTL the list is whole again.
func TestTheLiveRunsAreBounded(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	a, _ := member(t, srv, "runs3", "run-a", 2*time.Second)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	for _, bad := range []string{"", "has space", "dot.ted", strings.Repeat("x", maxInstanceBytes+1)} {
		presence(t, nc, "runs3", "relay-bad", bad, "")
	}
	for i := 1; i < approval.MaxLiveRuns; i++ { // with run-a, as many as may be listed
		presence(t, nc, "runs3", "relay-many", fmt.Sprintf("run-%03d", i), "")
	}
	until(t, "A hearing every run", func() bool { return heardRun(a, fmt.Sprintf("run-%03d", approval.MaxLiveRuns-1)) })
	knownLongAgo(a) // connected, and heard: the lease TTL since joining passes at once
	runs, known := a.LiveRuns()
	if !known || len(runs) != approval.MaxLiveRuns || slices.ContainsFunc(runs, func(r string) bool { return !strings.HasPrefix(r, "run-") }) {
		t.Fatalf("with %d runs, A lists %d (known %v): %v", approval.MaxLiveRuns, len(runs), known, runs)
	}

	for i := approval.MaxLiveRuns; i < 4*approval.MaxLiveRuns; i++ {
		presence(t, nc, "runs3", "relay-many", fmt.Sprintf("run-%03d", i), "")
	}
	until(t, "A hearing a run past the bound", func() bool {
		a.peerMu.Lock()
		defer a.peerMu.Unlock()
		return !a.full.IsZero()
	})
	if runs, known := a.LiveRuns(); known {
		t.Fatalf("past the bound A still lists %d runs", len(runs))
	}
	a.peerMu.Lock()
	recorded := len(a.runs)
	a.peerMu.Unlock()
	if recorded > maxHeardRuns {
		t.Fatalf("A records %d runs, more than its bound %d", recorded, maxHeardRuns)
	}

	until(t, "the list whole again once the others fell silent", func() bool {
		runs, known := a.LiveRuns()
		return known && slices.Equal(runs, []string{"run-a"})
	})
}
