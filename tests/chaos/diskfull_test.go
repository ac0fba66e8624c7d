//go:build linux

package chaos

import (
	"fmt"
	"os"
	"path/filepath"
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
	was = checkFiles(t, dir, 1, was, outs)
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
	_ = was
	_ = fmt.Sprint
}
