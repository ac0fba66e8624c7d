package executor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
