package opfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot/fsroottest"
)

// testArea is the OPFS directory the tests work in; each root under test is a fresh
// subdirectory of it, removed when its test ends.
const testArea = "opfs-tests"

// freshDir creates an empty OPFS directory for one test and returns its handle.
func freshDir(t *testing.T) jsutil.Value {
	t.Helper()
	ctx := context.Background()
	area, err := OpenOPFS(ctx, testArea)
	if err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	rand.Read(b[:])
	name := "t-" + hex.EncodeToString(b[:])
	dir, err := jsutil.Call(ctx, area.Handle(), "getDirectoryHandle", name, jsutil.Object(map[string]any{"create": true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := jsutil.Call(ctx, area.Handle(), "removeEntry", name, jsutil.Object(map[string]any{"recursive": true})); err != nil {
			t.Errorf("remove test directory %s: %v", name, err)
		}
	})
	return dir
}

// opfsRoot is an OPFS root over a fresh directory, with the pool of sync access handles where
// the browser offers them (in a worker).
func opfsRoot(t *testing.T) *Root {
	r := newRoot(freshDir(t))
	if syncHandlesAvailable() {
		r.pool = newHandlePool(MaxOpenHandles)
	}
	t.Cleanup(r.Close)
	return r
}

func failWrites(t *testing.T, root fsroot.Root) func() {
	r := root.(*Root)
	r.FailWritesAfter(1 << 10)
	return func() { r.FailWritesAfter(-1) }
}

// TestConformance runs the roots suite against both roots wherever this test binary runs: on
// the main thread under wasmbrowsertest (asynchronous reads only) and in a dedicated worker
// under the worker harness (the OPFS root reads through its pool of sync handles).
func TestConformance(t *testing.T) {
	t.Run("OPFS", func(t *testing.T) {
		fsroottest.Run(t, func(t *testing.T) fsroot.Root { return opfsRoot(t) }, fsroottest.Options{FailWrites: failWrites, FilesOnlyRename: true})
	})
	t.Run("Handle", func(t *testing.T) {
		fsroottest.Run(t, func(t *testing.T) fsroot.Root { return FromHandle(freshDir(t)) }, fsroottest.Options{FailWrites: failWrites, FilesOnlyRename: true})
	})
}

func TestTemporaryFilesNeverShow(t *testing.T) {
	ctx := context.Background()
	r := opfsRoot(t)
	w, err := r.Create(ctx, "new.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("pending")); err != nil {
		t.Fatal(err)
	}
	if entries, err := r.ReadDir(ctx, ""); err != nil || len(entries) != 0 {
		t.Fatalf("during a pending create the root lists %v (%v), want nothing", entries, err)
	}
	if _, err := r.Stat(ctx, "new.txt"); err == nil {
		t.Fatal("a pending new file is visible to Stat")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	// Nothing is left behind under any name, hidden ones included.
	iter, _ := r.Handle().Call("keys")
	var names []string
	for {
		next, err := jsutil.Call(ctx, iter, "next")
		if err != nil {
			t.Fatal(err)
		}
		if done, _ := next.Get("done"); truthy(done) {
			break
		}
		v, _ := next.Get("value")
		s, _ := v.String()
		names = append(names, s)
	}
	if len(names) != 1 || names[0] != "new.txt" {
		t.Fatalf("the directory holds %v, want only new.txt", names)
	}
}

func TestReadsDuringAPendingReplaceSeeTheOldContent(t *testing.T) {
	ctx := context.Background()
	r := opfsRoot(t)
	if err := r.WriteFile(ctx, "doc.txt", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadFile(ctx, "doc.txt"); err != nil || string(b) != "old" {
		t.Fatalf("read = %q, %v", b, err)
	}
	w, err := r.Create(ctx, "doc.txt")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("new, and longer"))
	if b, err := r.ReadFile(ctx, "doc.txt"); err != nil || string(b) != "old" {
		t.Fatalf("read during the replace = %q, %v; want the old content", b, err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadFile(ctx, "doc.txt"); err != nil || string(b) != "new, and longer" {
		t.Fatalf("read after the replace = %q, %v", b, err)
	}
}

func TestManyFilesOutlastThePool(t *testing.T) {
	ctx := context.Background()
	r := opfsRoot(t)
	n := MaxOpenHandles + 8
	for i := range n {
		name := "f" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		if err := r.WriteFile(ctx, name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		for i := range n {
			name := "f" + string(rune('a'+i/26)) + string(rune('a'+i%26))
			if b, err := r.ReadFile(ctx, name); err != nil || string(b) != name {
				t.Fatalf("round %d: read %s = %q, %v", round, name, b, err)
			}
		}
	}
	if r.pool != nil && len(r.pool.open) > MaxOpenHandles {
		t.Fatalf("the pool holds %d handles, over its bound of %d", len(r.pool.open), MaxOpenHandles)
	}
}

func TestMetadataIsHiddenFromTheWorkspace(t *testing.T) {
	ctx := context.Background()
	r := opfsRoot(t)
	meta, err := r.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.WriteFile(ctx, "audit.jsonl", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if entries, err := r.ReadDir(ctx, ""); err != nil || len(entries) != 0 {
		t.Fatalf("the workspace lists %v (%v), want its metadata hidden", entries, err)
	}
	if _, err := r.ReadFile(ctx, fsroot.MetaDir+"/audit.jsonl"); fsroot.Check(fsroot.MetaDir+"/audit.jsonl") == nil || err == nil {
		t.Fatal("the metadata area is readable through the workspace root")
	}
}

// TestReadDirNamesIsReadDirWithoutSizes: the names-only listing (fsroot.NameLister) lists what
// ReadDir lists, in its order, files and folders told apart, and no dot entry nor a pending
// write's temporary file; only the sizes and times are left out.
func TestReadDirNamesIsReadDirWithoutSizes(t *testing.T) {
	ctx := context.Background()
	r := opfsRoot(t)
	// A dot entry (the root refuses to make one; the browser's handle does not).
	if _, err := jsutil.Call(ctx, r.Handle(), "getFileHandle", ".hidden", jsutil.Object(map[string]any{"create": true})); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b.jsonl", "a.jsonl", "sub/c.txt"} {
		if dir := path.Dir(name); dir != "." {
			if err := r.MkdirAll(ctx, dir); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.WriteFile(ctx, name, []byte("content of "+name)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := r.Create(ctx, "pending.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	full, err := r.ReadDir(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	names, err := fsroot.ReadDirNames(ctx, r, "")
	if err != nil {
		t.Fatal(err)
	}
	var want []fsroot.Entry
	for _, e := range full {
		want = append(want, fsroot.Entry{Name: e.Name, Dir: e.Dir})
	}
	if !slices.Equal(names, want) || len(want) != 3 {
		t.Fatalf("ReadDirNames lists %+v, want %+v (ReadDir's %+v without sizes and times)", names, want, full)
	}
	if _, err := fsroot.ReadDirNames(ctx, r, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadDirNames of a missing folder: %v, want fs.ErrNotExist", err)
	}
}
