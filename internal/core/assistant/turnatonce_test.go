package assistant_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// postAsync sends a turn as the page does, with Prefer: respond-async, and decodes the answer.
func (r *rig) postAsync(body any) (int, map[string]any) {
	r.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, r.url+"/api/turn", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Prefer", "respond-async")
	c := http.Client{Timeout: bound}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestAPageTurnNeverWaitsOnThePerson: a turn sent with Prefer: respond-async that needs the
// person's approval is answered 202 with its pending handle before anyone decides, more of them
// than a browser has connections; each decision is answered, and each turn's outcome comes once
// on the event stream as a turn event, and again after the hello of a stream opened later.
func TestAPageTurnNeverWaitsOnThePerson(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	dir := r.machine()
	ev := r.events()
	const n = 8                    // more than the six connections a browser opens to one host
	pending := map[string]string{} // approval id -> turn id
	turns := map[string]int{}      // turn id -> file index
	for i := range n {
		name := fmt.Sprintf("f%d.txt", i)
		os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644)
		code, m := r.postAsync(map[string]any{"action": map[string]string{"verb": "delete_file", "name": name}})
		p, _ := m["pending"].(map[string]any)
		if code != http.StatusAccepted || m["ok"] != true || p == nil || p["tool"] != "delete_file" || m["turnId"] == "" {
			t.Fatalf("delete %d answered %d %v", i, code, m)
		}
		pending[p["id"].(string)] = m["turnId"].(string)
		turns[m["turnId"].(string)] = i
	}
	// A turn that asks nobody is answered as it is.
	if code, m := r.postAsync(map[string]any{"action": map[string]string{"verb": "list_files"}}); code != http.StatusOK || m["ok"] != true || m["pending"] != nil {
		t.Fatalf("a list answered %d %v", code, m)
	}
	approve := map[string]bool{}
	i := 0
	for id := range pending {
		approve[pending[id]] = i%2 == 0
		if code, m := r.post("/api/approvals/"+id, map[string]bool{"approve": i%2 == 0}); code != http.StatusOK {
			t.Fatalf("deciding %s answered %d %v", id, code, m)
		}
		i++
	}
	seen := map[string]bool{}
	for len(seen) < n {
		out := next(t, ev, "turn").Data
		id, _ := out["turnId"].(string)
		if _, ours := turns[id]; !ours || seen[id] {
			t.Fatalf("a turn event for %q (seen %v): %v", id, seen[id], out)
		}
		seen[id] = true
		if approve[id] {
			if res, _ := out["result"].(map[string]any); out["ok"] != true || res["approval"] != "approved" {
				t.Fatalf("an approved delete ended %v", out)
			}
		} else if out["ok"] != false || out["refused"] != string(refusal.ApprovalDenied) {
			t.Fatalf("a denied delete ended %v", out)
		}
	}
	for id, i := range turns {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)))
		if gone := os.IsNotExist(err); gone != approve[id] {
			t.Fatalf("f%d.txt: approved %v, gone %v", i, approve[id], gone)
		}
	}
	// A page that opens its stream now is told the outcomes after its hello.
	later := r.events()
	next(t, later, "hello")
	for range n {
		if id, _ := next(t, later, "turn").Data["turnId"].(string); !seen[id] {
			t.Fatalf("a later stream was sent turn %q", id)
		}
	}
}

// TestAPageTurnThatTimesOutEndsOnce: the pending turn nobody decides ends approval-timed-out, once,
// on the event stream; the held door (no Prefer) still answers with the outcome itself.
func TestAPageTurnThatTimesOutEndsOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: 300 * time.Millisecond})
	dir := r.machine()
	ev := r.events()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep"), 0o644)
	code, m := r.postAsync(map[string]string{"transcript": "delete keep.txt"})
	if code != http.StatusAccepted {
		t.Fatalf("the delete answered %d %v", code, m)
	}
	out := next(t, ev, "turn").Data
	if out["turnId"] != m["turnId"] || out["refused"] != string(refusal.ApprovalTimedOut) || out["understood"] == "" {
		t.Fatalf("the turn ended %v", out)
	}
	if code, held := r.post("/api/turn", map[string]string{"transcript": "delete keep.txt"}); code != http.StatusOK || held["refused"] != string(refusal.ApprovalTimedOut) || held["pending"] != nil {
		t.Fatalf("the held turn answered %d %v", code, held)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestAPendingTurnItsCallerCancelsEndsAndDoesNothing: the caller of a turn answered 202 stops
// waiting (POST /api/turn/{id}/cancel, as the page does for a view that cancelled its call): the
// request for approval goes (approval-settled), the turn ends approval-timed-out once, the file
// is untouched, and a decision that comes after finds nothing. A second cancel, and one of a turn
// that never ran, are 404 not-found; the next turn is served.
func TestAPendingTurnItsCallerCancelsEndsAndDoesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	dir := r.machine()
	ev := r.events()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep"), 0o644)
	code, m := r.postAsync(map[string]any{"action": map[string]string{"verb": "delete_file", "name": "keep.txt"}})
	p, _ := m["pending"].(map[string]any)
	if code != http.StatusAccepted || p == nil {
		t.Fatalf("the delete answered %d %v", code, m)
	}
	turn := m["turnId"].(string)
	if code, m := r.post("/api/turn/"+turn+"/cancel", map[string]any{}); code != http.StatusOK || m["ok"] != true {
		t.Fatalf("the cancel answered %d %v", code, m)
	}
	if settled := next(t, ev, "approval-settled").Data; settled["id"] != p["id"] {
		t.Fatalf("approval-settled %v, want %v", settled, p["id"])
	}
	out := next(t, ev, "turn").Data
	if out["turnId"] != turn || out["ok"] != false || out["refused"] != string(refusal.ApprovalTimedOut) {
		t.Fatalf("the cancelled turn ended %v", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "keep.txt")); err != nil || string(b) != "keep" {
		t.Fatalf("keep.txt after the cancelled delete: %q %v", b, err)
	}
	if code, _ := r.post("/api/approvals/"+p["id"].(string), map[string]bool{"approve": true}); code != http.StatusNotFound {
		t.Fatalf("a decision after the cancel answered %d", code)
	}
	for _, id := range []string{turn, "turn-999999"} {
		if code, m := r.post("/api/turn/"+id+"/cancel", map[string]any{}); code != http.StatusNotFound || m["refused"] != string(refusal.NotFound) {
			t.Fatalf("cancelling %s answered %d %v", id, code, m)
		}
	}
	if code, m := r.postAsync(map[string]any{"action": map[string]string{"verb": "list_files"}}); code != http.StatusOK || m["ok"] != true {
		t.Fatalf("the next turn answered %d %v", code, m)
	}
}

// TestTheHelloNamesTheTurnsItCanAnswerFor: a stream's hello names the relay's instance and each
// turn answered 202 that it can still answer for: while it waits for the person (held), and once
// it ended (its outcome follows the hello). The 202 names the same instance, and the turn ids of
// another run of the relay (a restart) neither meet these nor share its instance.
func TestTheHelloNamesTheTurnsItCanAnswerFor(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	dir := r.machine()
	ev := r.events()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep"), 0o644)
	code, m := r.postAsync(map[string]string{"transcript": "delete keep.txt"})
	p, _ := m["pending"].(map[string]any)
	if code != http.StatusAccepted || p == nil || m["instance"] == "" || m["instance"] == nil {
		t.Fatalf("the delete answered %d %v", code, m)
	}
	named := func(hello map[string]any) bool {
		if hello["instance"] != m["instance"] || hello["fleet"] != false {
			t.Fatalf("the hello names instance %v (fleet %v), the turn's is %v", hello["instance"], hello["fleet"], m["instance"])
		}
		turns, _ := hello["turns"].([]any)
		for _, id := range turns {
			if id == m["turnId"] {
				return true
			}
		}
		return false
	}
	if !named(next(t, r.events(), "hello").Data) {
		t.Fatalf("a hello while turn %v waits does not name it", m["turnId"])
	}
	if code, d := r.post("/api/approvals/"+p["id"].(string), map[string]bool{"approve": false}); code != http.StatusOK {
		t.Fatalf("denying answered %d %v", code, d)
	}
	if out := next(t, ev, "turn").Data; out["turnId"] != m["turnId"] {
		t.Fatalf("the turn ended %v", out)
	}
	if !named(next(t, r.events(), "hello").Data) {
		t.Fatalf("a hello after turn %v ended does not name it (its outcome follows)", m["turnId"])
	}

	again := newRig(t, assistant.Options{ApprovalTimeout: bound}) // the relay started again
	hello := next(t, again.events(), "hello").Data
	if hello["instance"] == m["instance"] || len(hello["turns"].([]any)) != 0 {
		t.Fatalf("another run's hello names instance %v and turns %v", hello["instance"], hello["turns"])
	}
}

// publishedFleet is a fleet of one that keeps every event frame published to it.
type publishedFleet struct {
	mu     sync.Mutex
	frames []string
}

func (f *publishedFleet) PublishEvent(frame []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frames = append(f.frames, string(frame))
}
func (f *publishedFleet) Decide(string, bool) (bool, error) { return false, nil }
func (f *publishedFleet) Watching(bool)                     {}
func (f *publishedFleet) Watched() bool                     { return false }
func (f *publishedFleet) LiveRuns() ([]string, bool)        { return nil, false }

// TestClosePublishesThePendingTurnsOutcomesFirst: turns answered 202 wait for the person when
// the relay shuts down. When Close returns, each one's outcome (refused: nothing was done) has
// gone out to the fleet, so a relay leaving a fleet says it leaves after them, never before.
func TestClosePublishesThePendingTurnsOutcomesFirst(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	dir := r.machine()
	r.events()
	fleet := &publishedFleet{}
	r.cat.UseFleet(fleet)
	const n = 4
	var turns []string
	for i := range n {
		name := fmt.Sprintf("f%d.txt", i)
		os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644)
		code, m := r.postAsync(map[string]any{"action": map[string]string{"verb": "delete_file", "name": name}})
		if code != http.StatusAccepted || m["turnId"] == "" {
			t.Fatalf("delete %d answered %d %v", i, code, m)
		}
		turns = append(turns, m["turnId"].(string))
	}
	r.cat.Close()
	fleet.mu.Lock()
	published := strings.Join(fleet.frames, "")
	fleet.mu.Unlock()
	for _, id := range turns {
		if !strings.Contains(published, `"turnId":"`+id+`"`) {
			t.Fatalf("Close returned before the outcome of turn %s went out to the fleet", id)
		}
	}
	for i := range n {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("f%d.txt", i))); err != nil {
			t.Fatalf("a delete never approved ran: %v", err)
		}
	}
}
