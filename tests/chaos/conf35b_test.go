//go:build !js

package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestKilledWorkspaceRelayLosesNoFile: a relay serving its own folder (VOICEBOX_WORKSPACE, the
// workspace door) killed -9 in the middle of large writes to that folder, round after round:
// every call ends once (an answer, or its connection cut with the relay), every file is the old
// or the new version (never torn, emptied or glued), the relay started again on the same folder
// sweeps the temporary files the killed writes left (said in its log) and serves writes again,
// and the undo history is whole.
func TestKilledWorkspaceRelayLosesNoFile(t *testing.T) { killWorkspaceRounds(t, chaosRounds) }

// BenchmarkSoakKilledWorkspaceRelay is TestKilledWorkspaceRelayLosesNoFile for soakRounds rounds.
func BenchmarkSoakKilledWorkspaceRelay(b *testing.B) {
	for range b.N {
		killWorkspaceRounds(b, soakRounds)
	}
}

func killWorkspaceRounds(t testing.TB, rounds int) {
	dir := t.TempDir()
	port := harness.RestartablePort(t)
	relay := harness.StartRelay(t, "PORT="+port, "VOICEBOX_WORKSPACE="+dir)
	state := relay.StateDir
	token := relay.HostToken(t)
	was := make([]string, writers)
	aged := 0
	for round := 1; round <= rounds; round++ {
		waitFor(t, "the workspace to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
		if aged > 0 && !strings.Contains(relay.Stderr(), "removed temporary files of writes that never finished") {
			t.Fatalf("round %d: the restarted relay did not sweep the workspace's temporary files; stderr: %s", round, relay.Stderr())
		}
		if left := tempFiles(t, dir); len(left) != 0 {
			t.Fatalf("round %d: after the start's sweep these temporary files are left: %v", round, left)
		}
		dead := relay
		outs := writeRound(relay.URL, token, round, func() { dead.Kill(t) })
		cut := 0
		for i, o := range outs {
			switch {
			case o.err != nil:
				cut++
			case !o.answered():
				t.Fatalf("round %d: write %d was answered with no answer: %s", round, i, o)
			}
		}
		// The writes ran in the killed process: none can land later, so each file is what it
		// was or the round's version, and the round's wherever the write was answered ok.
		was = checkFiles(t, dir, round, was, nil, outs)
		aged = ageTemps(t, dir)
		t.Logf("round %d: %d of %d writes answered ok, %d cut with the relay; %d temporary files left", round, okCount(outs), writers, cut, aged)
		if aged == 0 {
			// Nothing to sweep: make one, as a kill before the rename leaves.
			os.WriteFile(filepath.Join(dir, "big", ".vbx-00000000000000bb.tmp"), []byte("torn"), 0o644)
			aged = ageTemps(t, dir)
		}
		relay = harness.StartRelay(t, "PORT="+port, "VOICEBOX_STATE_DIR="+state, "VOICEBOX_WORKSPACE="+dir)
	}
	waitFor(t, "the workspace to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Fatalf("after the last restart these temporary files are left: %v", left)
	}
	if o := call(relay.URL, token, "write-file", map[string]string{"path": fileName(0), "content": "after"}); !o.answer.OK {
		t.Fatalf("after the kills a write answered %s", o)
	}
	if o := call(relay.URL, token, "undo-last", map[string]string{}); !o.answer.OK {
		t.Fatalf("after the kills undo-last answered %s (the history is not consistent)", o)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, fileName(0))); !bytes.Equal(b, []byte(was[0])) {
		t.Fatalf("undo-last left file 0 with %d bytes, want the %d it held before", len(b), len(was[0]))
	}
}
