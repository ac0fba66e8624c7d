package executor

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"slices"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

type moveObserved struct {
	Path string `json:"path"`
	To   string `json:"to"`
	Kind string `json:"kind"` // "file" or "folder"
	// Bytes is the size of a file moved (0 for a folder).
	Bytes          int64 `json:"bytes"`
	ParentsCreated bool  `json:"parentsCreated"`
	Undoable       bool  `json:"undoable"`
}

// moveFile moves or renames a file or a folder (with everything in it), {"path", "to"}, in one
// step of the root's fsroot.Renamer, for every caller: the page's file browser (Rename) and the
// assistant's move_file alike. It never replaces anything at "to" (file-exists), a folder
// cannot go into itself (invalid-argument), and the folders "to" lacks are made, as write-file
// makes them. A root that cannot move it is refused move-unsupported (the browser's storage
// moves files but not folders). With a history the move is recorded under the Executor's Actor,
// so undo-last moves it back and redo-last moves it again.
func (e *Executor) moveFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw, argSpec{name: "to", required: true})
	if err != nil {
		return nil, note, err
	}
	from, to := args["path"], args["to"]
	if err := fsroot.CheckCreate(to); err != nil {
		return nil, note, err
	}
	switch {
	case from == to:
		return nil, note, refusal.New(refusal.FileExists, "%q is already called that; choose another name", from)
	case len(to) > len(from) && to[:len(from)+1] == from+"/":
		return nil, note, refusal.New(refusal.InvalidArgument, "%q cannot move into itself", from)
	}
	if _, ok := e.root.(fsroot.Renamer); !ok {
		return nil, note, refusal.New(refusal.MoveUnsupported, "this workspace's storage cannot move files or folders; read, write and delete instead")
	}
	h := e.opts.History
	if h != nil {
		h.lockAll()
	}
	obs, undoable, err := e.moveLocked(ctx, h, from, to)
	if h != nil {
		h.unlockAll()
		if undoable {
			h.changed()
		}
	}
	if err != nil {
		return nil, note, err
	}
	note.Bytes = obs.Bytes
	out, err := marshal(&obs)
	return out, note, err
}

// moveLocked runs a move whose names passed their checks. The caller holds the history alone
// (lockAll) when h is not nil.
func (e *Executor) moveLocked(ctx context.Context, h *History, from, to string) (obs moveObserved, undoable bool, err error) {
	obs = moveObserved{Path: from, To: to, Kind: "file"}
	st, err := e.root.Stat(ctx, from)
	if err != nil {
		return obs, false, FileRefusal(err, from)
	}
	if st.Dir {
		obs.Kind = "folder"
	} else {
		obs.Bytes = st.Size
	}
	switch _, err := e.root.Stat(ctx, to); {
	case err == nil:
		return obs, false, refusal.New(refusal.FileExists, "%q is there already; a move never replaces anything, so choose another name", to)
	case !errors.Is(err, fs.ErrNotExist):
		return obs, false, FileRefusal(err, to)
	}
	// The folders the move makes for to, deepest first: an undo removes them again.
	var made []string
	for dir := path.Dir(to); dir != "."; dir = path.Dir(dir) {
		if _, err := e.root.Stat(ctx, dir); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		made = append(made, dir)
	}
	obs.ParentsCreated = len(made) > 0
	var rec historyRecord
	if h != nil {
		if rec, err = h.keep(ctx, historyRecord{Action: actionMove, Path: from, To: to, By: e.actor(), Folders: made}, nil); err != nil {
			return obs, false, refusal.New(refusal.HistoryFailed, "the move of %q could not be recorded for undo (%v), so nothing was moved", from, err)
		}
	}
	if err := e.rename(ctx, from, to); err != nil {
		if h != nil {
			h.forget(ctx, rec)
		}
		return obs, false, err
	}
	if h == nil {
		return obs, false, nil
	}
	h.commit(ctx, rec)
	obs.Undoable = true
	return obs, true, nil
}

// rename moves from to to through the root's Renamer, making the folders to lacks (an undo may
// find the folder a file came from gone).
func (e *Executor) rename(ctx context.Context, from, to string) error {
	mv, ok := e.root.(fsroot.Renamer)
	if !ok {
		return refusal.New(refusal.MoveUnsupported, "this workspace's storage cannot move files or folders")
	}
	if dir := path.Dir(to); dir != "." {
		if err := e.root.MkdirAll(ctx, dir); err != nil {
			return FileRefusal(err, dir)
		}
	}
	if err := mv.Rename(ctx, from, to); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return refusal.New(refusal.MoveUnsupported, "this workspace's storage moves files but not folders (the browser cannot); move the files one by one")
		}
		return FileRefusal(err, to)
	}
	return nil
}

// moveState is where a recorded move finds things now: whether something is where it went
// (To) and where it came from (Path).
func (e *Executor) moveState(ctx context.Context, rec historyRecord) (there, back bool, err error) {
	exists := func(name string) (bool, error) {
		switch _, err := e.root.Stat(ctx, name); {
		case err == nil:
			return true, nil
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsroot.ErrNotDir):
			return false, nil
		default:
			return false, FileRefusal(err, name)
		}
	}
	if there, err = exists(rec.To); err != nil {
		return false, false, err
	}
	back, err = exists(rec.Path)
	return there, back, err
}

// undoMove moves a moved file or folder back, when it is still where the move put it and nothing
// took its old place: the move carries whatever was changed in it since, so nothing is lost; the
// folders the move made for it are removed while they are empty. A
// move already taken back by hand is dropped; in a conflict only keep-current resolves it. The
// caller holds the history alone (lockAll).
func (e *Executor) undoMove(ctx context.Context, h *History, rec historyRecord, resolve string, obs *undoObserved) error {
	there, back, err := e.moveState(ctx, rec)
	if err != nil {
		return err
	}
	switch {
	case back && !there:
		return h.drop(ctx, rec)
	case back || !there:
		if resolve == ResolveKeepCurrent {
			obs.Resolved = resolve
			h.forget(ctx, rec)
			h.entries = h.entries[:len(h.entries)-1]
			return nil
		}
		what := textf.Sprintf("%q is no longer where it was moved from %q", rec.To, rec.Path)
		if back {
			what = textf.Sprintf("something new is at %q, where %q was moved from", rec.Path, rec.To)
		}
		return refusal.New(refusal.UndoConflict, "%s; moving it back would replace or lose something, so nothing was done. Keep things as they are (keep-current) to go on to the change before", what)
	}
	if err := e.rename(ctx, rec.To, rec.Path); err != nil {
		return err
	}
	// The folders the move made go again while they hold nothing (deepest first); one that
	// holds something now stays, with those above it.
	for _, f := range rec.Folders {
		if entries, err := e.root.ReadDir(ctx, f); err != nil || len(entries) > 0 || e.root.Remove(ctx, f) != nil {
			break
		}
	}
	rec.Undone = true
	h.write(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	h.redo = slices.Insert(h.redo, 0, rec)
	obs.Restored = true
	return nil
}

// redoMove moves an undone move's file or folder again, when it is back where it came from and
// nothing took the place it went to. Otherwise the redo is dropped (dropRedo). The caller holds
// the history alone (lockAll).
func (e *Executor) redoMove(ctx context.Context, rec historyRecord, obs *redoObserved, dropRedo func(string, ...any) error) (changed bool, err error) {
	there, back, err := e.moveState(ctx, rec)
	switch {
	case err != nil:
		return false, err
	case there && !back:
		return true, dropRedo("the move of %q to %q is in effect already, so nothing was done and the redo was dropped", rec.Path, rec.To)
	case there || !back:
		return true, dropRedo("%q or %q changed after the move was undone; redo would lose that, so nothing was done and the redo was dropped", rec.Path, rec.To)
	}
	if err := e.rename(ctx, rec.Path, rec.To); err != nil {
		return false, err
	}
	obs.Written = true
	return true, nil
}
