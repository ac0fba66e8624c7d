package fleet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// natsLostQuorum is how long a NATS server's JetStream meta group must have run before the
// server, finding itself without a leader, refuses requests at once "JetStream system
// temporarily unavailable" rather than leaving them unanswered (nats-server's
// lostQuorumInterval).
const natsLostQuorum = 10 * time.Second

// leaderOpTimeout is the leader case's OpTimeout (Config.opTimeout): each of its nine operations
// without a leader waits it out, so it is the least that leaves an operation several tries
// (steadily's pauses grow from 20 to 250 ms).
const leaderOpTimeout = time.Second

// electionBound bounds a wait for the cluster to elect its leaders, or to know it has none: NATS
// waits 4 to 9 s without a leader's heartbeat before it begins an election.
const electionBound = 30 * time.Second

// untilWithin polls cond until it holds, failing the test at bound.
func untilWithin(t testing.TB, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(bound); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting %v for %s", bound, what)
		}
	}
}

// killAt kills the cluster's first and second node at when, in the background, and returns a
// channel closed once they are dead. The test's cleanup stops it, or waits for it, before the
// nodes stop.
func killAt(t *testing.T, nodes []*fleettest.Server, when time.Time) <-chan struct{} {
	killed := make(chan struct{})
	timer := time.AfterFunc(time.Until(when), func() {
		nodes[0].Kill()
		nodes[1].Kill()
		close(killed)
	})
	t.Cleanup(func() {
		if !timer.Stop() {
			<-killed
		}
	})
	return killed
}

// waitLeaderless returns when f's node, the others of its cluster killed, refuses at once for
// want of a leader.
func waitLeaderless(t *testing.T, f *Fleet) {
	t.Helper()
	untilWithin(t, "the third node refusing at once for want of a leader", electionBound, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
		defer cancel()
		_, err := f.js.AccountInfo(ctx)
		return noLeader(err)
	})
}

// TestOperationsWaitForALeaderWithinTheirDeadline: a relay on a three-node NATS cluster, its
// buckets, object store and ledger stream kept with three replicas, on the third node. Once the
// cluster has run past NATS's lost-quorum threshold, the other two die (SIGKILL), so the third
// has no JetStream leader and, once it knows, refuses every request at once "temporarily
// unavailable", as a server does while its cluster elects a leader. (The third, the last
// started, seldom leads the JetStream meta group, which the first most often does: a follower
// knows it has no leader after an election timeout, 4 to 9 s, a leader only after the threshold
// and more, some 19 s in the runs that looked.)
// Each case below then holds on that one cluster (the faults are the same, and losing a leader
// takes NATS's lost-quorum threshold and an election, some 20 s, so a cluster each would double
// it); they run one after another, since each times its own operations.
//
// The cluster is made, and its two nodes' death set for its time, before t.Parallel, while the
// package's other tests have not begun: the threshold and the election then pass while they
// run, not after them.
func TestOperationsWaitForALeaderWithinTheirDeadline(t *testing.T) {
	nodes := fleettest.StartCluster(t, 3)
	started := time.Now()
	var logged syncBuffer
	f, err := Connect(Config{URL: nodes[2].URL(), Prefix: "leader", Replicas: 3, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		opTimeout: leaderOpTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clients, ext := f.MCPClients(), f.Extensions()
	untilWithin(t, "the cluster taking a mint", electionBound, func() bool { _, err := clients.Mint("desk"); return err == nil })
	if got, err := clients.List(); err != nil || len(got) != 1 {
		t.Fatalf("the clients before the fault: %v %v", got, err)
	}
	untilWithin(t, "the cluster taking a file", electionBound, func() bool { return ext.WriteFile("a.json", []byte("{}")) == nil })
	if err := ext.AppendLedger([]byte(`{"action":"deny","id":"a"}`)); err != nil {
		t.Fatal(err)
	}

	t.Logf("the cluster took its first writes after %v", time.Since(started).Round(time.Millisecond))
	killed := killAt(t, nodes, started.Add(natsLostQuorum+time.Second))
	t.Parallel()
	<-killed
	waitLeaderless(t, f)
	t.Logf("the third node refuses for want of a leader after %v", time.Since(started).Round(time.Millisecond))

	t.Run("AnOperationWaitsForALeaderWithinItsDeadline", func(t *testing.T) {
		anOperationWaitsForALeader(t, f, clients)
	})
	t.Run("TheExtensionStoreWaitsForALeaderWithinItsDeadline", func(t *testing.T) {
		theExtensionStoreWaitsForALeader(t, f, ext, &logged)
	})
}

// anOperationWaitsForALeader: a listing of the MCP clients, without a leader, asks again until
// its OpTimeout (a leader elected meanwhile would answer it) and only then is refused
// fleet-unavailable. Before, it was refused in a millisecond, at the first refusal.
func anOperationWaitsForALeader(t *testing.T, f *Fleet, s *MCPClients) {
	if _, err := s.List(); !Unavailable(err) {
		t.Fatalf("a listing without a leader answered %v; want fleet-unavailable", err)
	}
	// Why: the listing's read of the bucket asked again until its deadline, never given a leader.
	ctx, cancel, kv, err := f.op(mcpClientsBucket)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	err = eachValue(ctx, kv, func(string, []byte) {})
	if !errors.Is(err, context.DeadlineExceeded) || !noLeader(err) {
		t.Fatalf("the listing's read ended %v; want it to ask again until its deadline (OpTimeout, here %v)", err, f.opTimeout())
	}
}

// theExtensionStoreWaitsForALeader: the extension store (its object store and its ledger
// stream), without a leader. Each of its operations waits for a leader until its OpTimeout, as a
// bucket's does (asking again while refused at once), and only then is refused
// fleet-unavailable. Before, four of the seven were refused at the first refusal, in a
// millisecond.
func theExtensionStoreWaitsForALeader(t *testing.T, f *Fleet, s *ExtensionStore, logged *syncBuffer) {
	fresh := f.Extensions() // its handles are made now: the object store's and the stream's creation wait too
	// One after another: run all at once during the fault, the object store's put (WriteFile)
	// and delete (Remove) were seen, in both runs that looked, to get no answer at all on their first
	// try until the deadline (the client's own wait for its publishes' acknowledgements, with no
	// refusal for steadily to ask again on); refused fleet-unavailable at OpTimeout all the same,
	// but not what this test is about. One after another each is refused at once and asks again.
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"ReadFile", func() error { _, err := s.ReadFile("a.json", 1<<10); return err }},
		{"WriteFile", func() error { return s.WriteFile("b.json", []byte("{}")) }},
		{"Remove", func() error { return s.Remove("a.json") }},
		{"List", func() error { _, err := s.List(""); return err }},
		{"AppendLedger", func() error { return s.AppendLedger([]byte(`{"action":"deny","id":"b"}`)) }},
		{"ReadLedger", func() error { _, err := s.ReadLedger(); return err }},
		{"the handles", func() error { _, err := fresh.ReadLedger(); return err }},
	} {
		logged.Reset()
		began := time.Now()
		err := op.do()
		took := time.Since(began)
		if !Unavailable(err) {
			t.Errorf("%s without a leader answered %v; want fleet-unavailable", op.name, err)
		}
		// It waited for a leader until its deadline: asking again while refused at once (the
		// log's cause says "no leader while the operation lasted"), or for an answer that never
		// came (the object store's put and delete, above); never refused before it.
		if took < f.opTimeout() {
			t.Errorf("%s was refused after %v, before its deadline (OpTimeout, here %v): %s", op.name, took, f.opTimeout(), logged.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use, a log's destination.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }
func (b *syncBuffer) Reset()         { b.mu.Lock(); defer b.mu.Unlock(); b.b.Reset() }
