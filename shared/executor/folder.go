package executor

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"

	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// actionMkdir is the history's record of create-folder: the folders it made, deepest first.
const actionMkdir = "mkdir"

type folderObserved struct {
	Path     string `json:"path"`
	Created  bool   `json:"created"`
	Undoable bool   `json:"undoable"`
}

// createFolder makes a folder and the folders above it that are missing. A folder that is there
// already is no change; a file in the way is refused file-exists. With a history, the folders it
// made are recorded, so undo-last removes them again while they are empty.
func (e *Executor) createFolder(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw)
	if err != nil {
		return nil, note, err
	}
	name := args["path"]
	var missing []string // deepest first
	for p := name; p != "."; p = path.Dir(p) {
		st, err := e.root.Stat(ctx, p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsroot.ErrNotDir) {
			missing = append(missing, p) // or under a file, which the walk up finds
			continue
		}
		if err != nil {
			return nil, note, FileRefusal(err, p)
		}
		if !st.Dir {
			return nil, note, refusal.New(refusal.FileExists, "%q is a file, so no folder can be made there", p)
		}
		break
	}
	obs := folderObserved{Path: name, Created: len(missing) > 0}
	if len(missing) == 0 {
		out, err := marshal(obs)
		return out, note, err
	}
	h := e.opts.History
	var rec historyRecord
	if h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		if rec, err = h.keep(ctx, historyRecord{Action: actionMkdir, Path: name, Folders: missing}, nil); err != nil {
			return nil, note, refusal.New(refusal.HistoryFailed, "the folder could not be recorded for undo (%v), so it was not made", err)
		}
	}
	if err := e.root.MkdirAll(ctx, name); err != nil {
		if h != nil {
			h.forget(ctx, rec)
		}
		return nil, note, FileRefusal(err, name)
	}
	if h != nil {
		h.commit(ctx, rec)
		obs.Undoable = true
	}
	out, err := marshal(obs)
	return out, note, err
}

// undoFolders takes back a create-folder: it removes the folders it made, deepest first, when
// each holds nothing but the next one. The caller holds the history's lock.
func (e *Executor) undoFolders(ctx context.Context, h *History, rec historyRecord) (json.RawMessage, auditNote, error) {
	note := auditNote{Path: rec.Path}
	if _, err := e.root.Stat(ctx, rec.Folders[len(rec.Folders)-1]); errors.Is(err, fs.ErrNotExist) {
		return nil, note, h.drop(ctx, rec) // already gone: not in effect
	}
	for i, f := range rec.Folders {
		entries, err := e.root.ReadDir(ctx, f)
		if err != nil {
			return nil, note, FileRefusal(err, f)
		}
		inner := i > 0 && len(entries) == 1 && entries[0].Dir && entries[0].Name == path.Base(rec.Folders[i-1])
		if len(entries) > 0 && !inner {
			return nil, note, refusal.New(refusal.UndoConflict, "%q holds files now; undo would remove them with it, so nothing was done", f)
		}
	}
	for _, f := range rec.Folders {
		if err := e.root.Remove(ctx, f); err != nil {
			return nil, note, FileRefusal(err, f)
		}
	}
	h.forget(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	out, err := marshal(undoObserved{Undone: rec.Action, Path: rec.Path, Removed: true, Remaining: len(h.entries)})
	return out, note, err
}
