package engine

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/voicebox-go/voicebox/internal/shared/sha"
	"hash"
	"io/fs"
	"strconv"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxViewBytes bounds what files.read returns for the page to show and edit; a larger file is
// flagged truncated and must be downloaded to be seen whole.
const MaxViewBytes = 1 << 20

// MaxUploads bounds the uploads one page may have in progress at once.
const MaxUploads = 8

// decodeParams reads params strictly into v, without reflection: unknown keys are refused.
func decodeParams(req request, v strictjson.Struct) *refusal.Refusal {
	p := req.Params
	if len(bytes.TrimSpace(p)) == 0 || string(bytes.TrimSpace(p)) == "null" {
		p = []byte("{}")
	}
	if err := strictjson.DecodeStruct(p, v); err != nil {
		return refusal.New(refusal.InvalidArgument, "the parameters of %s do not fit it: %s", req.Method, strictjson.Problem(err))
	}
	return nil
}

func (a *Engine) current() (fsroot.Root, RootInfo, bool) {
	a.ws.mu.Lock()
	defer a.ws.mu.Unlock()
	return a.ws.root, a.ws.info, a.ws.root != nil
}

// onRoot decodes req's parameters into a P and runs fn with them on the open root and its
// executor; without a root it refuses no-root.
func onRoot[P any, PP interface {
	*P
	strictjson.Struct
}](a *Engine, req request, fn func(root fsroot.Root, w *workspace, p P) (result, *refusal.Refusal)) (result, *refusal.Refusal) {
	var p P
	if r := decodeParams(req, PP(&p)); r != nil {
		return result{}, r
	}
	a.ws.mu.Lock()
	root, w := a.ws.root, a.ws.exec
	a.ws.mu.Unlock()
	if root == nil {
		return result{}, refusal.New(refusal.NoRoot, "no workspace folder is open; choose browser storage or a folder first")
	}
	return fn(root, w, p)
}

// observed answers with an executor's observation, or its refusal.
func observed(out json.RawMessage, r *refusal.Refusal) (result, *refusal.Refusal) {
	if r != nil {
		return result{}, r
	}
	return result{Value: out}, nil
}

func (a *Engine) rootOpen(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p rootOpenParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	if p.Kind != "opfs" && p.Kind != "handle" {
		return result{}, refusal.New(refusal.InvalidArgument, "a root is of kind \"opfs\" or \"handle\", not %q", p.Kind)
	}
	if p.Kind == "handle" && req.Object == nil {
		return result{}, refusal.New(refusal.MissingArgument, "a handle root needs the directory handle the user picked")
	}
	root, info, err := a.ws.openRoot(ctx, p.Kind, req.Object)
	if err != nil {
		return result{}, refusal.New(refusal.RootUnavailable, "the %s root could not be opened: %v", p.Kind, err)
	}
	exec := newExecutor(ctx, root, a.historyChanged, a.ws.wasm)
	a.ws.mu.Lock()
	old, oldExec := a.ws.root, a.ws.exec
	a.ws.root, a.ws.info, a.ws.exec = root, info, exec
	for id, up := range a.ws.uploads {
		up.w.Abort()
		delete(a.ws.uploads, id)
	}
	a.ws.mu.Unlock()
	oldExec.close()
	if c, ok := old.(interface{ Close() }); ok && old != root {
		c.Close()
	}
	if a.relay.peer != nil {
		a.relay.peer.SetRoot(channel.NewDoor(routed{a, exec}, a.relay.peer.Admitted(), channel.DoorOptions{}), info)
	}
	return result{Value: info}, nil
}

func (a *Engine) channelConnect(context.Context, request) (result, *refusal.Refusal) {
	if a.relay.peer == nil {
		return result{}, refusal.New(refusal.NoRoot, "this worker has no connection to the relay")
	}
	a.relay.peer.Resume()
	return result{Value: map[string]any{"resumed": true}}, nil
}

func (a *Engine) rootInfo(context.Context, request) (result, *refusal.Refusal) {
	if _, info, ok := a.current(); ok {
		return result{Value: info}, nil
	}
	return result{}, refusal.New(refusal.NoRoot, "no workspace folder is open")
}

type pathParam struct {
	Path string `json:"path"`
}

type dirParam struct {
	Dir string `json:"dir"`
}

func (a *Engine) filesList(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, p dirParam) (result, *refusal.Refusal) {
		return observed(w.run(ctx, executor.ListFiles, &p))
	})
}

// viewValue is what files.read shows: the text, or a note that the file is binary.
type viewValue struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Text      string `json:"text"`
	Binary    bool   `json:"binary"`
	Truncated bool   `json:"truncated"`
	// Digest is the SHA-256 (hex) of the whole file, when it is read whole: the version the
	// viewer opened, which its save hands back as files.write's expect.
	Digest string `json:"digest,omitempty"`
}

func (a *Engine) filesRead(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(root fsroot.Root, _ *workspace, p pathParam) (result, *refusal.Refusal) {
		b, size, err := fsroot.ReadPrefix(ctx, root, p.Path, MaxViewBytes)
		if err != nil {
			return result{}, fileRefusal(err)
		}
		v := viewValue{Path: p.Path, Size: size}
		if size == int64(len(b)) {
			v.Digest = sha256Hex(b)
		}
		if size > int64(len(b)) {
			v.Truncated = true
			// Back off a character cut in two by the bound (at most UTFMax-1 bytes).
			for cut := 0; cut < utf8.UTFMax-1 && !utf8.Valid(b); cut++ {
				b = b[:len(b)-1]
			}
		}
		if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			v.Binary = true
		} else {
			v.Text = string(b)
		}
		return result{Value: v}, nil
	})
}

type writeParam struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Mode is write-file's: "" or "replace" writes whatever is there, "create" makes a new file
	// and is refused file-exists when one is there.
	Mode string `json:"mode,omitempty"`
	// Expect is write-file's: the digest of the version the saver read (files.read's digest);
	// a file that is no longer that version is refused file-changed.
	Expect string `json:"expect,omitempty"`
}

// filesWrite saves a file (the editor's Save, New file) through the executor, so the change is
// in the undo history as the person's.
func (a *Engine) filesWrite(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, p writeParam) (result, *refusal.Refusal) {
		out, r := w.run(ctx, executor.WriteFile, &p)
		if r != nil {
			return result{}, r
		}
		// The answer carries the digest of what was written: the version the viewer now holds,
		// which its next save expects.
		// Decoded as json.Unmarshal decodes into an any with UseNumber: the executor's numbers
		// are written back as it spelled them (json.Unmarshal's float64 wrote the same for the
		// integers it writes).
		decoded, _ := rawjson.Decode(out)
		v, ok := decoded.(map[string]any)
		if !ok {
			return result{}, refusal.New(refusal.MalformedAnswer, "the write's observation could not be read: it is not a JSON object")
		}
		v["digest"] = sha256Hex([]byte(p.Content))
		return result{Value: v}, nil
	})
}

// sha256Hex is the SHA-256 of b in hex, as the executor's history and write-file's expect name a
// version.
func sha256Hex(b []byte) string {
	sum := sha.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type moveParam struct {
	Path string `json:"path"`
	To   string `json:"to"`
}

// filesMove renames or moves a file or a folder, never over anything (file-exists), in the undo
// history.
func (a *Engine) filesMove(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, p moveParam) (result, *refusal.Refusal) {
		return observed(w.run(ctx, executor.MoveFile, &p))
	})
}

// filesMkdir makes a folder (and those above it that are missing) through the executor's
// create-folder, in the undo history like the assistant's.
func (a *Engine) filesMkdir(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, p pathParam) (result, *refusal.Refusal) {
		return observed(w.run(ctx, executor.CreateFolder, &p))
	})
}

// filesDelete deletes a file, or an empty folder (a folder that holds anything is refused
// folder-not-empty), through the executor: either is in the undo history.
func (a *Engine) filesDelete(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(root fsroot.Root, w *workspace, p pathParam) (result, *refusal.Refusal) {
		st, err := root.Stat(ctx, p.Path)
		if err != nil {
			return result{}, fileRefusal(err)
		}
		if !st.Dir {
			return observed(w.run(ctx, executor.DeleteFile, &p))
		}
		return observed(w.run(ctx, executor.RemoveFolder, &p))
	})
}

// historyChanged tells the page the undo history changed.
func (a *Engine) historyChanged() { a.post([]byte(`{"type":"history"}`)) }

// historyList lists the undo history's changes, newest first, with who made each.
func (a *Engine) historyList(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, _ noParams) (result, *refusal.Refusal) {
		return observed(w.run(ctx, executor.ListHistory, noParams{}))
	})
}

type undoParam struct {
	// Resolve says how to resolve a conflict (executor.ResolveKeepCurrent and the others).
	Resolve string `json:"resolve,omitempty"`
}

// historyUndo takes back the newest change, whoever made it.
func (a *Engine) historyUndo(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, p undoParam) (result, *refusal.Refusal) {
		return observed(w.run(ctx, executor.UndoLast, &p))
	})
}

// historyRedo puts back the change undone last.
func (a *Engine) historyRedo(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, _ noParams) (result, *refusal.Refusal) {
		return observed(w.run(ctx, executor.RedoLast, noParams{}))
	})
}

// maxConflictViewBytes bounds each version history.conflict shows.
const maxConflictViewBytes = 64 << 10

// historyConflict describes the change an undo would take back and the two versions of its file.
func (a *Engine) historyConflict(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(_ fsroot.Root, w *workspace, _ noParams) (result, *refusal.Refusal) {
		c, err := w.ui.UndoConflict(ctx, maxConflictViewBytes)
		if err != nil {
			return result{}, fileRefusal(err)
		}
		return result{Value: conflictValue(c)}, nil
	})
}

func (a *Engine) filesDownload(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(root fsroot.Root, _ *workspace, p pathParam) (result, *refusal.Refusal) {
		b, err := root.ReadFile(ctx, p.Path)
		if err != nil {
			return result{}, fileRefusal(err)
		}
		return result{Value: map[string]any{"path": p.Path, "size": len(b)}, Bytes: b}, nil
	})
}

// upload is a file arriving in chunks, written through an atomic replacement that becomes
// visible only when committed, as a change of the undo history (its digest is taken as the
// chunks arrive).
type upload struct {
	id      string
	path    string
	create  bool
	exec    *workspace
	w       fsroot.Writer
	sum     hash.Hash
	written int64
}

type uploadBeginParam struct {
	Path string `json:"path"`
	// Mode is "replace" (or "") to replace a file that is there, "create" to be refused
	// file-exists at commit when one is.
	Mode string `json:"mode,omitempty"`
}

func (a *Engine) uploadBegin(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(root fsroot.Root, w *workspace, p uploadBeginParam) (result, *refusal.Refusal) {
		if p.Mode != "" && p.Mode != executor.WriteReplace && p.Mode != executor.WriteCreate {
			return result{}, refusal.New(refusal.InvalidArgumentEnum, "mode must be %q or %q, not %q", executor.WriteReplace, executor.WriteCreate, p.Mode)
		}
		if p.Mode == executor.WriteCreate {
			if _, err := root.Stat(ctx, p.Path); err == nil {
				return result{}, refusal.New(refusal.FileExists, "%q already exists; replace it, keep both, or skip it", p.Path)
			}
		}
		return a.beginUpload(ctx, root, w, p.Path, p.Mode == executor.WriteCreate)
	})
}

func (a *Engine) beginUpload(ctx context.Context, root fsroot.Root, exec *workspace, path string, create bool) (result, *refusal.Refusal) {
	a.ws.mu.Lock()
	full := len(a.ws.uploads) >= MaxUploads
	a.ws.mu.Unlock()
	if full {
		return result{}, refusal.New(refusal.TooManyUploads, "%d uploads are already in progress; wait for one to finish", MaxUploads)
	}
	// The writer outlives this call, so it gets a context of its own, not the call's.
	w, err := root.Create(context.WithoutCancel(ctx), path)
	if err != nil {
		return result{}, fileRefusal(err)
	}
	a.ws.mu.Lock()
	a.ws.nextUpload++
	id := "up" + strconv.Itoa(a.ws.nextUpload)
	a.ws.uploads[id] = &upload{id: id, path: path, create: create, exec: exec, w: w, sum: sha.New()}
	a.ws.mu.Unlock()
	return result{Value: map[string]any{"uploadId": id}}, nil
}

type uploadParam struct {
	UploadID string `json:"uploadId"`
}

// onUpload decodes req's {uploadId} and runs fn on that upload in progress; with finish, the
// upload is forgotten first (it is committed or aborted whatever fn does).
func (a *Engine) onUpload(req request, finish bool, fn func(up *upload) (result, *refusal.Refusal)) (result, *refusal.Refusal) {
	var p uploadParam
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	a.ws.mu.Lock()
	up, ok := a.ws.uploads[p.UploadID]
	if ok && finish {
		delete(a.ws.uploads, p.UploadID)
	}
	a.ws.mu.Unlock()
	if !ok {
		return result{}, refusal.New(refusal.InvalidArgument, "no upload %q is in progress", p.UploadID)
	}
	return fn(up)
}

func (a *Engine) uploadChunk(_ context.Context, req request) (result, *refusal.Refusal) {
	return a.onUpload(req, false, func(up *upload) (result, *refusal.Refusal) {
		if _, err := up.w.Write(req.Bytes); err != nil {
			// A failed piece ends the upload: the old content stays, the new is discarded.
			a.ws.mu.Lock()
			delete(a.ws.uploads, up.id)
			a.ws.mu.Unlock()
			up.w.Abort()
			return result{}, fileRefusal(err)
		}
		up.sum.Write(req.Bytes)
		up.written += int64(len(req.Bytes))
		return result{Value: map[string]any{"written": up.written}}, nil
	})
}

// uploadCommit makes the upload the file's content, as the person's change in the undo history.
func (a *Engine) uploadCommit(ctx context.Context, req request) (result, *refusal.Refusal) {
	return a.onUpload(req, true, func(up *upload) (result, *refusal.Refusal) {
		created, undoable, err := up.exec.ui.Commit(ctx, up.path, hex.EncodeToString(up.sum.Sum(nil)), up.create, up.w.Commit)
		if err != nil {
			up.w.Abort()
			return result{}, fileRefusal(err)
		}
		return result{Value: map[string]any{"path": up.path, "size": up.written, "created": created, "undoable": undoable}}, nil
	})
}

func (a *Engine) uploadAbort(_ context.Context, req request) (result, *refusal.Refusal) {
	return a.onUpload(req, true, func(up *upload) (result, *refusal.Refusal) {
		up.w.Abort()
		return result{Value: map[string]any{"path": up.path, "aborted": true}}, nil
	})
}

// fileRefusal names what went wrong with a file operation, the way the executor does; a failure
// that is no rule is file-error.
func fileRefusal(err error) *refusal.Refusal {
	name := ""
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		name = pe.Path
	}
	if r, ok := refusal.As(executor.FileRefusal(err, name)); ok {
		return r
	}
	return refusal.New(refusal.FileError, "%q could not be used: %v", name, err)
}
