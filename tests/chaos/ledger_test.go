//go:build !js

package chaos

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// ledgerExtension is the catalogue extension the admission rounds admit and revoke.
const ledgerExtension = "notes-reader"

// admitted lists the ids of the extensions the relay at url runs (the WASM shelf's left out).
func admitted(t testing.TB, url, token string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/api/extensions", nil)
	req.Header.Set("X-Voicebox-Host-Token", token)
	resp, err := callClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/extensions: %v", err)
	}
	defer resp.Body.Close()
	var l struct {
		Extensions struct {
			Admitted []struct{ ID string } `json:"admitted"`
		} `json:"extensions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/extensions answered %d (%v)", resp.StatusCode, err)
	}
	var ids []string
	for _, e := range l.Extensions.Admitted {
		if !strings.HasPrefix(e.ID, "wasm-shelf") {
			ids = append(ids, e.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// wholeLines fails the test unless every line of the append-only file p is whole JSON ended by a
// newline (a missing file is empty).
func wholeLines(t testing.TB, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends with a torn line: %q", filepath.Base(p), b[max(len(b)-60, 0):])
	}
	for line := range bytes.Lines(b) {
		if !json.Valid(line) {
			t.Fatalf("%s holds a line that does not parse: %q", filepath.Base(p), line)
		}
	}
}

// TestKilledRelayKeepsEveryAdmissionWholeAndEveryRevocation: the relay killed -9 as it admits an
// extension, round after round: started again on its state, it runs the extension exactly when
// its ledger says it was admitted (an admission answered ok is there; one cut off is there or
// not, never half), its ledger holds only whole lines, and a revocation answered ok, the relay
// killed at once after, is still a revocation after the restart.
func TestKilledRelayKeepsEveryAdmissionWholeAndEveryRevocation(t *testing.T) {
	admissionRounds(t, chaosRounds*2)
}

// BenchmarkSoakKilledAdmissions is TestKilledRelayKeepsEveryAdmissionWholeAndEveryRevocation for
// soakRounds rounds.
func BenchmarkSoakKilledAdmissions(b *testing.B) {
	for range b.N {
		admissionRounds(b, soakRounds)
	}
}

// killDelays are the moments after an admission is sent that the rounds kill the relay at: some
// before it is read, some while it is written, some after it is answered.
var killDelays = []time.Duration{0, 3 * time.Millisecond, 8 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond}

func admissionRounds(t testing.TB, rounds int) {
	relay := harness.StartRelay(t)
	state := relay.StateDir
	token := relay.HostToken(t)
	restart := func() {
		relay.Kill(t)
		relay = harness.StartRelay(t, "VOICEBOX_STATE_DIR="+state)
		for _, p := range []string{".ledger.jsonl", ".audit.jsonl"} {
			wholeLines(t, filepath.Join(state, p))
		}
		if left := tempFiles(t, state); len(left) != 0 {
			ageTemps(t, state) // swept by the next start
		}
	}
	admits, cut, landed := 0, 0, 0
	for round := 1; round <= rounds; round++ {
		if status, m, err := post(relay.URL, "", "/api/extensions/stage-catalogue", `{"id":"`+ledgerExtension+`"}`); err != nil || m["ok"] != true {
			t.Fatalf("round %d: staging answered %d %v %v", round, status, m, err)
		}
		// The admission and the kill race: the kill lands before, during or after it.
		type result struct {
			status int
			m      map[string]any
			err    error
		}
		done := make(chan result, 1)
		go func() {
			s, m, err := post(relay.URL, token, "/api/extensions/admit", `{"id":"`+ledgerExtension+`","decision":"admit","confirm":true}`)
			done <- result{s, m, err}
		}()
		time.Sleep(killDelays[round%len(killDelays)]) // a different moment each round
		relay.Kill(t)
		var r result
		select {
		case r = <-done:
		case <-time.After(callBound):
			t.Fatalf("round %d: the admission had no end within %v of the kill", round, callBound)
		}
		switch {
		case r.err != nil:
			cut++
		case r.m["ok"] == true:
			admits++
		case r.m["refused"] == nil || r.m["why"] == nil:
			t.Fatalf("round %d: the admission answered %d %v, neither ok nor a named refusal", round, r.status, r.m)
		}
		restart()
		ids := admitted(t, relay.URL, token)
		if r.err != nil && len(ids) == 1 {
			landed++
		}
		switch {
		case r.err == nil && r.m["ok"] == true && !slices.Equal(ids, []string{ledgerExtension}):
			t.Fatalf("round %d: an admission answered ok is gone after a kill: the relay runs %v", round, ids)
		case len(ids) > 1 || (len(ids) == 1 && ids[0] != ledgerExtension):
			t.Fatalf("round %d: after the kill the relay runs %v", round, ids)
		case len(ids) == 0:
			continue // not admitted: the next round stages and admits it again
		}
		// Admitted: a revocation answered ok holds across a kill that follows it at once.
		status, m, err := post(relay.URL, token, "/api/extensions/revoke", `{"id":"`+ledgerExtension+`"}`)
		if err != nil || m["ok"] != true || m["revoked"] != true {
			t.Fatalf("round %d: the revocation answered %d %v %v", round, status, m, err)
		}
		restart()
		if ids := admitted(t, relay.URL, token); len(ids) != 0 {
			t.Fatalf("round %d: a revocation answered ok was lost in a kill: the relay runs %v", round, ids)
		}
	}
	t.Logf("%d rounds: %d admissions answered ok before the kill, %d cut (%d of those kept)", rounds, admits, cut, landed)
	if !healthy(relay.URL) {
		t.Fatal("after the rounds the relay does not answer its health")
	}
}
