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

// actionMove is the history's record of move-file: Path is where the thing went, From where it
// was.
const actionMove = "move"

type moveObserved struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Kind     string `json:"kind"` // "file" or "folder"
	Undoable bool   `json:"undoable"`
}

// moveFile moves or renames a file or a folder (with everything in it). It never replaces
// anything (file-exists), the folder it goes into must exist (not-found), and a folder cannot
// go into itself (invalid-argument). A root that cannot move is refused move-unsupported. With
// a history, undo-last moves it back.
func (e *Executor) moveFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, err := parseArgs(raw, []argSpec{{name: "from", required: true}, {name: "to", required: true}})
	if err != nil {
		return nil, auditNote{}, err
	}
	from, to := args["from"], args["to"]
	note := auditNote{Path: from}
	for _, n := range []string{from, to} {
		if err := fsroot.Check(n); err != nil {
			return nil, note, err
		}
	}
	mv, ok := e.root.(fsroot.Renamer)
	if !ok {
		return nil, note, refusal.New(refusal.MoveUnsupported, "this workspace's storage cannot move files or folders yet; read, write and delete instead")
	}
	if to == from || len(to) > len(from) && to[:len(from)+1] == from+"/" {
		return nil, note, refusal.New(refusal.InvalidArgument, "%q cannot move into itself", from)
	}
	st, err := e.root.Stat(ctx, from)
	if err != nil {
		return nil, note, FileRefusal(err, from)
	}
	switch _, err := e.root.Stat(ctx, to); {
	case err == nil:
		return nil, note, refusal.New(refusal.FileExists, "%q is there already; a move never replaces anything", to)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, note, FileRefusal(err, to)
	}
	if dir := path.Dir(to); dir != "." {
		if ds, err := e.root.Stat(ctx, dir); err != nil || !ds.Dir {
			return nil, note, refusal.New(refusal.NotFound, "there is no folder %q to move into; make it with create_folder first", dir)
		}
	}
	obs := moveObserved{From: from, To: to, Kind: "file"}
	if st.Dir {
		obs.Kind = "folder"
	}
	h := e.opts.History
	var rec historyRecord
	if h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		if rec, err = h.keep(ctx, historyRecord{Action: actionMove, Path: to, From: from}, nil); err != nil {
			return nil, note, refusal.New(refusal.HistoryFailed, "the move could not be recorded for undo (%v), so nothing was moved", err)
		}
	}
	if err := mv.Rename(ctx, from, to); err != nil {
		if h != nil {
			h.forget(ctx, rec)
		}
		if errors.Is(err, errors.ErrUnsupported) {
			return nil, note, refusal.New(refusal.MoveUnsupported, "this workspace's storage moves files but not folders (the browser cannot); move the files one by one")
		}
		return nil, note, FileRefusal(err, to)
	}
	if h != nil {
		h.commit(ctx, rec)
		obs.Undoable = true
	}
	out, err := marshal(obs)
	return out, note, err
}

// undoMove moves a moved file or folder back, when it is still where it went and nothing took
// its old place. The caller holds the history's lock.
func (e *Executor) undoMove(ctx context.Context, h *History, rec historyRecord) (json.RawMessage, auditNote, error) {
	note := auditNote{Path: rec.Path}
	_, errTo := e.root.Stat(ctx, rec.Path)
	_, errFrom := e.root.Stat(ctx, rec.From)
	switch {
	case errors.Is(errTo, fs.ErrNotExist) && errFrom == nil:
		return nil, note, h.drop(ctx, rec) // back where it was: not in effect
	case errTo != nil:
		return nil, note, refusal.New(refusal.UndoConflict, "%q is no longer where the move put it, so nothing was done", rec.Path)
	case errFrom == nil:
		return nil, note, refusal.New(refusal.UndoConflict, "something is at %q again; moving back would replace it, so nothing was done", rec.From)
	}
	mv, ok := e.root.(fsroot.Renamer)
	if !ok {
		return nil, note, refusal.New(refusal.MoveUnsupported, "this workspace's storage cannot move, so the move cannot be taken back here")
	}
	if err := mv.Rename(ctx, rec.Path, rec.From); err != nil {
		return nil, note, FileRefusal(err, rec.From)
	}
	h.forget(ctx, rec)
	h.entries = h.entries[:len(h.entries)-1]
	out, err := marshal(undoObserved{Undone: rec.Action, Path: rec.From, Restored: true, Remaining: len(h.entries)})
	return out, note, err
}
