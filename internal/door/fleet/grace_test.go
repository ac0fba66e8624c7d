package fleet_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// waitBound bounds every wait of these tests.
const waitBound = 10 * time.Second

// cutter is a TCP proxy in front of a NATS server: cut drops every connection through it and
// turns new ones away, so one relay loses NATS while the others keep it; mend lets them in again.
type cutter struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func startCutter(t testing.TB, upstream string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, upstream: upstream}
	t.Cleanup(func() { ln.Close(); c.drop() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			cut := c.cut
			c.mu.Unlock()
			if cut {
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", upstream)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

func (c *cutter) URL() string { return "nats://" + c.ln.Addr().String() }

func (c *cutter) drop() {
	c.mu.Lock()
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
}

// Cut drops the connections and turns new ones away until Mend.
func (c *cutter) Cut() {
	c.mu.Lock()
	c.cut = true
	c.mu.Unlock()
	c.drop()
}

// Mend lets connections through again.
func (c *cutter) Mend() {
	c.mu.Lock()
	c.cut = false
	c.mu.Unlock()
}

func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newRecord(token string, now time.Time) session.Record {
	rec := session.Record{Hash: sha256.Sum256([]byte(token))}
	rec.Info = session.Info{ID: hex.EncodeToString(rec.Hash[:session.IDHexLen/2]), Created: now, Expires: now.Add(time.Hour)}
	return rec
}

// TestASessionCheckedHerePassesWhileNATSIsAway: relay A loses NATS while relay B keeps it. A
// session A checked before passes on A (its page keeps working through it, SessionGrace); a
// session A never checked is refused fleet-unavailable; once A is back, a revocation B made
// meanwhile wins on A.
func TestASessionCheckedHerePassesWhileNATSIsAway(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	cut := startCutter(t, srv.URL()[len("nats://"):])
	a, err := fleet.Connect(fleet.Config{URL: cut.URL(), Prefix: "grace"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b := join(t, srv, "grace")
	ra, rb := a.Records(), b.Records()
	stopA, _ := ra.WatchEnds(func(string) {})
	t.Cleanup(stopA)
	now := time.Now()
	seen, unseen := newRecord("seen-on-a", now), newRecord("never-on-a", now)
	for _, rec := range []session.Record{seen, unseen} {
		if err := rb.AddSession(rec); err != nil {
			t.Fatal(err)
		}
	}
	until(t, "A checking the session B minted", func() bool {
		_, ok, err := ra.Session(seen.Info.ID, time.Now())
		return ok && err == nil
	})

	cut.Cut()
	until(t, "A noticing NATS is gone", func() bool { return !a.Connected() })
	if got, ok, err := ra.Session(seen.Info.ID, time.Now()); !ok || err != nil || got.Hash != seen.Hash {
		t.Fatalf("the session A had checked, with NATS away from A: ok %v, err %v", ok, err)
	}
	if _, ok, err := ra.Session(unseen.Info.ID, time.Now()); ok || refusal.RuleOf(err) != refusal.FleetUnavailable {
		t.Fatalf("a session A never checked, with NATS away from A: ok %v, err %v; want fleet-unavailable", ok, err)
	}
	if ok, err := rb.RemoveSession(seen.Info.ID); !ok || err != nil {
		t.Fatalf("revoking through B: %v %v", ok, err)
	}

	cut.Mend()
	until(t, "A back on NATS", func() bool { return a.Connected() })
	until(t, "A hearing the revocation B made while A was away", func() bool {
		_, ok, err := ra.Session(seen.Info.ID, time.Now())
		return !ok && err == nil
	})
	cut.Cut()
	until(t, "A noticing NATS is gone again", func() bool { return !a.Connected() })
	if _, ok, _ := ra.Session(seen.Info.ID, time.Now()); ok {
		t.Fatal("the revoked session passed on A from memory")
	}
}

// TestReplicasAreBounded: a replica count NATS cannot keep is refused when the relay starts, not
// met later as every shared state refused.
func TestReplicasAreBounded(t *testing.T) {
	for _, n := range []int{-1, fleet.MaxReplicas + 1} {
		if f, err := fleet.Connect(fleet.Config{URL: "nats://127.0.0.1:1", Replicas: n}); err == nil {
			f.Close()
			t.Errorf("%d replicas were taken", n)
		}
	}
}
