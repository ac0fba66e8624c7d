package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkEngineReadsAFile is one files.read of a 4 KiB file through the Engine's call path
// (decode the params, check the path, read through the executor, shape the view) on a memory
// root: the engine's own cost, without the worker's postMessage or OPFS.
func BenchmarkEngineReadsAFile(b *testing.B) {
	a, _ := memoryAPI(b)
	mustDo(b, a, "root.open", `{"kind":"opfs"}`, nil)
	content, _ := json.Marshal(strings.Repeat("x", 4<<10))
	mustDo(b, a, "files.write", `{"path":"note.txt","content":`+string(content)+`}`, nil)
	req := request{Method: "files.read", Params: json.RawMessage(`{"path":"note.txt"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ans, _ := a.call(ctx, 1, req); !ans.OK {
			b.Fatalf("files.read refused: %s", ans.Why)
		}
	}
}
