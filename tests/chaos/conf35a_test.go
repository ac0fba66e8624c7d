//go:build !js

package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// markupFile is the content of markup file i in round r: 60,000 '<' (six times the argument
// bound once an encoder escapes them, within it as sent) and the round's mark.
func markupFile(r, i int) string {
	return strings.Repeat("<", 60000) + fmt.Sprintf("&round %d file %d>", r, i)
}

// markupName is the path of markup file i.
func markupName(i int) string { return fmt.Sprintf("markup/page-%d.html", i) }

// TestMarkupActionsSurviveTheirMachineEnvKilled: typed actions (POST /api/turn {action}) write
// files of markup, each within the argument bound only as sent, while the machine environment
// that holds the root is killed -9 with the writes in flight, round after round. Every turn ends
// with one answer (ok, or a named refusal such as machine-closed: never the size refusal an
// escaped copy would earn), every file is the old or the new version, and the restarted
// environment serves the next markup action whole.
func TestMarkupActionsSurviveTheirMachineEnvKilled(t *testing.T) {
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	dir := t.TempDir()
	was := make([]string, writers)
	for round := 1; round <= chaosRounds; round++ {
		env := harness.StartMachine(t, relay, fmt.Sprintf("markup-%d", round), dir)
		waitFor(t, "the machine to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
		type turn struct {
			m   map[string]any
			err error
		}
		turns := make([]turn, writers)
		first := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, m, err := post(relay.URL, token, "/api/turn", `{"action":{"verb":"write_file","name":"`+markupName(i)+`","content":"`+markupFile(round, i)+`"}}`)
				turns[i] = turn{m, err}
				once.Do(func() { close(first) })
			}()
		}
		<-first
		env.Kill(t)
		wg.Wait()
		oks := 0
		for i, tr := range turns {
			switch {
			case tr.err != nil:
				t.Fatalf("round %d: turn %d ended without an answer: %v", round, i, tr.err)
			case tr.m["ok"] == true:
				oks++
			case tr.m["refused"] == "invalid-tool-arguments" || tr.m["refused"] == nil || tr.m["why"] == "":
				t.Fatalf("round %d: turn %d answered %v %v", round, i, tr.m["refused"], tr.m["why"])
			}
		}
		for i := range writers {
			b, err := os.ReadFile(filepath.Join(dir, markupName(i)))
			got := string(b)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			switch {
			case got == markupFile(round, i):
			case got == was[i] && turns[i].m["ok"] != true:
			default:
				t.Fatalf("round %d: file %d is neither old nor new (%d bytes), its turn answered %v", round, i, len(got), turns[i].m["ok"])
			}
			was[i] = got
		}
		t.Logf("round %d: %d of %d markup turns answered ok before the kill", round, oks, writers)
	}
	harness.StartMachine(t, relay, "markup-last", dir)
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(relay.URL) == "machine" })
	_, m, err := post(relay.URL, token, "/api/turn", `{"action":{"verb":"write_file","name":"`+markupName(0)+`","content":"`+markupFile(99, 0)+`"}}`)
	if err != nil || m["ok"] != true {
		t.Fatalf("after the kills a markup action answered %v %v", m, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, markupName(0))); string(b) != markupFile(99, 0) {
		t.Fatalf("the last markup file holds %d bytes", len(b))
	}
}
