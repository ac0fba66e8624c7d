package opfs

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// MaxOpenHandles bounds the pool of sync access handles an OPFS root keeps open for reads.
const MaxOpenHandles = 32

// swapSuffix ends the names of the swap files the browser keeps beside a file while a writable
// on it is open; listings leave them out (a file of the user's with that ending is hidden too).
const swapSuffix = ".crswap"

// maxCachedFiles bounds the file handles a root remembers; past it the cache starts over.
const maxCachedFiles = 1024

// readRetries bounds how often an asynchronous read starts again when a replace invalidated the
// File snapshot it was reading; from the third attempt on it waits readRetryPause first, so a
// burst of replaces can end.
const (
	readRetries    = 12
	readRetryPause = 2 * time.Millisecond
)

// Root is a workspace root over a FileSystemDirectoryHandle.
type Root struct {
	dir  jsutil.Value
	pool *handlePool // nil when sync access handles are not used

	mu      sync.Mutex
	dirs    map[string]jsutil.Value // directory handles by path, "" is the root
	files   map[string]jsutil.Value // file handles by path (each lookup is a round trip)
	writing map[string]int          // files with a write in progress: reads use the async API
	failAt  int64                   // writes fail past this many bytes; negative: never
	meta    *Root                   // the metadata area's root, once asked for
	poolKey string                  // prefixes this root's keys in a pool it shares
}

// FailWritesAfter makes every write fail once it has taken in more than n bytes, after really
// writing the first n (so the browser holds a partial swap file that must never become visible);
// a negative n makes writes work again. It exists for the atomicity tests.
func (r *Root) FailWritesAfter(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failAt = n
}

func (r *Root) failLimit() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failAt
}

// OpenOPFS returns a root over the origin's private storage, or over its subdirectory sub
// (created if missing) when sub is not empty. sub must pass fsroot.Check, except that it may be
// a dot name: the page keeps host-owned areas there, out of the tools' reach.
func OpenOPFS(ctx context.Context, sub string) (*Root, error) {
	nav, err := jsutil.Global().Get("navigator")
	if err != nil {
		return nil, err
	}
	storage, err := nav.Get("storage")
	if err != nil || storage.IsUndefined() {
		return nil, errors.New("opfs: navigator.storage is not available here")
	}
	dir, err := jsutil.Call(ctx, storage, "getDirectory")
	if err != nil {
		return nil, err
	}
	var base []string
	for seg := range strings.SplitSeq(sub, "/") {
		if seg == "" {
			continue
		}
		base = append(base, seg)
		if dir, err = jsutil.Call(ctx, dir, "getDirectoryHandle", seg, jsutil.Object(map[string]any{"create": true})); err != nil {
			return nil, err
		}
	}
	r := newRoot(dir)
	if syncHandlesAvailable() {
		r.pool = newHandlePool(MaxOpenHandles)
		r.pool.base = strings.Join(base, "/")
		r.pool.lender = lend(r.pool)
	}
	return r, nil
}

// FromHandle returns a root over dir, a FileSystemDirectoryHandle the caller already holds
// permission for. It uses the asynchronous API only (sync access handles exist only in OPFS).
func FromHandle(dir jsutil.Value) *Root { return newRoot(dir) }

func newRoot(dir jsutil.Value) *Root {
	return &Root{dir: dir, dirs: map[string]jsutil.Value{"": dir}, files: map[string]jsutil.Value{}, writing: map[string]int{}, failAt: -1}
}

// Meta returns the root's hidden metadata area (fsroot.MetaDir), a root of its own over that
// directory, created if missing. Only a holder of this *Root can reach it.
func (r *Root) Meta(ctx context.Context) (fsroot.Root, error) {
	h, err := jsutil.Call(ctx, r.dir, "getDirectoryHandle", fsroot.MetaDir, jsutil.Object(map[string]any{"create": true}))
	if err != nil {
		return nil, pathError("meta", fsroot.MetaDir, err, true)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.meta == nil {
		// One metadata root per root, sharing its pool (under its own keys), so Close closes
		// every handle either opened.
		r.meta = newRoot(h)
		r.meta.pool, r.meta.poolKey = r.pool, fsroot.MetaDir+"/"
	}
	return r.meta, nil
}

// Handle returns the root's FileSystemDirectoryHandle.
func (r *Root) Handle() jsutil.Value { return r.dir }

// UsesSyncHandles reports whether reads go through the pool of sync access handles.
func (r *Root) UsesSyncHandles() bool { return r.pool != nil }

// Close closes every pooled handle. The root stays usable; handles reopen as needed.
func (r *Root) Close() {
	if r.pool != nil {
		r.pool.closeAll()
	}
}

func syncHandlesAvailable() bool {
	ctor, err := jsutil.Global().Get("FileSystemFileHandle")
	if err != nil || ctor.IsUndefined() {
		return false
	}
	proto, err := ctor.Get("prototype")
	if err != nil {
		return false
	}
	m, err := proto.Get("createSyncAccessHandle")
	return err == nil && m.Type() == jsutil.TypeFunction
}

// dirHandle returns the handle of directory p ("" is the root), creating missing directories
// when create is set. Its errors are the browser's; callers turn them into path errors naming
// the path they were asked for.
func (r *Root) dirHandle(ctx context.Context, p string, create bool) (jsutil.Value, error) {
	r.mu.Lock()
	h, ok := r.dirs[p]
	r.mu.Unlock()
	if ok {
		return h, nil
	}
	parent, base := split(p)
	ph, err := r.dirHandle(ctx, parent, create)
	if err != nil {
		return jsutil.Value{}, err
	}
	h, err = jsutil.Call(ctx, ph, "getDirectoryHandle", base, jsutil.Object(map[string]any{"create": create}))
	if err != nil {
		return jsutil.Value{}, err
	}
	r.mu.Lock()
	r.dirs[p] = h
	r.mu.Unlock()
	return h, nil
}

// forget drops the cached handles of p and of everything below it.
func (r *Root) forget(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	under := func(k string) bool { return k != "" && (k == p || strings.HasPrefix(k, p+"/")) }
	for k := range r.dirs {
		if under(k) {
			delete(r.dirs, k)
		}
	}
	for k := range r.files {
		if under(k) {
			delete(r.files, k)
		}
	}
}

func (r *Root) cachedFile(name string) (jsutil.Value, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.files[name]
	return h, ok
}

func (r *Root) cacheFile(name string, h jsutil.Value) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.files) >= maxCachedFiles {
		clear(r.files)
	}
	r.files[name] = h
}

func split(p string) (dir, base string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// ReadFile returns the content of name.
func (r *Root) ReadFile(ctx context.Context, name string) ([]byte, error) {
	b, _, err := r.read(ctx, "read", name, -1)
	return b, err
}

// ReadFilePrefix returns at most n bytes from the start of name and the size of the whole file,
// reading no more than it returns.
func (r *Root) ReadFilePrefix(ctx context.Context, name string, n int) ([]byte, int64, error) {
	return r.read(ctx, "read", name, max(n, 0))
}

// read returns at most limit bytes of name (all of it when limit is negative) and its size.
func (r *Root) read(ctx context.Context, op, name string, limit int) ([]byte, int64, error) {
	if err := fsroot.Check(name); err != nil {
		return nil, 0, fsroot.WithOp(err, op)
	}
	if r.pool != nil && !r.isWriting(name) {
		b, size, err := r.readSync(ctx, op, name, limit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// The cached handle may be stale (removed by another context): look again below.
			r.forget(name)
		case jsutil.Name(err) != "NoModificationAllowedError":
			return b, size, err
		}
		// Otherwise another context holds the file open (a writable or a sync handle): read
		// a snapshot.
	}
	return r.readAsync(ctx, op, name, limit)
}

func (r *Root) isWriting(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writing[name] > 0
}

func (r *Root) readSync(ctx context.Context, op, name string, limit int) ([]byte, int64, error) {
	h, err := r.pool.get(r.poolKey+name, func() (jsutil.Value, error) {
		fh, err := r.fileHandle(ctx, op, name, false)
		if err != nil {
			return jsutil.Value{}, err
		}
		return jsutil.Call(ctx, fh, "createSyncAccessHandle")
	})
	if err != nil {
		return nil, 0, pathError(op, name, err, false)
	}
	b, size, err := r.pool.readPrefix(h, limit)
	if err != nil {
		return nil, 0, pathError(op, name, err, false)
	}
	return b, size, nil
}

func (r *Root) readAsync(ctx context.Context, op, name string, limit int) ([]byte, int64, error) {
	var lastErr error
	for attempt := range readRetries {
		if attempt >= 2 {
			time.Sleep(readRetryPause)
		}
		fh, err := r.fileHandle(ctx, op, name, false)
		if err != nil {
			return nil, 0, err
		}
		file, err := jsutil.Call(ctx, fh, "getFile")
		if err == nil {
			var size int64
			if v, err := file.Get("size"); err == nil {
				f, _ := v.Float()
				size = int64(f)
			}
			part := file
			if limit >= 0 && int64(limit) < size {
				if part, err = file.Call("slice", 0, limit); err != nil {
					return nil, 0, pathError(op, name, jsutil.Thrown(err), false)
				}
			}
			var ab jsutil.Value
			if ab, err = jsutil.Call(ctx, part, "arrayBuffer"); err == nil {
				b, err := jsutil.BytesToGo(ab)
				return b, size, err
			}
		}
		switch jsutil.Name(err) {
		case "NotReadableError", "NotFoundError":
			lastErr = err // replaced while reading: take a fresh snapshot
			r.forget(name)
			continue
		}
		return nil, 0, pathError(op, name, err, false)
	}
	return nil, 0, pathError(op, name, lastErr, false)
}

// fileHandle returns the handle of file name; with create, a missing file is created empty.
func (r *Root) fileHandle(ctx context.Context, op, name string, create bool) (jsutil.Value, error) {
	if h, ok := r.cachedFile(name); ok {
		return h, nil
	}
	parent, base := split(name)
	dh, err := r.dirHandle(ctx, parent, false)
	if err != nil {
		return jsutil.Value{}, pathError(op, name, err, true)
	}
	fh, err := jsutil.Call(ctx, dh, "getFileHandle", base, jsutil.Object(map[string]any{"create": create}))
	if err != nil {
		return jsutil.Value{}, pathError(op, name, err, false)
	}
	r.cacheFile(name, fh)
	return fh, nil
}

// WriteFile replaces name with data atomically.
func (r *Root) WriteFile(ctx context.Context, name string, data []byte) error {
	w, err := r.create(ctx, "write", name)
	if err != nil {
		return err
	}
	return fsroot.WriteAll(w, data)
}

// Create starts an atomic replacement of name written in pieces.
func (r *Root) Create(ctx context.Context, name string) (fsroot.Writer, error) {
	return r.create(ctx, "create", name)
}

func (r *Root) create(ctx context.Context, op, name string) (*writer, error) {
	if err := fsroot.CheckCreate(name); err != nil {
		return nil, fsroot.WithOp(err, op)
	}
	parent, base := split(name)
	dh, err := r.dirHandle(ctx, parent, false)
	if err != nil {
		return nil, pathError(op, name, err, true)
	}
	r.mu.Lock()
	r.writing[name]++
	r.mu.Unlock()
	if r.pool != nil {
		r.pool.close(r.poolKey + name)
	}
	w := &writer{r: r, ctx: ctx, op: op, name: name, dir: dh, base: base}
	if err := w.open(); err != nil {
		w.done()
		return nil, err
	}
	return w, nil
}

// writer is an atomic replacement in progress: a writable stream on the file itself (whose swap
// file the browser commits on close), or, for a new file, on a hidden temporary file moved into
// place on commit.
type writer struct {
	r        *Root
	ctx      context.Context
	op, name string
	dir      jsutil.Value
	base     string
	tmp      string       // the temporary name, for a new file
	file     jsutil.Value // the handle written to
	stream   jsutil.Value
	written  int64
	broken   error // the first failed Write: Commit then aborts and returns it
	finished bool
}

func (w *writer) open() error {
	if fh, ok := w.r.cachedFile(w.name); ok {
		stream, err := jsutil.Call(w.ctx, fh, "createWritable")
		if err == nil {
			w.file, w.stream = fh, stream
			return nil
		}
		w.r.forget(w.name) // stale, or the file is busy: start again from the directory
	}
	fh, err := jsutil.Call(w.ctx, w.dir, "getFileHandle", w.base)
	switch {
	case err == nil:
		w.file = fh
		w.r.cacheFile(w.name, fh)
	case jsutil.Name(err) == "NotFoundError":
		w.tmp = tempName(w.base)
		if w.file, err = jsutil.Call(w.ctx, w.dir, "getFileHandle", w.tmp, jsutil.Object(map[string]any{"create": true})); err != nil {
			return pathError(w.op, w.name, err, false)
		}
	default:
		return pathError(w.op, w.name, err, false)
	}
	// Another context's sync access handle on the file (a tab's worker that read it) makes
	// createWritable fail until that context lets go of it: ask it to.
	err = w.r.whileLocked(w.ctx, w.name, func() (err error) {
		w.stream, err = jsutil.Call(w.ctx, w.file, "createWritable")
		return err
	})
	if err != nil {
		w.removeTemp()
		return pathError(w.op, w.name, err, false)
	}
	return nil
}

// tempName is the name of the temporary file an atomic write of base fills before it is moved into
// place. Its random part only keeps concurrent writes apart, so math/rand/v2 (seeded by the
// runtime from the browser's crypto.getRandomValues) serves: crypto/rand would link the FIPS DRBG,
// AES and math/big into the page.
func tempName(base string) string {
	var b [6]byte
	r := rand.Uint64()
	for i := range b {
		b[i] = byte(r >> (8 * i))
	}
	return ".vbx-" + hex.EncodeToString(b[:]) + "-" + base
}

func (w *writer) Write(p []byte) (int, error) {
	if w.finished {
		return 0, pathError(w.op, w.name, fs.ErrClosed, false)
	}
	var injected error
	if limit := w.r.failLimit(); limit >= 0 && w.written+int64(len(p)) > limit {
		p = p[:max(limit-w.written, 0)]
		injected = textf.Errorf("opfs: injected failure writing %s past %d bytes", w.name, limit)
	}
	if len(p) > 0 {
		chunk, err := jsutil.BytesToJS(p)
		if err != nil {
			return 0, err
		}
		if _, err := jsutil.Call(w.ctx, w.stream, "write", chunk); err != nil {
			w.broken = pathError(w.op, w.name, err, false)
			return 0, w.broken
		}
		w.written += int64(len(p))
	}
	if injected != nil {
		w.broken = &fs.PathError{Op: w.op, Path: w.name, Err: injected}
		return len(p), w.broken
	}
	return len(p), nil
}

func (w *writer) Commit() error {
	if w.finished {
		return pathError(w.op, w.name, fs.ErrClosed, false)
	}
	if w.broken != nil {
		w.Abort()
		return w.broken
	}
	defer w.done()
	if _, err := jsutil.Call(w.ctx, w.stream, "close"); err != nil {
		w.removeTemp()
		return pathError(w.op, w.name, err, false)
	}
	if w.tmp != "" {
		if _, err := jsutil.Call(w.ctx, w.file, "move", w.base); err != nil {
			w.removeTemp()
			return pathError(w.op, w.name, err, false)
		}
		w.r.cacheFile(w.name, w.file) // the moved handle is the file's now
	}
	return nil
}

func (w *writer) Abort() error {
	if w.finished {
		return nil
	}
	defer w.done()
	_, err := jsutil.Call(w.ctx, w.stream, "abort")
	w.removeTemp()
	if err != nil {
		return pathError(w.op, w.name, err, false)
	}
	return nil
}

func (w *writer) removeTemp() {
	if w.tmp != "" {
		// A fresh context: the cleanup must run even when the caller's context has ended.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		jsutil.Call(ctx, w.dir, "removeEntry", w.tmp)
	}
}

func (w *writer) done() {
	w.finished = true
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	if w.r.writing[w.name]--; w.r.writing[w.name] <= 0 {
		delete(w.r.writing, w.name)
	}
}

// AppendFile adds data at the end of name, creating it when missing (fsroot.Appender), through
// the file's sync access handle: the one the pool keeps for reads, opened if need be, written at
// the file's size. Nothing already in the file is written again (a rewrite through
// createWritable copies the whole file to a swap file and back). It is not atomic: a write the
// browser cuts short leaves part of data at the end. Without sync handles (a picked directory,
// the main thread), or while a write replaces name, it answers errors.ErrUnsupported and
// fsroot.Append rewrites the file instead. When another context holds the file (a second tab's
// worker appending to the same audit log), it asks for the handle (see whileLocked) and appends
// once it has it: the exclusive handle is what keeps two contexts' appends from mixing, where a
// rewrite could drop what the other appended between its read and its write.
func (r *Root) AppendFile(ctx context.Context, name string, data []byte) error {
	if err := fsroot.CheckCreate(name); err != nil {
		return fsroot.WithOp(err, "append")
	}
	if r.pool == nil || r.isWriting(name) {
		return errors.ErrUnsupported
	}
	var h jsutil.Value
	err := r.whileLocked(ctx, name, func() (err error) {
		h, err = r.pool.get(r.poolKey+name, func() (jsutil.Value, error) {
			fh, err := r.fileHandle(ctx, "append", name, true)
			if err != nil {
				return jsutil.Value{}, err
			}
			return jsutil.Call(ctx, fh, "createSyncAccessHandle")
		})
		return err
	})
	if err != nil {
		return pathError("append", name, err, false)
	}
	if err := r.pool.writeAtEnd(h, data); err != nil {
		return pathError("append", name, err, false)
	}
	return nil
}

// ReadDir lists directory name ("" is the root), sorted by name, without dot entries (temporary
// files and host metadata).
func (r *Root) ReadDir(ctx context.Context, name string) ([]fsroot.Entry, error) {
	return r.readDir(ctx, name, true)
}

// ReadDirNames is ReadDir without the files' sizes and times (fsroot.NameLister): no getFile, a
// round trip to the browser, for each file.
func (r *Root) ReadDirNames(ctx context.Context, name string) ([]fsroot.Entry, error) {
	return r.readDir(ctx, name, false)
}

// readDir is ReadDir, with each file's size and time when stat.
func (r *Root) readDir(ctx context.Context, name string, stat bool) ([]fsroot.Entry, error) {
	if err := fsroot.CheckDir(name); err != nil {
		return nil, fsroot.WithOp(err, "readdir")
	}
	dh, err := r.dirHandle(ctx, name, false)
	if err != nil {
		return nil, pathError("readdir", name, err, true)
	}
	iter, err := dh.Call("values")
	if err != nil {
		return nil, pathError("readdir", name, jsutil.Thrown(err), true)
	}
	entries := []fsroot.Entry{}
	for {
		next, err := jsutil.Call(ctx, iter, "next")
		if err != nil {
			return nil, pathError("readdir", name, err, true)
		}
		if done, _ := next.Get("done"); truthy(done) {
			break
		}
		h, err := next.Get("value")
		if err != nil {
			return nil, err
		}
		base := stringProp(h, "name")
		if base == "" || strings.HasPrefix(base, ".") || strings.HasSuffix(base, swapSuffix) {
			continue
		}
		if !stat {
			entries = append(entries, fsroot.Entry{Name: base, Dir: stringProp(h, "kind") == "directory"})
			continue
		}
		e, err := r.describe(ctx, path.Join(name, base), h)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while listing
			}
			return nil, err
		}
		entries = append(entries, e)
	}
	// sort.Slice rather than slices.SortFunc: a generic sort of a struct type is a separate copy of
	// pdqsort (about 25 KB of wasm code per type); sort.Slice is one copy for every type.
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, nil
}

// describe turns a handle into an Entry, reading a file's size and time.
func (r *Root) describe(ctx context.Context, p string, h jsutil.Value) (fsroot.Entry, error) {
	_, base := split(p)
	if stringProp(h, "kind") == "directory" {
		return fsroot.Entry{Name: base, Dir: true}, nil
	}
	file, err := jsutil.Call(ctx, h, "getFile")
	if err != nil {
		return fsroot.Entry{}, pathError("stat", p, err, false)
	}
	e := fsroot.Entry{Name: base}
	if v, err := file.Get("size"); err == nil {
		f, _ := v.Float()
		e.Size = int64(f)
	}
	if v, err := file.Get("lastModified"); err == nil {
		ms, _ := v.Float()
		e.ModTime = time.UnixMilli(int64(ms))
	}
	return e, nil
}

// Stat describes name.
func (r *Root) Stat(ctx context.Context, name string) (fsroot.Entry, error) {
	if err := fsroot.Check(name); err != nil {
		return fsroot.Entry{}, fsroot.WithOp(err, "stat")
	}
	parent, base := split(name)
	dh, err := r.dirHandle(ctx, parent, false)
	if err != nil {
		return fsroot.Entry{}, pathError("stat", name, err, true)
	}
	h, err := jsutil.Call(ctx, dh, "getFileHandle", base)
	if jsutil.Name(err) == "TypeMismatchError" {
		h, err = jsutil.Call(ctx, dh, "getDirectoryHandle", base)
	}
	if err != nil {
		return fsroot.Entry{}, pathError("stat", name, err, false)
	}
	return r.describe(ctx, name, h)
}

// MkdirAll creates directory name and its missing parents.
func (r *Root) MkdirAll(ctx context.Context, name string) error {
	if err := fsroot.CheckCreate(name); err != nil {
		return fsroot.WithOp(err, "mkdir")
	}
	if _, err := r.dirHandle(ctx, name, true); err != nil {
		return pathError("mkdir", name, err, true)
	}
	return nil
}

// Remove removes file name, or directory name when it is empty.
func (r *Root) Remove(ctx context.Context, name string) error {
	if err := fsroot.Check(name); err != nil {
		return fsroot.WithOp(err, "remove")
	}
	parent, base := split(name)
	dh, err := r.dirHandle(ctx, parent, false)
	if err != nil {
		return pathError("remove", name, err, true)
	}
	if r.pool != nil {
		r.pool.close(r.poolKey + name)
	}
	err = r.whileLocked(ctx, name, func() error {
		_, err := jsutil.Call(ctx, dh, "removeEntry", base)
		return err
	})
	if err != nil {
		return pathError("remove", name, err, false)
	}
	r.forget(name)
	return nil
}

// Rename moves the file from to to with the browser's move() (see fsroot.Renamer). A folder is
// refused errors.ErrUnsupported: the browser cannot move one.
// Open sync handles under from are closed first: the browser refuses to move a file one holds.
func (r *Root) Rename(ctx context.Context, from, to string) error {
	for _, n := range []string{from, to} {
		if err := fsroot.Check(n); err != nil {
			return fsroot.WithOp(err, "rename")
		}
	}
	if err := fsroot.CheckCreate(to); err != nil {
		return fsroot.WithOp(err, "rename")
	}
	if to == from || strings.HasPrefix(to, from+"/") {
		return fsroot.Err("rename", to, fs.ErrInvalid)
	}
	fparent, fbase := split(from)
	fdh, err := r.dirHandle(ctx, fparent, false)
	if err != nil {
		return pathError("rename", from, err, true)
	}
	h, err := jsutil.Call(ctx, fdh, "getFileHandle", fbase)
	if jsutil.Name(err) == "TypeMismatchError" {
		h, err = jsutil.Call(ctx, fdh, "getDirectoryHandle", fbase)
	}
	if err != nil {
		return pathError("rename", from, err, false)
	}
	if stringProp(h, "kind") == "directory" {
		// Chromium's directory handles have no move() (checked on 156): only files move.
		return fsroot.Err("rename", from, errors.ErrUnsupported)
	}
	tparent, tbase := split(to)
	tdh, err := r.dirHandle(ctx, tparent, false)
	if err != nil {
		return pathError("rename", to, err, true)
	}
	switch _, err := r.Stat(ctx, to); {
	case err == nil:
		return fsroot.Err("rename", to, fs.ErrExist)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if r.pool != nil {
		r.pool.close(r.poolKey + from)
	}
	err = r.whileLocked(ctx, from, func() error {
		_, err := jsutil.Call(ctx, h, "move", tdh, tbase)
		return err
	})
	if err != nil {
		return pathError("rename", to, err, false)
	}
	r.forget(from)
	r.forget(to)
	return nil
}

func truthy(v jsutil.Value) bool {
	b, err := v.Truthy()
	return err == nil && b
}

func stringProp(v jsutil.Value, p string) string {
	s, err := v.Get(p)
	if err != nil || s.Type() != jsutil.TypeString {
		return ""
	}
	str, _ := s.String()
	return str
}

func newUint8Array(n int) (jsutil.Value, error) {
	ctor, err := jsutil.Global().Get("Uint8Array")
	if err != nil {
		return jsutil.Value{}, err
	}
	return ctor.New(n)
}
