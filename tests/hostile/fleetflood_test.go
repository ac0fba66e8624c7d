//go:build !js

package hostile

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// fleetFloodHuge is how many messages of fleetFloodHugeBytes the attacker sends to each flooded
// subject, and fleetFloodSmall how many small ones it sends in all.
const (
	fleetFloodHuge      = 40
	fleetFloodHugeBytes = 900 << 10
	fleetFloodSmall     = 20000
)

// fleetFloodRSSSlackKB is how far above its resident memory before the attack a relay's may
// reach: the flood's messages pass through its client's buffers before they are dropped, and
// each subscription may hold one message past its bounds (19 to 30 MB more were seen; a
// subscription held up to 64 MB before, and the relays took 44 and 72 MB more).
const fleetFloodRSSSlackKB = 48 << 10

// TestAFloodOnTheFleetsSubjectsCostsBoundedMemory: relays A and B of a fleet, the page on A
// following A's events, a delete taken by B waiting for the person's approval. A NATS client
// with the fleet's credentials floods every subject a relay subscribes to besides the alive
// responders' (<prefix>.events, .presence, .approvals, .approvals.<relay>, .watching,
// .extensions) with messages of 900 KB, events just under MaxEventBytes whose JSON ends wrong,
// and tens of thousands of small malformed and made-up ones. The relays' memory stays bounded;
// each says once a subject per interval that it dropped messages, and once that it dropped
// malformed events (not once a message); A never tells its page B's run is gone; calls through
// B keep reaching the page; the person's decision on A, made in the middle of it, is answered
// 200 (and the delete runs) or 503 outcome-unknown, never 404: a decision is never lost
// silently. Once B really stops, A drops its run.
func TestAFloodOnTheFleetsSubjectsCostsBoundedMemory(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "flood", Named: true})
	a, b := fleet.Relays[0], fleet.Relays[1]
	fleet.GoPage(a)
	if w := a.Call(t, "write-file", map[string]string{"path": "notes.txt", "content": "keep"}); !w.OK {
		t.Fatalf("writing notes.txt: %s", w.Raw)
	}
	stream := harness.FollowEvents(t, a)
	runA, runB := stream.Instance(t), harness.FollowEvents(t, b).Instance(t)
	both := []string{runA, runB}
	slices.Sort(both)
	_, known := stream.Wait(t, "A listing both runs", 0, "runs", func(d string) bool { return slices.Equal(runsOf(d), both) })

	// The genuine approval: a delete through B, shown on A.
	turn := b.DeleteTurn(t, "notes.txt")
	genuine := stream.Approval(t, 0)

	beforeA, beforeB := statsOf(t, a.PID()), statsOf(t, b.PID())
	nc := fleet.Client()
	publish := func(subject, reply string, data []byte, from string) {
		t.Helper()
		m := &nats.Msg{Subject: "flood." + subject, Reply: reply, Data: data, Header: nats.Header{}}
		if from != "" {
			m.Header.Set("Voicebox-Relay", from)
			m.Header.Set("Voicebox-Instance", "run-"+from)
		}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	call := func(when string) {
		t.Helper()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if ans := b.Call(t, "now", map[string]string{}); !ans.OK {
			t.Fatalf("a call through B %s answered %s", when, ans.Raw)
		}
	}
	huge := []byte(strings.Repeat("x", fleetFloodHugeBytes))
	hugeDecision := []byte(`{"id":"` + strings.Repeat("d", fleetFloodHugeBytes) + `","approve":true}`)
	// Just under MaxEventBytes (256 KiB), well formed up to its JSON's last byte.
	slowEvent := []byte("event: call\ndata: [" + strings.Repeat("1,", 120<<10) + "]\n\n")
	for i := range fleetFloodHuge {
		publish("events", "", slowEvent, "relay-ghost")
		publish("events", "", huge, "relay-ghost")
		publish("presence", "", huge, "relay-ghost")
		publish("approvals", "_INBOX.nobody", hugeDecision, "relay-ghost")
		publish("approvals.relay-b", "_INBOX.nobody", hugeDecision, "")
		publish("watching", "_INBOX.nobody", huge, "")
		publish("extensions", "", huge, "relay-ghost")
		if i%10 == 0 {
			call("among the huge messages")
		}
	}
	// The person approves on A in the middle of the flood.
	decided := make(chan harness.Decision, 1)
	go func() { decided <- a.Decide(genuine, true) }()
	malformedEvents := []string{"event: call\ndata: {\n\n", "event: x\n", "data: {}\n\n", "event: Call\ndata: {}\n\n", "event: call\ndata: {}\r\n\r\n", "\x00"}
	for i := range fleetFloodSmall {
		switch i % 6 {
		case 0:
			publish("events", "", []byte(malformedEvents[i%len(malformedEvents)]), fmt.Sprintf("relay-ghost-%d", i%7))
		case 1:
			publish("presence", "", nil, fmt.Sprintf("relay-ghost-%d", i))
		case 2:
			publish("approvals", fmt.Sprintf("_INBOX.nobody.%d", i), []byte(fmt.Sprintf(`{"id":"ap-made-up-%d","approve":true}`, i)), "relay-ghost")
		case 3:
			publish("approvals.relay-b", "_INBOX.nobody", []byte(`{"id":`), "")
		case 4:
			publish("watching", "_INBOX.nobody", nil, "")
		case 5:
			publish("extensions", "", nil, "relay-ghost")
		}
		if i%2000 == 0 {
			call("among the small messages")
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	duringA, duringB := statsOf(t, a.PID()), statsOf(t, b.PID())
	call("after the flood")

	// The decision: taken (200, the delete ran) or said unknown (503), never "not found".
	var verdict harness.Decision
	select {
	case verdict = <-decided:
	case <-time.After(patience):
		t.Fatal("the decision on A was never answered")
	}
	t.Logf("the decision made during the flood was answered %d %s", verdict.Status, verdict.Refused)
	switch {
	case verdict.Status == http.StatusOK:
	case verdict.Status == http.StatusServiceUnavailable && verdict.Refused == "outcome-unknown":
		// Whether it was taken is not known: the person decides again while it is shown.
		if status, out := postDecision(t, a, genuine); status != http.StatusOK && status != http.StatusNotFound {
			t.Fatalf("deciding again after outcome-unknown: %d %s", status, out)
		}
	default:
		t.Fatalf("the decision made during the flood was answered %d %s; want 200, or 503 outcome-unknown", verdict.Status, verdict.Body)
	}
	if code := turn.Status(t, patience); code != http.StatusOK {
		t.Fatalf("the approved turn through B answered %d", code)
	}
	if r := a.Call(t, "read-file", map[string]string{"path": "notes.txt"}); r.OK {
		t.Fatalf("the approved delete did not run: %s", r.Raw)
	}

	if d, at := stream.Find(known, "runs", func(d string) bool { return !slices.Contains(runsOf(d), runB) }); at >= 0 {
		t.Errorf("A told its page %s: B's live run gone during the flood", d)
	}
	for _, r := range []struct {
		name                  string
		relay                 *harness.Relay
		before, during, after procStats
	}{
		{"A", a, beforeA, duringA, statsOf(t, a.PID())},
		{"B", b, beforeB, duringB, statsOf(t, b.PID())},
	} {
		t.Logf("relay %s: rss %d KB before, %d during, %d after (peak %d); fds %d, %d, %d",
			r.name, r.before.rssKB, r.during.rssKB, r.after.rssKB, r.after.peakKB, r.before.fds, r.during.fds, r.after.fds)
		if r.after.peakKB > r.before.rssKB+fleetFloodRSSSlackKB {
			t.Errorf("relay %s held %d KB at its peak, %d before the flood", r.name, r.after.peakKB, r.before.rssKB)
		}
		if r.after.fds > r.before.fds+8 {
			t.Errorf("relay %s has %d descriptors open after the flood, %d before", r.name, r.after.fds, r.before.fds)
		}
		logs := r.relay.Stderr()
		if n := strings.Count(logs, "messages past a subscription's bounds were dropped"); n == 0 || n > 14 {
			t.Errorf("relay %s said %d times that it dropped a flood (want once a subject, a few subjects)", r.name, n)
		}
		if n := strings.Count(logs, "a malformed event from the fleet was dropped"); n == 0 || n > 3 {
			t.Errorf("relay %s said %d times that it dropped a malformed event (want once per 10 s)", r.name, n)
		}
	}

	// Live runs still work: a relay that really leaves is dropped from A's list.
	mark := stream.Len()
	b.Stop(t)
	waitFor(t, "A telling its page B's run left", func() bool {
		_, at := stream.Find(mark, "runs", func(d string) bool { return slices.Equal(runsOf(d), []string{runA}) })
		return at >= 0
	})
	served(t, a)
}
