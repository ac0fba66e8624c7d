package executor_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/shared/executor"
	"github.com/voicebox-go/voicebox/shared/executor/executortest"
	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/wire"
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
