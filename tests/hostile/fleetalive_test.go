//go:build !js

package hostile

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// aliveFloodRequests is how many small requests the attacker sends to the alive subjects.
const aliveFloodRequests = 20000

// aliveHugeRequests is how many requests of aliveHugeBytes it sends to each of B's two.
const (
	aliveHugeRequests = 150
	aliveHugeBytes    = 900 << 10
)

// aliveRSSSlackKB is how far above its resident memory before the attack a relay's may be
// during and after it (the code and buffers paged in to serve it, never the attack's messages).
const aliveRSSSlackKB = 48 << 10

// TestTheFleetsAliveRespondersHoldUnderAttack: relays A and B of a fleet, the page on A, B's
// run known to A. A NATS client with the fleet's credentials attacks the subjects on which a
// relay answers that its run and itself live (<prefix>.alive.run.<instance>,
// <prefix>.alive.relay.<id>): malformed subjects, requests of 900 KB, tens of thousands of
// requests with reply subjects nobody listens on and with the fleet's own subjects as replies,
// made-up runs and relays, and, in the middle of it, leaves of B's live run. The relays' memory,
// threads and descriptors stay bounded; A never tells its page B's run is gone, nor logs that
// it believed a leave; calls through B keep reaching the page on A; and once B really stops,
// A drops its run.
func TestTheFleetsAliveRespondersHoldUnderAttack(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "alive", Named: true})
	a, b := fleet.Relays[0], fleet.Relays[1]
	fleet.GoPage(a)
	stream := harness.FollowEvents(t, a)
	runA, runB := stream.Instance(t), harness.FollowEvents(t, b).Instance(t)
	both := []string{runA, runB}
	slices.Sort(both)
	_, known := stream.Wait(t, "A listing both runs", 0, "runs", func(d string) bool { return slices.Equal(runsOf(d), both) })
	beforeA, beforeB := statsOf(t, a.PID()), statsOf(t, b.PID())
	threadsA, threadsB := threadsOf(t, a.PID()), threadsOf(t, b.PID())

	nc := fleet.Client()
	request := func(subject, reply string, data []byte) {
		t.Helper()
		if err := nc.PublishMsg(&nats.Msg{Subject: "alive." + subject, Reply: reply, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	forgeLeave := func() {
		t.Helper()
		m := &nats.Msg{Subject: "alive.events", Data: []byte("leaving"), Header: nats.Header{}}
		m.Header.Set("Voicebox-Relay", "relay-b")
		m.Header.Set("Voicebox-Instance", runB)
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	huge := []byte(strings.Repeat("x", aliveHugeBytes))
	malformed := []string{"alive.run.", "alive.relay.", "alive.run." + runB + ".extra", "alive.relay.relay-b.x", "alive.run", "alive.relay"}
	replies := []string{"", "_INBOX.nobody", "alive.events", "alive.presence", "alive.approvals", "alive.approvals.relay-a", "alive.alive.run." + runA, "alive.alive.relay.relay-a"}

	// During the attack calls through B keep reaching the page on A.
	call := func(when string) {
		t.Helper()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if ans := b.Call(t, "now", map[string]string{}); !ans.OK {
			t.Fatalf("a call through B %s answered %s", when, ans.Raw)
		}
	}

	for i := range aliveHugeRequests {
		request("alive.run."+runB, "_INBOX.huge", huge)
		request("alive.relay.relay-b", replies[i%len(replies)], huge)
		if i%50 == 0 {
			forgeLeave()
			call("among the huge requests")
		}
	}
	for i := range aliveFloodRequests {
		reply := replies[i%len(replies)]
		switch i % 5 {
		case 0:
			request("alive.run."+runB, reply, nil)
		case 1:
			request("alive.relay.relay-b", reply, []byte("{"))
		case 2:
			request(malformed[i%len(malformed)], reply, nil)
		case 3:
			request(fmt.Sprintf("alive.run.run-made-up-%d", i), fmt.Sprintf("_INBOX.nobody.%d", i), nil)
		case 4:
			request(fmt.Sprintf("alive.relay.relay-ghost-%d", i), reply, nil)
		}
		if i%1000 == 0 {
			forgeLeave()
			call("among the flood")
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	duringA, duringB := statsOf(t, a.PID()), statsOf(t, b.PID())
	forgeLeave()
	waitFor(t, "A saying a leave of a live run was not believed", func() bool {
		return strings.Contains(a.Stderr(), "a leave of a live run was not believed")
	})

	if d, at := stream.Find(known, "runs", func(d string) bool { return !slices.Contains(runsOf(d), runB) }); at >= 0 {
		t.Fatalf("A told its page %s: B's live run gone", d)
	}
	// B's client dropped the huge requests as they came (a subscription's bound), and said so
	// once a subject, not once a message.
	if n := strings.Count(b.Stderr(), "messages past a subscription's bounds were dropped"); n == 0 || n > 8 {
		t.Errorf("B said %d times that it dropped a flood on its alive subjects:\n%s", n, b.Stderr())
	}
	if strings.Contains(a.Stderr(), "nothing said whether the run still lives") {
		t.Errorf("A could not tell whether B's run lives during the attack:\n%s", a.Stderr())
	}
	for _, r := range []struct {
		name                 string
		before, during, afte procStats
		threadsBefore, after int
		pid                  int
	}{
		{"A", beforeA, duringA, statsOf(t, a.PID()), threadsA, threadsOf(t, a.PID()), a.PID()},
		{"B", beforeB, duringB, statsOf(t, b.PID()), threadsB, threadsOf(t, b.PID()), b.PID()},
	} {
		t.Logf("relay %s: rss %d KB before, %d during, %d after (peak %d); fds %d, %d, %d; threads %d, %d",
			r.name, r.before.rssKB, r.during.rssKB, r.afte.rssKB, r.afte.peakKB, r.before.fds, r.during.fds, r.afte.fds, r.threadsBefore, r.after)
		if r.afte.peakKB > r.before.rssKB+aliveRSSSlackKB {
			t.Errorf("relay %s held %d KB at its peak, %d before the attack", r.name, r.afte.peakKB, r.before.rssKB)
		}
		if r.afte.fds > r.before.fds+8 {
			t.Errorf("relay %s has %d descriptors open after the attack, %d before", r.name, r.afte.fds, r.before.fds)
		}
		if r.after > r.threadsBefore+8 {
			t.Errorf("relay %s runs %d threads after the attack, %d before", r.name, r.after, r.threadsBefore)
		}
	}

	// A relay that really leaves is dropped from A's list.
	mark := stream.Len()
	b.Stop(t)
	waitFor(t, "A telling its page B's run left", func() bool {
		_, at := stream.Find(mark, "runs", func(d string) bool { return slices.Equal(runsOf(d), []string{runA}) })
		return at >= 0
	})
	served(t, a)
}

// threadsOf is how many threads the process runs (/proc's Threads).
func threadsOf(t testing.TB, pid int) int {
	t.Helper()
	var n int
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			fmt.Sscan(strings.TrimSpace(v), &n)
		}
	}
	return n
}
