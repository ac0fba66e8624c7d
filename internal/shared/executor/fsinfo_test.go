package executor_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// A 1x1 PNG and the start of a WAV file: their types come from their bytes, whatever their names.
var (
	pngPixel, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	wavHeader   = append([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"), make([]byte, 8)...)
)

func TestFilesystemPrimitives(t *testing.T) {
	t.Parallel()
	e, root := newExec(t, executor.Options{})
	write(t, root, "notes.md", "one\ntwo\nthree\nfour\n")
	mkdir(t, root, "docs/deep/a/b")
	write(t, root, "docs/plan.txt", "plan")
	write(t, root, "docs/deep/a/b/c.txt", "c")
	write(t, root, "photo.txt", string(pngPixel)) // a PNG under a text name
	write(t, root, "sound.bin", string(wavHeader))
	tests := []struct {
		name, tool, args string
		want             map[string]any // fields the observation must have
	}{
		{"file-info of a file", "file-info", `{"path":"notes.md"}`, map[string]any{"kind": "file", "size": 19.0}},
		{"file-info of a folder", "file-info", `{"path":"docs"}`, map[string]any{"kind": "folder", "size": 0.0}},
		{"a tree one deep", "directory-tree", `{"depth":"1"}`, map[string]any{"depth": 1.0, "entries": 4.0, "truncated": false}},
		{"the whole tree", "directory-tree", `{}`, map[string]any{"depth": 3.0, "entries": 7.0}},
		{"a folder's tree", "directory-tree", `{"dir":"docs","depth":"8"}`, map[string]any{"entries": 5.0}},
		{"head", "read-file", `{"path":"notes.md","head":"2"}`, map[string]any{"content": "one\ntwo\n"}},
		{"tail", "read-file", `{"path":"notes.md","tail":"2"}`, map[string]any{"content": "three\nfour\n"}},
		{"more lines than there are", "read-file", `{"path":"notes.md","tail":"99"}`, map[string]any{"content": "one\ntwo\nthree\nfour\n"}},
		{"an image", "read-media", `{"path":"photo.txt"}`, map[string]any{"mimeType": "image/png", "kind": "image", "data": base64.StdEncoding.EncodeToString(pngPixel)}},
		{"audio", "read-media", `{"path":"sound.bin"}`, map[string]any{"mimeType": "audio/x-wav", "kind": "audio"}},
		{"edits in turn", "edit-file", `{"path":"notes.md","oldTexts":"[\"two\",\"two three\"]","newTexts":"[\"two three\",\"2+3\"]"}`, map[string]any{"edits": 2.0, "line": 2.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustRun(t, e, tt.tool, tt.args)
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("%s = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
	if b, _ := root.ReadFile(t.Context(), "notes.md"); string(b) != "one\n2+3\nthree\nfour\n" {
		t.Fatalf("the edits left %q", b)
	}
	// The whole tree stops at the depth bound and says so.
	tree := mustRun(t, e, "directory-tree", `{"dir":"docs","depth":"2"}`)
	raw, _ := json.Marshal(tree["tree"])
	if !strings.Contains(string(raw), `{"dir":true,"more":true,"name":"a"}`) {
		t.Fatalf("the tree at depth 2: %s", raw)
	}
}

func TestReadFilesAnswersEachOnItsOwn(t *testing.T) {
	t.Parallel()
	e, root := newExec(t, executor.Options{})
	write(t, root, "a.txt", "alpha")
	write(t, root, "big.txt", strings.Repeat("x", executor.MaxReadFilesBytes+10))
	got := mustRun(t, e, "read-files", `{"paths":"[\"a.txt\",\"missing.txt\",\".env\",\"big.txt\"]"}`)
	files := got["files"].([]any)
	want := []struct{ content, refused string }{{"alpha", ""}, {"", "not-found"}, {"", "dotfile-refused"}, {strings.Repeat("x", executor.MaxReadFilesBytes), ""}}
	for i, w := range want {
		f := files[i].(map[string]any)
		if w.refused != "" && f["refused"] != w.refused || w.refused == "" && f["content"] != w.content {
			t.Errorf("file %d: %v", i, f)
		}
	}
	if files[3].(map[string]any)["truncated"] != true {
		t.Fatal("a file past the bound is not flagged truncated")
	}
}

func TestEditDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	e, root := newExec(t, executor.Options{})
	write(t, root, "plan.txt", "one\ntwo\n")
	got := mustRun(t, e, "edit-file", `{"path":"plan.txt","oldText":"two","newText":"2","dryRun":"true"}`)
	if got["dryRun"] != true || !strings.Contains(got["diff"].(string), "-two\n+2") {
		t.Fatalf("a dry run answered %v", got)
	}
	if b, _ := root.ReadFile(t.Context(), "plan.txt"); string(b) != "one\ntwo\n" {
		t.Fatalf("a dry run wrote %q", b)
	}
	if got := mustRun(t, e, "edit-file", `{"path":"plan.txt","oldText":"two","newText":"2"}`); !strings.Contains(got["diff"].(string), "+2") {
		t.Fatalf("an edit answered %v", got)
	}
}

func TestFilesystemPrimitiveRefusals(t *testing.T) {
	t.Parallel()
	e, root := newExec(t, executor.Options{})
	write(t, root, "notes.md", "a\nb\n")
	write(t, root, "bin.dat", "\xff\xfe\x00\x01")
	write(t, root, "huge.png", string(pngPixel)+strings.Repeat("\x00", executor.MaxMediaBytes))
	many := `[` + strings.Repeat(`"a",`, executor.MaxReadFiles) + `"a"]`
	tests := []struct {
		tool, args string
		rule       refusal.Rule
	}{
		{"file-info", `{"path":"missing"}`, refusal.NotFound},
		{"file-info", `{"path":"../x"}`, refusal.OutsideRoot},
		{"file-info", `{"path":".git"}`, refusal.DotfileRefused},
		{"directory-tree", `{"dir":"notes.md"}`, refusal.NotADirectory},
		{"directory-tree", `{"depth":"0"}`, refusal.InvalidArgumentRange},
		{"directory-tree", `{"depth":"9"}`, refusal.InvalidArgumentRange},
		{"directory-tree", `{"depth":"two"}`, refusal.InvalidArgumentType},
		{"directory-tree", `{"dir":".voicebox"}`, refusal.DotfileRefused},
		{"read-files", `{"paths":"[]"}`, refusal.InvalidArgumentRange},
		{"read-files", `{"paths":` + jsonString(many) + `}`, refusal.InvalidArgumentRange},
		{"read-files", `{"paths":"not json"}`, refusal.InvalidArgumentType},
		{"read-files", `{}`, refusal.MissingArgument},
		{"read-file", `{"path":"notes.md","head":"1","tail":"1"}`, refusal.InvalidArgument},
		{"read-file", `{"path":"notes.md","head":"0"}`, refusal.InvalidArgumentRange},
		{"read-file", `{"path":"bin.dat","head":"1"}`, refusal.InvalidArgument},
		{"read-media", `{"path":"notes.md"}`, refusal.NotMedia},
		{"read-media", `{"path":"huge.png"}`, refusal.FileTooLarge},
		{"edit-file", `{"path":"notes.md"}`, refusal.MissingArgument},
		{"edit-file", `{"path":"notes.md","oldText":"a"}`, refusal.MissingArgument},
		{"edit-file", `{"path":"notes.md","oldText":"a","newText":"b","oldTexts":"[\"a\"]","newTexts":"[\"b\"]"}`, refusal.InvalidArgument},
		{"edit-file", `{"path":"notes.md","oldTexts":"[\"a\",\"b\"]","newTexts":"[\"c\"]"}`, refusal.InvalidArgument},
		{"edit-file", `{"path":"notes.md","oldTexts":"[\"a\",\"zz\"]","newTexts":"[\"c\",\"d\"]"}`, refusal.OldTextNotFound},
		{"edit-file", `{"path":"notes.md","oldText":"a","newText":"b","dryRun":"maybe"}`, refusal.InvalidArgumentEnum},
	}
	for _, tt := range tests {
		if _, err := run(t, e, tt.tool, tt.args); refusal.RuleOf(err) != tt.rule {
			t.Errorf("%s %s: %v, want %s", tt.tool, tt.args, err, tt.rule)
		}
	}
	// A refused edit of several replacements changes nothing, the first included.
	if b, _ := root.ReadFile(t.Context(), "notes.md"); string(b) != "a\nb\n" {
		t.Fatalf("a refused edit left %q", b)
	}
}

func TestCreateFolderAndUndo(t *testing.T) {
	t.Parallel()
	e, root := newExec(t, executor.Options{})
	h, err := executor.OpenHistory(t.Context(), root, executor.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e = executor.New(root, executor.Options{History: h})
	if got := mustRun(t, e, "create-folder", `{"path":"a/b/c"}`); got["created"] != true || got["undoable"] != true {
		t.Fatalf("create-folder answered %v", got)
	}
	if st, err := root.Stat(t.Context(), "a/b/c"); err != nil || !st.Dir {
		t.Fatalf("a/b/c: %v %v", st, err)
	}
	if got := mustRun(t, e, "create-folder", `{"path":"a/b"}`); got["created"] != false {
		t.Fatalf("a folder that is there answered %v", got)
	}
	if got := mustRun(t, e, "undo-last", `{}`); got["undone"] != "mkdir" || got["removed"] != true {
		t.Fatalf("undo answered %v", got)
	}
	if _, err := root.Stat(t.Context(), "a"); err == nil {
		t.Fatal("undo left the folders it should take back")
	}
	// A folder that holds a file since is not removed by undo.
	mustRun(t, e, "create-folder", `{"path":"x/y"}`)
	write(t, root, "x/keep.txt", "k")
	if _, err := run(t, e, "undo-last", `{}`); refusal.RuleOf(err) != refusal.UndoConflict {
		t.Fatalf("undo over a file answered %v", err)
	}
	if _, err := root.Stat(t.Context(), "x/keep.txt"); err != nil {
		t.Fatalf("undo lost a file: %v", err)
	}
}

func TestMoveFileAndUndo(t *testing.T) {
	t.Parallel()
	_, root := newExec(t, executor.Options{})
	h, err := executor.OpenHistory(t.Context(), root, executor.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := executor.New(root, executor.Options{History: h})
	write(t, root, "a.txt", "alpha")
	mkdir(t, root, "docs/sub")
	write(t, root, "docs/sub/b.txt", "beta")
	mkdir(t, root, "archive")
	if got := mustRun(t, e, "move-file", `{"path":"a.txt","to":"archive/a.txt"}`); got["kind"] != "file" || got["undoable"] != true {
		t.Fatalf("moving a file answered %v", got)
	}
	if got := mustRun(t, e, "move-file", `{"path":"docs","to":"archive/docs"}`); got["kind"] != "folder" {
		t.Fatalf("moving a folder answered %v", got)
	}
	if b, _ := root.ReadFile(t.Context(), "archive/docs/sub/b.txt"); string(b) != "beta" {
		t.Fatalf("the moved folder holds %q", b)
	}
	mustRun(t, e, "undo-last", `{}`)
	mustRun(t, e, "undo-last", `{}`)
	for name, want := range map[string]string{"a.txt": "alpha", "docs/sub/b.txt": "beta"} {
		if b, err := root.ReadFile(t.Context(), name); string(b) != want {
			t.Fatalf("after undo %s holds %q, %v", name, b, err)
		}
	}
	// Something new in the old place: undo would replace it, so it refuses.
	mustRun(t, e, "move-file", `{"path":"a.txt","to":"b.txt"}`)
	write(t, root, "a.txt", "new")
	if _, err := run(t, e, "undo-last", `{}`); refusal.RuleOf(err) != refusal.UndoConflict {
		t.Fatalf("undo over a new file answered %v", err)
	}
}
