//go:build linux

package chaos

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// workspaceDisk is the size of the machine's folder's disk in the full-workspace scenario: room
// for a few of the large files and their history.
const workspaceDisk = "24m"

// TestAFullWorkspaceDiskRefusesByNameAndResumes: a machine's folder on a small disk (a real
// tmpfs), filled while large writes run: each write is answered ok or refused by name, each file
// is the old or the new version (none emptied or torn), no temporary file is left, and once the
// space is back the same writes are served.
func TestAFullWorkspaceDiskRefusesByNameAndResumes(t *testing.T) {
	dir := smallDisk(t, workspaceDisk)
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	harness.StartMachine(t, relay, "box", dir)
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
	was := make([]string, writers)
	for i := range writers / 2 {
		if o := call(relay.URL, token, "write-file", map[string]string{"path": fileName(i), "content": content(0, i)}); !o.answer.OK {
			t.Fatalf("a first write answered %s", o)
		}
		was[i] = content(0, i)
	}
	free := fill(t, dir, 64<<20)
	outs := make([]outcome, writers)
	rules := map[string]int{}
	for i := range writers {
		outs[i] = call(relay.URL, token, "write-file", map[string]string{"path": fileName(i), "content": content(1, i)})
		if !outs[i].answered() {
			t.Fatalf("write %d on the full disk had no answer: %s", i, outs[i])
		}
		if !outs[i].answer.OK {
			rules[outs[i].answer.Refused]++
		}
	}
	t.Logf("on the full disk: %d of %d writes ok, refusals %v", okCount(outs), writers, rules)
	if len(rules) == 0 {
		t.Fatal("every write on the full disk was answered ok")
	}
	for rule := range rules {
		if rule != "workspace-disk-full" {
			t.Errorf("a write on the full disk was refused %q, want workspace-disk-full: %v", rule, outs)
		}
	}
	checkFiles(t, dir, 1, was, nil, outs)
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Fatalf("the refused writes left temporary files: %v", left)
	}
	free()
	for i := range writers {
		if o := call(relay.URL, token, "write-file", map[string]string{"path": fileName(i), "content": content(2, i)}); !o.answer.OK {
			t.Fatalf("with space again write %d answered %s", i, o)
		}
	}
	for i := range writers {
		if b, _ := os.ReadFile(filepath.Join(dir, fileName(i))); string(b) != content(2, i) {
			t.Fatalf("with space again file %d holds %d bytes", i, len(b))
		}
	}
}

// stateDisk is the size of the relay's state disk in the full-state scenario: room for its
// files and a few admissions.
const stateDisk = "1m"

// TestAFullStateDiskSurvivesAKillAndResumes: the relay's state directory on a small disk (a real
// tmpfs), filled: admissions and revocations are refused 507 state-disk-full and change nothing;
// the relay killed -9 while the disk is full starts again on it, its ledger whole and what was
// admitted still admitted; once space returns the same requests are served and hold across
// another kill.
func TestAFullStateDiskSurvivesAKillAndResumes(t *testing.T) {
	state := smallDisk(t, stateDisk)
	relay := harness.StartRelay(t, "VOICEBOX_STATE_DIR="+state)
	token := relay.HostToken(t)
	for _, id := range []string{"notes-reader", "text-tools"} {
		if status, m, err := post(relay.URL, "", "/api/extensions/stage-catalogue", `{"id":"`+id+`"}`); err != nil || m["ok"] != true {
			t.Fatalf("staging %s answered %d %v %v", id, status, m, err)
		}
	}
	admit := func(id string) (int, map[string]any) {
		status, m, err := post(relay.URL, token, "/api/extensions/admit", `{"id":"`+id+`","decision":"admit","confirm":true}`)
		if err != nil {
			t.Fatalf("admitting %s: %v", id, err)
		}
		return status, m
	}
	if status, m := admit("notes-reader"); m["ok"] != true {
		t.Fatalf("the first admission answered %d %v", status, m)
	}
	free := fill(t, state, 16<<20)
	// On the full disk each change is refused 507 state-disk-full, or served when its record
	// still fits the room the file's last block has (an append of a line can): either way the
	// relay's answer is the truth after a kill.
	want := []string{"notes-reader"}
	refused := 0
	judge := func(what string, status int, m map[string]any, err error) bool {
		t.Helper()
		switch {
		case err != nil:
			t.Fatalf("%s on the full state disk: %v", what, err)
		case m["ok"] == true:
			return true
		case status != http.StatusInsufficientStorage || m["refused"] != "state-disk-full":
			t.Fatalf("%s on the full state disk answered %d %v; want ok or 507 state-disk-full", what, status, m)
		}
		refused++
		return false
	}
	status, m := admit("text-tools")
	if judge("an admission", status, m, nil) {
		want = []string{"notes-reader", "text-tools"}
	}
	status, m, err := post(relay.URL, token, "/api/extensions/revoke", `{"id":"notes-reader"}`)
	if judge("a revocation", status, m, err) {
		want = slices.DeleteFunc(want, func(id string) bool { return id == "notes-reader" })
	}
	if refused == 0 {
		t.Fatal("nothing was refused on the full state disk")
	}
	if ids := admitted(t, relay.URL, token); !slices.Equal(ids, want) {
		t.Fatalf("on the full disk the relay runs %v; its answers said %v", ids, want)
	}
	relay.Kill(t)
	relay = harness.StartRelay(t, "VOICEBOX_STATE_DIR="+state)
	wholeLines(t, filepath.Join(state, ".ledger.jsonl"))
	if ids := admitted(t, relay.URL, token); !slices.Equal(ids, want) {
		t.Fatalf("started again on the full disk the relay runs %v; its answers said %v", ids, want)
	}
	free()
	if !slices.Contains(want, "text-tools") {
		if status, m := admit("text-tools"); m["ok"] != true {
			t.Fatalf("with space again the admission answered %d %v", status, m)
		}
	}
	if slices.Contains(want, "notes-reader") {
		if status, m, err := post(relay.URL, token, "/api/extensions/revoke", `{"id":"notes-reader"}`); err != nil || m["revoked"] != true {
			t.Fatalf("with space again the revocation answered %d %v %v", status, m, err)
		}
	}
	relay.Kill(t)
	relay = harness.StartRelay(t, "VOICEBOX_STATE_DIR="+state)
	wholeLines(t, filepath.Join(state, ".ledger.jsonl"))
	if ids := admitted(t, relay.URL, token); !slices.Equal(ids, []string{"text-tools"}) {
		t.Fatalf("after the kill the relay runs %v; want text-tools alone", ids)
	}
	if left := tempFiles(t, state); len(left) != 0 {
		t.Fatalf("the state directory holds temporary files: %v", left)
	}
}
