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

// MaxMoveBytes bounds the file move-file moves: a root has no rename, so a move copies the file
// (held in memory once) and then removes the original.
const MaxMoveBytes = 64 << 20

type moveObserved struct {
	Path           string `json:"path"`
	To             string `json:"to"`
	Bytes          int64  `json:"bytes"`
	ParentsCreated bool   `json:"parentsCreated"`
	Undoable       bool   `json:"undoable"`
}

// moveFilePrim renames or moves one file, {"path", "to"}: never a folder (is-a-directory), never
// over something at "to" (file-exists), and never a file over MaxMoveBytes (write-too-large).
// Missing folders of "to" are made. With a history, undo-last moves it back.
func (e *Executor) moveFilePrim(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw, argSpec{name: "to", required: true})
	if err != nil {
		return nil, note, err
	}
	from, to := args["path"], args["to"]
	if err := fsroot.Check(to); err != nil {
		return nil, note, err
	}
	if from == to {
		return nil, note, refusal.New(refusal.FileExists, "%q is already called that; choose another name", from)
	}
	obs := moveObserved{Path: from, To: to}
	if _, err := e.root.Stat(ctx, to); !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return nil, note, FileRefusal(err, to)
		}
		return nil, note, refusal.New(refusal.FileExists, "%q already exists; a move never replaces a file, so choose another name", to)
	}
	var data []byte
	h := e.opts.History
	if h != nil {
		h.mu.Lock()
	}
	undoable, err := func() (bool, error) {
		st, err := e.root.Stat(ctx, from)
		switch {
		case err != nil:
			return false, FileRefusal(err, from)
		case st.Dir:
			return false, refusal.New(refusal.IsADirectory, "%q is a folder; only files can be moved here", from)
		case st.Size > MaxMoveBytes:
			return false, refusal.New(refusal.WriteTooLarge, "%q is %d bytes, over the bound of %d for a move", from, st.Size, MaxMoveBytes)
		}
		if data, err = e.root.ReadFile(ctx, from); err != nil {
			return false, FileRefusal(err, from)
		}
		if _, err := e.root.Stat(ctx, path.Dir(to)); path.Dir(to) != "." && errors.Is(err, fs.ErrNotExist) {
			obs.ParentsCreated = true
		}
		if h == nil {
			return false, e.moveFile(ctx, from, to, data)
		}
		sum := digest(data)
		rec, err := h.keep(ctx, historyRecord{Action: actionMove, Path: from, To: to, By: e.actor(), Existed: true, Before: sum, After: sum}, nil)
		if err != nil {
			return false, refusal.New(refusal.HistoryFailed, "the move of %q could not be recorded for undo (%v), so nothing was done", from, err)
		}
		if err := e.moveFile(ctx, from, to, data); err != nil {
			h.forget(ctx, rec)
			return false, err
		}
		h.commit(ctx, rec)
		return true, nil
	}()
	if h != nil {
		h.mu.Unlock()
		if undoable {
			h.changed()
		}
	}
	if err != nil {
		return nil, note, err
	}
	obs.Bytes, obs.Undoable = int64(len(data)), undoable
	note.Bytes = obs.Bytes
	out, err := marshal(obs)
	return out, note, err
}

// moveFile writes data (the content of from) to to, which must be free, and then removes from.
// When from cannot be removed, to is removed again: the file is in one place or the other, never
// lost.
func (e *Executor) moveFile(ctx context.Context, from, to string, data []byte) error {
	if _, err := e.root.Stat(ctx, to); !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return FileRefusal(err, to)
		}
		return refusal.New(refusal.FileExists, "%q already exists; a move never replaces a file", to)
	}
	if err := e.putFile(ctx, to, data); err != nil {
		return err
	}
	if err := e.root.Remove(ctx, from); err != nil {
		e.root.Remove(ctx, to)
		return FileRefusal(err, from)
	}
	return nil
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
