//go:build !js

package fsroot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot/fsroottest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// newOSRoot returns an OS root over base/root, with base/outside beside it for escape cases.
func newOSRoot(t *testing.T) fsroot.Root {
	base := t.TempDir()
	dir := filepath.Join(base, "root")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := fsroot.OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestOSConformance(t *testing.T) {
	t.Parallel()
	fsroottest.Run(t, newOSRoot, fsroottest.Options{
		FailWrites: func(t *testing.T, root fsroot.Root) func() {
			r := root.(*fsroot.OSRoot)
			fsroot.SetOSFailWrites(r, func(name string, written int64) error {
				if written > 1<<10 {
					return errors.New("injected: no space left on device")
				}
				return nil
			})
			return func() { fsroot.SetOSFailWrites(r, nil) }
		},
		Escapes: func(t *testing.T, root fsroot.Root) func(t *testing.T) map[string]string {
			dir := root.(*fsroot.OSRoot).Name()
			outside := filepath.Join(filepath.Dir(dir), "outside")
			must(t, os.Mkdir(outside, 0o755))
			must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o644))
			must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "to-file")))
			must(t, os.Symlink(outside, filepath.Join(dir, "to-dir")))
			must(t, os.Symlink(filepath.Join("..", "outside"), filepath.Join(dir, "rel-dir")))
			return func(t *testing.T) map[string]string {
				des, err := os.ReadDir(outside)
				must(t, err)
				got := map[string]string{}
				for _, de := range des {
					b, err := os.ReadFile(filepath.Join(outside, de.Name()))
					must(t, err)
					got[de.Name()] = string(b)
				}
				return got
			}
		},
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOSLeavesNoTempFiles looks at the disk itself, which ReadDir cannot show: failed, aborted
// and committed writes all leave only the target behind.
func TestOSLeavesNoTempFiles(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := newOSRoot(t).(*fsroot.OSRoot)
	must(t, root.WriteFile(ctx, "f", []byte("old")))
	fsroot.SetOSFailWrites(root, func(string, int64) error { return errors.New("injected") })
	if err := root.WriteFile(ctx, "f", make([]byte, 4096)); err == nil {
		t.Fatal("the injected failure did not fail the write")
	}
	fsroot.SetOSFailWrites(root, nil)
	w, err := root.Create(ctx, "f")
	must(t, err)
	w.Write([]byte("aborted"))
	must(t, w.Abort())
	must(t, root.WriteFile(ctx, "g", []byte("new")))
	des, err := os.ReadDir(root.Name())
	must(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if len(names) != 2 || names[0] != "f" || names[1] != "g" {
		t.Errorf("the directory holds %q; want only f and g", names)
	}
	if b, _ := os.ReadFile(filepath.Join(root.Name(), "f")); string(b) != "old" {
		t.Errorf("f = %q; want old", b)
	}
}

// TestOSKeepsMode checks that a replace keeps the file's permission bits.
func TestOSKeepsMode(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := newOSRoot(t).(*fsroot.OSRoot)
	p := filepath.Join(root.Name(), "script.sh")
	must(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o700))
	must(t, os.Chmod(p, 0o700))
	must(t, root.WriteFile(ctx, "script.sh", []byte("#!/bin/sh\necho\n")))
	st, err := os.Stat(p)
	must(t, err)
	if st.Mode().Perm() != 0o700 {
		t.Errorf("mode after replace = %v; want 0700", st.Mode().Perm())
	}
}

// TestOSInsideLinks follows links that stay inside the root.
func TestOSInsideLinks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := newOSRoot(t).(*fsroot.OSRoot)
	must(t, root.MkdirAll(ctx, "real"))
	must(t, root.WriteFile(ctx, "real/f", []byte("inside")))
	must(t, os.Symlink("real", filepath.Join(root.Name(), "alias")))
	b, err := root.ReadFile(ctx, "alias/f")
	must(t, err)
	if string(b) != "inside" {
		t.Errorf("alias/f = %q", b)
	}
	entries, err := root.ReadDir(ctx, "")
	must(t, err)
	if len(entries) != 2 || entries[0].Name != "alias" || !entries[0].Dir {
		t.Errorf("ReadDir = %+v; want alias listed as the directory it leads to", entries)
	}
}

// TestOSLinksToDotNames: a link the person made to a dot name inside the root (a file, a folder,
// through a chain or a relative "..") carries no tool past the dot-name rule, for any operation;
// replacing or removing such a link acts on the link, as for every link.
func TestOSLinksToDotNames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := newOSRoot(t).(*fsroot.OSRoot)
	dir := root.Name()
	must(t, os.WriteFile(filepath.Join(dir, ".env"), []byte("SECRET=1"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink(".env", filepath.Join(dir, "env.txt")))
	must(t, os.Symlink(".git", filepath.Join(dir, "repo")))
	must(t, os.Symlink("env.txt", filepath.Join(dir, "chain.txt")))
	must(t, os.Symlink("../.git/config", filepath.Join(dir, "sub", "cfg")))
	dotRefused := func(what string, err error) {
		t.Helper()
		if refusal.RuleOf(err) != refusal.DotfileRefused {
			t.Errorf("%s: %v; want dotfile-refused", what, err)
		}
	}
	for _, name := range []string{"env.txt", "chain.txt", "repo/config", "sub/cfg"} {
		_, err := root.ReadFile(ctx, name)
		dotRefused("read "+name, err)
		_, err = root.Stat(ctx, name)
		dotRefused("stat "+name, err)
	}
	_, err := root.ReadDir(ctx, "repo")
	dotRefused("readdir repo", err)
	dotRefused("write repo/hook", root.WriteFile(ctx, "repo/hook", []byte("x")))
	dotRefused("mkdir repo/x", root.MkdirAll(ctx, "repo/x"))
	entries, err := root.ReadDir(ctx, "")
	must(t, err)
	for _, e := range entries {
		if e.Name != "sub" {
			t.Errorf("ReadDir lists %q, a link to a dot name", e.Name)
		}
	}
	// The link itself may be replaced or removed; what it pointed to is untouched.
	must(t, root.WriteFile(ctx, "env.txt", []byte("plain")))
	must(t, root.Remove(ctx, "chain.txt"))
	if b, err := os.ReadFile(filepath.Join(dir, ".env")); err != nil || string(b) != "SECRET=1" {
		t.Errorf(".env is now %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "hook")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".git/hook exists: %v", err)
	}
}

// TestOSLookalikeNamesStoredBeforeStayReachable: a file another program stored under a name
// Voicebox refuses to create (internal/shared/names) is still listed, read, moved to a clean name and
// removed, so a person can clean it up; only writing to it is refused.
func TestOSLookalikeNamesStoredBeforeStayReachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"\u202egnp.exe", "\u200bnotes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := fsroot.OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := t.Context()
	entries, err := r.ReadDir(ctx, "")
	if err != nil || len(entries) != 2 {
		t.Fatalf("ReadDir = %v, %v; want both files listed", entries, err)
	}
	if b, err := r.ReadFile(ctx, "\u202egnp.exe"); err != nil || string(b) != "old" {
		t.Fatalf("ReadFile = %q, %v; want the content", b, err)
	}
	fsroottest.WantRefused(t, "WriteFile", r.WriteFile(ctx, "\u202egnp.exe", []byte("new")), "\u202egnp.exe", refusal.InvalidName)
	if err := r.Rename(ctx, "\u202egnp.exe", "gnp.exe"); err != nil {
		t.Fatalf("Rename to a clean name: %v", err)
	}
	if err := r.Remove(ctx, "\u200bnotes.txt"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if entries, err = r.ReadDir(ctx, ""); err != nil || len(entries) != 1 || entries[0].Name != "gnp.exe" {
		t.Fatalf("ReadDir after the clean-up = %v, %v; want gnp.exe alone", entries, err)
	}
}

// TestOSRangeReaderSeesAChangeInPlace: another program writing the open file in place (no
// rename, so the reader's open file is the one changed) makes the reader's next piece
// ErrChanged, whether the file shrank, grew or kept its length.
func TestOSRangeReaderSeesAChangeInPlace(t *testing.T) {
	ctx := context.Background()
	r := newOSRoot(t).(*fsroot.OSRoot)
	host := filepath.Join(r.Name(), "f")
	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"truncated", func() error { return os.Truncate(host, 100) }},
		{"appended", func() error {
			f, err := os.OpenFile(host, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte("more"))
			return errors.Join(err, f.Close())
		}},
		{"overwritten", func() error {
			f, err := os.OpenFile(host, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteAt([]byte("other"), 2000)
			// The same length: only the modification time tells; make it differ for sure.
			later := time.Now().Add(time.Hour)
			return errors.Join(err, f.Close(), os.Chtimes(host, later, later))
		}},
	} {
		must(t, os.WriteFile(host, fsroottest.Pattern(3000, 2), 0o644))
		f, err := fsroot.OpenRange(ctx, r, "f")
		must(t, err)
		p := make([]byte, 1000)
		if _, err := f.ReadAt(ctx, p, 0); err != nil {
			t.Fatalf("%s: the first piece: %v", c.name, err)
		}
		must(t, c.change())
		if n, err := f.ReadAt(ctx, p, 1500); !errors.Is(err, fsroot.ErrChanged) {
			t.Errorf("%s: the piece after the change = %d bytes, %v; want ErrChanged", c.name, n, err)
		}
		f.Close()
	}
}
