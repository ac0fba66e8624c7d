//go:build unix

package extensionhost_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestAFIFOInADescriptorsPlaceHoldsNoReload: a FIFO named like a descriptor in the state
// directory is reported, not read: the reload does not wait for a writer that never comes.
func TestAFIFOInADescriptorsPlaceHoldsNoReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "stuck.json"), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	loaded, problems, err := extensionhost.NewAdmissions(dir, nil).Load()
	if err != nil || len(loaded) != 0 || len(problems) != 1 || problems[0].ID != "stuck" || problems[0].Rule != refusal.FileError {
		t.Fatalf("Load = %v %+v %v", loaded, problems, err)
	}
}
