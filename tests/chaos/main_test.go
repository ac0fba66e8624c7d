//go:build !js

package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The chaos suite (./build.sh test chaos) kills, starves and cuts off the real processes of
// Voicebox (bin/relay serving, `relay env`, the page in Chromium, started through tests/harness)
// while they work, and checks what the person is promised: nothing lost, nothing torn, nothing
// hangs, every call ends with exactly one answer, and service comes back by itself. Each scenario
// runs a bounded number of rounds (chaosRounds; the Benchmark* soaks run soakRounds under
// ./build.sh bench) and bounds every wait by polling with a deadline.

func TestMain(m *testing.M) { harness.Main(m) }

// chaosRounds is how many fault rounds a scenario runs in the chaos layer, sized so the whole
// layer stays within CI's budget on two cores.
const chaosRounds = 3

// soakRounds is how many a Benchmark soak runs (./build.sh bench).
const soakRounds = 20

// patience bounds every wait for a condition (a process to be back, a page to reconnect).
const patience = 30 * time.Second

// callBound bounds one call through the relay: a call that has had no answer by then has none.
const callBound = 60 * time.Second

// waitFor polls cond until it holds, failing the test at patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", patience, what)
		}
	}
}

// outcome is how one call ended: an answer envelope, or the connection failing (the relay it
// went through died) with no answer at all.
type outcome struct {
	answer harness.Answer
	status int
	err    error
}

func (o outcome) String() string {
	if o.err != nil {
		return "no answer: " + o.err.Error()
	}
	return fmt.Sprintf("%d %s", o.status, o.answer.Raw)
}

// answered reports whether the call got an answer: ok, or a named refusal {rule, why}. Anything
// else (an envelope with neither, an unnamed refusal) is no answer a caller can act on.
func (o outcome) answered() bool {
	return o.err == nil && (o.answer.OK || (o.answer.Refused != "" && o.answer.Why != ""))
}

// callClient is the client of the calls a test makes while it kills things: no connection is
// reused across a kill, and no call waits longer than callBound.
var callClient = &http.Client{Timeout: callBound, Transport: &http.Transport{DisableKeepAlives: true}}

// call runs tool on the root through relay's /api/root/call with the host token (read once by
// the caller: the relay may be dead when the call is made) and returns how it ended.
func call(url, token, tool string, args any) outcome {
	body, _ := json.Marshal(map[string]any{"tool": tool, "args": args})
	req, _ := http.NewRequest(http.MethodPost, url+"/api/root/call", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Voicebox-Host-Token", token)
	resp, err := callClient.Do(req)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return outcome{status: resp.StatusCode, err: err}
	}
	o := outcome{status: resp.StatusCode}
	if err := json.Unmarshal(raw, &o.answer); err != nil {
		return outcome{status: resp.StatusCode, err: fmt.Errorf("an answer that is no envelope: %q", raw)}
	}
	o.answer.Raw = raw
	return o
}

// post sends a JSON body to relay's path, with the host token when token is not empty, and
// returns the status and the decoded answer (err when the connection failed).
func post(url, token, path, body string) (int, map[string]any, error) {
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", url)
	if token != "" {
		req.Header.Set("X-Voicebox-Host-Token", token)
	}
	resp, err := callClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%d %q is not JSON", resp.StatusCode, raw)
	}
	return resp.StatusCode, m, nil
}

// rootKind returns the kind of root relay reports ("machine", "opfs"), or "" when it has none
// or does not answer.
func rootKind(url string) string {
	resp, err := callClient.Get(url + "/api/root")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var r struct {
		OK        bool   `json:"ok"`
		Kind      string `json:"kind"`
		Connected bool   `json:"connected"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil || !r.OK || !r.Connected {
		return ""
	}
	return r.Kind
}

// healthy reports whether relay answers /api/health ok.
func healthy(url string) bool {
	resp, err := callClient.Get(url + "/api/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tempFiles lists the write temporary files (.vbx-*.tmp) anywhere under dir.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".vbx-") && strings.HasSuffix(d.Name(), ".tmp") {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// ageTemps makes every temporary file under dir look older than fsroot.StaleTempAge (ten
// minutes), as the files of a writer killed long ago do, so the next start's sweep takes them.
func ageTemps(t testing.TB, dir string) int {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	n := 0
	for _, p := range tempFiles(t, dir) {
		if err := os.Chtimes(p, old, old); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		n++
	}
	return n
}
