//go:build linux

package chaos

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// smallDisk mounts a tmpfs of size (mount's size= syntax) on a new folder and unmounts it when
// the test ends (after the processes on it have stopped: cleanups run last first). A real full
// disk needs root to mount, as CI runs; elsewhere the scenario is skipped and says why.
func smallDisk(t testing.TB, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("the full disk is a real tmpfs, and mounting one needs root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes a file in dir until the disk refuses (ENOSPC), bounded by limit bytes, and returns
// a func that frees the space.
func fill(t testing.TB, dir string, limit int64) (free func()) {
	t.Helper()
	p := filepath.Join(dir, ".filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for written := int64(0); ; written += int64(len(page)) {
		if written > limit {
			t.Fatalf("the disk never filled in %d bytes", limit)
		}
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return func() { os.Remove(p) }
		}
	}
}
