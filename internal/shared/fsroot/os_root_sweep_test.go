//go:build unix && !js

package fsroot_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// abandonWrite starts a write of name in r and leaves it as a killed process would: n bytes in
// its temporary file, never committed. It returns the temporary file's host path.
func abandonWrite(t *testing.T, r fsroot.Root, host, name string, n int) string {
	t.Helper()
	dir := filepath.Join(host, filepath.Dir(name))
	before, _ := os.ReadDir(dir)
	w, err := r.Create(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadDir(dir)
	for _, e := range after {
		if !slices.ContainsFunc(before, func(b os.DirEntry) bool { return b.Name() == e.Name() }) {
			return filepath.Join(dir, e.Name())
		}
	}
	t.Fatalf("the write of %s made no temporary file", name)
	return ""
}

func age(t *testing.T, p string, by time.Duration) {
	t.Helper()
	old := time.Now().Add(-by)
	if err := os.Chtimes(p, old, old); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// TestSweepTempsRemovesOnlyStaleTempFiles: the temporary files of writes that never ended and
// have not changed for StaleTempAge are removed anywhere in the tree (the metadata folder too);
// a live write's, look-alike names, links and folders stay.
func TestSweepTempsRemovesOnlyStaleTempFiles(t *testing.T) {
	t.Parallel()
	r := newOSRoot(t).(*fsroot.OSRoot)
	host := r.Name()
	if err := r.MkdirAll(t.Context(), "notes/deep"); err != nil {
		t.Fatal(err)
	}
	meta, err := r.Meta(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	stale := []string{
		abandonWrite(t, r, host, "a.txt", 100),
		abandonWrite(t, r, host, "notes/deep/b.txt", 2000),
		abandonWrite(t, meta, filepath.Join(host, fsroot.MetaDir), "c.json", 30),
	}
	live := abandonWrite(t, r, host, "notes/live.txt", 7)
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("keep"), 0o644)
	keep := []string{live, outside}
	for _, name := range []string{".vbx-0123456789abcdef.tmp.keep", ".vbx-0123456789ABCDEF.tmp", "vbx-0123456789abcdef.tmp",
		".vbx-0123456789abcde.tmp", ".vbx-0123456789abcdeg.tmp", "notes/.vbx-0123456789abcdef.txt"} {
		p := filepath.Join(host, name)
		os.WriteFile(p, []byte("x"), 0o644)
		keep = append(keep, p)
	}
	link := filepath.Join(host, "notes", ".vbx-00000000000000ff.tmp")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(host, ".vbx-00000000000000ee.tmp")
	os.Mkdir(folder, 0o755)
	keep = append(keep, link, folder)
	for _, p := range append(slices.Clone(stale), keep[1:]...) {
		age(t, p, fsroot.StaleTempAge+time.Minute)
	}

	sw, err := r.SweepTemps(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if sw != (fsroot.Swept{Files: 3, Bytes: 2130}) {
		t.Fatalf("swept %+v; want the 3 stale temporary files, 2130 bytes", sw)
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", strings.TrimPrefix(p, host), err)
		}
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if sw, _ := r.SweepTemps(time.Now()); sw.Files != 0 {
		t.Fatalf("a second sweep removed %+v", sw)
	}
}
