package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// memoryAPI returns an Engine whose "opfs" root is a fresh memory root.
func memoryAPI(t testing.TB) (*Engine, *fsroot.MemRoot) {
	t.Helper()
	mem := fsroot.NewMemory()
	a := newEngine(time.Now(), func(ctx context.Context, kind string, handle any) (fsroot.Root, RootInfo, error) {
		return mem, RootInfo{Kind: kind, Name: "Memory"}, nil
	})
	return a, mem
}

// do calls method with params (a JSON object) and bytes, and returns the value or the refusal.
func do(t testing.TB, a *Engine, method, params string, bytes []byte) (map[string]any, *refusal.Refusal, []byte) {
	t.Helper()
	ans, out := a.call(context.Background(), 1, request{Method: method, Params: json.RawMessage(params), Bytes: bytes})
	if !ans.OK {
		return nil, &refusal.Refusal{Rule: ans.Refused, Why: ans.Why}, nil
	}
	b, _ := json.Marshal(ans.Value)
	var v map[string]any
	json.Unmarshal(b, &v)
	return v, nil, out
}

func mustDo(t testing.TB, a *Engine, method, params string, bytes []byte) (map[string]any, []byte) {
	t.Helper()
	v, r, out := do(t, a, method, params, bytes)
	if r != nil {
		t.Fatalf("%s %s refused: %v", method, params, r)
	}
	return v, out
}

func TestFilesNeedAnOpenRoot(t *testing.T) {
	t.Parallel()
	a, _ := memoryAPI(t)
	for _, m := range []string{"files.list", "files.read", "files.write", "files.mkdir", "files.delete", "files.download", "files.upload.begin", "root.info"} {
		if _, r, _ := do(t, a, m, `{}`, nil); r == nil || r.Rule != refusal.NoRoot {
			t.Errorf("%s without a root: %v, want no-root", m, r)
		}
	}
}

func TestFilesRoundTrip(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	mustDo(t, a, "files.mkdir", `{"path":"notes"}`, nil)
	mustDo(t, a, "files.write", `{"path":"notes/a.txt","content":"héllo"}`, nil)
	v, _ := mustDo(t, a, "files.read", `{"path":"notes/a.txt"}`, nil)
	if v["text"] != "héllo" || v["size"] != float64(6) || v["truncated"] != false || v["binary"] != false {
		t.Fatalf("read = %v", v)
	}
	v, _ = mustDo(t, a, "files.list", `{"dir":""}`, nil)
	entries := v["entries"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["name"] != "notes" || entries[0].(map[string]any)["dir"] != true {
		t.Fatalf("list = %v", v)
	}
	_, out := mustDo(t, a, "files.download", `{"path":"notes/a.txt"}`, nil)
	if string(out) != "héllo" {
		t.Fatalf("download bytes = %q", out)
	}
	if _, r, _ := do(t, a, "files.delete", `{"path":"notes"}`, nil); r == nil || r.Rule != refusal.FolderNotEmpty {
		t.Fatalf("deleting a non-empty folder: %v, want folder-not-empty", r)
	}
	mustDo(t, a, "files.delete", `{"path":"notes/a.txt"}`, nil)
	if _, err := mem.Stat(context.Background(), "notes/a.txt"); err == nil {
		t.Fatal("the file is still there after delete")
	}
	if _, r, _ := do(t, a, "files.read", `{"path":"notes/a.txt"}`, nil); r == nil || r.Rule != refusal.NotFound {
		t.Fatalf("reading a deleted file: %v, want not-found", r)
	}
}

func TestFilesReadShowsAPrefixOfLargeAndBinaryFiles(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	ctx := context.Background()
	// A multi-byte character straddles the bound: the view stops before it.
	big := strings.Repeat("a", MaxViewBytes-1) + "é" + "tail"
	mem.WriteFile(ctx, "big.txt", []byte(big))
	mem.WriteFile(ctx, "exact.txt", []byte(strings.Repeat("b", MaxViewBytes)))
	mem.WriteFile(ctx, "blob.bin", []byte{0x89, 'P', 'N', 'G', 0, 1, 2})

	v, _ := mustDo(t, a, "files.read", `{"path":"big.txt"}`, nil)
	if v["truncated"] != true || v["size"] != float64(len(big)) || len(v["text"].(string)) != MaxViewBytes-1 {
		t.Fatalf("big: truncated %v size %v text %d bytes", v["truncated"], v["size"], len(v["text"].(string)))
	}
	v, _ = mustDo(t, a, "files.read", `{"path":"exact.txt"}`, nil)
	if v["truncated"] != false || len(v["text"].(string)) != MaxViewBytes {
		t.Fatalf("exactly at the bound: truncated %v, %d bytes", v["truncated"], len(v["text"].(string)))
	}
	v, _ = mustDo(t, a, "files.read", `{"path":"blob.bin"}`, nil)
	if v["binary"] != true || v["text"] != "" {
		t.Fatalf("binary: %v", v)
	}
}

func TestFilesRefuseWhatTheRulesRefuse(t *testing.T) {
	t.Parallel()
	a, _ := memoryAPI(t)
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	tests := []struct {
		name, method, params string
		rule                 refusal.Rule
	}{
		{"escape", "files.write", `{"path":"../../evil.sh","content":"x"}`, refusal.OutsideRoot},
		{"escape inside", "files.write", `{"path":"assets/../../evil.sh","content":"x"}`, refusal.OutsideRoot},
		{"absolute", "files.read", `{"path":"/etc/passwd"}`, refusal.OutsideRoot},
		{"dotfile", "files.read", `{"path":".host-token"}`, refusal.DotfileRefused},
		{"metadata area", "files.list", `{"dir":".voicebox"}`, refusal.DotfileRefused},
		{"unknown parameter", "files.write", `{"path":"a.txt","content":"x","grant":"everything"}`, refusal.InvalidArgument},
		{"wrong type", "files.write", `{"path":3}`, refusal.InvalidArgument},
		{"root kind", "root.open", `{"kind":"ftp"}`, refusal.InvalidArgument},
		{"handle root without a handle", "root.open", `{"kind":"handle"}`, refusal.MissingArgument},
		{"unknown upload", "files.upload.chunk", `{"uploadId":"up999"}`, refusal.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, r, _ := do(t, a, tt.method, tt.params, nil); r == nil || r.Rule != tt.rule || r.Why == "" {
				t.Fatalf("%s %s: %v, want %s", tt.method, tt.params, r, tt.rule)
			}
		})
	}
}

func TestUploadsAppearOnlyWhenCommitted(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	ctx := context.Background()
	mem.WriteFile(ctx, "keep.bin", []byte("old"))

	v, _ := mustDo(t, a, "files.upload.begin", `{"path":"up.bin"}`, nil)
	id := v["uploadId"].(string)
	for i := range 3 {
		v, _ = mustDo(t, a, "files.upload.chunk", `{"uploadId":"`+id+`"}`, []byte(strings.Repeat(string(rune('a'+i)), 4)))
	}
	if v["written"] != float64(12) {
		t.Fatalf("written = %v", v["written"])
	}
	if _, err := mem.Stat(ctx, "up.bin"); err == nil {
		t.Fatal("the upload is visible before its commit")
	}
	v, _ = mustDo(t, a, "files.upload.commit", `{"uploadId":"`+id+`"}`, nil)
	if b, _ := mem.ReadFile(ctx, "up.bin"); string(b) != "aaaabbbbcccc" || v["size"] != float64(12) {
		t.Fatalf("after commit: %q, %v", b, v)
	}
	if _, r, _ := do(t, a, "files.upload.commit", `{"uploadId":"`+id+`"}`, nil); r == nil {
		t.Fatal("a second commit of the same upload was accepted")
	}

	// An aborted replacement leaves the old content.
	v, _ = mustDo(t, a, "files.upload.begin", `{"path":"keep.bin"}`, nil)
	id = v["uploadId"].(string)
	mustDo(t, a, "files.upload.chunk", `{"uploadId":"`+id+`"}`, []byte("new content"))
	mustDo(t, a, "files.upload.abort", `{"uploadId":"`+id+`"}`, nil)
	if b, _ := mem.ReadFile(ctx, "keep.bin"); string(b) != "old" {
		t.Fatalf("after abort keep.bin = %q, want the old content", b)
	}
}

func TestUploadsAreBounded(t *testing.T) {
	t.Parallel()
	a, _ := memoryAPI(t)
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	for i := range MaxUploads {
		mustDo(t, a, "files.upload.begin", `{"path":"f`+string(rune('a'+i))+`.bin"}`, nil)
	}
	if _, r, _ := do(t, a, "files.upload.begin", `{"path":"one-too-many.bin"}`, nil); r == nil || r.Rule != refusal.TooManyUploads {
		t.Fatalf("upload %d: %v, want too-many-uploads", MaxUploads+1, r)
	}
}

func TestAFailedChunkEndsTheUploadAndKeepsTheOldContent(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	ctx := context.Background()
	mem.WriteFile(ctx, "keep.bin", []byte("old"))
	mem.FailWrites(func(name string, written int64) error {
		if written > 4 {
			return errors.New("disk full")
		}
		return nil
	})
	v, _ := mustDo(t, a, "files.upload.begin", `{"path":"keep.bin"}`, nil)
	id := v["uploadId"].(string)
	if _, r, _ := do(t, a, "files.upload.chunk", `{"uploadId":"`+id+`"}`, []byte("new content")); r == nil {
		t.Fatal("a chunk the root failed to write was accepted")
	}
	mem.FailWrites(nil)
	if _, r, _ := do(t, a, "files.upload.chunk", `{"uploadId":"`+id+`"}`, []byte("more")); r == nil || r.Rule != refusal.InvalidArgument {
		t.Fatalf("a chunk after the failure: %v, want the upload gone (invalid-argument)", r)
	}
	if b, _ := mem.ReadFile(ctx, "keep.bin"); string(b) != "old" {
		t.Fatalf("keep.bin = %q after a failed upload, want the old content", b)
	}
}

// TestThePersonsWritesAreInTheHistory holds the file browser's writes to the undo history: each
// is the person's change, Undo and Redo take them back and forth, a new file never replaces one
// and an upload onto a name in create mode is refused before anything is written.
func TestThePersonsWritesAreInTheHistory(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	ctx := context.Background()
	var told int
	a.post = func(msg []byte) {
		if string(msg) == `{"type":"history"}` {
			told++
		}
	}
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	mustDo(t, a, "files.write", `{"path":"a.txt","content":"one","mode":"create"}`, nil)
	if _, r, _ := do(t, a, "files.write", `{"path":"a.txt","content":"","mode":"create"}`, nil); r == nil || r.Rule != refusal.FileExists {
		t.Fatalf("a second new file a.txt: %v, want file-exists", r)
	}
	mustDo(t, a, "files.write", `{"path":"a.txt","content":"two"}`, nil)
	mustDo(t, a, "files.move", `{"path":"a.txt","to":"b.txt"}`, nil)
	if _, r, _ := do(t, a, "files.upload.begin", `{"path":"b.txt","mode":"create"}`, nil); r == nil || r.Rule != refusal.FileExists {
		t.Fatalf("an upload in create mode onto b.txt: %v, want file-exists", r)
	}
	up, _ := mustDo(t, a, "files.upload.begin", `{"path":"b.txt","mode":"replace"}`, nil)
	id := up["uploadId"].(string)
	mustDo(t, a, "files.upload.chunk", `{"uploadId":"`+id+`"}`, []byte("three"))
	if v, _ := mustDo(t, a, "files.upload.commit", `{"uploadId":"`+id+`"}`, nil); v["undoable"] != true {
		t.Fatalf("the upload's commit = %v, want undoable", v)
	}
	mustDo(t, a, "files.delete", `{"path":"b.txt"}`, nil)

	v, _ := mustDo(t, a, "history.list", `{}`, nil)
	var got []string
	for _, e := range v["entries"].([]any) {
		m := e.(map[string]any)
		got = append(got, m["by"].(string)+" "+m["action"].(string)+" "+m["path"].(string))
	}
	want := []string{"person delete b.txt", "person write b.txt", "person move a.txt", "person write a.txt", "person write a.txt"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("history.list = %v\nwant %v", got, want)
	}
	for range 3 {
		mustDo(t, a, "history.undo", `{}`, nil)
	}
	if b, err := mem.ReadFile(ctx, "a.txt"); err != nil || string(b) != "two" {
		t.Fatalf("after three undos a.txt holds %q, %v", b, err)
	}
	mustDo(t, a, "history.redo", `{}`, nil)
	if b, err := mem.ReadFile(ctx, "b.txt"); err != nil || string(b) != "two" {
		t.Fatalf("after a redo b.txt holds %q, %v", b, err)
	}
	if told < 9 {
		t.Fatalf("the page was told of %d history changes, want one per change, undo and redo (9)", told)
	}

	// A conflict: a file takes the moved one's old place behind the history's back (moving back
	// would replace it); the page reads what undo would move back.
	mem.WriteFile(ctx, "a.txt", []byte("made elsewhere"))
	if _, r, _ := do(t, a, "history.undo", `{}`, nil); r == nil || r.Rule != refusal.UndoConflict {
		t.Fatalf("undo after an outside change: %v, want undo-conflict", r)
	}
	c, _ := mustDo(t, a, "history.conflict", `{}`, nil)
	if c["inConflict"] != true || c["current"].(map[string]any)["text"] != "two" || c["change"].(map[string]any)["action"] != "move" {
		t.Fatalf("history.conflict = %v", c)
	}
	mustDo(t, a, "history.undo", `{"resolve":"keep-current"}`, nil)
	if v, _ := mustDo(t, a, "history.list", `{}`, nil); v["undo"] != 2.0 {
		t.Fatalf("after keep-current the history = %v, want 2 changes left to undo", v)
	}
}

// TestThePersonsFoldersAreInTheHistory: the file browser's New folder and a folder's move run
// through the executor's create-folder and move-file, recorded as the person's beside the
// assistant's, and undo takes them back.
func TestThePersonsFoldersAreInTheHistory(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	ctx := context.Background()
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	if v, _ := mustDo(t, a, "files.mkdir", `{"path":"docs/drafts"}`, nil); v["created"] != true || v["undoable"] != true {
		t.Fatalf("files.mkdir = %v", v)
	}
	mustDo(t, a, "files.write", `{"path":"docs/drafts/a.txt","content":"a"}`, nil)
	if v, _ := mustDo(t, a, "files.move", `{"path":"docs","to":"archive/docs"}`, nil); v["kind"] != "folder" || v["undoable"] != true {
		t.Fatalf("files.move of a folder = %v", v)
	}
	v, _ := mustDo(t, a, "history.list", `{}`, nil)
	var got []string
	for _, e := range v["entries"].([]any) {
		m := e.(map[string]any)
		got = append(got, fmt.Sprint(m["by"], " ", m["action"], " ", m["path"], " ", m["to"], " ", m["created"]))
	}
	want := []string{"person move docs archive/docs false", "person write docs/drafts/a.txt <nil> true", "person mkdir docs/drafts <nil> false"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("history.list = %v\nwant %v", got, want)
	}
	mustDo(t, a, "history.undo", `{}`, nil)
	if b, err := mem.ReadFile(ctx, "docs/drafts/a.txt"); err != nil || string(b) != "a" {
		t.Fatalf("after undoing the move docs/drafts/a.txt holds %q, %v", b, err)
	}
}

// TestTheHistoryDoorsRefuseBadInput holds the page's new doors (move, create, the history's
// methods, upload modes) to the same rules as every other: a path outside the root or to a dot
// name, an unknown key or value, each refused by name and changing nothing.
func TestTheHistoryDoorsRefuseBadInput(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	ctx := context.Background()
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	mustDo(t, a, "files.write", `{"path":"a.txt","content":"a"}`, nil)
	tests := []struct {
		name, method, params string
		rule                 refusal.Rule
	}{
		{"move out of the root", "files.move", `{"path":"a.txt","to":"../a.txt"}`, refusal.OutsideRoot},
		{"move to a dot name", "files.move", `{"path":"a.txt","to":".voicebox/history/x"}`, refusal.DotfileRefused},
		{"move from a dot name", "files.move", `{"path":".voicebox/audit","to":"x"}`, refusal.DotfileRefused},
		{"move onto itself", "files.move", `{"path":"a.txt","to":"a.txt"}`, refusal.FileExists},
		{"move without a target", "files.move", `{"path":"a.txt"}`, refusal.OutsideRoot},
		{"move with an unknown key", "files.move", `{"path":"a.txt","to":"b.txt","force":true}`, refusal.InvalidArgument},
		{"a write mode that is none", "files.write", `{"path":"b.txt","content":"","mode":"append"}`, refusal.InvalidArgumentEnum},
		{"an upload mode that is none", "files.upload.begin", `{"path":"b.txt","mode":"append"}`, refusal.InvalidArgumentEnum},
		{"an upload to a dot name", "files.upload.begin", `{"path":".env","mode":"create"}`, refusal.DotfileRefused},
		{"a resolution that is none", "history.undo", `{"resolve":"keep-mine"}`, refusal.InvalidArgumentEnum},
		{"undo with an unknown key", "history.undo", `{"steps":5}`, refusal.InvalidArgument},
		{"redo with arguments", "history.redo", `{"steps":5}`, refusal.InvalidArgument},
		{"a history list with arguments", "history.list", `{"all":true}`, refusal.InvalidArgument},
	}
	for _, tt := range tests {
		if _, r, _ := do(t, a, tt.method, tt.params, nil); r == nil || r.Rule != tt.rule {
			t.Errorf("%s: %s %s answered %v, want %s", tt.name, tt.method, tt.params, r, tt.rule)
		}
	}
	if b, err := mem.ReadFile(ctx, "a.txt"); err != nil || string(b) != "a" {
		t.Fatalf("after the refusals a.txt holds %q, %v", b, err)
	}
	if _, err := mem.Stat(ctx, "b.txt"); err == nil {
		t.Fatal("a refused write made b.txt")
	}
	if v, _ := mustDo(t, a, "history.list", `{}`, nil); v["undo"] != 1.0 {
		t.Fatalf("after the refusals the history is %v, want the one write", v)
	}
}
