package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
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

// partitionAt cuts the cluster's third node off from the other two at when, in the background;
// then, on their side, which still has a majority, it runs majority (the third node does not hear
// it) and kills the first and second node. The channel it returns gives majority's error once the
// two are dead. The test's cleanup stops it, or waits for it, before the nodes stop.
func partitionAt(t *testing.T, nodes []*fleettest.Server, when time.Time, majority func() error) <-chan error {
	done := make(chan struct{})
	result := make(chan error, 1)
	timer := time.AfterFunc(time.Until(when), func() {
		defer close(done)
		nodes[2].Cut(nodes[0])
		nodes[2].Cut(nodes[1])
		err := majority()
		nodes[0].Kill()
		nodes[1].Kill()
		result <- err
	})
	t.Cleanup(func() {
		if !timer.Stop() {
			<-done
		}
	})
	return result
}

// waitLeaderless returns when f's node, cut off from the others of its cluster, refuses at once for
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
// cluster has run past NATS's lost-quorum threshold, the third is cut off from the other two (a
// partition), which revoke on their side and then die (SIGKILL), so the third has no JetStream
// leader and, once it knows, refuses every request at once "temporarily unavailable", as a
// server does while its cluster elects a leader. (The third is chosen among the nodes that do
// not lead the JetStream meta group: a follower knows it has no leader after an election
// timeout, 4 to 9 s, a leader only after the threshold and more, some 19 s in the runs that
// looked.)
// Each case below then holds on that one cluster (the faults are the same, and losing a leader
// takes NATS's lost-quorum threshold and an election, some 20 s, so a cluster each would double
// it); they run one after another, since each times its own operations.
//
// The cluster is made, and its partition set for its time, before t.Parallel, while the
// package's other tests have not begun: the threshold and the election then pass while they
// run, not after them.
func TestOperationsWaitForALeaderWithinTheirDeadline(t *testing.T) {
	nodes := fleettest.StartCluster(t, 3)
	started := time.Now()
	// The node cut off (the third here) is one that does not lead the JetStream meta group (a
	// third of the runs took 41 s instead of 30 when the last started was cut off whatever it
	// led).
	var meta string
	untilWithin(t, "the cluster electing its meta group's leader", electionBound, func() bool { meta = nodes[0].MetaLeader(); return meta != "" })
	if nodes[2].Name() == meta {
		nodes[1], nodes[2] = nodes[2], nodes[1]
	}
	var logged syncBuffer
	f, err := Connect(Config{URL: nodes[2].URL(), Prefix: "leader", Replicas: 3, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		opTimeout: leaderOpTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clients, ext := f.MCPClients(), f.Extensions()
	var bearer string
	untilWithin(t, "the cluster taking a mint", electionBound, func() bool { bearer, err = clients.Mint("desk"); return err == nil })
	if got, err := clients.List(); err != nil || len(got) != 1 {
		t.Fatalf("the clients before the fault: %v %v", got, err)
	}
	untilWithin(t, "the cluster taking a file", electionBound, func() bool { return ext.WriteFile("a.json", []byte("{}")) == nil })
	const admitted = `{"action":"admit","id":"a"}`
	if err := ext.AppendLedger([]byte(admitted)); err != nil {
		t.Fatal(err)
	}
	// The relay keeps the ledger it read, and the bearer is admitted.
	if got, err := ext.ReadLedger(); err != nil || string(got) != admitted+"\n" {
		t.Fatalf("the ledger before the fault: %q %v", got, err)
	}
	if c, ok, err := clients.Lookup(bearer); err != nil || !ok || !c.Revoked.IsZero() {
		t.Fatalf("the bearer before the fault: %+v %v %v", c, ok, err)
	}
	readsFromTheLeader(t, f, clients)
	// A relay on the first node: on the side of the partition that keeps a majority.
	other, err := Connect(Config{URL: nodes[0].URL(), Prefix: "leader", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	t.Logf("the cluster took its first writes after %v", time.Since(started).Round(time.Millisecond))
	partitioned := partitionAt(t, nodes, started.Add(natsLostQuorum+time.Second), func() error {
		defer other.Close()
		return revokeOnTheMajority(other)
	})
	t.Parallel()
	if err := <-partitioned; err != nil {
		t.Fatal(err)
	}
	waitLeaderless(t, f)
	t.Logf("the third node refuses for want of a leader after %v", time.Since(started).Round(time.Millisecond))

	t.Run("AReadWithoutALeaderIsNotTakenForTheCurrentState", func(t *testing.T) {
		aReadWithoutALeaderIsNotCurrent(t, f, ext, clients, bearer)
	})
	t.Run("AnOperationWaitsForALeaderWithinItsDeadline", func(t *testing.T) {
		anOperationWaitsForALeader(t, f, clients)
	})
	t.Run("TheExtensionStoreWaitsForALeaderWithinItsDeadline", func(t *testing.T) {
		theExtensionStoreWaitsForALeader(t, f, ext, &logged)
	})
}

// readsFromTheLeader: on the whole cluster, a replicated bucket's Get (its leader's answer, not
// a direct get) reads a key as the client's own Get does: a value, a key never written, deleted,
// or purged with a TTL's marker (a revoked bearer's name key) not found, a wildcard refused.
func readsFromTheLeader(t *testing.T, f *Fleet, clients *MCPClients) {
	ctx, cancel, kv, err := f.op(mcpClientsBucket)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if !kv.(steadyKV).replicated {
		t.Fatal("a bucket of three replicas reads by direct gets")
	}
	spare, err := clients.Mint("spare")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, mcpNameKeyOf("spare")); err != nil || string(e.Value()) != hoststate.HashBearer(spare) || e.Key() != mcpNameKeyOf("spare") || e.Revision() == 0 {
		t.Fatalf("a replicated bucket's Get of a key: %v %v", e, err)
	}
	if err := clients.Revoke("spare"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, mcpNameKeyOf("spare")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a replicated bucket's Get of a key purged with a marker answered %v; want not found", err)
	}
	if c, ok, err := clients.Lookup(spare); err != nil || !ok || c.Revoked.IsZero() {
		t.Fatalf("a revoked bearer's lookup: %+v %v %v", c, ok, err)
	}
	if _, err := kv.Put(ctx, "gone", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"gone", "never"} {
		if _, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("a replicated bucket's Get of %q answered %v; want not found", key, err)
		}
	}
	for _, key := range []string{"a.*", ">", "a b", ".a", ""} {
		if _, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrInvalidKey) {
			t.Fatalf("a replicated bucket's Get of %q answered %v; want an invalid key", key, err)
		}
	}
}

// revoked is the ledger line the majority side appends: the extension admitted before, revoked.
const revoked = `{"action":"revoke","id":"a"}`

// revokeOnTheMajority revokes, through f, on the majority side of the partition, the extension
// admitted before it and the MCP client "desk", asking again while that side elects the leaders
// the third node held (NATS waits 4 to 9 s for a leader's heartbeat) and the requests to it
// were lost with it, until electionBound.
func revokeOnTheMajority(f *Fleet) error {
	deadline := time.Now().Add(electionBound)
	ext, clients := f.Extensions(), f.MCPClients()
	err := ext.AppendLedger([]byte(revoked))
	for ; err != nil && Unavailable(err) && time.Now().Before(deadline); err = ext.AppendLedger([]byte(revoked)) {
	}
	if err != nil {
		return fmt.Errorf("the majority side appending the revocation: %w", err)
	}
	tried := false
	err = clients.Revoke("desk")
	for ; err != nil && Unavailable(err) && time.Now().Before(deadline); err = clients.Revoke("desk") {
		tried = true
	}
	if err != nil && !(tried && errors.Is(err, hoststate.ErrNoClient)) { // an earlier try's revocation landed
		return fmt.Errorf("the majority side revoking the MCP client: %w", err)
	}
	return nil
}

// aReadWithoutALeaderIsNotCurrent: the third node, cut off from the majority that revoked the
// extension and the MCP client, answers a stream's state (its info) and a key's value (a direct
// get) from its own copy, the revocations missing, and says no leader in the info. A relay there
// must not take those for current: its read of the ledger, which kept the lines it read before,
// and its lookup of the bearer wait for a leader until their deadline and are refused
// fleet-unavailable. Before, the ledger read answered the old ledger in a few milliseconds after
// one request for the stream's state (the kept lines, so the revoked extension stayed admitted
// on this relay), and the lookup admitted the revoked bearer.
func aReadWithoutALeaderIsNotCurrent(t *testing.T, f *Fleet, ext *ExtensionStore, clients *MCPClients, bearer string) {
	// What the server answers: the state of its own copy of the stream, no leader named.
	var info *jetstream.StreamInfo
	untilWithin(t, "the third node answering the ledger stream's info from its own copy", electionBound, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
		defer cancel()
		st, err := f.js.Stream(ctx, f.name(extLedgerStream))
		if err != nil {
			return false
		}
		info = st.CachedInfo()
		return true
	})
	// Its own copy (one line, the revocation missing), naming no leader (a member that knows
	// its group has none) or itself (a leader that has not yet found it lost its quorum, whose
	// followers it has not heard from since the cut): not current either way.
	if _, err := currentInfo(info); info.State.LastSeq != 1 || info.Cluster == nil || !errors.Is(err, errNotCurrent) {
		t.Fatalf("the third node's stream info: cluster %+v, state %+v (%v); want its own copy (one line), not current", info.Cluster, info.State, err)
	}
	t.Logf("the third node answers the ledger's info from its own copy: last sequence %d, leader %q, %d replicas", info.State.LastSeq, info.Cluster.Leader, len(info.Cluster.Replicas))
	for _, p := range info.Cluster.Replicas {
		t.Logf("  replica %s: current %v, offline %v, last heard %v ago", p.Name, p.Current, p.Offline, p.Active)
	}

	began := time.Now()
	got, err := ext.ReadLedger()
	took := time.Since(began)
	if err == nil {
		t.Errorf("a ledger read without a leader answered %q in %v, the revocation on the other side missing; want fleet-unavailable", got, took)
	} else if !Unavailable(err) || took < f.opTimeout() {
		t.Errorf("a ledger read without a leader answered %v after %v; want fleet-unavailable at its deadline (%v)", err, took, f.opTimeout())
	}

	began = time.Now()
	c, ok, err := clients.Lookup(bearer)
	took = time.Since(began)
	if err == nil {
		t.Errorf("a bearer lookup without a leader answered %+v (found %v) in %v, its revocation on the other side missing; want fleet-unavailable", c, ok, took)
	} else if !Unavailable(err) || took < f.opTimeout() {
		t.Errorf("a bearer lookup without a leader answered %v after %v; want fleet-unavailable at its deadline (%v)", err, took, f.opTimeout())
	}
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
