package executor

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/voicebox-go/voicebox/internal/shared/sha"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of the undo history.
const (
	// MaxHistoryEntries is how many changes the history keeps; past it the oldest go first.
	MaxHistoryEntries = 100
	// MaxHistoryBytes bounds the versions kept (earlier ones for undo, later ones for redo), all
	// together; past it the oldest changes go first (the newest is always kept).
	MaxHistoryBytes = 64 << 20
	// MaxHistoryFileBytes is the largest earlier version kept. A write, edit or delete that would
	// replace a larger file is refused history-failed and changes nothing.
	MaxHistoryFileBytes = 16 << 20
	// MaxKeepBothTries bounds the names tried for the earlier version an undo conflict keeps
	// beside the current one ("notes (earlier).txt", "notes (earlier 2).txt", ...).
	MaxKeepBothTries = 100
	// MaxHistorySkips bounds the history numbers a change passes over because another History
	// over the same area (a second tab on the folder) took them. Past it the change is refused
	// history-failed: so many numbers taken at once is damage, not a neighbour.
	MaxHistorySkips = 1 << 12
)

// historyDir is the history's folder inside the root's metadata area.
const historyDir = "history"

// The changes the history records. A move's record has Path, where the file or folder was, and
// To, where it went, and Folders, the folders it made for To; a create-folder's (mkdir) has
// Path, the folder asked for, and Folders, the ones it made.
const (
	actionWrite  = "write"
	actionEdit   = "edit"
	actionDelete = "delete"
	actionMove   = "move"
	actionMkdir  = "mkdir"
	// actionRmdir is a remove-folder's: Path, the empty folder it removed.
	actionRmdir = "rmdir"
)

// Actor says who made a change, as the history records it (and list-history shows it).
type Actor string

// The actors. An Executor's Options.Actor names the one its changes are recorded under.
const (
	// ByAssistant is a change made through the relay: a live model, a typed turn, an MCP
	// client, an extension. It is the default.
	ByAssistant Actor = "assistant"
	// ByPerson is a change the person made in the page's own file browser.
	ByPerson Actor = "person"
)

// The ways an undo that meets a conflict (the file changed after the change) may be resolved:
// undo-last's "resolve" argument. Without one, a conflict is refused undo-conflict and nothing
// changes.
const (
	// ResolveKeepCurrent keeps the file as it is now and drops the change from the history, so
	// the next undo reaches the change before it.
	ResolveKeepCurrent = "keep-current"
	// ResolveRestoreEarlier puts the earlier version back over the current one; the current one
	// is kept for redo, so nothing is lost.
	ResolveRestoreEarlier = "restore-earlier"
	// ResolveKeepBoth writes the earlier version beside the current one under a new name (a
	// change of its own, which can be undone) and drops the change from the history.
	ResolveKeepBoth = "keep-both"
)

// History keeps the earlier version of every file a changing primitive of its Executors
// replaces (write-file, edit-file, delete-file), so that undo-last can put the newest change back
// byte for byte, and the version an undo replaced, so that redo-last can put the change back
// again; the moves of move-file, the folders of create-folder and the empty folder of
// remove-folder are recorded too (they keep no content: undo moves back, removes the empty
// folders or makes the folder again, and redo does it again). It lives in the root's hidden metadata area (fsroot.MetaDir, folder
// history/), which fsroot.Check keeps every tool out of. Each change is a record,
// NNNNNNNNNNNN.json, with NNNNNNNNNNNN.bin, the earlier content when there was a file, and,
// while the change is undone, NNNNNNNNNNNN.after, the content the undo replaced.
//
// The history is bounded (MaxHistoryEntries, MaxHistoryBytes) and pruned oldest first. A new
// change drops the changes waiting for redo. Undo checks that the file is still what the change
// left (by SHA-256), so it never overwrites a later change, made by the user or anyone else:
// that is refused undo-conflict, unless the caller says how to resolve it (see ResolveKeepCurrent
// and the others); redo checks the same of what the undo left (redo-conflict).
//
// One History may serve several Executors over the same root (the page's file browser and the
// assistant's calls), each recording its changes under its own Actor. A History is safe for
// concurrent use. Changes of different files run side by side: each holds its file's lock (so
// the changes of one file happen one at a time, in the order of their history numbers) and
// the history's own lock only to take a number and to add its record, never while it writes.
// Everything else that changes the history or may touch any file (undo, redo, a move,
// create-folder, the conflict view) runs alone, after the changes in flight. Two Histories over
// one area (two tabs on one folder) do not coordinate.
type History struct {
	area       fsroot.Root
	clock      func() time.Time
	maxEntries int
	maxBytes   int64
	onChange   func()

	// ops is held shared by a change of one file and alone by everything else that changes the
	// history or the root (lockAll); files holds the lock of each file a change runs on.
	ops   sync.RWMutex
	files fileLocks
	// mu guards the state below: held briefly by a change (to take a number, then to add its
	// record), and for the whole of an operation that runs alone.
	mu      sync.Mutex
	loaded  bool
	entries []historyRecord // in effect, oldest first
	redo    []historyRecord // undone, the next to redo first
	next    uint64
}

// HistoryOptions configures a History. The zero value means the package's bounds and the real
// clock.
type HistoryOptions struct {
	// MaxEntries and MaxBytes replace MaxHistoryEntries and MaxHistoryBytes when positive.
	MaxEntries int
	MaxBytes   int64
	Clock      func() time.Time
	// OnChange, when set, is called (with no lock held) after every change the history takes
	// in, undoes, redoes or drops, so a view of it can be refreshed.
	OnChange func()
}

// historyRecord is one change as the history keeps it.
type historyRecord struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	Path   string    `json:"path"`
	// To is where a move put the file or folder.
	To string `json:"to,omitempty"`
	By Actor  `json:"by,omitempty"`
	// Existed reports that the file was there before; its content is the .bin beside the record.
	Existed bool  `json:"existed"`
	Size    int64 `json:"size"`
	// After is the SHA-256 (hex) of what the change left; "" when it left no file.
	After string `json:"after,omitempty"`
	// Before is the SHA-256 (hex) of the earlier content, when there was a file. Undo restores
	// the .bin only when it still hashes to this.
	Before string `json:"before,omitempty"`
	// Undone reports a change undone and waiting for redo; the content it left (After) is the
	// .after beside the record, AfterSize bytes, unless it left no file or is a move.
	Undone    bool  `json:"undone,omitempty"`
	AfterSize int64 `json:"afterSize,omitempty"`
	// Folders are the folders a create-folder made (action mkdir), or a move made to hold what
	// it moved (action move), deepest first.
	Folders []string `json:"folders,omitempty"`
}

// keepsAfter reports whether an undone record keeps the content its change left.
func (r historyRecord) keepsAfter() bool { return r.After != "" && r.Action != actionMove }

// OpenHistory returns the History of root, kept in its metadata area, which root must have
// (fsroot.Metadata); every root of this project has one.
func OpenHistory(ctx context.Context, root fsroot.Root, opts HistoryOptions) (*History, error) {
	md, ok := root.(fsroot.Metadata)
	if !ok {
		return nil, errors.New("executor: the root has no metadata area for a history")
	}
	area, err := md.Meta(ctx)
	if err != nil {
		return nil, textf.Errorf("executor: open the history: %w", err)
	}
	return NewHistory(area, opts), nil
}

// NewHistory returns a History kept in area, a root no tool reaches (a metadata area).
func NewHistory(area fsroot.Root, opts HistoryOptions) *History {
	h := &History{area: area, clock: opts.Clock, maxEntries: opts.MaxEntries, maxBytes: opts.MaxBytes, onChange: opts.OnChange}
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

func recordName(seq uint64) string  { return textf.Sprintf("%s/%012d.json", historyDir, seq) }
func contentName(seq uint64) string { return textf.Sprintf("%s/%012d.bin", historyDir, seq) }
func afterName(seq uint64) string   { return textf.Sprintf("%s/%012d.after", historyDir, seq) }

// changed tells OnChange; the caller holds no lock.
func (h *History) changed() {
	if h.onChange != nil {
		h.onChange()
	}
}

// load reads the records once. Half-written changes (content without a record, a record of an
// earlier version whose content is missing, an undone record whose later content is missing)
// are removed. The caller holds mu.
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
	records, contents, afters := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
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
		case "after":
			afters[seq] = true
		}
		h.next = max(h.next, seq)
	}
	h.next++
	for seq := range contents {
		if !records[seq] {
			h.area.Remove(ctx, contentName(seq))
		}
	}
	for seq := range afters {
		if !records[seq] {
			h.area.Remove(ctx, afterName(seq))
		}
	}
	for seq := range records {
		data, err := h.area.ReadFile(ctx, recordName(seq))
		var rec historyRecord
		if err != nil || strictjson.DecodeStructLoose(data, &rec) != nil || rec.Seq != seq || (rec.Existed && rec.Action != actionMove && !contents[seq]) ||
			(rec.Undone && rec.keepsAfter() && !afters[seq]) {
			h.forget(ctx, historyRecord{Seq: seq, Existed: true, Undone: true, After: "x"})
			continue
		}
		if !rec.Undone && afters[seq] {
			h.area.Remove(ctx, afterName(seq)) // a redo that stopped after writing the record
		}
		if rec.Undone {
			h.redo = append(h.redo, rec)
		} else {
			h.entries = append(h.entries, rec)
		}
	}
	// sort.Slice rather than slices.SortFunc: a generic sort of a struct type is a separate copy of
	// pdqsort (about 25 KB of wasm code per type); sort.Slice is one copy for every type.
	sort.Slice(h.entries, func(i, j int) bool { return h.entries[i].Seq < h.entries[j].Seq })
	// The next to redo is the one undone last: the oldest of the undone changes.
	sort.Slice(h.redo, func(i, j int) bool { return h.redo[i].Seq < h.redo[j].Seq })
	h.loaded = true
	return nil
}

// lockAll takes the history for an operation that may touch any file or reorder the history:
// it waits for the changes in flight and holds off new ones until unlockAll.
func (h *History) lockAll() {
	h.ops.Lock()
	h.mu.Lock()
}

func (h *History) unlockAll() {
	h.mu.Unlock()
	h.ops.Unlock()
}

// fileLocks holds a lock for each file a change is running on, made at the first change of it
// and dropped when the last one waiting is done, so there are never more than the changes in
// flight.
type fileLocks struct {
	mu    sync.Mutex
	locks map[string]*fileLock
}

type fileLock struct {
	mu    sync.Mutex
	users int // the changes holding or waiting for mu
}

// lock takes the lock of the file name and returns its unlock. Names a file system may take
// for one file (another case, another Unicode normalization) share a lock (names.Fold).
func (l *fileLocks) lock(name string) (unlock func()) {
	key := names.Fold(name)
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*fileLock{}
	}
	fl := l.locks[key]
	if fl == nil {
		fl = &fileLock{}
		l.locks[key] = fl
	}
	fl.users++
	l.mu.Unlock()
	fl.mu.Lock()
	return func() {
		fl.mu.Unlock()
		l.mu.Lock()
		if fl.users--; fl.users == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// keep writes the record of a change about to happen: rec, and before when the file existed.
// The caller holds mu (lockAll).
func (h *History) keep(ctx context.Context, rec historyRecord, before []byte) (historyRecord, error) {
	rec, err := h.reserve(ctx, rec)
	if err != nil {
		return rec, err
	}
	return rec, h.writeKept(ctx, rec, before)
}

// reserve gives rec the next free history number and its time. The caller holds mu.
func (h *History) reserve(ctx context.Context, rec historyRecord) (historyRecord, error) {
	return h.reserveWith(ctx, rec, func() {}, func() {})
}

// reserveShared is reserve for a change, which holds mu only to take each number: it looks
// whether a number is taken without it.
func (h *History) reserveShared(ctx context.Context, rec historyRecord) (historyRecord, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reserveWith(ctx, rec, h.mu.Unlock, h.mu.Lock)
}

// reserveWith is reserve, calling release before it looks at the area and acquire after.
func (h *History) reserveWith(ctx context.Context, rec historyRecord, release, acquire func()) (historyRecord, error) {
	if err := h.load(ctx); err != nil {
		return rec, err
	}
	// Another History over this area (a second tab on the folder) may have taken the numbers
	// this one would use next; never write over its files. A number whose files cannot be
	// looked at (the area failed, or ctx ended) is no number to pass over: that error ends the
	// change, so a cancelled write answers once instead of spinning. This History never gives
	// a number twice (next only grows), so no other change of it takes the one looked at.
	for skips := 0; ; skips++ {
		seq := h.next
		h.next++
		release()
		taken, err := h.taken(ctx, seq)
		if err == nil && !taken {
			err = h.area.MkdirAll(ctx, historyDir)
		}
		acquire()
		if err != nil {
			return rec, err
		}
		if !taken {
			rec.Seq, rec.Time = seq, h.clock().UTC()
			return rec, nil
		}
		if skips == MaxHistorySkips {
			return rec, textf.Errorf("executor: the %d history numbers from %d on are all taken", MaxHistorySkips, seq-uint64(skips))
		}
	}
}

// writeKept writes the files of rec, a reserved record: its earlier content, when the file
// existed, and the record, side by side (each is synced; load removes either without the
// other, so a crash between them leaves no half change). Only the change that reserved
// rec.Seq writes them, so the caller need not hold mu.
func (h *History) writeKept(ctx context.Context, rec historyRecord, before []byte) error {
	if !rec.Existed || rec.Action == actionMove {
		return h.write(ctx, rec)
	}
	content := make(chan error, 1)
	go func() { content <- h.area.WriteFile(ctx, contentName(rec.Seq), before) }()
	err := h.write(ctx, rec)
	if e := <-content; err == nil {
		err = e
	}
	if err != nil {
		h.area.Remove(ctx, recordName(rec.Seq))
		h.area.Remove(ctx, contentName(rec.Seq))
	}
	return err
}

// write writes rec's record file.
func (h *History) write(ctx context.Context, rec historyRecord) error {
	data, _ := rec.appendJSON(make([]byte, 0, recordBytes)) // empty for a time JSON cannot hold, as json.Marshal left it
	return h.area.WriteFile(ctx, recordName(rec.Seq), data)
}

// taken reports whether a record or a content file numbered seq is already in the area, or the
// error that kept it from looking (never "taken" for an error: see keep).
func (h *History) taken(ctx context.Context, seq uint64) (bool, error) {
	for _, name := range []string{recordName(seq), contentName(seq), afterName(seq)} {
		switch _, err := h.area.Stat(ctx, name); {
		case err == nil:
			return true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, err
		}
	}
	return false, nil
}

// commit adds a kept record once its change happened, in the order of the history numbers
// (changes of different files finish in any order), drops the changes waiting for redo (the
// new change is where the history goes on from), and prunes. The caller holds mu.
func (h *History) commit(ctx context.Context, rec historyRecord) {
	h.forgetAll(ctx, h.commitRecord(rec))
}

// commitRecord is commit without removing the files of the records it drops: it returns them,
// for forgetAll once the caller let mu go. The caller holds mu.
func (h *History) commitRecord(rec historyRecord) (dropped []historyRecord) {
	dropped = h.redo
	h.redo = nil
	i := sort.Search(len(h.entries), func(i int) bool { return h.entries[i].Seq > rec.Seq })
	h.entries = slices.Insert(h.entries, i, rec)
	return append(dropped, h.trim()...)
}

// forgetAll forgets each of records. Their numbers are out of the history, so no change uses
// them again and the caller need not hold mu.
func (h *History) forgetAll(ctx context.Context, records []historyRecord) {
	for _, r := range records {
		h.forget(ctx, r)
	}
}

// prune drops the oldest changes past the bounds; the newest in effect is always kept.
func (h *History) prune(ctx context.Context) {
	h.forgetAll(ctx, h.trim())
}

// trim takes the oldest changes past the bounds out of the history and returns them, their
// files still there (see forgetAll). The caller holds mu.
func (h *History) trim() (dropped []historyRecord) {
	var total int64
	for _, r := range h.entries {
		total += r.Size
	}
	for _, r := range h.redo {
		total += r.Size + r.AfterSize
	}
	for len(h.entries) > 1 && (len(h.entries)+len(h.redo) > h.maxEntries || total > h.maxBytes) {
		old := h.entries[0]
		dropped = append(dropped, old)
		h.entries = h.entries[1:]
		total -= old.Size
	}
	return dropped
}

// forget removes a record and its content: the record first, so a failure in between leaves
// content without a record, which load cleans up.
func (h *History) forget(ctx context.Context, rec historyRecord) {
	h.area.Remove(ctx, recordName(rec.Seq))
	if rec.Existed {
		h.area.Remove(ctx, contentName(rec.Seq))
	}
	if rec.Undone {
		h.area.Remove(ctx, afterName(rec.Seq))
	}
}

// drop forgets the newest record, rec, whose change is not in effect, and says so. The caller
// holds mu.
func (h *History) drop(ctx context.Context, rec historyRecord) error {
	h.forget(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	return refusal.New(refusal.UndoConflict, "the last %s of %q is not in effect (the file is as it was before it), so nothing was done and it was dropped from the history; undo again for the change before it", rec.Action, rec.Path)
}

// Len returns how many changes the history holds that can be undone.
func (h *History) Len(ctx context.Context) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(ctx); err != nil {
		return 0, err
	}
	return len(h.entries), nil
}

func digest(b []byte) string {
	sum := sha.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// change describes one change of a file, run by Executor.change.
type change struct {
	action string
	name   string
	// readLimit refuses a file larger than it (write-too-large) when positive.
	readLimit int64
	// create refuses file-exists when the file is there: a change that makes a new file never
	// replaces one.
	create bool
	// expect, when set, is the SHA-256 (hex) of the version the caller read: a file that is no
	// longer that version (changed or removed since) is refused file-changed, checked under the
	// file's lock so no change slips in between.
	expect string
	// prepare computes what the change leaves (nil for a delete) from the earlier content.
	prepare func(before []byte, existed bool) (after []byte, err error)
	// apply makes the change.
	apply func(after []byte) error
	// afterSum, when set, is the SHA-256 (hex) of what apply leaves, for a change whose content
	// prepare does not hold (a streamed upload).
	afterSum func() string
}

// change is how every changing primitive runs: it reads the earlier version of the file (when
// the history or prepare needs it), lets prepare compute what the change leaves, keeps the
// earlier version in the history, then applies the change. A change that fails takes its record
// back. It returns whether the change can be undone.
//
// With a history, a change holds its file's lock throughout, and the history's own lock only
// to take a number and to add the record (see History): the writes and syncs of changes of
// different files overlap.
func (e *Executor) change(ctx context.Context, c change) (undoable bool, err error) {
	h := e.opts.History
	if h != nil {
		h.ops.RLock()
		unlock := h.files.lock(c.name)
		defer func() {
			unlock()
			h.ops.RUnlock()
			if undoable {
				h.changed()
			}
		}()
	}
	// A call whose caller is gone (its connection to the relay ended while it waited its turn
	// here) makes no change: applied now, it would land after changes asked for since, through
	// the next connection, and put back what they replaced.
	if err := ctx.Err(); err != nil {
		return false, textf.Errorf("executor: the call ended before its change of %q was made: %w", c.name, err)
	}
	name := c.name
	existed := false
	switch st, err := e.root.Stat(ctx, name); {
	case errors.Is(err, fs.ErrNotExist):
		if c.expect != "" {
			return false, refusal.New(refusal.FileChanged, "%q was removed after you opened it; save it again to make it anew, or keep it removed", name)
		}
	case err != nil:
		return false, FileRefusal(err, name)
	case st.Dir:
		return false, refusal.New(refusal.IsADirectory, "%q is a folder, not a file", name)
	case c.create:
		return false, refusal.New(refusal.FileExists, "%q already exists, and this makes a new file; open it, or choose another name", name)
	default:
		existed = true
		if c.readLimit > 0 && st.Size > c.readLimit {
			return false, tooLarge(int(st.Size), int(c.readLimit))
		}
		if h != nil && st.Size > MaxHistoryFileBytes {
			return false, refusal.New(refusal.HistoryFailed, "%q is %d bytes, more than the undo history keeps (%d), so it was left unchanged", name, st.Size, MaxHistoryFileBytes)
		}
	}
	var before []byte
	if existed && (h != nil || c.readLimit > 0 || c.expect != "") {
		if before, err = e.root.ReadFile(ctx, name); err != nil {
			return false, FileRefusal(err, name)
		}
	}
	if c.expect != "" && digest(before) != c.expect {
		return false, refusal.New(refusal.FileChanged, "%q changed after you opened it (someone else wrote it); saving would lose that change, so nothing was written: keep yours, keep theirs, or keep both", name)
	}
	after, err := c.prepare(before, existed)
	if err != nil {
		return false, err
	}
	if h == nil {
		return false, c.apply(after)
	}
	rec := historyRecord{Action: c.action, Path: name, By: e.actor(), Existed: existed, Size: int64(len(before))}
	switch {
	case c.afterSum != nil:
		rec.After = c.afterSum()
	case c.action != actionDelete:
		rec.After = digest(after)
	}
	if existed {
		rec.Before = digest(before)
	}
	rec, err = h.reserveShared(ctx, rec)
	if err == nil {
		err = h.writeKept(ctx, rec, before)
	}
	if errors.Is(err, fsroot.ErrNoSpace) {
		return false, noSpace(name)
	}
	if err != nil {
		return false, refusal.New(refusal.HistoryFailed, "the earlier version of %q could not be kept for undo (%v), so it was left unchanged", name, err)
	}
	if err := c.apply(after); err != nil {
		h.forget(ctx, rec)
		return false, err
	}
	h.mu.Lock()
	dropped := h.commitRecord(rec)
	h.mu.Unlock()
	h.forgetAll(ctx, dropped)
	return true, nil
}

// Commit runs a change of the file name whose new content was streamed elsewhere (the page's
// upload, written through fsroot.Root.Create): apply makes it visible (the writer's Commit), and
// sum is the SHA-256 (hex) of that content. With a history the change is recorded as a write,
// like write-file's, so undo-last takes it back; with create it is refused file-exists when the
// file is there. It reports whether the file was created and whether the change can be undone.
func (e *Executor) Commit(ctx context.Context, name, sum string, create bool, apply func() error) (created, undoable bool, err error) {
	if err := fsroot.Check(name); err != nil {
		return false, false, err
	}
	undoable, err = e.change(ctx, change{action: actionWrite, name: name, create: create,
		prepare: func(_ []byte, existed bool) ([]byte, error) {
			created = !existed
			return nil, nil
		},
		apply:    func([]byte) error { return apply() },
		afterSum: func() string { return sum },
	})
	return created, undoable, err
}

func (e *Executor) actor() Actor { return cmp.Or(e.opts.Actor, ByAssistant) }

// fileState is a file as an undo or redo finds it.
type fileState struct {
	exists bool
	data   []byte
	sum    string // "" when absent
}

func (e *Executor) stateOf(ctx context.Context, name string) (fileState, error) {
	data, err := e.root.ReadFile(ctx, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileState{}, nil
	case err != nil:
		return fileState{}, FileRefusal(err, name)
	}
	return fileState{exists: true, data: data, sum: digest(data)}, nil
}

type undoObserved struct {
	Undone   string `json:"undone"`
	Path     string `json:"path"`
	To       string `json:"to,omitempty"`
	By       Actor  `json:"by,omitempty"`
	Restored bool   `json:"restored"`
	Removed  bool   `json:"removed"`
	Bytes    int64  `json:"bytes"`
	// Resolved names how a conflict was resolved; KeptAs is where keep-both put the earlier
	// version.
	Resolved  string `json:"resolved,omitempty"`
	KeptAs    string `json:"keptAs,omitempty"`
	Remaining int    `json:"remaining"`
	Redo      int    `json:"redo"`
}

// undoLast puts back the newest change: the earlier content, or no file when the change created
// it (for a move, the file back where it was). The version it replaces is kept for redo-last.
// It is refused nothing-to-undo when the history is empty (or there is none), and undo-conflict
// when the file is no longer what the change left, unless args.resolve says how to resolve that.
func (e *Executor) undoLast(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, err := parseArgs(raw, []argSpec{{name: "resolve", enum: []string{ResolveKeepCurrent, ResolveRestoreEarlier, ResolveKeepBoth}}})
	if err != nil {
		return nil, auditNote{}, err
	}
	h := e.opts.History
	if h == nil {
		return nil, auditNote{}, refusal.New(refusal.NothingToUndo, "this workspace keeps no undo history")
	}
	h.lockAll()
	obs, note, changed, err := e.undoLocked(ctx, h, args["resolve"])
	obs.Remaining, obs.Redo = len(h.entries), len(h.redo)
	h.unlockAll()
	if changed {
		h.changed()
	}
	if err != nil {
		return nil, note, err
	}
	note.Bytes = obs.Bytes
	out, err := marshal(&obs)
	return out, note, err
}

// undoLocked undoes the newest change; changed reports that the history changed (even when it
// answers a refusal, having dropped a change). The caller holds the history alone (lockAll).
func (e *Executor) undoLocked(ctx context.Context, h *History, resolve string) (obs undoObserved, note auditNote, changed bool, err error) {
	if err := h.load(ctx); err != nil {
		return obs, note, false, refusal.New(refusal.HistoryFailed, "the undo history could not be read: %v", err)
	}
	if len(h.entries) == 0 {
		return obs, note, false, refusal.New(refusal.NothingToUndo, "there is no change left to undo")
	}
	rec := h.entries[len(h.entries)-1]
	note = auditNote{Path: rec.Path}
	obs = undoObserved{Undone: rec.Action, Path: rec.Path, To: rec.To, By: rec.By}
	switch rec.Action {
	case actionMove:
		return obs, note, true, e.undoMove(ctx, h, rec, resolve, &obs)
	case actionMkdir:
		return obs, note, true, e.undoFolders(ctx, h, rec, resolve, &obs)
	case actionRmdir:
		return obs, note, true, e.undoRemoveFolder(ctx, h, rec, resolve, &obs)
	}
	now, err := e.stateOf(ctx, rec.Path)
	if err != nil {
		return obs, note, false, err
	}
	// asBefore: the file is what it was before the change, so the change is not in effect (it
	// never completed, the relay or page stopping between its record and the change, or it was
	// put back by hand). Such a record is dropped, or it would stand in front of every older
	// change for good.
	asBefore := now.exists == rec.Existed && now.sum == rec.Before
	if now.sum != rec.After {
		if asBefore {
			return obs, note, true, h.drop(ctx, rec)
		}
		if resolve == "" {
			return obs, note, false, conflictRefusal(rec, now.exists)
		}
		obs.Resolved = resolve
		switch resolve {
		case ResolveKeepCurrent:
			h.forget(ctx, rec)
			h.entries = h.entries[:len(h.entries)-1]
			return obs, note, true, nil
		case ResolveKeepBoth:
			if !rec.Existed {
				// The earlier version is no file at all: keeping both is keeping the current one.
				h.forget(ctx, rec)
				h.entries = h.entries[:len(h.entries)-1]
				obs.Resolved = ResolveKeepCurrent
				return obs, note, true, nil
			}
			return obs, note, true, e.keepBoth(ctx, h, rec, &obs)
		}
		// ResolveRestoreEarlier: an undo whose "later" version is what the file holds now.
		rec.After = now.sum
	}
	return obs, note, true, e.restoreEarlier(ctx, h, rec, now, &obs)
}

// conflictRefusal says why an undo of rec would lose a later change, and how to resolve it.
func conflictRefusal(rec historyRecord, exists bool) *refusal.Refusal {
	const how = "; nothing was done. Resolve it: keep the current version (keep-current), restore the earlier one (restore-earlier, the current one is kept for redo) or keep both (keep-both)"
	switch {
	case !exists:
		return refusal.New(refusal.UndoConflict, "%q was removed after the last %s; undo would bring back the version before it%s", rec.Path, rec.Action, how)
	case rec.After == "":
		return refusal.New(refusal.UndoConflict, "%q was created again after it was deleted; undo would replace it%s", rec.Path, how)
	}
	return refusal.New(refusal.UndoConflict, "%q changed after the last %s; undo would lose that change%s", rec.Path, rec.Action, how)
}

// readKept reads a version the history keeps and checks it is the one the record names.
func (h *History) readKept(ctx context.Context, name, sum, path string) ([]byte, error) {
	data, err := h.area.ReadFile(ctx, name)
	if err != nil {
		return nil, refusal.New(refusal.HistoryFailed, "a kept version of %q could not be read from the history: %v", path, err)
	}
	if digest(data) != sum {
		return nil, refusal.New(refusal.HistoryFailed, "the kept version of %q is not the one this change recorded", path)
	}
	return data, nil
}

// restoreEarlier puts rec's earlier version in place of now (which hashes to rec.After), keeps
// now for redo and moves rec from the undo list to the redo list. The caller holds the history
// alone (lockAll).
func (e *Executor) restoreEarlier(ctx context.Context, h *History, rec historyRecord, now fileState, obs *undoObserved) error {
	var before []byte
	if rec.Existed {
		var err error
		if before, err = h.readKept(ctx, contentName(rec.Seq), rec.Before, rec.Path); err != nil {
			// The content file is not the one this record kept (written over by another
			// History, or damaged). It can never be undone: drop the record here, leaving the
			// files, which may be another History's, to the next load.
			h.entries = h.entries[:len(h.entries)-1]
			return refusal.New(refusal.HistoryFailed, "the kept earlier version of %q is not the one this change replaced, so nothing was restored and the change was dropped from the history", rec.Path)
		}
	}
	rec.Undone, rec.AfterSize = true, 0
	if rec.keepsAfter() {
		if err := h.area.WriteFile(ctx, afterName(rec.Seq), now.data); err != nil {
			return refusal.New(refusal.HistoryFailed, "the current version of %q could not be kept for redo (%v), so nothing was done", rec.Path, err)
		}
		rec.AfterSize = int64(len(now.data))
	}
	if err := h.write(ctx, rec); err != nil {
		h.area.Remove(ctx, afterName(rec.Seq))
		return refusal.New(refusal.HistoryFailed, "the history could not record the undo (%v), so nothing was done", err)
	}
	var err error
	if rec.Existed {
		if err = e.putFile(ctx, rec.Path, before); err == nil {
			obs.Restored, obs.Bytes = true, int64(len(before))
		}
	} else if now.exists {
		if err = e.root.Remove(ctx, rec.Path); err != nil {
			err = FileRefusal(err, rec.Path)
		}
		obs.Removed = err == nil
	}
	if err != nil {
		// Nothing changed on the file: the record goes back to how it was.
		rec.Undone, rec.AfterSize = false, 0
		h.write(ctx, rec)
		h.area.Remove(ctx, afterName(rec.Seq))
		return err
	}
	h.entries = h.entries[:len(h.entries)-1]
	h.redo = slices.Insert(h.redo, 0, rec)
	h.prune(ctx)
	return nil
}

// putFile writes data to name, making its folder when it is gone.
func (e *Executor) putFile(ctx context.Context, name string, data []byte) error {
	if dir := path.Dir(name); dir != "." {
		if err := e.root.MkdirAll(ctx, dir); err != nil {
			return FileRefusal(err, dir)
		}
	}
	if err := e.root.WriteFile(ctx, name, data); err != nil {
		return FileRefusal(err, name)
	}
	return nil
}

// keepBoth writes rec's earlier version under a free name beside rec.Path, as a change of its
// own, and drops rec. The caller holds the history alone (lockAll).
func (e *Executor) keepBoth(ctx context.Context, h *History, rec historyRecord, obs *undoObserved) error {
	before, err := h.readKept(ctx, contentName(rec.Seq), rec.Before, rec.Path)
	if err != nil {
		return err
	}
	name, err := e.freeName(ctx, rec.Path, "earlier")
	if err != nil {
		return err
	}
	kept := historyRecord{Action: actionWrite, Path: name, By: e.actor(), After: digest(before)}
	if kept, err = h.keep(ctx, kept, nil); err != nil {
		return refusal.New(refusal.HistoryFailed, "the history could not record keeping both versions (%v), so nothing was done", err)
	}
	if err := e.putFile(ctx, name, before); err != nil {
		h.forget(ctx, kept)
		return err
	}
	h.forget(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	h.commit(ctx, kept)
	obs.KeptAs, obs.Bytes = name, int64(len(before))
	return nil
}

// freeName returns a name beside p that nothing holds: "notes (word).txt", then
// "notes (word 2).txt", up to MaxKeepBothTries.
func (e *Executor) freeName(ctx context.Context, p, word string) (string, error) {
	dir, base := path.Split(p)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if stem == "" {
		stem, ext = base, ""
	}
	for i := 1; i <= MaxKeepBothTries; i++ {
		tag := word
		if i > 1 {
			tag = word + " " + strconv.Itoa(i)
		}
		name := dir + stem + " (" + tag + ")" + ext
		if fsroot.Check(name) != nil {
			break
		}
		if _, err := e.root.Stat(ctx, name); errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
	}
	return "", refusal.New(refusal.FileExists, "no free name was found beside %q to keep the earlier version under", p)
}

type redoObserved struct {
	Redone    string `json:"redone"`
	Path      string `json:"path"`
	To        string `json:"to,omitempty"`
	By        Actor  `json:"by,omitempty"`
	Written   bool   `json:"written"`
	Removed   bool   `json:"removed"`
	Bytes     int64  `json:"bytes"`
	Remaining int    `json:"remaining"`
	Redo      int    `json:"redo"`
}

// redoLast puts back the change undone last, when the file is still what the undo left. A file
// changed since is refused redo-conflict, and that redo is dropped (the file stays as it is, and
// nothing is lost); a redo whose change is already in effect is dropped too. It is refused
// nothing-to-redo when no change waits.
func (e *Executor) redoLast(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	if _, err := parseArgs(raw, nil); err != nil {
		return nil, auditNote{}, err
	}
	h := e.opts.History
	if h == nil {
		return nil, auditNote{}, refusal.New(refusal.NothingToRedo, "this workspace keeps no undo history")
	}
	h.lockAll()
	obs, note, changed, err := e.redoLocked(ctx, h)
	obs.Remaining, obs.Redo = len(h.entries), len(h.redo)
	h.unlockAll()
	if changed {
		h.changed()
	}
	if err != nil {
		return nil, note, err
	}
	note.Bytes = obs.Bytes
	out, err := marshal(&obs)
	return out, note, err
}

func (e *Executor) redoLocked(ctx context.Context, h *History) (obs redoObserved, note auditNote, changed bool, err error) {
	if err := h.load(ctx); err != nil {
		return obs, note, false, refusal.New(refusal.HistoryFailed, "the undo history could not be read: %v", err)
	}
	if len(h.redo) == 0 {
		return obs, note, false, refusal.New(refusal.NothingToRedo, "there is no undone change to redo")
	}
	rec := h.redo[0]
	note = auditNote{Path: rec.Path}
	obs = redoObserved{Redone: rec.Action, Path: rec.Path, To: rec.To, By: rec.By}
	dropRedo := func(format string, a ...any) error {
		h.forget(ctx, rec)
		h.redo = h.redo[1:]
		return refusal.New(refusal.RedoConflict, format, a...)
	}
	switch rec.Action {
	case actionMove, actionMkdir, actionRmdir:
		redo := map[string]func(context.Context, historyRecord, *redoObserved, func(string, ...any) error) (bool, error){
			actionMove: e.redoMove, actionMkdir: e.redoFolders, actionRmdir: e.redoRemoveFolder}[rec.Action]
		if changed, err := redo(ctx, rec, &obs, dropRedo); err != nil {
			return obs, note, changed, err
		}
	default:
		now, err := e.stateOf(ctx, rec.Path)
		if err != nil {
			return obs, note, false, err
		}
		switch {
		case now.sum == rec.After && rec.Before != rec.After:
			return obs, note, true, dropRedo("the %s of %q is in effect already (the file is as it left it), so nothing was done and the redo was dropped", rec.Action, rec.Path)
		case now.exists != rec.Existed || now.sum != rec.Before:
			return obs, note, true, dropRedo("%q changed after the %s was undone; redo would lose that change, so nothing was done and the redo was dropped", rec.Path, rec.Action)
		}
		if rec.keepsAfter() {
			after, err := h.readKept(ctx, afterName(rec.Seq), rec.After, rec.Path)
			if err != nil {
				h.forget(ctx, rec)
				h.redo = h.redo[1:]
				return obs, note, true, err
			}
			if err := e.putFile(ctx, rec.Path, after); err != nil {
				return obs, note, false, err
			}
			obs.Written, obs.Bytes = true, int64(len(after))
		} else if now.exists {
			if err := e.root.Remove(ctx, rec.Path); err != nil {
				return obs, note, false, FileRefusal(err, rec.Path)
			}
			obs.Removed = true
		}
	}
	h.redo = h.redo[1:]
	rec.Undone, rec.AfterSize = false, 0
	h.write(ctx, rec)
	h.area.Remove(ctx, afterName(rec.Seq))
	h.entries = append(h.entries, rec)
	return obs, note, true, nil
}

// HistoryEntry is one change as list-history shows it. Action is "write", "edit", "delete",
// "move" (Path went to To), "mkdir" (the folder Path was made) or "rmdir" (the empty folder Path
// was removed).
type HistoryEntry struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	Path   string    `json:"path"`
	To     string    `json:"to,omitempty"`
	By     Actor     `json:"by"`
	// Created reports a write that made a new file.
	Created bool `json:"created"`
	// Undone reports a change undone and waiting for redo.
	Undone bool `json:"undone"`
}

// entry is r as list-history shows it.
func (r historyRecord) entry() HistoryEntry {
	return HistoryEntry{Seq: r.Seq, Time: r.Time, Action: r.Action, Path: r.Path, To: r.To, By: cmp.Or(r.By, ByAssistant),
		Created: r.Action == actionWrite && !r.Existed, Undone: r.Undone}
}

type historyObserved struct {
	// Entries are the changes, newest first: those waiting for redo, then those in effect.
	Entries []HistoryEntry `json:"entries"`
	Undo    int            `json:"undo"`
	Redo    int            `json:"redo"`
}

// listHistory lists the history's changes, newest first.
func (e *Executor) listHistory(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	if _, err := parseArgs(raw, nil); err != nil {
		return nil, auditNote{}, err
	}
	obs := historyObserved{Entries: []HistoryEntry{}}
	if h := e.opts.History; h != nil {
		h.mu.Lock()
		err := h.load(ctx)
		if err == nil {
			for i := len(h.redo) - 1; i >= 0; i-- {
				obs.Entries = append(obs.Entries, h.redo[i].entry())
			}
			for i := len(h.entries) - 1; i >= 0; i-- {
				obs.Entries = append(obs.Entries, h.entries[i].entry())
			}
			obs.Undo, obs.Redo = len(h.entries), len(h.redo)
		}
		h.mu.Unlock()
		if err != nil {
			return nil, auditNote{}, refusal.New(refusal.HistoryFailed, "the undo history could not be read: %v", err)
		}
	}
	out, err := marshal(&obs)
	return out, auditNote{Bytes: int64(len(obs.Entries))}, err
}

// Version is one side of an undo conflict, as UndoConflict shows it: the file's content (the
// first limit bytes of it), a folder (of a move or a create-folder), or that there is none.
type Version struct {
	Exists    bool   `json:"exists"`
	Folder    bool   `json:"folder,omitempty"`
	Size      int64  `json:"size"`
	Text      string `json:"text"`
	Binary    bool   `json:"binary"`
	Truncated bool   `json:"truncated"`
}

// Conflict is the newest change of a history and the two versions of its file an undo weighs:
// Current, what the file holds now, and Earlier, what undo would bring back.
type Conflict struct {
	// InConflict reports that the file is no longer what the change left, so a plain undo is
	// refused undo-conflict.
	InConflict bool         `json:"inConflict"`
	Change     HistoryEntry `json:"change"`
	Current    Version      `json:"current"`
	Earlier    Version      `json:"earlier"`
	// Resolutions are the resolve values undo-last takes for this change.
	Resolutions []string `json:"resolutions"`
}

// UndoConflict describes the change an undo would take back now and the two versions of its
// file (each cut to limit bytes), so a person can choose how to resolve a conflict. It is
// refused nothing-to-undo when there is no change.
func (e *Executor) UndoConflict(ctx context.Context, limit int) (Conflict, error) {
	h := e.opts.History
	if h == nil {
		return Conflict{}, refusal.New(refusal.NothingToUndo, "this workspace keeps no undo history")
	}
	h.lockAll()
	defer h.unlockAll()
	if err := h.load(ctx); err != nil {
		return Conflict{}, refusal.New(refusal.HistoryFailed, "the undo history could not be read: %v", err)
	}
	if len(h.entries) == 0 {
		return Conflict{}, refusal.New(refusal.NothingToUndo, "there is no change left to undo")
	}
	rec := h.entries[len(h.entries)-1]
	c := Conflict{Change: rec.entry()}
	switch rec.Action {
	case actionMove:
		// What undo would move back is what is there now; the conflict is that it is gone or
		// that something took its old place.
		there, back, err := e.moveState(ctx, rec)
		if err != nil {
			return Conflict{}, err
		}
		if c.Current, err = e.versionAt(ctx, rec.To, limit); err != nil {
			return Conflict{}, err
		}
		c.Earlier = c.Current
		c.InConflict = back || !there
		c.Resolutions = []string{ResolveKeepCurrent}
		return c, nil
	case actionRmdir:
		var err error
		if c.Current, err = e.versionAt(ctx, rec.Path, limit); err != nil {
			return Conflict{}, err
		}
		// Undo would make the folder again where a file is now.
		c.Earlier = Version{Exists: true, Folder: true}
		c.InConflict = c.Current.Exists && !c.Current.Folder
		c.Resolutions = []string{ResolveKeepCurrent}
		return c, nil
	case actionMkdir:
		made, foreign, err := e.foldersState(ctx, rec)
		if err != nil {
			return Conflict{}, err
		}
		if c.Current, err = e.versionAt(ctx, rec.Path, limit); err != nil {
			return Conflict{}, err
		}
		c.InConflict = made && foreign != ""
		c.Resolutions = []string{ResolveKeepCurrent}
		return c, nil
	}
	now, err := e.stateOf(ctx, rec.Path)
	if err != nil {
		return Conflict{}, err
	}
	c.Current = versionOf(now, limit)
	c.InConflict = now.sum != rec.After
	c.Resolutions = []string{ResolveKeepCurrent, ResolveRestoreEarlier}
	if rec.Existed {
		c.Resolutions = append(c.Resolutions, ResolveKeepBoth)
		before, err := h.readKept(ctx, contentName(rec.Seq), rec.Before, rec.Path)
		if err != nil {
			return Conflict{}, err
		}
		c.Earlier = versionOf(fileState{exists: true, data: before}, limit)
	}
	return c, nil
}

// versionAt is what name is now, as a Version: a folder, a file's content, or nothing.
func (e *Executor) versionAt(ctx context.Context, name string, limit int) (Version, error) {
	switch st, err := e.root.Stat(ctx, name); {
	case err == nil && st.Dir:
		return Version{Exists: true, Folder: true}, nil
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsroot.ErrNotDir):
		return Version{}, nil
	}
	now, err := e.stateOf(ctx, name)
	if err != nil {
		return Version{}, err
	}
	return versionOf(now, limit), nil
}

func versionOf(s fileState, limit int) Version {
	v := Version{Exists: s.exists, Size: int64(len(s.data))}
	if !s.exists {
		return v
	}
	data := s.data
	if limit >= 0 && len(data) > limit {
		data, v.Truncated = data[:limit], true
	}
	text, ok := cutUTF8(data, v.Truncated)
	if !ok || strings.IndexByte(string(text), 0) >= 0 {
		v.Binary = true
		return v
	}
	v.Text = string(text)
	return v
}
