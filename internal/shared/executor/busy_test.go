package executor_test

import (
	"context"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// busyRoot is a root whose changes find every file held locked elsewhere, as a browser's other
// tab keeping a sync access handle open (and not letting go when asked) makes them.
type busyRoot struct{ fsroot.Root }

func (r busyRoot) WriteFile(ctx context.Context, name string, data []byte) error {
	return fsroot.Err("write", name, fsroot.ErrBusy)
}

func (r busyRoot) Remove(ctx context.Context, name string) error {
	return fsroot.Err("remove", name, fsroot.ErrBusy)
}

// TestAFileHeldElsewhereIsRefusedByName: a write or a delete of a file another context holds
// is refused file-busy, by the file's name, and the file keeps what it held.
func TestAFileHeldElsewhereIsRefusedByName(t *testing.T) {
	t.Parallel()
	mem := fsroot.NewMemory()
	write(t, mem, "notes.md", "kept")
	e := executor.New(busyRoot{mem}, executor.Options{})
	for _, c := range []struct{ tool, args string }{
		{"write-file", `{"path":"notes.md","content":"new"}`},
		{"delete-file", `{"path":"notes.md"}`},
	} {
		_, err := run(t, e, c.tool, c.args)
		if r, ok := refusal.As(err); !ok || r.Rule != refusal.FileBusy || r.Why == "" {
			t.Fatalf("%s of a file held elsewhere answered %v; want file-busy", c.tool, err)
		}
	}
	if b, _ := mem.ReadFile(t.Context(), "notes.md"); string(b) != "kept" {
		t.Fatalf("notes.md holds %q", b)
	}
}
