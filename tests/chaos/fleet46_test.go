//go:build !js

package chaos

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// restartRounds is how many times the NATS server restarts while leaves of B's run are forged.
const restartRounds = 4

// TestANATSRestartLetsNoForgedLeaveEndALiveRun: relays A and B of a fleet, the page on A, a
// delete taken by B waiting for the person's approval on A's stream. A NATS client with the
// fleet's credentials says B's live run leaves, again and again, reconnecting as fast as it can,
// while the NATS server restarts restartRounds times: after each restart the relays come back
// one after the other, so a leave can reach A while B is not yet back and nobody answers for
// B's run or for B. A never believes it: its page is never told B's run is gone, B's approval
// is never ended requester-gone, and approved on A after the restarts, the delete runs on B.
func TestANATSRestartLetsNoForgedLeaveEndALiveRun(t *testing.T) {
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "fleet46", Named: true})
	a, b := fleet.Relays[0], fleet.Relays[1]
	fleet.GoPage(a)
	const name = "kept.txt"
	if w := a.Call(t, "write-file", map[string]string{"path": name, "content": "still here"}); !w.OK {
		t.Fatalf("writing %s: %s", name, w.Raw)
	}
	stream := harness.FollowEvents(t, a)
	id, runB := b.DeleteTurnAsync(t, name)
	_, known := stream.Wait(t, "A listing B's run", 0, "runs", func(d string) bool { return listsRun(d, runB) })
	approvalID := stream.Approval(t, 0)

	forger := fleet.Client(nats.MaxReconnects(-1), nats.ReconnectWait(5*time.Millisecond), nats.ReconnectJitter(0, 0), nats.ReconnectBufSize(-1))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			m := &nats.Msg{Subject: "fleet46.events", Data: []byte("leaving"), Header: nats.Header{}}
			m.Header.Set("Voicebox-Relay", "relay-b")
			m.Header.Set("Voicebox-Instance", runB)
			forger.PublishMsg(m) // fails while NATS is down; the next one goes
		}
	}()

	for round := range restartRounds {
		mark := stream.Len()
		fleet.NATS.Stop()
		time.Sleep(100 * time.Millisecond)
		fleet.NATS.Restart()
		// Once A knows the fleet's runs again (a lease TTL after it is back), it tells its page.
		waitFor(t, fmt.Sprintf("round %d: A telling its page the runs again", round), func() bool {
			_, at := stream.Find(mark, "runs", func(string) bool { return true })
			return at >= 0
		})
		if d, at := stream.Find(known, "runs", func(d string) bool { return !listsRun(d, runB) }); at >= 0 {
			t.Fatalf("round %d: A told its page %s: B's live run gone, on a forged leave\nA's log:\n%s", round, d, a.Stderr())
		}
		if d, at := stream.Find(0, "approval-settled", func(d string) bool { return strings.Contains(d, approvalID) }); at >= 0 {
			t.Fatalf("round %d: B's approval was ended on a forged leave: %s\nA's log:\n%s", round, d, a.Stderr())
		}
	}
	close(stop)
	wg.Wait()

	if got := fleetDo(a, a.HostToken(t), http.MethodPost, "/api/approvals/"+approvalID, map[string]bool{"approve": true}); got.err != nil || got.status != http.StatusOK {
		t.Fatalf("approving B's delete on A after the restarts: %v", got)
	}
	waitFor(t, "the delete's outcome on A's stream", func() bool {
		_, at := stream.Find(known, "turn", func(d string) bool {
			return strings.Contains(d, `"turnId":"`+id+`"`) && strings.Contains(d, `"ok":true`)
		})
		return at >= 0
	})
}
