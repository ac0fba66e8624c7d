package executor

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/linelog"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// AuditLog takes a record of every call an Executor runs. It is safe for concurrent use.
type AuditLog interface {
	Append(ctx context.Context, rec Record) error
}

// Record is one executed call as the audit log keeps it: who asked for what, on which path, and
// how it ended. It never holds file content.
type Record struct {
	Time         time.Time    `json:"time"`
	CallID       string       `json:"callId"`
	Tool         string       `json:"tool"`
	DescriptorID string       `json:"descriptorId"`
	Primitive    Primitive    `json:"primitive,omitempty"`
	Path         string       `json:"path,omitempty"`
	OK           bool         `json:"ok"`
	Refused      refusal.Rule `json:"refused,omitempty"`
	// Error is a failure that is no refusal (the door answers it with exec-threw), clipped.
	Error string `json:"error,omitempty"`
	// Bytes is what the call moved: bytes read or written, entries listed.
	Bytes int64 `json:"bytes,omitempty"`
}

// auditNote is what a primitive tells the audit about itself.
type auditNote struct {
	Path  string
	Bytes int64
}

// maxAuditText bounds a path or error text copied into a record.
const maxAuditText = fsroot.MaxPathBytes + 64

func (e *Executor) audit(ctx context.Context, call wire.Call, prim Primitive, note auditNote, err error) {
	rec := Record{
		Time:         e.opts.Clock().UTC(),
		CallID:       call.CallID,
		Tool:         call.Tool,
		DescriptorID: call.DescriptorID,
		Primitive:    prim,
		Path:         clip(note.Path),
		OK:           err == nil,
		Bytes:        note.Bytes,
	}
	if r, ok := refusal.As(err); ok {
		rec.Refused = r.Rule
	} else if err != nil {
		rec.Error = clip(err.Error())
	}
	if aerr := e.opts.Audit.Append(ctx, rec); aerr != nil {
		e.auditFail.Add(1)
		e.log.Warn("executor: audit record lost", "callId", call.CallID, "tool", call.Tool, "err", aerr)
	}
}

func clip(s string) string { return clipAt(s, maxAuditText) }

// clipAt cuts s to at most n bytes, at a character boundary, marked with "...".
func clipAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// The shape of a RootAudit's files.
const (
	// AuditDir is the folder, inside a root's metadata area, that holds the audit segments.
	AuditDir = "audit"
	// AuditSegmentBytes bounds one segment file; a record that would take it over starts the
	// next. On a root without in-place appends (fsroot.Appender) every write rewrites the
	// current segment, so this also bounds the cost of one there.
	AuditSegmentBytes = 64 << 10
	// AuditSegments is how many segments are kept; starting a new one removes the oldest
	// beyond it, so the log holds the most recent AuditSegments*AuditSegmentBytes (4 MiB).
	AuditSegments = 64
)

// RootAudit is an AuditLog kept as JSON lines in a root's metadata area (fsroot.MetaDir, so
// .voicebox/audit/00000001.jsonl and on). No tool can read or change it: every dot path is
// refused by fsroot.Check, and the metadata area is reached only through fsroot.Metadata, which
// only the holder of the workspace root's concrete type has.
//
// Records are added at the end of the current segment (fsroot.Append: in place where the root
// can, as OPFS's sync access handles do; otherwise by an atomic rewrite). An append in place is
// not atomic, so a record is kept whole or lost whole by its line: a line without its newline (a
// crash, or a failed write, part way through an append) is no record. Records skips it, and
// before the next append (on opening the log, or after a failed one) the segment is cut back to
// its last whole line, so every record that follows starts on a line of its own. The segments
// keep the log bounded. Two RootAudits of one area (two tabs of one browser storage) each count
// the current segment's size alone, so a segment may grow to twice AuditSegmentBytes, and one
// that fell behind appends to an older segment than the other's (Records reads by segment, so
// its records may come before earlier ones of the other around a new segment; each carries its
// time); starting a segment drops every one past AuditSegments, so the log stays bounded.
type RootAudit struct {
	meta fsroot.Root
	// segBytes and keep are AuditSegmentBytes and AuditSegments (tests shrink them).
	segBytes, keep int

	mu   sync.Mutex
	seq  int
	size int  // bytes of segment seq, all of them whole lines unless torn
	torn bool // an append failed: segment seq may end in part of a line
}

// OpenRootAudit opens the audit log in root's metadata area; root must implement
// fsroot.Metadata.
func OpenRootAudit(ctx context.Context, root fsroot.Root) (*RootAudit, error) {
	md, ok := root.(fsroot.Metadata)
	if !ok {
		return nil, textf.Errorf("executor: the root %T keeps no metadata area for an audit log", root)
	}
	meta, err := md.Meta(ctx)
	if err != nil {
		return nil, textf.Errorf("executor: open the metadata area: %w", err)
	}
	return OpenAudit(ctx, meta)
}

// OpenAudit opens (or starts) the audit log kept in meta, a metadata root, and continues its
// last segment (cut back to its last whole line when an append was torn there).
func OpenAudit(ctx context.Context, meta fsroot.Root) (*RootAudit, error) {
	if err := meta.MkdirAll(ctx, AuditDir); err != nil {
		return nil, textf.Errorf("executor: open the audit log: %w", err)
	}
	a := &RootAudit{meta: meta, seq: 1, segBytes: AuditSegmentBytes, keep: AuditSegments}
	seqs, err := a.segments(ctx)
	if err != nil {
		return nil, err
	}
	if len(seqs) > 0 {
		a.seq, a.torn = seqs[len(seqs)-1], true
		if err := a.mend(ctx); err != nil {
			return nil, textf.Errorf("executor: open the audit log: %w", err)
		}
	}
	return a, nil
}

// mend cuts segment seq back to its last whole line when it ends in part of one, learns its
// size, and moves on to the next segment when it is full. The caller holds mu (or owns a).
func (a *RootAudit) mend(ctx context.Context) error {
	data, err := a.meta.ReadFile(ctx, segmentName(a.seq))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	whole := linelog.Whole(data, nil)
	if len(whole) < len(data) {
		// The one rewrite an append in place ever needs: the torn line goes, atomically.
		if err := a.meta.WriteFile(ctx, segmentName(a.seq), whole); err != nil {
			return err
		}
	}
	a.size, a.torn = len(whole), false
	if a.size >= a.segBytes {
		a.seq, a.size = a.seq+1, 0
	}
	return nil
}

func segmentName(seq int) string { return textf.Sprintf("%s/%08d.jsonl", AuditDir, seq) }

// segments returns the sequence numbers of the segment files, in order. It lists names only: a
// segment start lists up to keep segments, and OPFS's ReadDir would read each one's size and time.
func (a *RootAudit) segments(ctx context.Context) ([]int, error) {
	entries, err := fsroot.ReadDirNames(ctx, a.meta, AuditDir)
	if err != nil {
		return nil, textf.Errorf("executor: list the audit log: %w", err)
	}
	var seqs []int
	for _, e := range entries {
		num, ok := strings.CutSuffix(e.Name, ".jsonl")
		if n, err := strconv.Atoi(num); ok && err == nil && n > 0 && !e.Dir {
			seqs = append(seqs, n)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// Append adds rec as one JSON line.
func (a *RootAudit) Append(ctx context.Context, rec Record) error {
	return a.AppendAll(ctx, []Record{rec})
}

// AppendAll adds recs, in order, with one append to the current segment (one more for each
// segment the batch starts), so a caller that queues records pays for the batch, not per record.
func (a *RootAudit) AppendAll(ctx context.Context, recs []Record) error {
	lines := make([]AuditLine, 0, len(recs))
	for _, rec := range recs {
		line, err := EncodeRecord(rec)
		if err != nil {
			return err
		}
		lines = append(lines, line)
	}
	return a.AppendLines(ctx, lines)
}

// AuditLine is one record as a RootAudit keeps it: its JSON and a newline. Only EncodeRecord
// makes one.
type AuditLine struct{ b []byte }

// EncodeRecord encodes rec for AppendLines. A caller that batches records encodes each as it
// comes, so the cost is spread over the calls rather than paid at once when the batch is written.
func EncodeRecord(rec Record) (AuditLine, error) {
	b, ok := rec.appendJSON(make([]byte, 0, recordBytes))
	if !ok {
		return AuditLine{}, errors.New("executor: encode the audit record: a time outside the years 0 to 9999")
	}
	return AuditLine{append(b, '\n')}, nil
}

// AppendLines appends encoded records in order, with one append to the current segment (or one
// per segment they fill).
func (a *RootAudit) AppendLines(ctx context.Context, recs []AuditLine) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.torn {
		if err := a.mend(ctx); err != nil {
			return textf.Errorf("executor: mend the audit log after a failed append: %w", err)
		}
	}
	var pending []byte // the lines for segment seq
	seq, size := a.seq, a.size
	for _, rec := range recs {
		line := rec.b
		if size > 0 && size+len(line) > a.segBytes {
			if len(pending) > 0 {
				if err := a.appendSegment(ctx, seq, pending); err != nil {
					return err
				}
			}
			seq, size, pending = seq+1, 0, pending[:0]
		}
		pending, size = append(pending, line...), size+len(line)
	}
	if len(pending) > 0 {
		return a.appendSegment(ctx, seq, pending)
	}
	return nil
}

// appendSegment adds data, whole lines, to segment seq (a.seq, or the one after it, which it
// starts); starting a segment drops the oldest beyond keep. The caller holds mu.
func (a *RootAudit) appendSegment(ctx context.Context, seq int, data []byte) error {
	started := seq != a.seq
	if started {
		a.seq, a.size = seq, 0
	}
	if err := fsroot.Append(ctx, a.meta, segmentName(seq), data); err != nil {
		a.torn = true
		return textf.Errorf("executor: append to the audit log: %w", err)
	}
	a.size += len(data)
	if !started {
		return nil
	}
	// Every segment past keep goes, not only the one this start pushes out: another RootAudit
	// of the area (another tab's) that fell behind starts a segment the others already dropped
	// when it next appends, and only a later start would ever see it.
	seqs, err := a.segments(ctx)
	if err != nil {
		return err
	}
	for _, old := range seqs {
		if old > seq-a.keep {
			break
		}
		if err := a.meta.Remove(ctx, segmentName(old)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return textf.Errorf("executor: drop an old audit segment: %w", err)
		}
	}
	return nil
}

// Records returns every record the log still keeps, oldest first.
func (a *RootAudit) Records(ctx context.Context) ([]Record, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seqs, err := a.segments(ctx)
	if err != nil {
		return nil, err
	}
	var recs []Record
	for _, seq := range seqs {
		data, err := a.meta.ReadFile(ctx, segmentName(seq))
		if err != nil {
			return nil, textf.Errorf("executor: read the audit log: %w", err)
		}
		// A torn append's last line is no record: it was lost whole.
		for line := range bytes.Lines(linelog.Whole(data, nil)) {
			var r Record
			if err := strictjson.DecodeStructLoose(line, &r); err != nil {
				return nil, textf.Errorf("executor: audit segment %d holds a line that is not a record: %w", seq, err)
			}
			recs = append(recs, r)
		}
	}
	return recs, nil
}
