package executor

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of the undo history.
const (
	// MaxHistoryEntries is how many changes the history keeps; past it the oldest go first.
	MaxHistoryEntries = 100
	// MaxHistoryBytes bounds the earlier versions kept, all together; past it the oldest go
	// first (the newest is always kept).
	MaxHistoryBytes = 64 << 20
	// MaxHistoryFileBytes is the largest earlier version kept. A write, edit or delete that would
	// replace a larger file is refused history-failed and changes nothing.
	MaxHistoryFileBytes = 16 << 20
)

// historyDir is the history's folder inside the root's metadata area.
const historyDir = "history"

// The changes the history records.
const (
	actionWrite  = "write"
	actionEdit   = "edit"
	actionDelete = "delete"
)

// History keeps the earlier version of every file a write-file, edit-file or delete-file of its
// Executor replaces, so that undo-last can put the newest change back byte for byte. It lives in
// the root's hidden metadata area (fsroot.MetaDir, folder history/), which fsroot.Check keeps
// every tool out of. Each change is two files there: NNNNNNNNNNNN.json, the record, and
// NNNNNNNNNNNN.bin, the earlier content when there was a file.
//
// The history is bounded (MaxHistoryEntries, MaxHistoryBytes) and pruned oldest first. Undo
// checks that the file is still what the change left (by SHA-256), so it never overwrites a
// later change, made by the user or anyone else: that is refused undo-conflict.
//
// A History is safe for concurrent use; the changes of one History happen one at a time. Two
// Histories over one area (two tabs on one folder) do not coordinate.
type History struct {
	area       fsroot.Root
	clock      func() time.Time
	maxEntries int
	maxBytes   int64

	mu      sync.Mutex
	loaded  bool
	entries []historyRecord // oldest first
	next    uint64
}

// HistoryOptions configures a History. The zero value means the package's bounds and the real
// clock.
type HistoryOptions struct {
	// MaxEntries and MaxBytes replace MaxHistoryEntries and MaxHistoryBytes when positive.
	MaxEntries int
	MaxBytes   int64
	Clock      func() time.Time
}

// historyRecord is one change as the history keeps it.
type historyRecord struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	Path   string    `json:"path"`
	// Existed reports that the file was there before; its content is the .bin beside the record.
	Existed bool  `json:"existed"`
	Size    int64 `json:"size"`
	// After is the SHA-256 (hex) of what the change left; "" when it deleted the file.
	After string `json:"after,omitempty"`
	// Before is the SHA-256 (hex) of the earlier content, when there was a file. Undo restores
	// the .bin only when it still hashes to this.
	Before string `json:"before,omitempty"`
	// Folders are the folders a create-folder made, deepest first (action mkdir).
	Folders []string `json:"folders,omitempty"`
	// From is where a move-file took the file or folder from (action move; Path is where it went).
	From string `json:"from,omitempty"`
}

// OpenHistory returns the History of root, kept in its metadata area, which root must have
// (fsroot.Metadata); every root of this project has one.
func OpenHistory(ctx context.Context, root fsroot.Root, opts HistoryOptions) (*History, error) {
	md, ok := root.(fsroot.Metadata)
	if !ok {
		return nil, errors.New("executor: the root has no metadata area for a history")
	}
	area, err := md.Meta(ctx)
	if err != nil {
		return nil, fmt.Errorf("executor: open the history: %w", err)
	}
	return NewHistory(area, opts), nil
}

// NewHistory returns a History kept in area, a root no tool reaches (a metadata area).
func NewHistory(area fsroot.Root, opts HistoryOptions) *History {
	h := &History{area: area, clock: opts.Clock, maxEntries: opts.MaxEntries, maxBytes: opts.MaxBytes}
	if h.clock == nil {
		h.clock = time.Now
	}
	if h.maxEntries <= 0 {
		h.maxEntries = MaxHistoryEntries
	}
	if h.maxBytes <= 0 {
		h.maxBytes = MaxHistoryBytes
	}
	return h
}

func recordName(seq uint64) string  { return fmt.Sprintf("%s/%012d.json", historyDir, seq) }
func contentName(seq uint64) string { return fmt.Sprintf("%s/%012d.bin", historyDir, seq) }

// load reads the records once. Half-written changes (content without a record, or a record of
// an earlier version whose content is missing) are removed. The caller holds mu.
func (h *History) load(ctx context.Context) error {
	if h.loaded {
		return nil
	}
	list, err := h.area.ReadDir(ctx, historyDir)
	if errors.Is(err, fs.ErrNotExist) {
		h.loaded, h.next = true, 1
		return nil
	}
	if err != nil {
		return err
	}
	records, contents := map[uint64]bool{}, map[uint64]bool{}
	for _, en := range list {
		stem, ext, _ := strings.Cut(en.Name, ".")
		seq, err := strconv.ParseUint(stem, 10, 64)
		if err != nil || en.Dir {
			continue
		}
		switch ext {
		case "json":
			records[seq] = true
		case "bin":
			contents[seq] = true
		}
		h.next = max(h.next, seq)
	}
	h.next++
	for seq := range contents {
		if !records[seq] {
			h.area.Remove(ctx, contentName(seq))
		}
	}
	for seq := range records {
		data, err := h.area.ReadFile(ctx, recordName(seq))
		var rec historyRecord
		if err != nil || json.Unmarshal(data, &rec) != nil || rec.Seq != seq || (rec.Existed && !contents[seq]) {
			h.area.Remove(ctx, recordName(seq))
			h.area.Remove(ctx, contentName(seq))
			continue
		}
		h.entries = append(h.entries, rec)
	}
	slices.SortFunc(h.entries, func(a, b historyRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	h.loaded = true
	return nil
}

// keep writes the record of a change about to happen: rec, and before when the file existed.
func (h *History) keep(ctx context.Context, rec historyRecord, before []byte) (historyRecord, error) {
	if err := h.load(ctx); err != nil {
		return rec, err
	}
	// Another History over this area (a second tab on the folder) may have taken the numbers
	// this one would use next; never write over its files.
	for h.taken(ctx, h.next) {
		h.next++
	}
	rec.Seq, rec.Time = h.next, h.clock().UTC()
	h.next++
	if err := h.area.MkdirAll(ctx, historyDir); err != nil {
		return rec, err
	}
	if rec.Existed {
		if err := h.area.WriteFile(ctx, contentName(rec.Seq), before); err != nil {
			return rec, err
		}
	}
	data, _ := json.Marshal(rec)
	if err := h.area.WriteFile(ctx, recordName(rec.Seq), data); err != nil {
		h.area.Remove(ctx, contentName(rec.Seq))
		return rec, err
	}
	return rec, nil
}

// taken reports whether a record or a content file numbered seq is already in the area.
func (h *History) taken(ctx context.Context, seq uint64) bool {
	for _, name := range []string{recordName(seq), contentName(seq)} {
		if _, err := h.area.Stat(ctx, name); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// commit adds a kept record once its change happened, and prunes.
func (h *History) commit(ctx context.Context, rec historyRecord) {
	h.entries = append(h.entries, rec)
	var total int64
	for _, r := range h.entries {
		total += r.Size
	}
	for len(h.entries) > 1 && (len(h.entries) > h.maxEntries || total > h.maxBytes) {
		old := h.entries[0]
		h.forget(ctx, old)
		h.entries = h.entries[1:]
		total -= old.Size
	}
}

// forget removes a record and its content: the record first, so a failure in between leaves
// content without a record, which load cleans up.
func (h *History) forget(ctx context.Context, rec historyRecord) {
	h.area.Remove(ctx, recordName(rec.Seq))
	if rec.Existed {
		h.area.Remove(ctx, contentName(rec.Seq))
	}
}

// drop forgets the newest record, rec, whose change is not in effect, and says so. The caller
// holds mu.
func (h *History) drop(ctx context.Context, rec historyRecord) error {
	h.forget(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	return refusal.New(refusal.UndoConflict, "the last %s of %q is not in effect (the file is as it was before it), so nothing was done and it was dropped from the history; undo again for the change before it", rec.Action, rec.Path)
}

// Len returns how many changes the history holds.
func (h *History) Len(ctx context.Context) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(ctx); err != nil {
		return 0, err
	}
	return len(h.entries), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// change is how every changing primitive runs: it reads the earlier version of name (when the
// history or prepare needs it), lets prepare compute what the change leaves (nil for a delete),
// keeps the earlier version in the history, then applies the change. A change that fails takes
// its record back. It returns whether the change can be undone.
func (e *Executor) change(ctx context.Context, action, name string, readLimit int64,
	prepare func(before []byte, existed bool) (after []byte, err error), apply func(after []byte) error) (undoable bool, err error) {
	h := e.opts.History
	if h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
	}
	existed := false
	switch st, err := e.root.Stat(ctx, name); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, FileRefusal(err, name)
	case st.Dir:
		return false, refusal.New(refusal.IsADirectory, "%q is a folder, not a file", name)
	default:
		existed = true
		if readLimit > 0 && st.Size > readLimit {
			return false, tooLarge(int(st.Size), int(readLimit))
		}
		if h != nil && st.Size > MaxHistoryFileBytes {
			return false, refusal.New(refusal.HistoryFailed, "%q is %d bytes, more than the undo history keeps (%d), so it was left unchanged", name, st.Size, MaxHistoryFileBytes)
		}
	}
	var before []byte
	if existed && (h != nil || readLimit > 0) {
		if before, err = e.root.ReadFile(ctx, name); err != nil {
			return false, FileRefusal(err, name)
		}
	}
	after, err := prepare(before, existed)
	if err != nil {
		return false, err
	}
	if h == nil {
		return false, apply(after)
	}
	rec := historyRecord{Action: action, Path: name, Existed: existed, Size: int64(len(before))}
	if action != actionDelete {
		rec.After = digest(after)
	}
	if existed {
		rec.Before = digest(before)
	}
	rec, err = h.keep(ctx, rec, before)
	if err != nil {
		return false, refusal.New(refusal.HistoryFailed, "the earlier version of %q could not be kept for undo (%v), so it was left unchanged", name, err)
	}
	if err := apply(after); err != nil {
		h.forget(ctx, rec)
		return false, err
	}
	h.commit(ctx, rec)
	return true, nil
}

type undoObserved struct {
	Undone    string `json:"undone"`
	Path      string `json:"path"`
	Restored  bool   `json:"restored"`
	Removed   bool   `json:"removed"`
	Bytes     int64  `json:"bytes"`
	Remaining int    `json:"remaining"`
}

// undoLast puts back the newest change: the earlier content, or no file when the change created
// it. It is refused nothing-to-undo when the history is empty (or there is none), and
// undo-conflict when the file is no longer what the change left.
func (e *Executor) undoLast(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	if _, err := parseArgs(raw, nil); err != nil {
		return nil, auditNote{}, err
	}
	h := e.opts.History
	if h == nil {
		return nil, auditNote{}, refusal.New(refusal.NothingToUndo, "this workspace keeps no undo history")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(ctx); err != nil {
		return nil, auditNote{}, refusal.New(refusal.HistoryFailed, "the undo history could not be read: %v", err)
	}
	if len(h.entries) == 0 {
		return nil, auditNote{}, refusal.New(refusal.NothingToUndo, "there is no change left to undo")
	}
	rec := h.entries[len(h.entries)-1]
	switch rec.Action {
	case actionMkdir:
		return e.undoFolders(ctx, h, rec)
	case actionMove:
		return e.undoMove(ctx, h, rec)
	}
	note := auditNote{Path: rec.Path}
	now, err := e.root.ReadFile(ctx, rec.Path)
	// asBefore: the file is what it was before the change, so the change is not in effect (it
	// never completed, the relay or page stopping between its record and the change, or it was
	// put back by hand). Such a record is dropped, or it would stand in front of every older
	// change for good.
	asBefore := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		asBefore = !rec.Existed
	case err == nil:
		asBefore = rec.Existed && digest(now) == rec.Before
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if rec.After != "" {
			if asBefore {
				return nil, note, h.drop(ctx, rec)
			}
			return nil, note, refusal.New(refusal.UndoConflict, "%q was removed after the last %s; undo would bring back the version before it, so nothing was done", rec.Path, rec.Action)
		}
	case err != nil:
		return nil, note, FileRefusal(err, rec.Path)
	case rec.After == "" || digest(now) != rec.After:
		if asBefore {
			return nil, note, h.drop(ctx, rec)
		}
		if rec.After == "" {
			return nil, note, refusal.New(refusal.UndoConflict, "%q was created again after it was deleted; undo would replace it, so nothing was done", rec.Path)
		}
		return nil, note, refusal.New(refusal.UndoConflict, "%q changed after the last %s; undo would lose that change, so nothing was done", rec.Path, rec.Action)
	}
	obs := undoObserved{Undone: rec.Action, Path: rec.Path}
	if rec.Existed {
		before, err := h.area.ReadFile(ctx, contentName(rec.Seq))
		if err != nil {
			return nil, note, refusal.New(refusal.HistoryFailed, "the earlier version of %q could not be read from the history: %v", rec.Path, err)
		}
		if digest(before) != rec.Before {
			// The content file is not the one this record kept (written over by another
			// History, or damaged). It can never be undone: drop the record here, leaving the
			// files, which may be another History's, to the next load.
			h.entries = h.entries[:len(h.entries)-1]
			return nil, note, refusal.New(refusal.HistoryFailed, "the kept earlier version of %q is not the one this change replaced, so nothing was restored and the change was dropped from the history", rec.Path)
		}
		if dir := path.Dir(rec.Path); dir != "." {
			if err := e.root.MkdirAll(ctx, dir); err != nil {
				return nil, note, FileRefusal(err, dir)
			}
		}
		if err := e.root.WriteFile(ctx, rec.Path, before); err != nil {
			return nil, note, FileRefusal(err, rec.Path)
		}
		obs.Restored, obs.Bytes = true, int64(len(before))
	} else {
		if err := e.root.Remove(ctx, rec.Path); err != nil {
			return nil, note, FileRefusal(err, rec.Path)
		}
		obs.Removed = true
	}
	h.forget(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	obs.Remaining = len(h.entries)
	note.Bytes = obs.Bytes
	out, err := marshal(obs)
	return out, note, err
}
