// Package executortest is the suite the assistant's file primitives (delete-file, edit-file,
// grep-files, undo-last) and the undo history pass on every kind of root: memory and the OS
// natively, OPFS and directory handles in Chromium (on the main thread and in the page's worker).
package executortest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/executor"
	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/wire"
)

// Run runs the suite; newRoot returns a fresh, empty root for each case (it must have a metadata
// area, fsroot.Metadata).
func Run(t *testing.T, newRoot func(t *testing.T) fsroot.Root) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			h, err := executor.OpenHistory(context.Background(), root, executor.HistoryOptions{MaxEntries: 4})
			if err != nil {
				t.Fatal(err)
			}
			c.fn(t, &fixture{t: t, root: root, h: h, e: executor.New(root, executor.Options{History: h})})
		})
	}
}

type fixture struct {
	t    *testing.T
	root fsroot.Root
	h    *executor.History
	e    *executor.Executor
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

// put writes a file directly on the root, as the user would.
func (f *fixture) put(name string, data []byte) {
	f.t.Helper()
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
