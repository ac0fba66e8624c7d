//go:build !js

package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// forgedApprovals is how many approvals of its own the forger sends: each reaches the page's
// stream, whose own bound (not this case's subject) ends a stream flooded past it.
const forgedApprovals = 30

// TestForgedApprovalClaimsEndNoGenuineApproval: a NATS client that is no relay watches a genuine
// approval (a delete through B, the page following A) go by and claims its id for a relay name
// of its own that is never heard ("ghost"), for NATS wildcards ("*", ">") and for a subject with
// dots, and sends forgedApprovals forged approvals of its own from "ghost". Once the ghost's forged
// approvals end on A's stream (approval-settled, requester-gone: the ghost was silent for a
// lease TTL), the genuine one is still waiting: approving it on A reaches B (200) and the delete
// runs, and A's stream stays open.
func TestForgedApprovalClaimsEndNoGenuineApproval(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "claims"})
	a, b := fleet.Relays[0], fleet.Relays[1]
	fleet.GoPage(a)
	if w := a.Call(t, "write-file", map[string]string{"path": "notes.txt", "content": "keep"}); !w.OK {
		t.Fatalf("writing notes.txt: %s", w.Raw)
	}

	req, _ := http.NewRequest(http.MethodGet, a.URL+"/api/events", nil)
	req.Header.Set("Origin", a.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 4096)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		kind := ""
		for sc.Scan() {
			if k, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				kind = k
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- kind + " " + d
			}
		}
		close(events)
	}()
	var turn *harness.Turn
	next := func(kind, containing string) string {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("A's event stream ended before %s %s", kind, containing)
				}
				if strings.HasPrefix(e, kind+" ") && strings.Contains(e, containing) {
					return strings.TrimPrefix(e, kind+" ")
				}
			case <-deadline:
				answer := "not sent yet"
				if turn != nil {
					answer = fmt.Sprint(turn.Status(t, patience))
				}
				t.Fatalf("no %s event with %s on A (the turn: %s)", kind, containing, answer)
			}
		}
	}
	next("hello", "")

	// The genuine approval: a delete through B.
	turn = b.DeleteTurn(t, "notes.txt")
	var genuine struct {
		ID       string    `json:"id"`
		Deadline time.Time `json:"deadline"`
	}
	json.Unmarshal([]byte(next("approval", `"id"`)), &genuine)
	if genuine.ID == "" {
		t.Fatal("the approval event carried no id")
	}

	nc := fleet.Client()
	publish := func(relay, frame string) {
		m := &nats.Msg{Subject: "claims.events", Data: []byte(frame), Header: nats.Header{}}
		m.Header.Set("Voicebox-Relay", relay)
		nc.PublishMsg(m)
	}
	claim := fmt.Sprintf("event: approval\ndata: {\"id\":%q,\"tool\":\"delete_file\",\"summary\":\"x\",\"deadline\":%q}\n\n", genuine.ID, genuine.Deadline.Format(time.RFC3339Nano))
	for _, relay := range []string{"ghost", "*", ">", "a.b.c", ""} {
		publish(relay, claim)
	}
	deadline := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	for i := range forgedApprovals {
		publish("ghost", fmt.Sprintf("event: approval\ndata: {\"id\":\"ap-forged-%d\",\"tool\":\"delete_file\",\"summary\":\"x\",\"deadline\":%q}\n\n", i, deadline))
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The ghost is never heard again: A ends its approvals, the forged ones.
	next("approval-settled", `"outcome":"requester-gone"`)

	status, out := postDecision(t, a, genuine.ID)
	if status != http.StatusOK {
		t.Fatalf("approving the genuine request on A after the forged claims: %d %s", status, out)
	}
	if code := turn.Status(t, 30*time.Second); code != http.StatusOK {
		t.Fatalf("the approved turn through B answered %d", code)
	}
	if r := a.Call(t, "read-file", map[string]string{"path": "notes.txt"}); r.OK {
		t.Fatalf("the approved delete did not run: %s", r.Raw)
	}
}

// postDecision approves the request id on relay with the page's origin.
func postDecision(t *testing.T, relay *harness.Relay, id string) (int, string) {
	t.Helper()
	d := relay.Decide(id, true)
	if d.Status == 0 {
		t.Fatal(d.Body)
	}
	return d.Status, d.Body
}
