//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
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

// stageClock sideloads a proposal with id (gate off: no token needed to stage).
func stageClock(t *testing.T, relay *harness.Relay, id string) {
	t.Helper()
	d := `{"id":"` + id + `","name":"N","capabilities":["clock"],"tools":[{"name":"t_` + id + `","primitive":"now"}]}`
	if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(d), false); r.status != http.StatusOK {
		t.Fatalf("sideload %s: %d %s", id, r.status, r.body)
	}
}

// TestAStrangersGuessesCannotVoidThePersonsCode is issue 32 item 8: another local client guessed
// five wrong codes and the person's code was void. Now a requester's wrong attempts lock out that
// requester alone (approval-guesses-exhausted), and the code the person holds still admits.
func TestAStrangersGuessesCannotVoidThePersonsCode(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	stageClock(t, relay, "notes")
	if r := send(t, nil, http.MethodPost, relay.URL+"/api/extensions/approval-request", nil, `{"id":"notes"}`); r.status != http.StatusOK {
		t.Fatalf("the person's request: %d %s", r.status, r.body)
	}
	held := outstandingCodes(t, relay)["notes"]
	if held == "" {
		t.Fatal("relay approval-code shows no code for notes")
	}
	wrong := "00000000"
	if held == wrong {
		wrong = "99999999"
	}
	stranger := clientFrom("127.0.0.2")
	guess := func(client *http.Client, code string) reply {
		return send(t, client, http.MethodPost, relay.URL+"/api/extensions/approve", nil, `{"id":"notes","code":"`+code+`"}`)
	}
	for i := range 5 { // MaxCodeAttempts
		if r := guess(stranger, wrong); !r.refused(http.StatusForbidden, "approval-code-wrong") {
			t.Fatalf("the stranger's wrong guess %d: %d %s", i+1, r.status, r.body)
		}
	}
	for range 3 {
		if r := guess(stranger, wrong); !r.refused(http.StatusForbidden, "approval-guesses-exhausted") {
			t.Fatalf("the stranger's guess past its attempts: %d %s", r.status, r.body)
		}
	}
	if got := outstandingCodes(t, relay)["notes"]; got != held {
		t.Fatalf("after the stranger's guesses the code for notes is %q, want %s standing", got, held)
	}
	if r := guess(nil, held); r.status != http.StatusOK || r.m["ok"] != true {
		t.Fatalf("the person's code after a stranger's wrong guesses: %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", nil, ""); !strings.Contains(r.body, `"admitted":[{"id":"notes"`) {
		t.Fatalf("notes is not admitted: %s", r.body)
	}
	served(t, relay)
}

// TestOthersOpenCodesCannotLockOutAskingForOne is issue 32 item 8: eight codes asked for from
// eight addresses filled the relay's open codes, and nobody could ask for one for two minutes.
// Now open codes count per requester (one asker is stopped at its own bound,
// approval-rate-limited), and a requester with none open is never refused for others' codes.
func TestOthersOpenCodesCannotLockOutAskingForOne(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	ask := func(client *http.Client, id string) reply {
		return send(t, client, http.MethodPost, relay.URL+"/api/extensions/approval-request", nil, `{"id":"`+id+`"}`)
	}
	for i := range 8 {
		id := fmt.Sprintf("other%d", i)
		stageClock(t, relay, id)
		if r := ask(clientFrom(fmt.Sprintf("127.0.0.%d", i+2)), id); r.status != http.StatusOK {
			t.Fatalf("requester %d asking for %s: %d %s", i+1, id, r.status, r.body)
		}
	}
	// One asker opening code after code is given its own three (MaxOpenCodesPerRequester), and
	// is then stopped.
	hoarder := clientFrom("127.0.0.20")
	for i := range 4 {
		id := fmt.Sprintf("hoard%d", i)
		stageClock(t, relay, id)
		r := ask(hoarder, id)
		if i < 3 && r.status != http.StatusOK {
			t.Fatalf("the hoarder asking for its code %d: %d %s", i+1, r.status, r.body)
		}
		if i == 3 && !r.refused(http.StatusTooManyRequests, "approval-rate-limited") {
			t.Fatalf("the hoarder's fourth open code: %d %s", r.status, r.body)
		}
	}
	stageClock(t, relay, "notes")
	if r := ask(nil, "notes"); r.status != http.StatusOK {
		t.Fatalf("the person asking after others opened their codes: %d %s", r.status, r.body)
	}
	held := outstandingCodes(t, relay)["notes"]
	if held == "" {
		t.Fatal("relay approval-code shows no code for notes")
	}
	if r := send(t, nil, http.MethodPost, relay.URL+"/api/extensions/approve", nil, `{"id":"notes","code":"`+held+`"}`); r.status != http.StatusOK || r.m["ok"] != true {
		t.Fatalf("the person's code answered %d %s", r.status, r.body)
	}
	served(t, relay)
}
