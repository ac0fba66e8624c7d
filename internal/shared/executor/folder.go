package executor

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"slices"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

type folderObserved struct {
	Path     string `json:"path"`
	Created  bool   `json:"created"`
	Undoable bool   `json:"undoable"`
}

// createFolder makes a folder and the folders above it that are missing, for every caller (the
// page's New folder and the assistant's create_folder). A folder that is there already is no
// change; a file in the way is refused file-exists. With a history, the folders it made are
// recorded under the Executor's Actor, so undo-last removes them again while they hold nothing
// else, and redo-last makes them again.
func (e *Executor) createFolder(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	return folderChange(ctx, e, raw, e.createFolderLocked)
}

// createFolderLocked makes name and the folders above it that are missing. The caller holds the
// history alone (lockAll) when h is not nil.
func (e *Executor) createFolderLocked(ctx context.Context, h *History, name string) (folderObserved, error) {
	obs := folderObserved{Path: name}
	var missing []string // deepest first
	for p := name; p != "."; p = path.Dir(p) {
		st, err := e.root.Stat(ctx, p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsroot.ErrNotDir) {
			missing = append(missing, p) // or under a file, which the walk up finds
			continue
		}
		if err != nil {
			return obs, FileRefusal(err, p)
		}
		if !st.Dir {
			return obs, refusal.New(refusal.FileExists, "%q is a file, so no folder can be made there", p)
		}
		break
	}
	if len(missing) == 0 {
		return obs, nil
	}
	obs.Created = true
	var rec historyRecord
	if h != nil {
		var err error
		if rec, err = h.keep(ctx, historyRecord{Action: actionMkdir, Path: name, By: e.actor(), Folders: missing}, nil); err != nil {
			return obs, refusal.New(refusal.HistoryFailed, "the folder could not be recorded for undo (%v), so it was not made", err)
		}
	}
	if err := e.root.MkdirAll(ctx, name); err != nil {
		if h != nil {
			h.forget(ctx, rec)
		}
		return folderObserved{Path: name}, FileRefusal(err, name)
	}
	if h != nil {
		h.commit(ctx, rec)
		obs.Undoable = true
	}
	return obs, nil
}

// foldersState is what a create-folder's record finds now: made, that the topmost folder it made
// is there; foreign, the first of its folders that holds something it did not make ("" when
// none does).
func (e *Executor) foldersState(ctx context.Context, rec historyRecord) (made bool, foreign string, err error) {
	top := rec.Folders[len(rec.Folders)-1]
	switch st, err := e.root.Stat(ctx, top); {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsroot.ErrNotDir):
		return false, "", nil
	case err != nil:
		return false, "", FileRefusal(err, top)
	case !st.Dir:
		return true, top, nil
	}
	for i, f := range rec.Folders {
		entries, err := e.root.ReadDir(ctx, f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // a deeper one taken away already
		case err != nil:
			return false, "", FileRefusal(err, f)
		}
		inner := i > 0 && len(entries) == 1 && entries[0].Dir && entries[0].Name == path.Base(rec.Folders[i-1])
		if len(entries) > 0 && !inner {
			return true, f, nil
		}
	}
	return true, "", nil
}

// undoFolders takes back a create-folder: it removes the folders it made, deepest first, when
// each holds nothing but the next one. One that holds something else now is an undo conflict
// (nothing is removed), which only keep-current resolves; folders already gone are a change not
// in effect, dropped. The caller holds the history alone (lockAll).
func (e *Executor) undoFolders(ctx context.Context, h *History, rec historyRecord, resolve string, obs *undoObserved) error {
	made, foreign, err := e.foldersState(ctx, rec)
	switch {
	case err != nil:
		return err
	case !made:
		return h.drop(ctx, rec)
	case foreign != "":
		if resolve == ResolveKeepCurrent {
			obs.Resolved = resolve
			h.forget(ctx, rec)
			h.entries = h.entries[:len(h.entries)-1]
			return nil
		}
		return refusal.New(refusal.UndoConflict, "%q holds something else now; undo would remove it with the folder, so nothing was done. Keep the folder (keep-current) to go on to the change before", foreign)
	}
	for _, f := range rec.Folders {
		if err := e.root.Remove(ctx, f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return FileRefusal(err, f)
		}
	}
	rec.Undone = true
	h.write(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	h.redo = slices.Insert(h.redo, 0, rec)
	obs.Removed = true
	return nil
}

// redoFolders makes an undone create-folder's folders again, when none of them is there; when
// the folder is there already, or something else took a place it made, the redo is dropped
// (dropRedo). The caller holds the history alone (lockAll).
func (e *Executor) redoFolders(ctx context.Context, rec historyRecord, obs *redoObserved, dropRedo func(string, ...any) error) (changed bool, err error) {
	made, _, err := e.foldersState(ctx, rec)
	switch {
	case err != nil:
		return false, err
	case made:
		if st, err := e.root.Stat(ctx, rec.Path); err == nil && st.Dir {
			return true, dropRedo("the folder %q is there already, so nothing was done and the redo was dropped", rec.Path)
		}
		return true, dropRedo("something is at %q now; redo would not make the folder there, so nothing was done and the redo was dropped", rec.Folders[len(rec.Folders)-1])
	}
	if err := e.root.MkdirAll(ctx, rec.Path); err != nil {
		return false, FileRefusal(err, rec.Path)
	}
	obs.Written = true
	return true, nil
}

// removeFolder deletes an empty folder, {"path"}, for every caller (the page's Delete of a
// folder). A folder that holds anything is refused folder-not-empty: a delete never takes what
// is inside with it. With a history the removal is recorded under the Executor's Actor, so
// undo-last makes the folder again and redo-last removes it again.
func (e *Executor) removeFolder(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	return folderChange(ctx, e, raw, e.removeFolderLocked)
}

// undoable is what folderChange needs of an observation: whether the change entered the history.
type undoable interface {
	observation
	undoable() bool
}

func (o folderObserved) undoable() bool       { return o.Undoable }
func (o removeFolderObserved) undoable() bool { return o.Undoable }

// folderChange runs a folder change, {"path"}, with the history held alone (lockAll) when there
// is one, tells the history's listeners when the change entered it, and answers the observation.
func folderChange[O undoable](ctx context.Context, e *Executor, raw json.RawMessage, change func(context.Context, *History, string) (O, error)) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw)
	if err != nil {
		return nil, note, err
	}
	h := e.opts.History
	if h != nil {
		h.lockAll()
	}
	obs, err := change(ctx, h, args["path"])
	if h != nil {
		h.unlockAll()
		if obs.undoable() {
			h.changed()
		}
	}
	if err != nil {
		return nil, note, err
	}
	out, err := marshal(obs)
	return out, note, err
}

type removeFolderObserved struct {
	Path     string `json:"path"`
	Deleted  bool   `json:"deleted"`
	Undoable bool   `json:"undoable"`
}

// removeFolderLocked removes the empty folder name. The caller holds the history alone
// (lockAll) when h is not nil.
func (e *Executor) removeFolderLocked(ctx context.Context, h *History, name string) (removeFolderObserved, error) {
	obs := removeFolderObserved{Path: name}
	st, err := e.root.Stat(ctx, name)
	if err != nil {
		return obs, FileRefusal(err, name)
	}
	if !st.Dir {
		return obs, refusal.New(refusal.NotADirectory, "%q is a file, not a folder", name)
	}
	entries, err := e.root.ReadDir(ctx, name)
	if err != nil {
		return obs, FileRefusal(err, name)
	}
	if len(entries) > 0 {
		return obs, FileRefusal(fsroot.ErrNotEmpty, name)
	}
	var rec historyRecord
	if h != nil {
		if rec, err = h.keep(ctx, historyRecord{Action: actionRmdir, Path: name, By: e.actor()}, nil); err != nil {
			return obs, refusal.New(refusal.HistoryFailed, "the folder's removal could not be recorded for undo (%v), so it was not removed", err)
		}
	}
	if err := e.root.Remove(ctx, name); err != nil {
		if h != nil {
			h.forget(ctx, rec)
		}
		return obs, FileRefusal(err, name)
	}
	obs.Deleted = true
	if h != nil {
		h.commit(ctx, rec)
		obs.Undoable = true
	}
	return obs, nil
}

// undoRemoveFolder makes a removed folder again. A folder there already is a change not in
// effect, dropped; a file in its place is an undo conflict that only keep-current resolves. The
// caller holds the history alone (lockAll).
func (e *Executor) undoRemoveFolder(ctx context.Context, h *History, rec historyRecord, resolve string, obs *undoObserved) error {
	switch st, err := e.root.Stat(ctx, rec.Path); {
	case err == nil && st.Dir:
		return h.drop(ctx, rec)
	case err == nil:
		if resolve == ResolveKeepCurrent {
			obs.Resolved = resolve
			h.forget(ctx, rec)
			h.entries = h.entries[:len(h.entries)-1]
			return nil
		}
		return refusal.New(refusal.UndoConflict, "a file is at %q now, where the folder was; undo would not make the folder there, so nothing was done. Keep the file (keep-current) to go on to the change before", rec.Path)
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fsroot.ErrNotDir):
		return FileRefusal(err, rec.Path)
	}
	if err := e.root.MkdirAll(ctx, rec.Path); err != nil {
		return FileRefusal(err, rec.Path)
	}
	rec.Undone = true
	h.write(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	h.redo = slices.Insert(h.redo, 0, rec)
	obs.Restored = true
	return nil
}

// redoRemoveFolder removes an undone remove-folder's folder again, while it is empty; a folder
// that holds something now, or is gone, drops the redo (dropRedo). The caller holds the history
// alone (lockAll).
func (e *Executor) redoRemoveFolder(ctx context.Context, rec historyRecord, obs *redoObserved, dropRedo func(string, ...any) error) (changed bool, err error) {
	st, err := e.root.Stat(ctx, rec.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsroot.ErrNotDir):
		return true, dropRedo("the folder %q is gone already, so nothing was done and the redo was dropped", rec.Path)
	case err != nil:
		return false, FileRefusal(err, rec.Path)
	case !st.Dir:
		return true, dropRedo("a file is at %q now; redo would not remove it, so nothing was done and the redo was dropped", rec.Path)
	}
	entries, err := e.root.ReadDir(ctx, rec.Path)
	if err != nil {
		return false, FileRefusal(err, rec.Path)
	}
	if len(entries) > 0 {
		return true, dropRedo("the folder %q holds something now; redo would not remove it, so nothing was done and the redo was dropped", rec.Path)
	}
	if err := e.root.Remove(ctx, rec.Path); err != nil {
		return false, FileRefusal(err, rec.Path)
	}
	obs.Removed = true
	return true, nil
}
