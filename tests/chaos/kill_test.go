//go:build !js

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// writers is how many writes a round has in flight when the process under them is killed.
const writers = 8

// largeFile is the size of each file a round writes: large, so a kill lands inside writes, and
// under the executor's one-call write bound (executor.MaxWriteBytes, 1 MiB).
const largeFile = 900 << 10

// content is the content of file i in round r: a header naming both, then filler, so any two
// versions differ and a torn or glued file matches none.
func content(r, i int) string { return sized(r, i, largeFile) }

// sized is content of size bytes.
func sized(r, i, size int) string {
	head := fmt.Sprintf("round %d, file %d\n", r, i)
	unit := fmt.Sprintf("%d.%d ", r, i)
	return head + strings.Repeat(unit, size/len(unit)+1)[:size-len(head)]
}

// fileName is the path of file i in the workspace.
func fileName(i int) string { return fmt.Sprintf("big/file-%d.txt", i) }

// writeRound starts the round's writes through url, calls kill once the first of them has
// answered (so the others are in flight), and returns how each ended.
func writeRound(url, token string, round int, kill func()) []outcome {
	outs := make([]outcome, writers)
	first := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = call(url, token, "write-file", map[string]string{"path": fileName(i), "content": content(round, i)})
			once.Do(func() { close(first) })
		}()
	}
	<-first
	kill()
	wg.Wait()
	return outs
}

// checkFiles fails the test unless every file in dir holds either what it held before the
// round (was[i], "" for none), or the previous round's version of it when that round's write was
// cut with its relay (late[i]: a write already under way when its connection dropped may land
// after the round was read; it is never overtaken by a later write of the file, which waits for
// it), or the round's new content, and the new one wherever the write was answered ok; it
// returns what each holds now.
func checkFiles(t testing.TB, dir string, round int, was []string, late []bool, outs []outcome) []string {
	t.Helper()
	now := make([]string, writers)
	for i := range writers {
		b, err := os.ReadFile(filepath.Join(dir, fileName(i)))
		got := string(b)
		if err != nil {
			if !os.IsNotExist(err) || was[i] != "" {
				t.Fatalf("round %d: file %d: %v (it held %d bytes before)", round, i, err, len(was[i]))
			}
			got = ""
		}
		switch {
		case got == content(round, i):
		case got == was[i] && outs[i].answer.OK:
			t.Fatalf("round %d: the write of file %d was answered ok (%s) but the file is the old one", round, i, outs[i])
		case got == was[i]:
		case late != nil && late[i] && got == content(round-1, i):
		default:
			t.Fatalf("round %d: file %d is neither old nor new: %d bytes beginning %q", round, i, len(got), got[:min(len(got), 40)])
		}
		now[i] = got
	}
	return now
}

// TestKilledMachineEnvLosesNoFile: `relay env` killed -9 in the middle of large writes to its
// folder, round after round: every file is the old or the new version (never torn, emptied or
// lost), every call ends with exactly one answer (ok, or a named refusal such as
// machine-closed), the temporary files the killed writes left are swept at the next start
// (SweepTemps, said in its log), and the restarted environment serves writes again.
func TestKilledMachineEnvLosesNoFile(t *testing.T) { killMachineEnvRounds(t, chaosRounds) }

// BenchmarkSoakKilledMachineEnv is TestKilledMachineEnvLosesNoFile for soakRounds rounds.
func BenchmarkSoakKilledMachineEnv(b *testing.B) {
	for range b.N {
		killMachineEnvRounds(b, soakRounds)
	}
}

func killMachineEnvRounds(t testing.TB, rounds int) {
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	dir := t.TempDir()
	was := make([]string, writers)
	for round := 1; round <= rounds; round++ {
		env := harness.StartMachine(t, relay, fmt.Sprintf("box-%d", round), dir)
		waitFor(t, "the machine to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
		if round > 1 && !strings.Contains(env.Stderr(), "removed temporary files of writes that never finished") {
			// Aged below: the previous round's kill always leaves some (checked there).
			t.Fatalf("round %d: the restarted environment did not sweep the temporary files; stderr: %s", round, env.Stderr())
		}
		if left := tempFiles(t, dir); len(left) != 0 {
			t.Fatalf("round %d: after the start's sweep these temporary files are left: %v", round, left)
		}
		outs := writeRound(relay.URL, token, round, func() { env.Kill(t) })
		for i, o := range outs {
			if !o.answered() {
				t.Fatalf("round %d: write %d ended without an answer: %s", round, i, o)
			}
		}
		was = checkFiles(t, dir, round, was, nil, outs)
		aged := ageTemps(t, dir)
		t.Logf("round %d: %d of %d writes answered ok before the kill; %d temporary files left", round, okCount(outs), writers, aged)
		if aged == 0 && round < rounds {
			// Nothing to sweep: make one, as a kill before the rename leaves.
			os.WriteFile(filepath.Join(dir, "big", ".vbx-00000000000000aa.tmp"), []byte("torn"), 0o644)
			ageTemps(t, dir)
		}
	}
	env := harness.StartMachine(t, relay, "box-last", dir)
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
	if o := call(relay.URL, token, "write-file", map[string]string{"path": fileName(0), "content": "after"}); !o.answer.OK {
		t.Fatalf("after the kills a write answered %s", o)
	}
	if o := call(relay.URL, token, "undo-last", map[string]string{}); !o.answer.OK {
		t.Fatalf("after the kills undo-last answered %s (the history is not consistent)", o)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, fileName(0))); !bytes.Equal(b, []byte(was[0])) {
		t.Fatalf("undo-last left file 0 with %d bytes, want the %d it held before", len(b), len(was[0]))
	}
	_ = env
}

// okCount counts the outcomes answered ok.
func okCount(outs []outcome) int {
	n := 0
	for _, o := range outs {
		if o.answer.OK {
			n++
		}
	}
	return n
}

// TestKilledRelayLosesNoFile: the relay killed -9 in the middle of large writes it routes to a
// machine's folder, round after round: every call ends once (an answer, or its connection cut
// with the relay), every file is the old or the new version, the relay started again on the
// same port and state is rejoined by the environment by itself, leaves no temporary file in its
// state, and serves writes again.
func TestKilledRelayLosesNoFile(t *testing.T) { killRelayRounds(t, chaosRounds) }

// BenchmarkSoakKilledRelay is TestKilledRelayLosesNoFile for soakRounds rounds.
func BenchmarkSoakKilledRelay(b *testing.B) {
	for range b.N {
		killRelayRounds(b, soakRounds)
	}
}

func killRelayRounds(t testing.TB, rounds int) {
	port := harness.RestartablePort(t)
	relay := harness.StartRelay(t, "PORT="+port)
	state := relay.StateDir
	token := relay.HostToken(t)
	dir := t.TempDir()
	harness.StartMachine(t, relay, "box", dir)
	was := make([]string, writers)
	late := make([]bool, writers)
	for round := 1; round <= rounds; round++ {
		waitFor(t, "the machine to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
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
		t.Logf("round %d: %d of %d writes answered ok, %d cut with the relay", round, okCount(outs), writers, cut)
		// The environment may still be finishing a write the dead relay handed it (see late);
		// those still waiting their turn were ended with the connection and change nothing.
		relay = harness.StartRelay(t, "PORT="+port, "VOICEBOX_STATE_DIR="+state)
		waitFor(t, "the machine to rejoin the restarted relay", func() bool { return rootKind(relay.URL) == "machine" })
		if o := call(relay.URL, token, "write-file", map[string]string{"path": "after.txt", "content": fmt.Sprint(round)}); !o.answer.OK {
			t.Fatalf("round %d: after the restart a write answered %s", round, o)
		}
		was = checkFiles(t, dir, round, was, late, outs)
		for i, o := range outs {
			late[i] = o.err != nil
		}
		if left := tempFiles(t, state); len(left) != 0 {
			t.Fatalf("round %d: the relay's state holds temporary files: %v", round, left)
		}
	}
	if o := call(relay.URL, token, "write-file", map[string]string{"path": fileName(0), "content": "after"}); !o.answer.OK {
		t.Fatalf("after the kills a write answered %s", o)
	}
}

// rules counts the outcomes refused, by rule.
func rules(outs []outcome) map[string]int {
	m := map[string]int{}
	for _, o := range outs {
		if o.err == nil && !o.answer.OK {
			m[o.answer.Refused]++
		}
	}
	return m
}
