//go:build !js

package hostile

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// outstandingCodes runs `relay approval-code`, as the host would, and returns each proposal's
// outstanding code.
func outstandingCodes(t testing.TB, relay *harness.Relay) map[string]string {
	t.Helper()
	out, _ := exec.Command(filepath.Join(harness.RepoRoot(), "bin", "relay"), "approval-code", "--extensions-dir", relay.StateDir).Output()
	codes := map[string]string{}
	for _, m := range regexp.MustCompile(`(\d{8})  \(extension ([a-z0-9._-]+),`).FindAllStringSubmatch(string(out), -1) {
		codes[m[2]] = m[1]
	}
	return codes
}

// TestAskingForCodesCannotVoidOrStarveAnother is review item 10: asking for an approval code
// needed no authentication, its limit was global (anyone could use it up) and each request voided
// the code a person held. Now one requester's requests are limited on their own, asking again
// gives the same code, and the code a person holds still admits.
func TestAskingForCodesCannotVoidOrStarveAnother(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for _, id := range []string{"notes", "other"} {
		d := `{"id":"` + id + `","name":"N","capabilities":["clock"],"tools":[{"name":"t_` + id + `","primitive":"now"}]}`
		if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(d), false); r.status != http.StatusOK {
			t.Fatalf("sideload %s: %d %s", id, r.status, r.body)
		}
	}
	ask := func(client *http.Client, id string) reply {
		return send(t, client, http.MethodPost, relay.URL+"/api/extensions/approval-request", nil, `{"id":"`+id+`"}`)
	}
	// The person asks for a code for notes.
	if r := ask(nil, "notes"); r.status != http.StatusOK {
		t.Fatalf("the person's request: %d %s", r.status, r.body)
	}
	held := outstandingCodes(t, relay)["notes"]
	if held == "" {
		t.Fatal("relay approval-code shows no code for notes")
	}
	// Another local client asks over and over, for the same proposal: its own limit stops it.
	attacker := clientFrom("127.0.0.2")
	for i := range 5 {
		if r := ask(attacker, "notes"); r.status != http.StatusOK {
			t.Fatalf("request %d of the other client: %d %s", i+1, r.status, r.body)
		}
	}
	if r := ask(attacker, "other"); !r.refused(http.StatusTooManyRequests, "approval-rate-limited") {
		t.Fatalf("the other client's sixth request answered %d %s", r.status, r.body)
	}
	// None of it voided or replaced the person's code, and the person is not held to its limit.
	if got := outstandingCodes(t, relay)["notes"]; got != held {
		t.Fatalf("the code for notes changed from %s to %s after others asked", held, got)
	}
	if r := ask(nil, "other"); r.status != http.StatusOK {
		t.Fatalf("the person asking for another proposal: %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodPost, relay.URL+"/api/extensions/approve", nil, `{"id":"notes","code":"`+held+`"}`); r.status != http.StatusOK || r.m["ok"] != true {
		t.Fatalf("the person's code answered %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", nil, ""); !strings.Contains(r.body, `"admitted":[{"id":"notes"`) {
		t.Fatalf("notes is not admitted: %s", r.body)
	}
	served(t, relay)
}
