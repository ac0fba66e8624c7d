package fsroot

import (
	"context"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// MemRoot is a Root held in memory, for tests and for a page with no storage. It has real
// directories, atomic writes (a file's content is swapped in one step under a lock) and
// modification times, and it is safe for concurrent use. Its Meta area is a second MemRoot that
// no name of this one reaches.
type MemRoot struct {
	mu   sync.RWMutex
	top  *memNode
	meta *MemRoot
	fail func(name string, written int64) error
	now  func() time.Time
}

type memNode struct {
	dir  bool
	data []byte // never modified once stored: a write stores a new slice
	mod  time.Time
	kids map[string]*memNode
}

var (
	_ Root         = (*MemRoot)(nil)
	_ Metadata     = (*MemRoot)(nil)
	_ PrefixReader = (*MemRoot)(nil)
	_ RangeReader  = (*MemRoot)(nil)
	_ Renamer      = (*MemRoot)(nil)
)

// NewMemory returns an empty MemRoot.
func NewMemory() *MemRoot {
	return &MemRoot{top: newDir(time.Now()), now: time.Now}
}

func newDir(t time.Time) *memNode {
	return &memNode{dir: true, mod: t, kids: map[string]*memNode{}}
}

// FailWrites installs fail, which every write consults before storing anything: WriteFile calls
// it with the whole length, a Create writer with the bytes written so far after each Write. When
// it returns an error the write fails with it part way, as a disk that filled up would, and the
// file keeps its old content. Nil removes the hook. It exists for atomicity tests.
func (m *MemRoot) FailWrites(fail func(name string, written int64) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = fail
}

func (m *MemRoot) failHook() func(string, int64) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.fail
}

// Meta returns the root's metadata area, a separate MemRoot.
func (m *MemRoot) Meta(ctx context.Context) (Root, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.meta == nil {
		m.meta = NewMemory()
	}
	return m.meta, nil
}

// find returns the node at name ("" is the top) or an error kind. The caller holds mu.
func (m *MemRoot) find(name string) (*memNode, error) {
	n := m.top
	if name == "" {
		return n, nil
	}
	for rest := name; ; {
		elem, more, found := strings.Cut(rest, "/")
		if !n.dir {
			return nil, ErrNotDir
		}
		next, ok := n.kids[elem]
		if !ok {
			return nil, fs.ErrNotExist
		}
		n = next
		if !found {
			return n, nil
		}
		rest = more
	}
}

func splitName(name string) (dir, base string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// ReadFile returns a copy of the file's content.
func (m *MemRoot) ReadFile(ctx context.Context, name string) ([]byte, error) {
	data, _, err := m.read("read", name, -1)
	return data, err
}

// ReadFilePrefix returns a copy of at most n bytes of the file's content and its size.
func (m *MemRoot) ReadFilePrefix(ctx context.Context, name string, n int) ([]byte, int64, error) {
	return m.read("read", name, n)
}

// OpenRange opens the stored content of name for reading in pieces, without a copy: a write
// stores a new slice, so the reader keeps the version it opened.
func (m *MemRoot) OpenRange(ctx context.Context, name string) (FileReader, error) {
	if err := Check(name); err != nil {
		return nil, WithOp(err, "read")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.find(name)
	if err == nil && n.dir {
		err = ErrIsDir
	}
	if err != nil {
		return nil, Err("read", name, err)
	}
	return NewBytesReader(name, n.data), nil
}

func (m *MemRoot) read(op, name string, limit int) ([]byte, int64, error) {
	if err := Check(name); err != nil {
		return nil, 0, WithOp(err, op)
	}
	m.mu.RLock()
	n, err := m.find(name)
	var data []byte
	if err == nil && n.dir {
		err = ErrIsDir
	} else if err == nil {
		data = n.data
	}
	m.mu.RUnlock()
	if err != nil {
		return nil, 0, Err(op, name, err)
	}
	size := int64(len(data))
	if limit >= 0 && len(data) > limit {
		data = data[:limit]
	}
	return slices.Clone(data), size, nil
}

// WriteFile replaces the file name with a copy of data.
func (m *MemRoot) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := CheckCreate(name); err != nil {
		return WithOp(err, "write")
	}
	if err := ctx.Err(); err != nil {
		return Err("write", name, err)
	}
	if fail := m.failHook(); fail != nil {
		if err := fail(name, int64(len(data))); err != nil {
			return Err("write", name, err)
		}
	}
	return m.store("write", name, slices.Clone(data))
}

// store swaps data in as the content of name in one step.
func (m *MemRoot) store(op, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.canStore(name); err != nil {
		return Err(op, name, err)
	}
	dir, base := splitName(name)
	parent, _ := m.find(dir)
	now := m.now()
	if old, ok := parent.kids[base]; ok {
		old.data, old.mod = data, now
		return nil
	}
	if data == nil {
		data = []byte{}
	}
	parent.kids[base] = &memNode{data: data, mod: now}
	parent.mod = now
	return nil
}

// canStore reports why name cannot be written as a file now, or nil. The caller holds mu.
func (m *MemRoot) canStore(name string) error {
	dir, base := splitName(name)
	parent, err := m.find(dir)
	if err != nil {
		return err
	}
	if !parent.dir {
		return ErrNotDir
	}
	if old, ok := parent.kids[base]; ok && old.dir {
		return ErrIsDir
	}
	return nil
}

// Create starts a replacement of name held in memory until Commit.
func (m *MemRoot) Create(ctx context.Context, name string) (Writer, error) {
	if err := CheckCreate(name); err != nil {
		return nil, WithOp(err, "create")
	}
	m.mu.RLock()
	err := m.canStore(name)
	m.mu.RUnlock()
	if err != nil {
		return nil, Err("create", name, err)
	}
	return &memWriter{m: m, name: name, fail: m.failHook()}, nil
}

type memWriter struct {
	m    *MemRoot
	name string
	fail func(string, int64) error
	buf  []byte
	err  error
	done bool
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, Err("write", w.name, fs.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.fail != nil {
		if err := w.fail(w.name, int64(len(w.buf)+len(p))); err != nil {
			w.err = Err("write", w.name, err)
			return 0, w.err
		}
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *memWriter) Commit() error {
	if w.done {
		return Err("commit", w.name, fs.ErrClosed)
	}
	w.done = true
	if w.err != nil {
		return w.err
	}
	buf := w.buf
	w.buf = nil
	return w.m.store("commit", w.name, buf)
}

func (w *memWriter) Abort() error {
	w.done = true
	w.buf = nil
	return nil
}

// ReadDir lists the directory name ("" is the top), sorted by name.
func (m *MemRoot) ReadDir(ctx context.Context, name string) ([]Entry, error) {
	if err := CheckDir(name); err != nil {
		return nil, WithOp(err, "readdir")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.find(name)
	if err == nil && !n.dir {
		err = ErrNotDir
	}
	if err != nil {
		return nil, Err("readdir", name, err)
	}
	entries := make([]Entry, 0, len(n.kids))
	for k, kid := range n.kids {
		entries = append(entries, kid.entry(k))
	}
	// sort.Slice rather than slices.SortFunc: a generic sort of a struct type is a separate copy of
	// pdqsort (about 25 KB of wasm code per type); sort.Slice is one copy for every type.
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, nil
}

func (n *memNode) entry(name string) Entry {
	return Entry{Name: name, Dir: n.dir, Size: int64(len(n.data)), ModTime: n.mod}
}

// Stat describes name.
func (m *MemRoot) Stat(ctx context.Context, name string) (Entry, error) {
	if err := Check(name); err != nil {
		return Entry{}, WithOp(err, "stat")
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.find(name)
	if err != nil {
		return Entry{}, Err("stat", name, err)
	}
	_, base := splitName(name)
	return n.entry(base), nil
}

// MkdirAll creates name and its missing parents.
func (m *MemRoot) MkdirAll(ctx context.Context, name string) error {
	if err := CheckCreate(name); err != nil {
		return WithOp(err, "mkdir")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.top
	for rest := name; ; {
		elem, more, found := strings.Cut(rest, "/")
		next, ok := n.kids[elem]
		if !ok {
			now := m.now()
			next = newDir(now)
			n.kids[elem] = next
			n.mod = now
		} else if !next.dir {
			return Err("mkdir", name, ErrNotDir)
		}
		n = next
		if !found {
			return nil
		}
		rest = more
	}
}

// Remove removes the file name or the empty directory name.
func (m *MemRoot) Remove(ctx context.Context, name string) error {
	if err := Check(name); err != nil {
		return WithOp(err, "remove")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base := splitName(name)
	parent, err := m.find(dir)
	if err == nil && !parent.dir {
		err = ErrNotDir
	}
	if err != nil {
		return Err("remove", name, err)
	}
	n, ok := parent.kids[base]
	switch {
	case !ok:
		return Err("remove", name, fs.ErrNotExist)
	case n.dir && len(n.kids) > 0:
		return Err("remove", name, ErrNotEmpty)
	}
	delete(parent.kids, base)
	parent.mod = m.now()
	return nil
}

// Rename moves the file or folder from to to (see Renamer).
func (m *MemRoot) Rename(ctx context.Context, from, to string) error {
	if err := Check(from); err != nil {
		return WithOp(err, "rename")
	}
	if err := CheckCreate(to); err != nil {
		return WithOp(err, "rename")
	}
	if to == from || strings.HasPrefix(to, from+"/") {
		return Err("rename", to, fs.ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fdir, fbase := splitName(from)
	fparent, err := m.find(fdir)
	if err == nil && !fparent.dir {
		err = ErrNotDir
	}
	if err != nil {
		return Err("rename", from, err)
	}
	n, ok := fparent.kids[fbase]
	if !ok {
		return Err("rename", from, fs.ErrNotExist)
	}
	tdir, tbase := splitName(to)
	tparent, err := m.find(tdir)
	if err == nil && !tparent.dir {
		err = ErrNotDir
	}
	if err != nil {
		return Err("rename", to, err)
	}
	if _, taken := tparent.kids[tbase]; taken {
		return Err("rename", to, fs.ErrExist)
	}
	delete(fparent.kids, fbase)
	tparent.kids[tbase] = n
	now := m.now()
	fparent.mod, tparent.mod = now, now
	return nil
}
