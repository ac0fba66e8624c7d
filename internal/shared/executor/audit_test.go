package executor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestAuditRecordsEveryCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := fsroot.NewMemory()
	log, err := executor.OpenRootAudit(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	e := executor.New(root, executor.Options{Audit: log, Clock: func() time.Time { return fixed }})
	calls := []struct{ tool, args string }{
		{"write-file", `{"path":"a.txt","content":"secret words"}`},
		{"read-file", `{"path":"a.txt"}`},
		{"read-file", `{"path":"../../evil.sh"}`},
		{"list-files", `{}`},
		{"now", `{}`},
		{"rm", `{}`},
	}
	for i, c := range calls {
		cl := call(c.tool, c.args)
		cl.CallID = fmt.Sprint("c", i)
		e.Execute(ctx, cl)
	}
	recs, err := log.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []executor.Record{
		{CallID: "c0", Tool: "write-file", Primitive: executor.WriteFile, Path: "a.txt", OK: true, Bytes: 12},
		{CallID: "c1", Tool: "read-file", Primitive: executor.ReadFile, Path: "a.txt", OK: true, Bytes: 12},
		{CallID: "c2", Tool: "read-file", Primitive: executor.ReadFile, Path: "../../evil.sh", Refused: refusal.OutsideRoot},
		{CallID: "c3", Tool: "list-files", Primitive: executor.ListFiles, OK: true, Bytes: 1},
		{CallID: "c4", Tool: "now", Primitive: executor.Now, OK: true},
		{CallID: "c5", Tool: "rm", Primitive: "rm", Refused: refusal.UnknownTool},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records; want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		w.Time, w.DescriptorID = fixed, "files"
		if recs[i] != w {
			t.Errorf("record %d = %+v; want %+v", i, recs[i], w)
		}
	}
	// The tools cannot reach it, and the workspace does not show it.
	if _, err := run(t, e, "read-file", `{"path":".voicebox/audit/00000001.jsonl"}`); refusal.RuleOf(err) != refusal.DotfileRefused {
		t.Errorf("reading the audit log through the executor = %v; want dotfile-refused", err)
	}
	if got := mustRun(t, e, "list-files", `{}`); got["count"] != 1.0 {
		t.Errorf("the workspace lists %v", got["entries"])
	}
	// Content never reaches the log.
	meta, _ := root.Meta(ctx)
	seg, err := meta.ReadFile(ctx, "audit/00000001.jsonl")
	if err != nil || len(seg) == 0 || bytes.Contains(seg, []byte("secret words")) {
		t.Errorf("segment = %q, %v; want records without content", seg, err)
	}
}

func TestAuditSegmentsRollAndPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	meta := fsroot.NewMemory()
	log, err := executor.OpenAudit(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	executor.ShrinkSegments(log, 300, 3)
	for i := range 20 {
		if err := log.Append(ctx, executor.Record{CallID: fmt.Sprint("c", i), Tool: "now", OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := meta.ReadDir(ctx, executor.AuditDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d segments kept; want 3: %+v", len(entries), entries)
	}
	for _, e := range entries {
		if e.Size > 300 {
			t.Errorf("segment %s is %d bytes, over the bound", e.Name, e.Size)
		}
	}
	recs, err := log.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || recs[len(recs)-1].CallID != "c19" {
		t.Fatalf("records = %+v; want the newest last", recs)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i-1].CallID >= recs[i].CallID && len(recs[i-1].CallID) >= len(recs[i].CallID) {
			t.Errorf("records out of order: %s before %s", recs[i-1].CallID, recs[i].CallID)
		}
	}
	// Reopening continues where the log stopped.
	again, err := executor.OpenAudit(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Append(ctx, executor.Record{CallID: "c20", Tool: "now", OK: true}); err != nil {
		t.Fatal(err)
	}
	recs2, _ := again.Records(ctx)
	if len(recs2) < len(recs) || recs2[len(recs2)-1].CallID != "c20" {
		t.Errorf("after reopening: %d records, last %+v", len(recs2), recs2[len(recs2)-1])
	}
}

type failingAudit struct{}

func (failingAudit) Append(context.Context, executor.Record) error { return errors.New("full") }

func TestAuditFailureKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	e, _ := newExec(t, executor.Options{Audit: failingAudit{}})
	if got := mustRun(t, e, "write-file", `{"path":"a","content":"x"}`); got["bytes"] != 1.0 {
		t.Errorf("= %v", got)
	}
	if e.AuditFailures() != 1 {
		t.Errorf("AuditFailures = %d; want 1", e.AuditFailures())
	}
}

func TestAuditNeedsAMetadataArea(t *testing.T) {
	t.Parallel()
	if _, err := executor.OpenRootAudit(context.Background(), brokenRoot{}); err == nil {
		t.Errorf("OpenRootAudit on a root without Metadata succeeded")
	}
}

// TestAuditBatchesMatchSingleAppends shows AppendAll keeps what one Append per record keeps,
// across segment rollovers, with fewer rewrites.
func TestAuditBatchesMatchSingleAppends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	recs := make([]executor.Record, 25)
	for i := range recs {
		recs[i] = executor.Record{CallID: fmt.Sprintf("c%02d", i), Tool: "now", OK: true}
	}
	one, batched := fsroot.NewMemory(), fsroot.NewMemory()
	a, _ := executor.OpenAudit(ctx, one)
	b, _ := executor.OpenAudit(ctx, batched)
	executor.ShrinkSegments(a, 300, 4)
	executor.ShrinkSegments(b, 300, 4)
	for _, r := range recs {
		if err := a.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AppendAll(ctx, recs[:7]); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendAll(ctx, recs[7:]); err != nil {
		t.Fatal(err)
	}
	got, _ := b.Records(ctx)
	want, _ := a.Records(ctx)
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("batched kept %d records, single appends %d", len(got), len(want))
	}
	for i := range got {
		if got[i].CallID != want[i].CallID {
			t.Fatalf("record %d: batched %s, single %s", i, got[i].CallID, want[i].CallID)
		}
	}
	ea, _ := one.ReadDir(ctx, executor.AuditDir)
	eb, _ := batched.ReadDir(ctx, executor.AuditDir)
	if len(ea) != len(eb) || len(eb) != 4 {
		t.Fatalf("segments: single %d, batched %d, want 4 each", len(ea), len(eb))
	}
	for i := range eb {
		if eb[i].Size > 300 || eb[i].Size != ea[i].Size {
			t.Errorf("segment %s: %d bytes batched, %d single", eb[i].Name, eb[i].Size, ea[i].Size)
		}
	}
}

// appendingRoot is a memory root that appends in place (fsroot.Appender), counts the whole-file
// rewrites it is asked for, and can tear its next append: write the first half of it, then fail,
// as a crash or a full disk part way through a write would leave the file.
type appendingRoot struct {
	*fsroot.MemRoot
	rewrites int
	tearNext bool
}

func (r *appendingRoot) WriteFile(ctx context.Context, name string, data []byte) error {
	r.rewrites++
	return r.MemRoot.WriteFile(ctx, name, data)
}

func (r *appendingRoot) AppendFile(ctx context.Context, name string, data []byte) error {
	old, err := r.MemRoot.ReadFile(ctx, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if r.tearNext {
		r.tearNext = false
		r.MemRoot.WriteFile(ctx, name, append(old, data[:len(data)/2]...))
		return errors.New("the disk went away part way")
	}
	return r.MemRoot.WriteFile(ctx, name, append(old, data...))
}

func auditIDs(t *testing.T, log *executor.RootAudit) []string {
	t.Helper()
	recs, err := log.Records(context.Background())
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.CallID)
	}
	return ids
}

// TestAuditAppendsInPlace shows a root that appends in place is never asked to rewrite a
// segment: each batch costs its own bytes, not the segment's.
func TestAuditAppendsInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := &appendingRoot{MemRoot: fsroot.NewMemory()}
	log, err := executor.OpenAudit(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	executor.ShrinkSegments(log, 300, 3)
	for i := range 20 {
		if err := log.Append(ctx, executor.Record{CallID: fmt.Sprintf("c%02d", i), Tool: "now", OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	if root.rewrites != 0 {
		t.Errorf("%d whole-segment rewrites for 20 appends; want 0", root.rewrites)
	}
	ids := auditIDs(t, log)
	if len(ids) == 0 || ids[len(ids)-1] != "c19" || !slices.IsSorted(ids) {
		t.Errorf("records %v; want the newest last, in order", ids)
	}
	entries, _ := root.ReadDir(ctx, executor.AuditDir)
	if len(entries) != 3 {
		t.Errorf("%d segments kept; want 3", len(entries))
	}
	for _, e := range entries {
		if e.Size > 300 {
			t.Errorf("segment %s is %d bytes, over the bound", e.Name, e.Size)
		}
	}
}

// TestAuditTornAppendLosesOneRecordWhole tears an append part way: the records before it all
// load, the torn one is lost whole (never half read, never an error), and the next append starts
// on a line of its own.
func TestAuditTornAppendLosesOneRecordWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := &appendingRoot{MemRoot: fsroot.NewMemory()}
	log, err := executor.OpenAudit(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := log.Append(ctx, executor.Record{CallID: id, Tool: "now", OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	root.tearNext = true
	if err := log.Append(ctx, executor.Record{CallID: "torn", Tool: "now", OK: true}); err == nil {
		t.Fatal("the torn append reported no error")
	}
	if got := auditIDs(t, log); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after the torn append the log reads %v; want [a b]", got)
	}
	if err := log.Append(ctx, executor.Record{CallID: "c", Tool: "now", OK: true}); err != nil {
		t.Fatal(err)
	}
	if got := auditIDs(t, log); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("after the next append the log reads %v; want [a b c]", got)
	}
	seg, _ := root.ReadFile(ctx, "audit/00000001.jsonl")
	if n := bytes.Count(seg, []byte("\n")); n != 3 || seg[len(seg)-1] != '\n' || bytes.Contains(seg, []byte("torn")) {
		t.Errorf("the segment holds %d lines, ending %q; want three whole records:\n%s", n, seg[len(seg)-1], seg)
	}
}

// TestAuditOpensASegmentWithATornLastLine is a crash mid-append found on the next start: the
// segment's last line is cut short. Every earlier record loads, and the next record starts on a
// new line.
func TestAuditOpensASegmentWithATornLastLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, root := range []fsroot.Root{fsroot.NewMemory(), &appendingRoot{MemRoot: fsroot.NewMemory()}} {
		first, err := executor.OpenAudit(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		if err := first.AppendAll(ctx, []executor.Record{{CallID: "a", Tool: "now"}, {CallID: "b", Tool: "now"}}); err != nil {
			t.Fatal(err)
		}
		seg, _ := root.ReadFile(ctx, "audit/00000001.jsonl")
		cut := append(slices.Clone(seg), `{"time":"2026-12-06T00:00:00Z","callId":"lo`...)
		if err := root.WriteFile(ctx, "audit/00000001.jsonl", cut); err != nil {
			t.Fatal(err)
		}
		log, err := executor.OpenAudit(ctx, root)
		if err != nil {
			t.Fatalf("%T: opening a segment with a torn last line: %v", root, err)
		}
		if got := auditIDs(t, log); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("%T: the log reads %v; want [a b]", root, got)
		}
		if err := log.Append(ctx, executor.Record{CallID: "c", Tool: "now"}); err != nil {
			t.Fatal(err)
		}
		if got := auditIDs(t, log); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("%T: after an append the log reads %v; want [a b c]", root, got)
		}
	}
}
