//go:build unix && !js

package fsroot_test

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot/fsroottest"
)

// TestOSFifoDoesNotHang reads a FIFO planted in the folder: refused at once, not blocked on.
func TestOSFifoDoesNotHang(t *testing.T) {
	t.Parallel()
	root := newOSRoot(t).(*fsroot.OSRoot)
	if err := syscall.Mkfifo(filepath.Join(root.Name(), "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	_, err := root.ReadFile(t.Context(), "pipe")
	fsroottest.WantErr(t, "ReadFile", err, "pipe", fs.ErrInvalid)
	if entries, _ := root.ReadDir(t.Context(), ""); len(entries) != 0 {
		t.Errorf("ReadDir lists %+v; want the FIFO left out", entries)
	}
}
