package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/executor/executortest"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestAssistantPrimitivesOnMemory(t *testing.T) {
	t.Parallel()
	executortest.Run(t, func(t *testing.T) fsroot.Root { return fsroot.NewMemory() }, executortest.Options{})
}

// FuzzHistoryRecords feeds the history whatever its record files might hold (a half-written
// record, another version's, damage) and holds it to what it promises whatever they hold: no
// panic, list-history, undo-last and redo-last each answer once, and nothing outside the file
// the record names (here.txt) is ever written.
func FuzzHistoryRecords(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","action":"write","path":"here.txt","existed":true,"size":3,"after":"x","before":"y"}`), []byte("old"), []byte("new"))
	f.Add([]byte(`{"seq":1,"action":"move","path":"here.txt","to":"../out.txt","existed":true,"undone":true}`), []byte(""), []byte(""))
	f.Add([]byte(`{"seq":1,"action":"delete","path":".voicebox/x","undone":true,"after":"z","afterSize":-5}`), []byte{0xff}, []byte{0})
	f.Add([]byte(`not json`), []byte(nil), []byte(nil))
	f.Fuzz(func(t *testing.T, record, before, after []byte) {
		ctx := context.Background()
		root := fsroot.NewMemory()
		root.WriteFile(ctx, "here.txt", []byte("current"))
		meta, err := root.Meta(ctx)
		if err != nil {
			t.Fatal(err)
		}
		meta.MkdirAll(ctx, "history")
		meta.WriteFile(ctx, "history/000000000001.json", record)
		meta.WriteFile(ctx, "history/000000000001.bin", before)
		meta.WriteFile(ctx, "history/000000000001.after", after)
		h, err := executor.OpenHistory(ctx, root, executor.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e := executor.New(root, executor.Options{History: h})
		for _, prim := range []string{"list-history", "undo-last", "redo-last", "undo-last", "list-history"} {
			out, err := e.Execute(ctx, wire.Call{CallID: "c", Tool: prim, DescriptorID: executor.BuiltinDescriptor, Args: json.RawMessage(`{}`), BoundsEcho: json.RawMessage(`{}`)})
			if (err == nil) == (out == nil) {
				t.Fatalf("%s answered %s and %v: want exactly one", prim, out, err)
			}
		}
		entries, err := root.ReadDir(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if en.Name != "here.txt" {
				t.Fatalf("a damaged history made %q", en.Name)
			}
		}
	})
}

// blindArea is a history area whose Stat fails with err while err is set: the state of an OPFS
// area whose calls were cancelled when the page's relay went away.
type blindArea struct {
	fsroot.Root
	err atomic.Pointer[error]
}

func (a *blindArea) Stat(ctx context.Context, name string) (fsroot.Entry, error) {
	if err := a.err.Load(); err != nil {
		return fsroot.Entry{}, *err
	}
	return a.Root.Stat(ctx, name)
}

// TestAHistoryThatCannotLookAnswersOnce holds keep to its loop rule: a history number whose
// files cannot be looked at is no number to pass over, so a write whose area fails (a cancelled
// context, a disk error) answers once, history-failed, and leaves the file and the history as
// they were; once the area works again the next write is kept and undone as usual. It spun for
// ever before (each failed Stat read as "taken").
func TestAHistoryThatCannotLookAnswersOnce(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{context.Canceled, errors.New("input/output error")} {
		t.Run(cause.Error(), func(t *testing.T) {
			t.Parallel()
			root := fsroot.NewMemory()
			write(t, root, "notes.md", "kept")
			meta, err := root.Meta(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			area := &blindArea{Root: meta}
			h := executor.NewHistory(area, executor.HistoryOptions{})
			e := executor.New(root, executor.Options{History: h})
			mustRun(t, e, "write-file", `{"path":"notes.md","content":"first"}`)

			area.err.Store(&cause)
			answered := make(chan error, 1)
			go func() {
				_, err := run(t, e, "write-file", `{"path":"notes.md","content":"lost"}`)
				answered <- err
			}()
			select {
			case err := <-answered:
				if refusal.RuleOf(err) != refusal.HistoryFailed || !strings.Contains(err.Error(), cause.Error()) {
					t.Fatalf("a write whose history cannot look answered %v; want history-failed saying %v", err, cause)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a write whose history cannot look never answered")
			}
			if b, _ := root.ReadFile(t.Context(), "notes.md"); string(b) != "first" {
				t.Fatalf("notes.md holds %q after the refused write; want first", b)
			}

			area.err.Store(nil)
			mustRun(t, e, "write-file", `{"path":"notes.md","content":"second"}`)
			mustRun(t, e, "undo-last", `{}`)
			if b, _ := root.ReadFile(t.Context(), "notes.md"); string(b) != "first" {
				t.Fatalf("undo after the area healed left %q; want first", b)
			}
		})
	}
}
