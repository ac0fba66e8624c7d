package executor_test

import (
	"context"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// fullRoot is a root whose writes find no room, as a full disk's do.
type fullRoot struct{ fsroot.Root }

func (r fullRoot) WriteFile(ctx context.Context, name string, data []byte) error {
	return fsroot.Err("write", name, fsroot.ErrNoSpace)
}

// TestAFullWorkspaceIsRefusedByName: a write that finds no room, in the file or in the undo
// history, is refused workspace-disk-full, and the file keeps what it held.
func TestAFullWorkspaceIsRefusedByName(t *testing.T) {
	t.Parallel()
	mem := fsroot.NewMemory()
	write(t, mem, "notes.md", "kept")
	for _, withHistory := range []bool{false, true} {
		opts := executor.Options{}
		if withHistory {
			meta, err := mem.Meta(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			opts.History = executor.NewHistory(fullRoot{meta}, executor.HistoryOptions{})
		}
		e := executor.New(fullRoot{mem}, opts)
		_, err := run(t, e, "write-file", `{"path":"notes.md","content":"new"}`)
		if r, ok := refusal.As(err); !ok || r.Rule != refusal.WorkspaceDiskFull || r.Why == "" {
			t.Fatalf("history %v: a write with no room answered %v; want workspace-disk-full", withHistory, err)
		}
		if b, _ := mem.ReadFile(t.Context(), "notes.md"); string(b) != "kept" {
			t.Fatalf("history %v: notes.md holds %q", withHistory, b)
		}
	}
}
