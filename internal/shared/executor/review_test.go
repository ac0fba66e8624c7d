package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func runPrim(t *testing.T, e *executor.Executor, tool string, args map[string]string) (map[string]any, error) {
	t.Helper()
	if args == nil {
		args = map[string]string{}
	}
	raw, _ := json.Marshal(args)
	out, err := e.Execute(context.Background(), wire.Call{CallID: "c", Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: raw, BoundsEcho: json.RawMessage(`{}`)})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s observed %s, not an object", tool, out)
	}
	return m, nil
}

func put(t *testing.T, root fsroot.Root, name, content string) {
	t.Helper()
	if err := root.WriteFile(context.Background(), name, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

func holds(t *testing.T, root fsroot.Root, name string) string {
	t.Helper()
	b, err := root.ReadFile(context.Background(), name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

// TestUndoNeverRestoresAnotherChangesBytes: two histories over one area (two tabs on one
// folder, each taking its turn as the executor) both loaded before either changed anything.
// Whatever they do, an undo puts back the file's own earlier bytes or refuses; it never writes
// the earlier version of another file into it.
func TestUndoNeverRestoresAnotherChangesBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := fsroot.NewMemory()
	put(t, root, "x.txt", "x before")
	put(t, root, "y.txt", "y before")
	open := func() (*executor.History, *executor.Executor) {
		h, err := executor.OpenHistory(ctx, root, executor.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Len(ctx); err != nil { // loaded now, before the other one writes
			t.Fatal(err)
		}
		return h, executor.New(root, executor.Options{History: h})
	}
	_, a := open()
	_, b := open()
	if _, err := runPrim(t, a, "write-file", map[string]string{"path": "x.txt", "content": "x after"}); err != nil {
		t.Fatal(err)
	}
	if _, err := runPrim(t, b, "write-file", map[string]string{"path": "y.txt", "content": "y after"}); err != nil {
		t.Fatal(err)
	}
	_, err := runPrim(t, a, "undo-last", nil)
	switch got := holds(t, root, "x.txt"); {
	case got == "y before":
		t.Fatalf("undo wrote y.txt's earlier version into x.txt (undo answered %v)", err)
	case err == nil && got != "x before":
		t.Fatalf("undo answered ok but x.txt holds %q", got)
	case err != nil && got != "x after":
		t.Fatalf("undo refused (%v) but x.txt holds %q", err, got)
	}
	_, err = runPrim(t, b, "undo-last", nil)
	switch got := holds(t, root, "y.txt"); {
	case got == "x before":
		t.Fatalf("undo wrote x.txt's earlier version into y.txt (undo answered %v)", err)
	case err == nil && got != "y before":
		t.Fatalf("undo answered ok but y.txt holds %q", got)
	}
}

// TestGrepBoundsTheFoldersItReads: a workspace of many empty folders (or, on a disk, folder
// links that lead back up) cannot keep a search going; it stops at its bound, truncated.
func TestGrepBoundsTheFoldersItReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := fsroot.NewMemory()
	for i := range executor.MaxGrepDirs + 10 {
		if err := root.MkdirAll(ctx, fmt.Sprintf("a/%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	put(t, root, "b.txt", "milk")
	obs, err := runPrim(t, executor.New(root, executor.Options{}), "grep-files", map[string]string{"query": "milk"})
	if err != nil {
		t.Fatal(err)
	}
	if obs["truncated"] != true || obs["count"] != 0.0 {
		t.Fatalf("grep over %d folders observed %v, want it stopped and truncated", executor.MaxGrepDirs+10, obs)
	}
}

// TestGrepBoundsItsTime: a search stops, truncated, once it has run executor.MaxGrepDuration by the
// executor's clock (a fake one here, which moves a second at every reading).
func TestGrepBoundsItsTime(t *testing.T) {
	t.Parallel()
	root := fsroot.NewMemory()
	for i := range 100 {
		put(t, root, fmt.Sprintf("f%03d.txt", i), "milk")
	}
	var ticks atomic.Int64
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) }
	obs, err := runPrim(t, executor.New(root, executor.Options{Clock: clock}), "grep-files", map[string]string{"query": "milk"})
	if err != nil {
		t.Fatal(err)
	}
	if obs["truncated"] != true || obs["filesSearched"].(float64) >= 100 {
		t.Fatalf("a search over its time observed truncated %v after %v files", obs["truncated"], obs["filesSearched"])
	}
	if refusal.RuleOf(err) != "" {
		t.Fatal(err)
	}
}

// TestUndoRestoresOnlyTheKeptBytes: a content file that is no longer what its record kept (written
// over, damaged) is never restored; the record is dropped, so the changes before it can still be
// undone.
func TestUndoRestoresOnlyTheKeptBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := fsroot.NewMemory()
	put(t, root, "x.txt", "x before")
	h, err := executor.OpenHistory(ctx, root, executor.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := executor.New(root, executor.Options{History: h})
	for _, content := range []string{"x middle", "x after"} {
		if _, err := runPrim(t, e, "write-file", map[string]string{"path": "x.txt", "content": content}); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := root.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	put(t, meta, "history/000000000002.bin", "not what was kept")
	if _, err := runPrim(t, e, "undo-last", nil); refusal.RuleOf(err) != refusal.HistoryFailed {
		t.Fatalf("undo over a changed content file answered %v", err)
	}
	if got := holds(t, root, "x.txt"); got != "x after" {
		t.Fatalf("x.txt holds %q", got)
	}
	if _, err := runPrim(t, e, "undo-last", nil); err == nil || refusal.RuleOf(err) != refusal.UndoConflict {
		t.Fatalf("the undo before it answered %v, want undo-conflict (x.txt is not what that change left)", err)
	}
}

// TestUndoDropsAChangeThatIsNotInEffect: a record whose change never happened (the page or relay
// stopped between writing the record and making the change, which leaves the file as it was
// before) is dropped at the first undo, which says so and changes nothing; the next undo reaches
// the change before it instead of meeting the same conflict for good.
func TestUndoDropsAChangeThatIsNotInEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := fsroot.NewMemory()
	put(t, root, "a.txt", "a before")
	put(t, root, "b.txt", "b before")
	h, err := executor.OpenHistory(ctx, root, executor.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := executor.New(root, executor.Options{History: h})
	runPrim(t, e, "write-file", map[string]string{"path": "a.txt", "content": "a after"})
	runPrim(t, e, "write-file", map[string]string{"path": "b.txt", "content": "b after"})
	runPrim(t, e, "write-file", map[string]string{"path": "c.txt", "content": "c created"})
	// The state a stop between record and change leaves: the files as they were before.
	put(t, root, "b.txt", "b before")
	if err := root.Remove(ctx, "c.txt"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := runPrim(t, e, "undo-last", nil); refusal.RuleOf(err) != refusal.UndoConflict {
			t.Fatalf("undo of a change not in effect answered %v", err)
		}
	}
	if got := holds(t, root, "b.txt"); got != "b before" {
		t.Fatalf("b.txt holds %q", got)
	}
	if _, err := runPrim(t, e, "undo-last", nil); err != nil {
		t.Fatalf("the undo after them answered %v", err)
	}
	if got := holds(t, root, "a.txt"); got != "a before" {
		t.Fatalf("a.txt holds %q", got)
	}
	if n, _ := h.Len(ctx); n != 0 {
		t.Fatalf("the history still holds %d changes", n)
	}
}
