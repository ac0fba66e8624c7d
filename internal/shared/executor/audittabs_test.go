package executor_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// TestTwoAuditsOfOneAreaKeepItBounded: two tabs of one browser storage each run a RootAudit over
// the one metadata area, each counting the current segment alone. The tab that waits appends
// seldom: while the holder fills keep segments and more, its own idea of the current segment
// falls behind, and its next record starts that old segment again (after the holder removed
// it). The next segment either starts removes every segment past keep, that one too, so the log
// stays within keep segments (and one more until then), however often it happens; each segment
// stays within twice the bound (each tab's count alone), and no record is lost.
func TestTwoAuditsOfOneAreaKeepItBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	meta := fsroot.NewMemory()
	const segBytes, keep = 300, 3
	holder, err := executor.OpenAudit(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := executor.OpenAudit(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	executor.ShrinkSegments(holder, segBytes, keep)
	executor.ShrinkSegments(waiting, segBytes, keep)
	rec := func(id string) executor.Record { return executor.Record{CallID: id, Tool: "now", OK: true} }
	n := 0
	for round := range 4 {
		if err := waiting.Append(ctx, rec(fmt.Sprintf("w%d", round))); err != nil {
			t.Fatal(err)
		}
		for range 4 * keep * 3 { // well past keep segments of the holder's
			if err := holder.Append(ctx, rec(fmt.Sprintf("h%d", n))); err != nil {
				t.Fatal(err)
			}
			n++
		}
		entries, err := meta.ReadDir(ctx, executor.AuditDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > keep+1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name)
			}
			t.Fatalf("round %d: %d segments kept, want at most %d: %v", round, len(entries), keep+1, names)
		}
		for _, e := range entries {
			if e.Size > 2*segBytes {
				t.Errorf("round %d: segment %s is %d bytes, past twice the bound", round, e.Name, e.Size)
			}
		}
	}
	recs, err := holder.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || recs[len(recs)-1].CallID != fmt.Sprintf("h%d", n-1) {
		t.Fatalf("the newest record is not last: %+v", recs[len(recs)-1])
	}
}

// listCounting is a root that counts its listings: ReadDir's, and the names-only ones of a
// root that has them (fsroot.NameLister).
type listCounting struct {
	fsroot.Root
	full, names int
}

func (l *listCounting) ReadDir(ctx context.Context, name string) ([]fsroot.Entry, error) {
	l.full++
	return l.Root.ReadDir(ctx, name)
}

func (l *listCounting) ReadDirNames(ctx context.Context, name string) ([]fsroot.Entry, error) {
	l.names++
	es, err := l.Root.ReadDir(ctx, name)
	for i := range es {
		es[i].Size = 0 // what a names-only listing gives
	}
	return es, err
}

// TestAuditSegmentsListedByNameOnly: opening the audit log and starting each segment list the
// segments, and they need only the names: on a root that can list names alone, no full listing
// (in OPFS, a round trip to the browser a file: 64 of them took 74 ms where the names took 10),
// and the log is kept within its bound as before.
func TestAuditSegmentsListedByNameOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	meta := &listCounting{Root: fsroot.NewMemory()}
	const segBytes, keep = 300, 3
	a, err := executor.OpenAudit(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	executor.ShrinkSegments(a, segBytes, keep)
	for i := range 40 {
		if err := a.Append(ctx, executor.Record{CallID: fmt.Sprintf("c%d", i), Tool: "now", OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := executor.OpenAudit(ctx, meta); err != nil { // a second tab's, over the segments left
		t.Fatal(err)
	}
	if meta.full != 0 || meta.names < 3 {
		t.Errorf("the audit log listed its segments %d times in full and %d by name, want 0 and a listing for each segment start", meta.full, meta.names)
	}
	entries, err := meta.Root.ReadDir(ctx, executor.AuditDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > keep+1 {
		t.Errorf("%d segments kept, want at most %d", len(entries), keep+1)
	}
}
