//go:build unix && !js

package executor_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestAFifoIsNotARegularFile: reading or editing a FIFO planted in the folder is refused by its
// own rule at once (it was exec-threw), and the executor serves the next call.
func TestAFifoIsNotARegularFile(t *testing.T) {
	t.Parallel()
	root := openOS(t)
	if err := syscall.Mkfifo(filepath.Join(root.Name(), "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	e := executor.New(root, executor.Options{})
	for _, c := range []struct{ tool, args string }{
		{"read-file", `{"path":"pipe"}`},
		{"edit-file", `{"path":"pipe","oldText":"a","newText":"b"}`},
	} {
		if _, err := run(t, e, c.tool, c.args); refusal.RuleOf(err) != refusal.NotARegularFile {
			t.Errorf("%s of a FIFO: %v, want not-a-regular-file", c.tool, err)
		}
	}
	mustRun(t, e, "write-file", `{"path":"next.txt","content":"served"}`)
}
