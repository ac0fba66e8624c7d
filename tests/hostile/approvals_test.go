//go:build !js

package hostile

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// guessedHandles is how many made-up pending handles the case tries.
const guessedHandles = 64

// TestAPendingTurnIsDecidedOnlyByThePage is issue 33 item 4's new door: the page's turn that waits
// for the person is answered at once (Prefer: respond-async, 202) with a pending handle, the
// approval's id, and its outcome comes on /api/events. Another site cannot use the handle or read
// the outcome: deciding it from a foreign Origin or Origin null, following /api/events from a
// foreign Origin, and sending such a turn from one are each refused origin-refused; made-up
// handles (and the turn's id in its place) are refused not-found, and the request still waits.
// The page's own decision is then served, and its stream gets the turn's one outcome.
func TestAPendingTurnIsDecidedOnlyByThePage(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep me"), 0o644)
	harness.StartMachine(t, relay, "box", dir)
	waitFor(t, "the machine holding the root", func() bool { return rootKind(t, relay) == "machine" })

	// The page follows the event stream, so there is somebody to ask.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, relay.URL+"/api/events", nil)
	req.Header.Set("Origin", relay.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	turns := make(chan map[string]any, 16)
	go func() {
		defer close(turns)
		sc := bufio.NewScanner(resp.Body)
		kind := ""
		for sc.Scan() {
			if k, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				kind = k
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && kind == "turn" {
				var m map[string]any
				json.Unmarshal([]byte(d), &m)
				turns <- m
			}
		}
	}()

	page := map[string]string{"Origin": relay.URL}
	asPage := map[string]string{"Origin": relay.URL, "Prefer": "respond-async"}
	turn := send(t, nil, http.MethodPost, relay.URL+"/api/turn", asPage, `{"action":{"verb":"delete_file","name":"keep.txt"}}`)
	handle, _ := turn.m["pending"].(map[string]any)
	id, _ := handle["id"].(string)
	if turn.status != http.StatusAccepted || id == "" {
		t.Fatalf("the page's delete answered %d %s", turn.status, turn.body)
	}

	evil := map[string]string{"Origin": "https://evil.example"}
	for _, origin := range []map[string]string{evil, {"Origin": "null"}} {
		if r := send(t, nil, http.MethodPost, relay.URL+"/api/approvals/"+id, origin, `{"approve":true}`); !r.refused(http.StatusForbidden, "origin-refused") {
			t.Fatalf("a decision from %s answered %d %s", origin["Origin"], r.status, r.body)
		}
	}
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/events", evil, ""); !r.refused(http.StatusForbidden, "origin-refused") {
		t.Fatalf("the event stream for another site answered %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodPost, relay.URL+"/api/turn", map[string]string{"Origin": "https://evil.example", "Prefer": "respond-async"}, `{"action":{"verb":"delete_file","name":"keep.txt"}}`); !r.refused(http.StatusForbidden, "origin-refused") {
		t.Fatalf("a turn from another site answered %d %s", r.status, r.body)
	}
	guesses := []string{turn.m["turnId"].(string), id[:len(id)-1] + "0", strings.ToUpper(id)}
	for range guessedHandles {
		var b [12]byte
		rand.Read(b[:])
		guesses = append(guesses, "ap-"+hex.EncodeToString(b[:]))
	}
	for _, g := range guesses {
		if g == id {
			continue
		}
		if r := send(t, nil, http.MethodPost, relay.URL+"/api/approvals/"+g, page, `{"approve":true}`); !r.refused(http.StatusNotFound, "not-found") {
			t.Fatalf("the guessed handle %q answered %d %s", g, r.status, r.body)
		}
	}
	// The wall: the request still waits, and the file is there.
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/approvals", page, ""); !strings.Contains(r.body, id) {
		t.Fatalf("after the attacks the request is gone: %s", r.body)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Fatalf("keep.txt: %v", err)
	}

	// The page's own decision is served, and its stream gets the one outcome.
	if r := send(t, nil, http.MethodPost, relay.URL+"/api/approvals/"+id, page, `{"approve":false}`); r.status != http.StatusOK || r.m["ok"] != true {
		t.Fatalf("the page's decision answered %d %s", r.status, r.body)
	}
	var out map[string]any
	open := false
	select {
	case out, open = <-turns:
	case <-time.After(patience):
	}
	if !open || out["turnId"] != turn.m["turnId"] || out["refused"] != "approval-denied" {
		t.Fatalf("the page's stream got the outcome %v (open %v)", out, open)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Fatalf("keep.txt after the denial: %v", err)
	}
	served(t, relay)
}
