//go:build !js

package chaos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// leaveRounds is how many times a relay is stopped just after its turn's outcome went out.
const leaveRounds = 10

// busyEvents is how many events the rest of the fleet publishes just before each stop, so the
// relay that hears them is still handing them to its pages when the stopped relay's last turn
// outcome and its leave arrive (below outbound.QueueMessages: the stream that reads them keeps
// up).
const busyEvents = 800

// listsRun reports whether a runs event's data lists the run instance.
func listsRun(data, instance string) bool {
	var r struct {
		Runs []string `json:"runs"`
	}
	return json.Unmarshal([]byte(data), &r) == nil && slices.Contains(r.Runs, instance)
}

// TestAStoppedRelaysLastTurnOutcomeComesBeforeItsLeave: relay A of a fleet takes a delete that
// waits for the person's approval, and is stopped (SIGTERM) while the rest of the fleet keeps
// relay B's fleet events busy. A's shutdown ends the turn (nothing was done) and publishes its
// outcome, then says it leaves. B's stream, the one the page follows, must give the turn's
// outcome before it says A's run is gone: the other way round, the page shows outcome-unknown
// and drops the real outcome arriving just after. leaveRounds rounds, each with a new run of A;
// the file is still there, and a delete through B is asked and done.
func TestAStoppedRelaysLastTurnOutcomeComesBeforeItsLeave(t *testing.T) {
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "fleet45", Relays: 1})
	b := fleet.Relays[0]
	fleet.GoPage(b)
	token := b.HostToken(t)
	const name = "kept.txt"
	if got := fleetDo(b, token, http.MethodPost, "/api/turn", map[string]any{"action": map[string]string{"verb": "write_file", "name": name, "content": "still here"}}); !got.ok() {
		t.Fatalf("writing %s: %v", name, got)
	}
	stream := harness.FollowEvents(t, b)
	busy := fleet.Client()

	for round := range leaveRounds {
		a := fleet.Add()
		waitFor(t, fmt.Sprintf("round %d: the page on B seen by A", round), func() bool { return a.Call(t, "now", map[string]string{}).OK })
		id, instance := a.DeleteTurnAsync(t, name)
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
		a.Stop(t)

		gone := -1
		waitFor(t, fmt.Sprintf("round %d: B saying A's run is gone", round), func() bool {
			_, gone = stream.Find(from, "runs", func(d string) bool { return !listsRun(d, instance) })
			return gone >= 0
		})
		_, outcome := stream.Find(from, "turn", func(d string) bool { return strings.Contains(d, `"turnId":"`+id+`"`) })
		if outcome < 0 || outcome > gone {
			t.Fatalf("round %d: B's stream said A's run is gone (event %d) before the outcome of its turn %s (event %d): the page showed outcome-unknown\nA's log:\n%s\nB's log:\n%s", round, gone, id, outcome, a.Stderr(), b.Stderr())
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
