// Package executor runs the file primitives (now, read-file, write-file, list-files) on a
// workspace root and answers with what it observed: the path as resolved, sizes, bytes written,
// truncation flags, entries. Whatever it will not do it refuses with a rule id.
//
// An Executor is a channel.Executor: the page (and a paired machine environment) put it behind
// the executor door, which re-verifies each call before it gets here:
//
//	door := channel.NewDoor(executor.New(root, executor.Options{}), admitted, channel.DoorOptions{})
//
// The page's own file browser calls the same Executor, so the user and the assistant meet the
// same rules.
//
// # Arguments
//
//	now         {}
//	read-file   {"path": string, "head"?: N, "tail"?: N}   (N a decimal string, 1 to MaxLines)
//	write-file  {"path": string, "content": string, "encoding"?: "utf-8" | "base64", "mode"?: "replace" | "create", "expect"?: SHA-256 hex}
//	list-files  {"dir"?: string}          ("" or absent is the top of the workspace)
//	diff-file   {"path": string, "content": string}   (writes nothing; see diff.go)
//
// and the assistant's and the file browser's (fsinfo.go, edit.go, folder.go, move.go,
// history.go): create-folder {"path"}, remove-folder {"path"}, move-file {"path", "to"}, file-info {"path"},
// directory-tree {"dir"?, "depth"?}, read-files {"paths": JSON array as text}, read-media
// {"path"}, edit-file {"path", "oldText", "newText"} or {"path", "oldTexts", "newTexts"} (JSON
// arrays as text), "dryRun"? "true"; undo-last {"resolve"?}, redo-last {}, list-history {};
// each is described where it is defined.
//
// Any other key is refused (invalid-argument), a missing or null required one is
// missing-argument, a value of the wrong JSON type invalid-argument-type. Paths go through
// fsroot.Check: outside-root, dotfile-refused, path-too-long.
//
// # Observations
//
//	now         {"now": RFC 3339 time, "unixMs": int, "zone": string}
//	read-file   {"path", "size", "bytes", "truncated", "encoding", "content"}
//	write-file  {"path", "bytes", "created", "parentsCreated"}
//	list-files  {"dir", "count", "truncated", "entries": [{"name", "path", "dir", "size", "modTime"?}]}
//	diff-file   {"path", "existed", "changed", "diff", "truncated"}
//
// read-file returns at most MaxReadBytes of the file, cut back to a whole UTF-8 character, with
// "truncated" set and "size" the whole file's size. Content that is not UTF-8 comes back as
// base64 ("encoding": "base64"). write-file creates missing parent folders and refuses content
// over the write bound with write-too-large. With "expect", the SHA-256 of the version the caller
// read, write-file replaces only that version: a file changed or removed since is refused
// file-changed and left as it is (a save never overwrites a newer version unseen). A missing file or folder is not-found, a folder
// where a file is wanted is-a-directory, a file where a folder is wanted not-a-directory.
//
// # Wasm
//
// Nothing differs: the package is portable Go. In the page it runs in the worker beside the
// OPFS roots.
package executor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of the primitives.
const (
	// MaxReadBytes is the most content read-file returns; a longer file is cut (at a UTF-8
	// character boundary) and flagged truncated. Even escaped, it fits an answer frame.
	MaxReadBytes = 64 << 10
	// MaxWriteBytes is the default bound of the content one write-file call may write. The
	// wire's frame bound (wire.MaxFrameBytes, which also holds the JSON escaping) keeps calls
	// over /channel smaller still; Options.MaxWriteBytes may raise it for in-page callers.
	MaxWriteBytes = 1 << 20
	// MaxListEntries is the most entries list-files returns; beyond it the listing is flagged
	// truncated and "count" says how many there are. Even with long escaped names, it fits an
	// answer frame.
	MaxListEntries = 500
)

// Primitive names a built-in operation.
type Primitive string

// The file primitives and the clock.
const (
	Now       Primitive = "now"
	ReadFile  Primitive = "read-file"
	WriteFile Primitive = "write-file"
	ListFiles Primitive = "list-files"
	// The assistant's own primitives (see edit.go and history.go); extension descriptors cannot
	// name them.
	DeleteFile Primitive = "delete-file"
	EditFile   Primitive = "edit-file"
	GrepFiles  Primitive = "grep-files"
	UndoLast   Primitive = "undo-last"
	DiffFile   Primitive = "diff-file"
	// The filesystem-server primitives (see fsinfo.go, folder.go and move.go).
	FileInfo      Primitive = "file-info"
	DirectoryTree Primitive = "directory-tree"
	ReadFiles     Primitive = "read-files"
	ReadMedia     Primitive = "read-media"
	CreateFolder  Primitive = "create-folder"
	// MoveFile moves or renames a file or a folder, never over anything (see move.go).
	MoveFile Primitive = "move-file"
	// RemoveFolder deletes an empty folder, in the history (see folder.go).
	RemoveFolder Primitive = "remove-folder"
	// The history's own (see history.go): the person's Redo and the list of changes.
	RedoLast    Primitive = "redo-last"
	ListHistory Primitive = "list-history"
)

// Primitives lists the primitives an Executor runs.
func Primitives() []Primitive {
	return []Primitive{Now, ReadFile, WriteFile, ListFiles, DeleteFile, EditFile, GrepFiles, UndoLast, DiffFile,
		FileInfo, DirectoryTree, ReadFiles, ReadMedia, CreateFolder, MoveFile, RemoveFolder, RedoLast, ListHistory}
}

// Options configures an Executor. The zero value is usable: calls name primitives directly, no
// audit log, the default bounds, the real clock.
type Options struct {
	// Resolve maps a verified call to the primitive it runs (for an extension tool, the one its
	// admitted descriptor names). Nil means the call's tool is the primitive's name. A call it
	// maps to false is refused with unknown-tool.
	Resolve func(call wire.Call) (Primitive, bool)
	// MaxWriteBytes bounds write-file's content; zero means MaxWriteBytes. Raising it lets
	// larger content through in one call: only for callers that cannot be a model (the page's
	// own UI), since the content is held in memory twice.
	MaxWriteBytes int
	// Audit receives a record of every call executed (refused or not). Nil keeps none.
	Audit AuditLog
	// Clock is what now reads and audit records are stamped with. Nil means time.Now.
	Clock func() time.Time
	// Location is the zone now reports its time in. Nil means time.Local.
	Location *time.Location
	// Log receives audit failures. Nil discards them.
	Log Logger
	// Wasm runs the wasm primitive's modules (see Wasm); nil refuses it.
	Wasm WasmRunner
	// History, when set, keeps the earlier version of every file write-file, edit-file and
	// delete-file replace, for undo-last. Nil keeps none: the changes still happen, their
	// observations say "undoable" false, and undo-last is refused nothing-to-undo. Several
	// Executors may share one History.
	History *History
	// Actor is who this Executor's changes are recorded under in the History; zero means
	// ByAssistant.
	Actor Actor
}

// Executor runs primitives on one root. It is safe for concurrent use if its root is.
type Executor struct {
	root      fsroot.Root
	opts      Options
	log       Logger
	auditFail atomic.Uint64
}

// New returns an Executor over root.
func New(root fsroot.Root, opts Options) *Executor {
	if opts.MaxWriteBytes <= 0 {
		opts.MaxWriteBytes = MaxWriteBytes
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	e := &Executor{root: root, opts: opts, log: opts.Log}
	if e.log == nil {
		e.log = discard{}
	}
	return e
}

// AuditFailures returns how many records the audit log failed to take. A failure never changes
// an answer (the call already happened); it is logged and counted here.
func (e *Executor) AuditFailures() uint64 { return e.auditFail.Load() }

// Execute runs call and returns its observation, or a *refusal.Refusal. Any other error is a
// failure of the root (the door answers it with exec-threw).
func (e *Executor) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	prim, known := Primitive(call.Tool), true
	if e.opts.Resolve != nil {
		prim, known = e.opts.Resolve(call)
	}
	var (
		out  json.RawMessage
		err  error
		note auditNote
	)
	switch {
	case !known:
		err = refusal.New(refusal.UnknownTool, "the tool %q runs no primitive this executor knows", call.Tool)
	case prim == Now:
		out, err = e.now(call.Args)
	case prim == ReadFile:
		out, note, err = e.readFile(ctx, call.Args)
	case prim == WriteFile:
		out, note, err = e.writeFile(ctx, call.Args)
	case prim == ListFiles:
		out, note, err = e.listFiles(ctx, call.Args)
	case prim == DeleteFile:
		out, note, err = e.deleteFile(ctx, call.Args)
	case prim == EditFile:
		out, note, err = e.editFile(ctx, call.Args)
	case prim == GrepFiles:
		out, note, err = e.grepFiles(ctx, call.Args)
	case prim == UndoLast:
		out, note, err = e.undoLast(ctx, call.Args)
	case prim == DiffFile:
		out, note, err = e.diffFile(ctx, call.Args)
	case prim == FileInfo:
		out, note, err = e.fileInfo(ctx, call.Args)
	case prim == DirectoryTree:
		out, note, err = e.directoryTree(ctx, call.Args)
	case prim == ReadFiles:
		out, note, err = e.readFiles(ctx, call.Args)
	case prim == ReadMedia:
		out, note, err = e.readMedia(ctx, call.Args)
	case prim == CreateFolder:
		out, note, err = e.createFolder(ctx, call.Args)
	case prim == MoveFile:
		out, note, err = e.moveFile(ctx, call.Args)
	case prim == RemoveFolder:
		out, note, err = e.removeFolder(ctx, call.Args)
	case prim == RedoLast:
		out, note, err = e.redoLast(ctx, call.Args)
	case prim == ListHistory:
		out, note, err = e.listHistory(ctx, call.Args)
	case prim == Wasm:
		out, note, err = e.wasm(ctx, call.Args)
	default:
		err = refusal.New(refusal.UnknownTool, "%q is not a primitive; the primitives are %s", string(prim), primitiveList())
	}
	err = nameNoSpace(err)
	if e.opts.Audit != nil {
		e.audit(ctx, call, prim, note, err)
	}
	return out, err
}

func (e *Executor) now(raw json.RawMessage) (json.RawMessage, error) {
	if _, err := parseArgs(raw, nil); err != nil {
		return nil, err
	}
	t := e.opts.Clock().In(e.opts.Location)
	zone, _ := t.Zone()
	return marshal(&nowObserved{t.Format(time.RFC3339Nano), t.UnixMilli(), zone})
}

type nowObserved struct {
	Now    string `json:"now"`
	UnixMs int64  `json:"unixMs"`
	Zone   string `json:"zone"`
}

type readObserved struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Bytes     int    `json:"bytes"`
	Truncated bool   `json:"truncated"`
	Encoding  string `json:"encoding"`
	Content   string `json:"content"`
}

// AppendJSON writes the observation as encoding/json does without HTML escaping.
func (o *readObserved) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(slices.Grow(dst, len(o.Content)+len(o.Path)+96), false)
	w.String("path", o.Path)
	w.Int("size", o.Size)
	w.Int("bytes", int64(o.Bytes))
	w.Bool("truncated", o.Truncated)
	w.String("encoding", o.Encoding)
	w.String("content", o.Content)
	return w.Close()
}

func (e *Executor) readFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw, argSpec{name: "head"}, argSpec{name: "tail"})
	if err != nil {
		return nil, note, err
	}
	name := args["path"]
	head, err := intArg(args, "head", 0, 1, MaxLines)
	if err != nil {
		return nil, note, err
	}
	tail, err := intArg(args, "tail", 0, 1, MaxLines)
	if err != nil {
		return nil, note, err
	}
	var obs *readObserved
	switch {
	case head > 0 && tail > 0:
		return nil, note, refusal.New(refusal.InvalidArgument, "give head or tail, not both")
	case head > 0:
		obs, err = e.readLines(ctx, name, head, false)
	case tail > 0:
		obs, err = e.readLines(ctx, name, tail, true)
	default:
		obs, err = e.read(ctx, name, MaxReadBytes)
	}
	if err != nil {
		return nil, note, err
	}
	note.Bytes = int64(obs.Bytes)
	out, err := marshal(obs)
	return out, note, err
}

// cutUTF8 returns data as text when it is UTF-8. When data is a cut prefix, an incomplete
// character at its end (at most utf8.UTFMax-1 bytes) is dropped first.
func cutUTF8(data []byte, cut bool) ([]byte, bool) {
	if utf8.Valid(data) {
		return data, true
	}
	if !cut {
		return nil, false
	}
	for k := 1; k < utf8.UTFMax && k <= len(data); k++ {
		i := len(data) - k
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) && utf8.Valid(data[:i]) {
				return data[:i], true
			}
			break
		}
	}
	return nil, false
}

type writeObserved struct {
	Path           string `json:"path"`
	Bytes          int    `json:"bytes"`
	Created        bool   `json:"created"`
	ParentsCreated bool   `json:"parentsCreated"`
	// Undoable is set by an executor with a History.
	Undoable bool `json:"undoable,omitempty"`
}

// AppendJSON writes the observation as encoding/json does without HTML escaping.
func (o writeObserved) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, false)
	w.String("path", o.Path)
	w.Int("bytes", int64(o.Bytes))
	w.Bool("created", o.Created)
	w.Bool("parentsCreated", o.ParentsCreated)
	if o.Undoable {
		w.Bool("undoable", true)
	}
	return w.Close()
}

func (e *Executor) writeFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw, argSpec{name: "content", required: true}, argSpec{name: "encoding", enum: []string{"utf-8", "base64"}},
		argSpec{name: "mode", enum: []string{WriteReplace, WriteCreate}}, argSpec{name: "expect"})
	if err != nil {
		return nil, note, err
	}
	name, content := args["path"], args["content"]
	if err := fsroot.CheckCreate(name); err != nil {
		return nil, note, err // before any parent folder is made
	}
	limit := e.opts.MaxWriteBytes
	var data []byte
	if args["encoding"] == "base64" {
		if base64.StdEncoding.DecodedLen(len(content)) > limit+2 {
			return nil, note, tooLarge(base64.StdEncoding.DecodedLen(len(content)), limit)
		}
		if data, err = base64.StdEncoding.DecodeString(content); err != nil {
			return nil, note, refusal.New(refusal.InvalidArgument, "the content is not standard base64: %v", err)
		}
	} else {
		data = []byte(content)
	}
	if len(data) > limit {
		return nil, note, tooLarge(len(data), limit)
	}
	created, parents := false, false
	prepare := func(_ []byte, existed bool) ([]byte, error) {
		created = !existed
		return data, nil
	}
	apply := func(data []byte) error {
		if created {
			if dir := path.Dir(name); dir != "." {
				if _, err := e.root.Stat(ctx, dir); errors.Is(err, fs.ErrNotExist) {
					if err := e.root.MkdirAll(ctx, dir); err != nil {
						return FileRefusal(err, dir)
					}
					parents = true
				}
			}
		}
		if err := e.root.WriteFile(ctx, name, data); err != nil {
			return FileRefusal(err, name)
		}
		return nil
	}
	undoable, err := e.change(ctx, change{action: actionWrite, name: name, create: args["mode"] == WriteCreate, expect: args["expect"], prepare: prepare, apply: apply})
	if err != nil {
		return nil, note, err
	}
	note.Bytes = int64(len(data))
	out, err := marshal(&writeObserved{Path: name, Bytes: len(data), Created: created, ParentsCreated: parents, Undoable: undoable})
	return out, note, err
}

// write-file's modes: "replace" (the default) writes whether or not the file exists; "create"
// makes a new file and is refused file-exists when one is there, so it never replaces one.
const (
	WriteReplace = "replace"
	WriteCreate  = "create"
)

func tooLarge(n, limit int) error {
	return refusal.New(refusal.WriteTooLarge, "the content is %d bytes, over the bound of %d bytes for one write", n, limit)
}

type listEntry struct {
	Name string `json:"name"`
	// Shown is the name with each character that hides or reorders text written as \u{XXXX}
	// (internal/shared/names.Escape), for a name another program stored that Voicebox would not create;
	// absent for every other name. Name is still the one to read, move or delete it by.
	Shown   string    `json:"shown,omitempty"`
	Path    string    `json:"path"`
	Dir     bool      `json:"dir"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime,omitzero"`
}

type listObserved struct {
	Dir       string      `json:"dir"`
	Count     int         `json:"count"`
	Truncated bool        `json:"truncated"`
	Entries   []listEntry `json:"entries"`
}

func (e *Executor) listFiles(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, err := parseArgs(raw, []argSpec{{name: "dir"}})
	if err != nil {
		return nil, auditNote{}, err
	}
	dir := args["dir"]
	note := auditNote{Path: dir}
	if err := fsroot.CheckDir(dir); err != nil {
		return nil, note, err
	}
	entries, err := e.root.ReadDir(ctx, dir)
	if err != nil {
		return nil, note, FileRefusal(err, dir)
	}
	obs := listObserved{Dir: dir, Count: len(entries), Entries: make([]listEntry, 0, min(len(entries), MaxListEntries))}
	if len(entries) > MaxListEntries {
		entries, obs.Truncated = entries[:MaxListEntries], true
	}
	for _, en := range entries {
		p := en.Name
		if dir != "" {
			p = dir + "/" + en.Name
		}
		le := listEntry{Name: en.Name, Path: p, Dir: en.Dir, Size: en.Size, ModTime: en.ModTime.UTC()}
		if shown := names.Escape(en.Name); shown != en.Name {
			le.Shown = shown
		}
		obs.Entries = append(obs.Entries, le)
	}
	note.Bytes = int64(len(obs.Entries))
	out, err := marshal(&obs)
	return out, note, err
}

// FileRefusal turns a root's error about name into the refusal a person or a model can act on:
// is-a-directory, not-a-directory, not-a-regular-file, not-found, folder-not-empty, file-exists
// (something in the way), permission-denied. A refusal passes as it is; an error that is no rule
// (a failing disk) is returned unchanged. The page's file browser uses it too, so both name a
// failure alike.
func FileRefusal(err error, name string) error {
	if r, ok := refusal.As(err); ok {
		return r
	}
	switch {
	case errors.Is(err, fsroot.ErrIsDir):
		return refusal.New(refusal.IsADirectory, "%q is a folder, not a file", name)
	case errors.Is(err, fsroot.ErrNotDir):
		return refusal.New(refusal.NotADirectory, "%q is or goes through a file, not a folder", name)
	case errors.Is(err, fsroot.ErrNotRegular):
		return refusal.New(refusal.NotARegularFile, "%q is a pipe, a device or a socket, not a file; the file tools read only regular files", name)
	case errors.Is(err, fs.ErrNotExist):
		if name == "" {
			return refusal.New(refusal.NotFound, "the workspace folder is gone")
		}
		return refusal.New(refusal.NotFound, "there is no file or folder %q", name)
	case errors.Is(err, fsroot.ErrNotEmpty):
		return refusal.New(refusal.FolderNotEmpty, "the folder %q is not empty; delete or move what is in it first", name)
	case errors.Is(err, fs.ErrExist):
		return refusal.New(refusal.FileExists, "something is already in the way at %q", name)
	case errors.Is(err, fs.ErrPermission):
		return refusal.New(refusal.PermissionDenied, "access to %q is not allowed; grant the folder again", name)
	case errors.Is(err, fsroot.ErrNoSpace):
		return noSpace(name)
	case errors.Is(err, fsroot.ErrBusy):
		return busy(name)
	}
	return err
}

// nameNoSpace turns a failure for want of room in the workspace (fsroot.ErrNoSpace), or on a
// file held locked elsewhere (fsroot.ErrBusy), from any primitive and any root, that no primitive
// named into its refusal (workspace-disk-full, file-busy), for every primitive at once; any
// other error is returned unchanged.
func nameNoSpace(err error) error {
	if _, named := refusal.As(err); named || !(errors.Is(err, fsroot.ErrNoSpace) || errors.Is(err, fsroot.ErrBusy)) {
		return err
	}
	name := "the file"
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		name = pe.Path
	}
	if errors.Is(err, fsroot.ErrBusy) {
		return busy(name)
	}
	return noSpace(name)
}

// busy is the refusal of a change of name that another context holds locked.
func busy(name string) *refusal.Refusal {
	return refusal.New(refusal.FileBusy, "%q is held open by another tab of this browser storage, which did not let go of it in time, so it was left unchanged; try again", name)
}

// noSpace is the refusal of a change of name that found no room in the workspace.
func noSpace(name string) *refusal.Refusal {
	return refusal.New(refusal.WorkspaceDiskFull, "there is no room left where the workspace is stored, so %q was left unchanged; free some space (or storage quota) and try again", name)
}
