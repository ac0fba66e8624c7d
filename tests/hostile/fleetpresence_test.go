//go:build !js

package hostile

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// madeUpRuns is how many runs nobody has the forger says are alive: past approval.MaxLiveRuns.
const madeUpRuns = 4 * approval.MaxLiveRuns

// forgedLeaves is how many times the forger says the live run of relay B leaves.
const forgedLeaves = 200

// runName is what a run's name in a runs event may be: what a relay records, and no more.
var runName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// runsOf returns the runs a runs event's data lists.
func runsOf(data string) []string { return harness.Runs(data) }

// TestForgedPresenceEndsNoLiveRun: relays A and B of a fleet, the page following A, a delete
// taken by B waiting for the person's approval. A NATS client that is no relay attacks the
// presence door: heartbeats naming malformed runs (empty, spaces, subject dots and wildcards,
// 100 KB) and madeUpRuns made-up runs, forgedLeaves leaves of B's live run (as B and as another
// relay, on the events and the presence subjects), leaves of runs nobody has, and joins and
// leaves of made-up runs of B's. No runs event on A's stream lists more than
// approval.MaxLiveRuns runs, a malformed name, or leaves B's run out; A logs that a leave of a
// live run was not believed (a publish has nobody to refuse). The delete approved on A reaches
// B and its outcome reaches A's stream; B, stopped, is dropped from A's list.
func TestForgedPresenceEndsNoLiveRun(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "presence", Named: true})
	a, b := fleet.Relays[0], fleet.Relays[1]
	fleet.GoPage(a)
	if w := a.Call(t, "write-file", map[string]string{"path": "notes.txt", "content": "keep"}); !w.OK {
		t.Fatalf("writing notes.txt: %s", w.Raw)
	}
	stream := harness.FollowEvents(t, a)
	runA := stream.Instance(t)

	// The genuine turn: a delete through B, answered at once with its pending handle.
	turnID, runB := b.DeleteTurnAsync(t, "notes.txt")
	both := []string{runA, runB}
	slices.Sort(both)
	_, known := stream.Wait(t, "A listing both runs", 0, "runs", func(d string) bool { return slices.Equal(runsOf(d), both) })
	ask := stream.Approval(t, 0)

	nc := fleet.Client()
	say := func(subject, relay, instance, data string) {
		m := &nats.Msg{Subject: "presence." + subject, Data: []byte(data), Header: nats.Header{}}
		m.Header.Set("Voicebox-Relay", relay)
		m.Header.Set("Voicebox-Instance", instance)
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", "has space", "a.b", "*", ">", "run\ttab", strings.Repeat("x", 100<<10), "rün"} {
		say("presence", "relay-ghost", bad, "")
		say("presence", "relay-b", bad, "")
		say("events", "relay-b", bad, "leaving")
	}
	for i := range forgedLeaves {
		say("events", "relay-b", runB, "leaving")
		say("presence", "relay-b", runB, "leaving")
		say("events", fmt.Sprintf("relay-forger-%d", i%4), runB, "leaving")
		say("events", "relay-b", fmt.Sprintf("run-never-%d", i), "leaving")
	}
	for i := range madeUpRuns {
		run := fmt.Sprintf("run-made-up-%d", i)
		say("presence", "relay-b", run, "")
		if i%2 == 0 {
			say("events", "relay-b", run, "leaving")
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	// Once the made-up runs fall silent, A lists both runs again; nothing it told its page on
	// the way lists too many runs, a malformed one, or leaves B's run out.
	mark := stream.Len()
	waitFor(t, "A listing both runs again after the attack", func() bool {
		_, at := stream.Find(mark, "runs", func(d string) bool { return slices.Equal(runsOf(d), both) })
		return at >= 0
	})
	if d, at := stream.Find(known, "runs", func(d string) bool {
		runs := runsOf(d)
		return len(runs) > approval.MaxLiveRuns || !slices.Contains(runs, runB) ||
			slices.ContainsFunc(runs, func(r string) bool { return !runName.MatchString(r) })
	}); at >= 0 {
		t.Fatalf("A's page was told %s: B's run left out, or a run the forger named", d)
	}
	waitFor(t, "A saying a leave of a live run was not believed", func() bool {
		return strings.Contains(a.Stderr(), "a leave of a live run was not believed")
	})

	// The genuine turn is still B's: approved on A, it runs there and its outcome reaches A.
	if status, out := postDecision(t, a, ask); status != http.StatusOK {
		t.Fatalf("approving the delete on A after the attack: %d %s", status, out)
	}
	waitFor(t, "the delete's outcome on A's stream", func() bool {
		_, at := stream.Find(known, "turn", func(d string) bool { return strings.Contains(d, `"turnId":"`+turnID+`"`) })
		return at >= 0
	})
	if d, _ := stream.Find(known, "turn", func(d string) bool { return strings.Contains(d, `"turnId":"`+turnID+`"`) }); !strings.Contains(d, `"ok":true`) {
		t.Fatalf("the approved delete through B ended %s", d)
	}
	if r := a.Call(t, "read-file", map[string]string{"path": "notes.txt"}); r.OK {
		t.Fatalf("the approved delete did not run: %s", r.Raw)
	}

	// A relay that really leaves is dropped from A's list.
	mark = stream.Len()
	b.Stop(t)
	waitFor(t, "A telling its page B's run left", func() bool {
		_, at := stream.Find(mark, "runs", func(d string) bool { return slices.Equal(runsOf(d), []string{runA}) })
		return at >= 0
	})
	served(t, a)
}
