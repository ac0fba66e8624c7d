package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// deafLease is the lease TTL of TestADropOnPresenceIsNoSilence's relay: long enough that its
// first look follows the drop within it on a loaded machine, short enough to wait out.
const deafLease = 3 * time.Second

// TestADropOnPresenceIsNoSilence: relay A keeps an approval relay B asked for, and B has not
// been heard for longer than a lease TTL. While A is busy, a flood on <prefix>.presence goes
// past what A holds there, so A's client drops heartbeats, B's perhaps among them. A does not
// take B's silence for gone then: the approval stays, and A does not claim to know the fleet's
// live runs. Once a lease TTL has passed with nothing dropped, silence counts again and the
// approval ends requester-gone.
func TestADropOnPresenceIsNoSilence(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	a, _ := member(t, srv, "deaf", "run-a", deafLease)
	knownLongAgo(a)
	deadline := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	a.track("relay-b", []byte(fmt.Sprintf("event: approval\ndata: {\"id\":\"ap-b\",\"deadline\":%q}\n\n", deadline)))

	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	presence := a.subs[1]
	if !strings.HasSuffix(presence.Subject, ".presence") {
		t.Fatalf("subscription 1 is on %s, not presence", presence.Subject)
	}
	// A busy: its presence handler waits for peerMu while the flood arrives.
	a.peerMu.Lock()
	for i := range 4000 {
		m := &nats.Msg{Subject: "deaf.presence", Data: []byte(strings.Repeat("p", 100)), Header: nats.Header{}}
		m.Header.Set(relayHeader, fmt.Sprintf("relay-x%d", i%8))
		nc.PublishMsg(m)
	}
	nc.Flush()
	dropped := false
	for deadline := time.Now().Add(runsWaitBound); !dropped && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n, _ := presence.Dropped()
		dropped = n > 0
	}
	// B silent for two lease TTLs, as far as A heard.
	a.heard["relay-b"] = time.Now().Add(-2 * deafLease)
	a.peerMu.Unlock()
	if !dropped {
		t.Fatal("A's client held the whole flood on presence: nothing was dropped")
	}

	a.endSilent()
	if !waiting(a, "ap-b") {
		t.Fatal("A ended B's approval right after dropping heartbeats: a dropped one may have been B's")
	}
	if _, known := a.LiveRuns(); known {
		t.Fatal("A claims to know the fleet's live runs right after dropping heartbeats")
	}
	// A lease TTL later, with nothing more dropped, B's silence is believed.
	until(t, "A ending B's approval once it heard the fleet whole for a lease TTL", func() bool {
		a.endSilent()
		return !waiting(a, "ap-b")
	})
	a.peerMu.Lock()
	_, gone := a.gone["ap-b"]
	a.peerMu.Unlock()
	if !gone {
		t.Fatal("B's approval left A's keeping without ending requester-gone")
	}
}

// waiting reports whether e keeps the approval id of another relay.
func waiting(e *Events, id string) bool {
	e.peerMu.Lock()
	defer e.peerMu.Unlock()
	_, ok := e.asked[id]
	return ok
}
