// Package executortest is the suite the assistant's file primitives (delete-file, edit-file,
// grep-files, create-folder, move-file, undo-last, redo-last, list-history) and the undo history
// pass on every kind of root: memory and the OS natively, OPFS and directory handles in Chromium
// (on the main thread and in the page's worker).
package executortest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Options declares what a root cannot do, so the suite checks the refusal instead.
type Options struct {
	// FilesOnlyMove declares a root that moves files but not folders (fsroot.Renamer answers
	// errors.ErrUnsupported for one: the browser's directory handles have no move), so moving a
	// folder is refused move-unsupported.
	FilesOnlyMove bool
}

// Run runs the suite; newRoot returns a fresh, empty root for each case (it must have a metadata
// area, fsroot.Metadata, and be an fsroot.Renamer).
func Run(t *testing.T, newRoot func(t *testing.T) fsroot.Root, opts Options) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			h, err := executor.OpenHistory(context.Background(), root, executor.HistoryOptions{MaxEntries: 4})
			if err != nil {
				t.Fatal(err)
			}
			c.fn(t, &fixture{t: t, root: root, h: h, e: executor.New(root, executor.Options{History: h}), opts: opts})
		})
	}
}

type fixture struct {
	t    *testing.T
	root fsroot.Root
	h    *executor.History
	e    *executor.Executor
	opts Options
}

func (f *fixture) call(tool string, args map[string]string) (map[string]any, error) {
	f.t.Helper()
	if args == nil {
		args = map[string]string{}
	}
	raw, _ := json.Marshal(args)
	out, err := f.e.Execute(context.Background(), wire.Call{CallID: "c", Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: raw, BoundsEcho: json.RawMessage(`{}`)})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		f.t.Fatalf("%s: the observation %s is not an object", tool, out)
	}
	return m, nil
}

func (f *fixture) must(tool string, args map[string]string) map[string]any {
	f.t.Helper()
	m, err := f.call(tool, args)
	if err != nil {
		f.t.Fatalf("%s %v: %v", tool, args, err)
	}
	return m
}

func (f *fixture) refused(rule refusal.Rule, tool string, args map[string]string) {
	f.t.Helper()
	if m, err := f.call(tool, args); refusal.RuleOf(err) != rule {
		f.t.Fatalf("%s %v = %v, %v; want %s", tool, args, m, err, rule)
	}
}

// put writes a file directly on the root, as the user would, making its folder.
func (f *fixture) put(name string, data []byte) {
	f.t.Helper()
	if dir := path.Dir(name); dir != "." {
		if err := f.root.MkdirAll(context.Background(), dir); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := f.root.WriteFile(context.Background(), name, data); err != nil {
		f.t.Fatal(err)
	}
}

// content reads a file directly; ok is false when it does not exist.
func (f *fixture) content(name string) ([]byte, bool) {
	f.t.Helper()
	b, err := f.root.ReadFile(context.Background(), name)
	return b, err == nil
}

func (f *fixture) holds(name string, want []byte) {
	f.t.Helper()
	got, ok := f.content(name)
	if !ok || string(got) != string(want) {
		f.t.Fatalf("%s holds %q (present %v), want %q", name, got, ok, want)
	}
}

func (f *fixture) absent(name string) {
	f.t.Helper()
	if got, ok := f.content(name); ok {
		f.t.Fatalf("%s exists, holding %q", name, got)
	}
}

// everyByte is content that is not text: every byte value, twice.
func everyByte() []byte {
	b := make([]byte, 512)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

var cases = []struct {
	name string
	fn   func(t *testing.T, f *fixture)
}{
	{"UndoAWriteBringsTheOldBytesBack", func(t *testing.T, f *fixture) {
		old := everyByte()
		f.put("data.bin", old)
		obs := f.must("write-file", map[string]string{"path": "data.bin", "content": "replaced"})
		if obs["undoable"] != true {
			t.Fatalf("write-file observed %v, want undoable", obs)
		}
		f.holds("data.bin", []byte("replaced"))
		u := f.must("undo-last", nil)
		if u["undone"] != "write" || u["path"] != "data.bin" || u["restored"] != true || u["bytes"] != float64(len(old)) {
			t.Fatalf("undo observed %v", u)
		}
		f.holds("data.bin", old)
		f.refused(refusal.NothingToUndo, "undo-last", nil)
	}},
	{"UndoACreatingWriteRemovesTheFile", func(t *testing.T, f *fixture) {
		f.must("write-file", map[string]string{"path": "new/deep.txt", "content": "x"})
		u := f.must("undo-last", nil)
		if u["removed"] != true || u["restored"] != false {
			t.Fatalf("undo observed %v", u)
		}
		f.absent("new/deep.txt")
	}},
	{"EditReplacesExactlyOnceOrRefuses", func(t *testing.T, f *fixture) {
		f.put("notes.md", []byte("one\ntwo two\nthree\n"))
		f.refused(refusal.OldTextNotFound, "edit-file", map[string]string{"path": "notes.md", "oldText": "four", "newText": "4"})
		f.refused(refusal.OldTextAmbiguous, "edit-file", map[string]string{"path": "notes.md", "oldText": "two", "newText": "2"})
		f.refused(refusal.OldTextAmbiguous, "edit-file", map[string]string{"path": "notes.md", "oldText": "", "newText": "2"})
		// Occurrences that overlap are two places the text could mean, not one.
		f.put("overlap.txt", []byte("aaa"))
		f.refused(refusal.OldTextAmbiguous, "edit-file", map[string]string{"path": "overlap.txt", "oldText": "aa", "newText": "b"})
		f.holds("overlap.txt", []byte("aaa"))
		f.refused(refusal.NotFound, "edit-file", map[string]string{"path": "missing.md", "oldText": "a", "newText": "b"})
		f.refused(refusal.MissingArgument, "edit-file", map[string]string{"path": "notes.md", "oldText": "one"})
		f.holds("notes.md", []byte("one\ntwo two\nthree\n"))
		obs := f.must("edit-file", map[string]string{"path": "notes.md", "oldText": "three", "newText": "THREE"})
		if obs["line"] != 3.0 || obs["undoable"] != true || obs["bytes"] != 18.0 {
			t.Fatalf("edit-file observed %v", obs)
		}
		f.holds("notes.md", []byte("one\ntwo two\nTHREE\n"))
		f.must("edit-file", map[string]string{"path": "notes.md", "oldText": "one\n", "newText": ""})
		f.holds("notes.md", []byte("two two\nTHREE\n"))
		f.must("undo-last", nil)
		f.must("undo-last", nil)
		f.holds("notes.md", []byte("one\ntwo two\nthree\n"))
	}},
	{"DeleteKeepsTheFileForUndo", func(t *testing.T, f *fixture) {
		old := everyByte()
		f.put("keep.bin", old)
		if err := f.root.MkdirAll(context.Background(), "folder"); err != nil {
			t.Fatal(err)
		}
		f.refused(refusal.IsADirectory, "delete-file", map[string]string{"path": "folder"})
		f.refused(refusal.NotFound, "delete-file", map[string]string{"path": "nothing.txt"})
		f.refused(refusal.DotfileRefused, "delete-file", map[string]string{"path": ".voicebox"})
		obs := f.must("delete-file", map[string]string{"path": "keep.bin"})
		if obs["deleted"] != true || obs["undoable"] != true || obs["bytes"] != float64(len(old)) {
			t.Fatalf("delete-file observed %v", obs)
		}
		f.absent("keep.bin")
		f.must("undo-last", nil)
		f.holds("keep.bin", old)
	}},
	{"UndoNeverOverwritesALaterChange", func(t *testing.T, f *fixture) {
		f.put("a.txt", []byte("mine"))
		f.must("write-file", map[string]string{"path": "a.txt", "content": "the model's"})
		f.put("a.txt", []byte("mine again"))
		f.refused(refusal.UndoConflict, "undo-last", nil)
		f.holds("a.txt", []byte("mine again"))

		f.put("b.txt", []byte("b"))
		f.must("delete-file", map[string]string{"path": "b.txt"})
		f.put("b.txt", []byte("a new b"))
		f.refused(refusal.UndoConflict, "undo-last", nil)
		f.holds("b.txt", []byte("a new b"))
	}},
	{"TheHistoryIsBoundedAndHidden", func(t *testing.T, f *fixture) {
		for i := range 6 {
			f.must("write-file", map[string]string{"path": "n.txt", "content": fmt.Sprint(i)})
		}
		if n, err := f.h.Len(context.Background()); err != nil || n != 4 {
			t.Fatalf("the history holds %d changes (%v), want its bound of 4", n, err)
		}
		for range 4 {
			f.must("undo-last", nil)
		}
		f.holds("n.txt", []byte("1")) // the two oldest changes were pruned
		f.refused(refusal.NothingToUndo, "undo-last", nil)
		list := f.must("list-files", nil)
		for _, e := range list["entries"].([]any) {
			if name := e.(map[string]any)["name"].(string); strings.HasPrefix(name, ".") {
				t.Fatalf("the listing shows %q", name)
			}
		}
		f.refused(refusal.DotfileRefused, "read-file", map[string]string{"path": ".voicebox/history/000000000001.json"})
		f.refused(refusal.DotfileRefused, "write-file", map[string]string{"path": ".voicebox/history/x", "content": "x"})
	}},
	{"TheHistoryOutlivesItsExecutor", func(t *testing.T, f *fixture) {
		f.put("p.txt", []byte("before"))
		f.must("write-file", map[string]string{"path": "p.txt", "content": "after"})
		h, err := executor.OpenHistory(context.Background(), f.root, executor.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		again := &fixture{t: t, root: f.root, h: h, e: executor.New(f.root, executor.Options{History: h})}
		again.must("undo-last", nil)
		again.holds("p.txt", []byte("before"))
	}},
	{"RedoPutsAnUndoneChangeBack", func(t *testing.T, f *fixture) {
		f.put("r.txt", []byte("one"))
		f.must("write-file", map[string]string{"path": "r.txt", "content": "two"})
		f.must("delete-file", map[string]string{"path": "r.txt"})
		f.refused(refusal.NothingToRedo, "redo-last", nil)
		f.must("undo-last", nil)
		f.holds("r.txt", []byte("two"))
		u := f.must("undo-last", nil)
		if u["redo"] != 2.0 || u["remaining"] != 0.0 {
			t.Fatalf("the second undo observed %v, want 2 to redo and none to undo", u)
		}
		f.holds("r.txt", []byte("one"))
		r := f.must("redo-last", nil)
		if r["redone"] != "write" || r["written"] != true || r["redo"] != 1.0 {
			t.Fatalf("redo observed %v", r)
		}
		f.holds("r.txt", []byte("two"))
		if r := f.must("redo-last", nil); r["redone"] != "delete" || r["removed"] != true {
			t.Fatalf("the second redo observed %v", r)
		}
		f.absent("r.txt")
		f.refused(refusal.NothingToRedo, "redo-last", nil)
		// And back again, so undo and redo alternate as long as nobody else changes the file.
		f.must("undo-last", nil)
		f.holds("r.txt", []byte("two"))
	}},
	{"ANewChangeEndsTheRedos", func(t *testing.T, f *fixture) {
		f.must("write-file", map[string]string{"path": "a.txt", "content": "a"})
		f.must("undo-last", nil)
		f.must("write-file", map[string]string{"path": "b.txt", "content": "b"})
		f.refused(refusal.NothingToRedo, "redo-last", nil)
		f.absent("a.txt")
	}},
	{"RedoNeverOverwritesALaterChange", func(t *testing.T, f *fixture) {
		f.put("c.txt", []byte("before"))
		f.must("write-file", map[string]string{"path": "c.txt", "content": "model"})
		f.must("undo-last", nil)
		f.put("c.txt", []byte("mine, typed after the undo"))
		f.refused(refusal.RedoConflict, "redo-last", nil)
		f.holds("c.txt", []byte("mine, typed after the undo"))
		// The redo that could not be made was dropped: redo does not stay stuck on it.
		f.refused(refusal.NothingToRedo, "redo-last", nil)
	}},
	{"AConflictIsResolvedAndTheHistoryMovesOn", func(t *testing.T, f *fixture) {
		f.put("k.txt", []byte("v1"))
		f.must("write-file", map[string]string{"path": "k.txt", "content": "v2"})
		f.must("write-file", map[string]string{"path": "k.txt", "content": "v3"})
		f.put("k.txt", []byte("theirs"))
		f.refused(refusal.UndoConflict, "undo-last", nil)
		f.refused(refusal.UndoConflict, "undo-last", nil) // asking again changes nothing
		c, err := f.e.UndoConflict(context.Background(), 1<<10)
		if err != nil || !c.InConflict || c.Current.Text != "theirs" || c.Earlier.Text != "v2" || len(c.Resolutions) != 3 {
			t.Fatalf("UndoConflict = %+v, %v", c, err)
		}
		u := f.must("undo-last", map[string]string{"resolve": executor.ResolveKeepCurrent})
		if u["resolved"] != executor.ResolveKeepCurrent || u["remaining"] != 1.0 {
			t.Fatalf("keep-current observed %v", u)
		}
		f.holds("k.txt", []byte("theirs"))
		// The next undo reaches the change before, which now meets the same later change.
		f.refused(refusal.UndoConflict, "undo-last", nil)
		u = f.must("undo-last", map[string]string{"resolve": executor.ResolveRestoreEarlier})
		if u["restored"] != true || u["redo"] != 1.0 {
			t.Fatalf("restore-earlier observed %v", u)
		}
		f.holds("k.txt", []byte("v1"))
		// The version restore-earlier replaced is not lost: redo brings it back.
		f.must("redo-last", nil)
		f.holds("k.txt", []byte("theirs"))
	}},
	{"KeepBothWritesTheEarlierVersionBeside", func(t *testing.T, f *fixture) {
		f.put("docs/plan.md", []byte("mine"))
		f.must("edit-file", map[string]string{"path": "docs/plan.md", "oldText": "mine", "newText": "model's"})
		f.put("docs/plan.md", []byte("theirs"))
		f.put("docs/plan (earlier).md", []byte("in the way"))
		u := f.must("undo-last", map[string]string{"resolve": executor.ResolveKeepBoth})
		if u["keptAs"] != "docs/plan (earlier 2).md" {
			t.Fatalf("keep-both observed %v", u)
		}
		f.holds("docs/plan.md", []byte("theirs"))
		f.holds("docs/plan (earlier 2).md", []byte("mine"))
		f.holds("docs/plan (earlier).md", []byte("in the way"))
		// Keeping both is a change of its own: undo takes the copy away again.
		f.must("undo-last", nil)
		f.absent("docs/plan (earlier 2).md")
		f.refused(refusal.NothingToUndo, "undo-last", nil)
	}},
	{"MoveNeverReplacesAndUndoMovesBack", func(t *testing.T, f *fixture) {
		old := everyByte()
		f.put("a.bin", old)
		f.put("b.bin", []byte("b"))
		f.refused(refusal.FileExists, "move-file", map[string]string{"path": "a.bin", "to": "b.bin"})
		f.refused(refusal.NotFound, "move-file", map[string]string{"path": "none.bin", "to": "c.bin"})
		f.refused(refusal.DotfileRefused, "move-file", map[string]string{"path": "a.bin", "to": ".hidden"})
		if err := f.root.MkdirAll(context.Background(), "dir"); err != nil {
			t.Fatal(err)
		}
		f.refused(refusal.InvalidArgument, "move-file", map[string]string{"path": "dir", "to": "dir/inner"})
		f.refused(refusal.FileExists, "move-file", map[string]string{"path": "a.bin", "to": "a.bin"})
		obs := f.must("move-file", map[string]string{"path": "a.bin", "to": "sub/c.bin"})
		if obs["undoable"] != true || obs["parentsCreated"] != true || obs["bytes"] != float64(len(old)) || obs["kind"] != "file" {
			t.Fatalf("move-file observed %v", obs)
		}
		f.absent("a.bin")
		f.holds("sub/c.bin", old)
		f.must("undo-last", nil)
		f.holds("a.bin", old)
		f.absent("sub/c.bin")
		f.must("redo-last", nil)
		f.holds("sub/c.bin", old)
		f.put("a.bin", []byte("new a"))
		f.refused(refusal.UndoConflict, "undo-last", nil)
		f.must("undo-last", map[string]string{"resolve": executor.ResolveKeepCurrent})
		f.holds("a.bin", []byte("new a"))
		f.holds("sub/c.bin", old)
	}},
	{"FoldersAreMadeAndMovedUndoably", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		if obs := f.must("create-folder", map[string]string{"path": "a/b"}); obs["created"] != true || obs["undoable"] != true {
			t.Fatalf("create-folder observed %v", obs)
		}
		f.put("file.txt", []byte("f"))
		f.refused(refusal.FileExists, "create-folder", map[string]string{"path": "file.txt/sub"})
		// A file put in the folder since: undo would remove it, so it is a conflict that only
		// keep-current resolves, and the file stays.
		f.put("a/b/n.txt", []byte("n"))
		f.refused(refusal.UndoConflict, "undo-last", nil)
		c, err := f.e.UndoConflict(ctx, 100)
		if err != nil || !c.InConflict || c.Change.Action != "mkdir" || !c.Current.Folder || c.Earlier.Exists || len(c.Resolutions) != 1 || c.Resolutions[0] != executor.ResolveKeepCurrent {
			t.Fatalf("UndoConflict = %+v, %v", c, err)
		}
		f.refused(refusal.UndoConflict, "undo-last", map[string]string{"resolve": executor.ResolveRestoreEarlier})
		if u := f.must("undo-last", map[string]string{"resolve": executor.ResolveKeepCurrent}); u["resolved"] != executor.ResolveKeepCurrent {
			t.Fatalf("undo keep-current observed %v", u)
		}
		f.holds("a/b/n.txt", []byte("n"))
		f.refused(refusal.NothingToUndo, "undo-last", nil)
		// Empty folders go and come back.
		f.must("create-folder", map[string]string{"path": "c/d"})
		if u := f.must("undo-last", nil); u["undone"] != "mkdir" || u["removed"] != true {
			t.Fatalf("undo of create-folder observed %v", u)
		}
		if _, err := f.root.Stat(ctx, "c"); err == nil {
			t.Fatal("undo left the folders create-folder made")
		}
		if r := f.must("redo-last", nil); r["redone"] != "mkdir" {
			t.Fatalf("redo of create-folder observed %v", r)
		}
		if st, err := f.root.Stat(ctx, "c/d"); err != nil || !st.Dir {
			t.Fatalf("redo made c/d: %v, %v", st, err)
		}
		// A folder moves with all it holds, where the root can move one.
		f.put("c/d/e.txt", []byte("e"))
		if f.opts.FilesOnlyMove {
			f.refused(refusal.MoveUnsupported, "move-file", map[string]string{"path": "c", "to": "m/c"})
			f.holds("c/d/e.txt", []byte("e"))
			if u := f.must("undo-last", map[string]string{"resolve": executor.ResolveKeepCurrent}); u["undone"] != "mkdir" {
				t.Fatalf("the refused move was recorded: undo observed %v", u)
			}
			return
		}
		obs := f.must("move-file", map[string]string{"path": "c", "to": "m/c"})
		if obs["kind"] != "folder" || obs["parentsCreated"] != true || obs["undoable"] != true {
			t.Fatalf("move-file of a folder observed %v", obs)
		}
		f.holds("m/c/d/e.txt", []byte("e"))
		f.absent("c/d/e.txt")
		list := f.must("list-history", nil)
		got, _ := json.Marshal(list["entries"])
		var entries []executor.HistoryEntry
		json.Unmarshal(got, &entries)
		if len(entries) != 2 || entries[0].Action != "move" || entries[0].Path != "c" || entries[0].To != "m/c" || entries[0].Created ||
			entries[1].Action != "mkdir" || entries[1].Path != "c/d" || entries[1].Created {
			t.Fatalf("list-history observed %s", got)
		}
		if u := f.must("undo-last", nil); u["undone"] != "move" || u["restored"] != true {
			t.Fatalf("undo of a folder's move observed %v", u)
		}
		f.holds("c/d/e.txt", []byte("e"))
		f.must("redo-last", nil)
		f.holds("m/c/d/e.txt", []byte("e"))
		// Something new in the folder's old place: moving back would replace it.
		f.put("c/new.txt", []byte("new"))
		f.refused(refusal.UndoConflict, "undo-last", nil)
		if c, err := f.e.UndoConflict(ctx, 100); err != nil || !c.InConflict || !c.Current.Folder {
			t.Fatalf("UndoConflict of the move = %+v, %v", c, err)
		}
		f.must("undo-last", map[string]string{"resolve": executor.ResolveKeepCurrent})
		f.holds("m/c/d/e.txt", []byte("e"))
		f.holds("c/new.txt", []byte("new"))
	}},
	{"ASaveNeverOverwritesANewerVersion", func(t *testing.T, f *fixture) {
		f.put("a.txt", []byte("as opened"))
		opened := sha256.Sum256([]byte("as opened"))
		f.must("write-file", map[string]string{"path": "a.txt", "content": "theirs"})
		f.refused(refusal.FileChanged, "write-file", map[string]string{"path": "a.txt", "content": "mine", "expect": hex.EncodeToString(opened[:])})
		f.holds("a.txt", []byte("theirs"))
		theirs := sha256.Sum256([]byte("theirs"))
		f.must("write-file", map[string]string{"path": "a.txt", "content": "mine", "expect": hex.EncodeToString(theirs[:])})
		f.holds("a.txt", []byte("mine"))
		f.must("delete-file", map[string]string{"path": "a.txt"})
		mine := sha256.Sum256([]byte("mine"))
		f.refused(refusal.FileChanged, "write-file", map[string]string{"path": "a.txt", "content": "again", "expect": hex.EncodeToString(mine[:])})
		f.absent("a.txt")
	}},
	{"AFolderIsRemovedOnlyEmptyAndUndoably", func(t *testing.T, f *fixture) {
		f.put("full/a.txt", []byte("a"))
		f.refused(refusal.FolderNotEmpty, "remove-folder", map[string]string{"path": "full"})
		f.holds("full/a.txt", []byte("a"))
		f.refused(refusal.NotADirectory, "remove-folder", map[string]string{"path": "full/a.txt"})
		if err := f.root.MkdirAll(context.Background(), "empty"); err != nil {
			t.Fatal(err)
		}
		if obs := f.must("remove-folder", map[string]string{"path": "empty"}); obs["deleted"] != true || obs["undoable"] != true {
			t.Fatalf("remove-folder observed %v", obs)
		}
		if _, err := f.root.Stat(context.Background(), "empty"); err == nil {
			t.Fatal("the folder is still there")
		}
		f.must("undo-last", nil)
		if st, err := f.root.Stat(context.Background(), "empty"); err != nil || !st.Dir {
			t.Fatalf("after undo the folder is %v, %v", st, err)
		}
		f.must("redo-last", nil)
		if _, err := f.root.Stat(context.Background(), "empty"); err == nil {
			t.Fatal("after redo the folder is still there")
		}
		// A file where the folder was: undo would not make it there.
		f.put("empty", []byte("a file now"))
		f.refused(refusal.UndoConflict, "undo-last", nil)
		f.must("undo-last", map[string]string{"resolve": executor.ResolveKeepCurrent})
		f.holds("empty", []byte("a file now"))
	}},
	{"UndoingAMoveRemovesTheFoldersItMade", func(t *testing.T, f *fixture) {
		f.put("a.txt", []byte("a"))
		if obs := f.must("move-file", map[string]string{"path": "a.txt", "to": "new/deep/a.txt"}); obs["parentsCreated"] != true {
			t.Fatalf("the move observed %v", obs)
		}
		f.must("undo-last", nil)
		f.holds("a.txt", []byte("a"))
		if _, err := f.root.Stat(context.Background(), "new"); err == nil {
			t.Fatal("the folder the move made is still there after its undo")
		}
		f.must("redo-last", nil)
		f.holds("new/deep/a.txt", []byte("a"))
		// A folder the move made that holds something else now stays.
		f.put("new/other.txt", []byte("o"))
		f.must("undo-last", nil)
		f.holds("a.txt", []byte("a"))
		f.holds("new/other.txt", []byte("o"))
		if _, err := f.root.Stat(context.Background(), "new/deep"); err == nil {
			t.Fatal("the empty folder new/deep is still there")
		}
	}},
	{"CreateModeNeverReplaces", func(t *testing.T, f *fixture) {
		f.put("exists.txt", []byte("keep me"))
		f.refused(refusal.FileExists, "write-file", map[string]string{"path": "exists.txt", "content": "", "mode": "create"})
		f.holds("exists.txt", []byte("keep me"))
		f.refused(refusal.NothingToUndo, "undo-last", nil)
		if obs := f.must("write-file", map[string]string{"path": "fresh.txt", "content": "", "mode": "create"}); obs["created"] != true {
			t.Fatalf("a create observed %v", obs)
		}
	}},
	{"TheHistorySaysWhoDidWhat", func(t *testing.T, f *fixture) {
		person := executor.New(f.root, executor.Options{History: f.h, Actor: executor.ByPerson})
		f.must("write-file", map[string]string{"path": "a.txt", "content": "by the model"})
		them := &fixture{t: t, root: f.root, h: f.h, e: person}
		them.must("write-file", map[string]string{"path": "b.txt", "content": "by the person"})
		them.must("undo-last", nil)
		list := f.must("list-history", nil)
		got, _ := json.Marshal(list["entries"])
		var entries []executor.HistoryEntry
		json.Unmarshal(got, &entries)
		if len(entries) != 2 || entries[0].Path != "b.txt" || entries[0].By != executor.ByPerson || !entries[0].Undone || !entries[0].Created ||
			entries[1].Path != "a.txt" || entries[1].By != executor.ByAssistant || entries[1].Undone || list["undo"] != 1.0 || list["redo"] != 1.0 {
			t.Fatalf("list-history observed %v", list)
		}
	}},
	{"AStreamedWriteIsUndoable", func(t *testing.T, f *fixture) {
		f.put("up.bin", []byte("old"))
		content := []byte("streamed in pieces")
		sum := sha256.Sum256(content)
		created, undoable, err := f.e.Commit(context.Background(), "up.bin", hex.EncodeToString(sum[:]), false, func() error {
			return f.root.WriteFile(context.Background(), "up.bin", content)
		})
		if err != nil || created || !undoable {
			t.Fatalf("Commit = %v, %v, %v", created, undoable, err)
		}
		if _, _, err := f.e.Commit(context.Background(), "up.bin", "", true, func() error { t.Fatal("a refused commit applied"); return nil }); refusal.RuleOf(err) != refusal.FileExists {
			t.Fatalf("a create commit onto a file answered %v", err)
		}
		f.must("undo-last", nil)
		f.holds("up.bin", []byte("old"))
		f.must("redo-last", nil)
		f.holds("up.bin", content)
	}},
	{"RedoOutlivesItsExecutor", func(t *testing.T, f *fixture) {
		f.put("p.txt", []byte("before"))
		f.must("write-file", map[string]string{"path": "p.txt", "content": "after"})
		f.must("undo-last", nil)
		h, err := executor.OpenHistory(context.Background(), f.root, executor.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		again := &fixture{t: t, root: f.root, h: h, e: executor.New(f.root, executor.Options{History: h})}
		again.must("redo-last", nil)
		again.holds("p.txt", []byte("after"))
		again.must("undo-last", nil)
		again.holds("p.txt", []byte("before"))
	}},
	{"GrepFindsLinesIgnoringCase", func(t *testing.T, f *fixture) {
		f.put("a.md", []byte("Buy MILK\nbuy bread\n"))
		if err := f.root.MkdirAll(context.Background(), "docs/deep"); err != nil {
			t.Fatal(err)
		}
		f.put("docs/deep/b.txt", []byte("no\nthe milkman\r\n"))
		f.put("docs/bin.dat", append([]byte("milk"), 0, 1, 2))
		obs := f.must("grep-files", map[string]string{"query": "milk"})
		matches, _ := json.Marshal(obs["matches"])
		want := `[{"line":1,"path":"a.md","text":"Buy MILK"},{"line":2,"path":"docs/deep/b.txt","text":"the milkman"}]`
		if string(matches) != want || obs["count"] != 2.0 || obs["truncated"] != false {
			t.Fatalf("grep-files observed %v\nmatches %s\nwant    %s", obs, matches, want)
		}
		in := f.must("grep-files", map[string]string{"query": "MILK", "dir": "docs"})
		if in["count"] != 1.0 {
			t.Fatalf("grep-files in docs observed %v", in)
		}
		f.refused(refusal.InvalidArgumentLength, "grep-files", map[string]string{"query": ""})
		f.refused(refusal.NotFound, "grep-files", map[string]string{"query": "x", "dir": "nowhere"})
		f.refused(refusal.DotfileRefused, "grep-files", map[string]string{"query": "x", "dir": ".voicebox"})
		many := strings.Repeat("milk\n", executor.MaxGrepMatches+5)
		f.put("many.txt", []byte(many))
		if got := f.must("grep-files", map[string]string{"query": "milk"}); got["truncated"] != true || got["count"] != float64(executor.MaxGrepMatches) {
			t.Fatalf("grep-files over the bound observed count %v truncated %v", got["count"], got["truncated"])
		}
	}},
	{"WriteOfBase64KeepsBinaryHistory", func(t *testing.T, f *fixture) {
		f.must("write-file", map[string]string{"path": "x.bin", "content": base64.StdEncoding.EncodeToString(everyByte()), "encoding": "base64"})
		f.must("write-file", map[string]string{"path": "x.bin", "content": "text now"})
		f.must("undo-last", nil)
		f.holds("x.bin", everyByte())
	}},
}
