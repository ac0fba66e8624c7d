//go:build js && voicebox_worker

package opfs

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
)

// TestWorkerRootsReadThroughSyncHandles shows that in the page's worker the OPFS root takes the
// fast path the design asks for, so the conformance run there covers the pool.
func TestWorkerRootsReadThroughSyncHandles(t *testing.T) {
	r, err := OpenOPFS(context.Background(), testArea)
	if err != nil {
		t.Fatal(err)
	}
	if !r.UsesSyncHandles() {
		t.Fatal("in a dedicated worker the OPFS root does not use sync access handles")
	}
	if FromHandle(r.Handle()).UsesSyncHandles() {
		t.Fatal("a handle root uses sync access handles, which only OPFS offers")
	}
}

// TestWorkerPrefixReadsAroundTheScratchBuffer: a pooled read of every size around the kept
// scratch buffer's (where the pool stops trusting the read's count as the size and asks for it),
// with every kind of limit, returns the file's first bytes and its whole size: through
// engine-io.js into Go's memory (as in the page's worker), and the generic way without it.
func TestWorkerPrefixReadsAroundTheScratchBuffer(t *testing.T) {
	for _, withIO := range []bool{true, false} {
		t.Run("engine-io="+strconv.FormatBool(withIO), func(t *testing.T) {
			if !withIO {
				withoutEngineIO(t)
			}
			testPrefixReads(t, withIO)
		})
	}
}

// withoutEngineIO takes engine-io.js's self.voiceboxIO away until the test ends: roots opened
// meanwhile read the generic way.
func withoutEngineIO(t *testing.T) {
	global := jsutil.Global()
	io, err := global.Get("voiceboxIO")
	if err != nil || io.IsUndefined() {
		t.Fatal("the worker runner set no voiceboxIO, as the page's worker.js does")
	}
	global.Delete("voiceboxIO")
	t.Cleanup(func() { global.Set("voiceboxIO", io) })
}

func testPrefixReads(t *testing.T, withIO bool) {
	ctx := context.Background()
	r, err := OpenOPFS(ctx, testArea)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var grown [][]byte // keeps the wasm memory grown, so a view made before a read would be stale
	content := make([]byte, 3*readScratchBytes)
	for i := range content {
		content[i] = byte(i*7 + i/251)
	}
	for _, size := range []int{0, 1, 4096, readScratchBytes - 1, readScratchBytes, readScratchBytes + 1, 3 * readScratchBytes} {
		name := "prefix-" + strconv.Itoa(size) + ".bin"
		if err := r.WriteFile(ctx, name, content[:size]); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadFile(ctx, name); err != nil || !bytes.Equal(got, content[:size]) {
			t.Fatalf("size %d: ReadFile read %d bytes, %v", size, len(got), err)
		}
		if r.pool.hasIO != withIO {
			t.Fatalf("the pool read through engine-io.js: %v, want %v", r.pool.hasIO, withIO)
		}
		grown = append(grown, make([]byte, 8<<20)) // Go's heap grows: the memory's ArrayBuffer is replaced
		for _, limit := range []int{0, 10, readScratchBytes - 1, readScratchBytes, readScratchBytes + 1, 4 * readScratchBytes} {
			got, gotSize, err := r.ReadFilePrefix(ctx, name, limit)
			if err != nil {
				t.Fatalf("size %d, limit %d: %v", size, limit, err)
			}
			want := content[:size]
			if limit < size {
				want = want[:limit]
			}
			if gotSize != int64(size) || !bytes.Equal(got, want) {
				t.Fatalf("size %d, limit %d: read %d bytes (equal %v) and size %d", size, limit, len(got), bytes.Equal(got, want), gotSize)
			}
		}
		if err := r.Remove(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	runtime.KeepAlive(grown)
}

// TestWorkerAppendsThroughTheSyncHandle: AppendFile creates a file, adds to its end through the
// sync handle the pool keeps (a read in between uses the same handle), and a replace and a
// removal of the file afterwards work (they close that handle first).
func TestWorkerAppendsThroughTheSyncHandle(t *testing.T) {
	ctx := context.Background()
	r, err := OpenOPFS(ctx, testArea)
	if err != nil {
		t.Fatal(err)
	}
	const name = "append.jsonl"
	want := []byte{}
	for i := range 5 {
		line := []byte(`{"n":` + strconv.Itoa(i) + "}\n")
		if err := r.AppendFile(ctx, name, line); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		want = append(want, line...)
		if got, err := r.ReadFile(ctx, name); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after append %d the file reads %q, %v; want %q", i, got, err, want)
		}
	}
	if err := r.WriteFile(ctx, name, []byte("replaced\n")); err != nil {
		t.Fatalf("replacing an appended file: %v", err)
	}
	if err := r.AppendFile(ctx, name, []byte("more\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadFile(ctx, name); err != nil || string(got) != "replaced\nmore\n" {
		t.Fatalf("the file reads %q, %v", got, err)
	}
	if err := r.Remove(ctx, name); err != nil {
		t.Fatalf("removing an appended file: %v", err)
	}
	// A root without sync handles leaves the append to fsroot.Append's rewrite.
	if err := FromHandle(r.Handle()).AppendFile(ctx, name, []byte("x")); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("a handle root's AppendFile = %v; want errors.ErrUnsupported", err)
	}
}

// TestWorkerAuditAppendsAndMendsATornLine: the executor's audit log over OPFS in the worker (its
// segments appended through sync handles) keeps every batch in order, continues after reopening,
// and after a crash left its last line cut short loads every earlier record and starts the next
// on a line of its own.
func TestWorkerAuditAppendsAndMendsATornLine(t *testing.T) {
	ctx := context.Background()
	r, err := OpenOPFS(ctx, testArea+"/audit-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	log, err := executor.OpenRootAudit(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for batch := range 3 {
		var recs []executor.Record
		for i := range 4 {
			id := "c" + strconv.Itoa(batch*4+i)
			recs = append(recs, executor.Record{CallID: id, Tool: "now", OK: true})
			want = append(want, id)
		}
		if err := log.AppendAll(ctx, recs); err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
	}
	ids := func(log *executor.RootAudit) []string {
		recs, err := log.Records(ctx)
		if err != nil {
			t.Fatalf("Records: %v", err)
		}
		var got []string
		for _, rec := range recs {
			got = append(got, rec.CallID)
		}
		return got
	}
	if got := ids(log); !slices.Equal(got, want) {
		t.Fatalf("the log reads %v; want %v", got, want)
	}
	meta, _ := r.Meta(ctx)
	seg := executor.AuditDir + "/00000001.jsonl"
	data, err := meta.ReadFile(ctx, seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.WriteFile(ctx, seg, append(data, `{"time":"2026-12-06T00:00:00Z","callId":"lo`...)); err != nil {
		t.Fatal(err)
	}
	again, err := executor.OpenRootAudit(ctx, r)
	if err != nil {
		t.Fatalf("reopening a log whose last line is torn: %v", err)
	}
	if got := ids(again); !slices.Equal(got, want) {
		t.Fatalf("with a torn last line the log reads %v; want %v", got, want)
	}
	if err := again.Append(ctx, executor.Record{CallID: "after", Tool: "now", OK: true}); err != nil {
		t.Fatal(err)
	}
	if got := ids(again); !slices.Equal(got, append(want, "after")) {
		t.Fatalf("after the next append the log reads %v", got)
	}
}
