//go:build !js

package fsroot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// OSRoot is a Root over a directory of the machine, for a paired machine environment. Every
// operation goes through an os.Root, so no name and no symbolic link can lead outside the
// directory: a link that would is refused with outside-root, at every operation and not only
// when a file is opened. Links that stay inside are followed, unless they lead to a dot name,
// which is refused dotfile-refused as the name itself would be.
//
// A write goes to a hidden temporary file in the same directory (a dot name, so no listing shows
// it and no tool can name it), is synced, then renamed over the target in one step. Replacing a
// symbolic link replaces the link itself, never its target. ReadDir leaves out dot entries,
// names Check would refuse, links that lead outside, and anything that is neither a file nor a
// directory.
//
// Errors carry the name as given, never the host path.
type OSRoot struct {
	root *os.Root

	mu   sync.Mutex
	meta *OSRoot

	// fail is a test hook (see export_test.go): consulted after each temp-file write.
	fail func(name string, written int64) error
}

var (
	_ Root         = (*OSRoot)(nil)
	_ Metadata     = (*OSRoot)(nil)
	_ PrefixReader = (*OSRoot)(nil)
	_ RangeReader  = (*OSRoot)(nil)
	_ Renamer      = (*OSRoot)(nil)
)

// OpenOS returns a root over the existing directory dir. Close releases it.
func OpenOS(dir string) (*OSRoot, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &OSRoot{root: r}, nil
}

// Name returns the directory the root was opened on.
func (r *OSRoot) Name() string { return r.root.Name() }

// Close releases the root and its metadata root, if one was opened.
func (r *OSRoot) Close() error {
	r.mu.Lock()
	meta := r.meta
	r.meta = nil
	r.mu.Unlock()
	if meta != nil {
		meta.Close()
	}
	return r.root.Close()
}

// Meta returns a root over the MetaDir directory of r, created (mode 0700) if missing. A MetaDir
// that is a link leading outside is refused.
func (r *OSRoot) Meta(ctx context.Context) (Root, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.meta != nil {
		return r.meta, nil
	}
	if err := r.root.Mkdir(MetaDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, osErr("meta", MetaDir, err)
	}
	sub, err := r.root.OpenRoot(MetaDir)
	if err != nil {
		return nil, osErr("meta", MetaDir, err)
	}
	r.meta = &OSRoot{root: sub}
	return r.meta, nil
}

// osErr turns an error from os into the shape every root reports, for name.
func osErr(op, name string, err error) error {
	var kind error
	switch {
	case escapes(err):
		return Refused(op, name, outsideLink(name))
	case errors.Is(err, fs.ErrNotExist):
		kind = fs.ErrNotExist
	case errors.Is(err, syscall.EISDIR):
		kind = ErrIsDir
	case errors.Is(err, syscall.ENOTDIR):
		kind = ErrNotDir
	case errors.Is(err, syscall.ENOTEMPTY), op == "remove" && errors.Is(err, fs.ErrExist):
		kind = ErrNotEmpty
	case errors.Is(err, fs.ErrExist):
		kind = fs.ErrExist
	case errors.Is(err, fs.ErrPermission):
		kind = fs.ErrPermission
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		kind = ErrNoSpace
	default:
		// Keep the cause (an errno still matches its sentinels) but not the host path.
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			kind = pe.Err
		case errors.As(err, &le):
			kind = le.Err
		default:
			kind = err
		}
	}
	return Err(op, name, kind)
}

// escapes reports an os.Root refusing a path or link that leads out of it. os does not export
// the error, so it is recognised by its text.
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func outsideLink(name string) *refusal.Refusal {
	return refusal.New(refusal.OutsideRoot, "the path %q leads outside the workspace through a symbolic link", name)
}

// ReadFile returns the content of name.
func (r *OSRoot) ReadFile(ctx context.Context, name string) ([]byte, error) {
	data, _, err := r.read(name, -1)
	return data, err
}

// ReadFilePrefix returns at most n bytes of name and its size, from one open file (a replace
// renames a new file into place, so the open one stays whole).
func (r *OSRoot) ReadFilePrefix(ctx context.Context, name string, n int) ([]byte, int64, error) {
	return r.read(name, n)
}

// open opens the regular file name for reading, with its Stat.
func (r *OSRoot) open(name string) (*os.File, fs.FileInfo, error) {
	const op = "read"
	if err := Check(name); err != nil {
		return nil, nil, WithOp(err, op)
	}
	if err := r.viaDot(op, name, true); err != nil {
		return nil, nil, err
	}
	// O_NONBLOCK: opening a FIFO planted in the folder must not hang the read.
	f, err := r.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, osErr(op, name, err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		err = osErr(op, name, err)
	case st.IsDir():
		err = Err(op, name, ErrIsDir)
	case !st.Mode().IsRegular():
		err = Err(op, name, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// OpenRange opens name for reading in pieces. The reader holds the open file, so a replace
// through a root (a rename of a new file into place) leaves its version whole; a change in place
// by another program (a different size or modification time of the open file, checked after each
// piece) is ErrChanged.
func (r *OSRoot) OpenRange(ctx context.Context, name string) (FileReader, error) {
	f, st, err := r.open(name)
	if err != nil {
		return nil, err
	}
	return &osFileReader{name: name, f: f, size: st.Size(), mod: st.ModTime()}, nil
}

type osFileReader struct {
	name string
	f    *os.File // nil once closed
	size int64
	mod  time.Time
}

func (o *osFileReader) Size() int64 { return o.size }

func (o *osFileReader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := CheckReadAt(o.name, off, o.f == nil); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, Err("read", o.name, err)
	}
	want := int(min(int64(len(p)), max(o.size-off, 0)))
	if want == 0 {
		return 0, nil
	}
	n, err := o.f.ReadAt(p[:want], off)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, osErr("read", o.name, err)
	}
	st, err := o.f.Stat()
	if err != nil {
		return 0, osErr("read", o.name, err)
	}
	if n < want || st.Size() != o.size || !st.ModTime().Equal(o.mod) {
		return 0, Err("read", o.name, ErrChanged)
	}
	return n, nil
}

func (o *osFileReader) Close() error {
	if o.f == nil {
		return nil
	}
	err := o.f.Close()
	o.f = nil
	return err
}

func (r *OSRoot) read(name string, limit int) ([]byte, int64, error) {
	const op = "read"
	f, st, err := r.open(name)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	size := st.Size()
	want := size
	if limit >= 0 && int64(limit) < want {
		want = int64(limit)
	}
	buf := make([]byte, want)
	got, err := io.ReadFull(f, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		// The file shrank in place (written by something other than this root).
		buf = buf[:got]
	case err != nil:
		return nil, 0, osErr(op, name, err)
	}
	if limit < 0 {
		// It may have grown in place too; read the rest.
		rest, err := io.ReadAll(f)
		if err != nil {
			return nil, 0, osErr(op, name, err)
		}
		buf = append(buf, rest...)
	}
	if limit < 0 || size < int64(len(buf)) {
		size = int64(len(buf))
	}
	return buf, size, nil
}

// WriteFile replaces name with data through a synced temporary file and a rename.
func (r *OSRoot) WriteFile(ctx context.Context, name string, data []byte) error {
	w, err := r.create(ctx, "write", name)
	if err != nil {
		return err
	}
	return WriteAll(w, data)
}

// Create starts a replacement of name streamed to a hidden temporary file beside it.
func (r *OSRoot) Create(ctx context.Context, name string) (Writer, error) {
	return r.create(ctx, "create", name)
}

func (r *OSRoot) create(ctx context.Context, op, name string) (*osWriter, error) {
	if err := CheckCreate(name); err != nil {
		return nil, WithOp(err, op)
	}
	if err := r.viaDot(op, name, false); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, Err(op, name, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := r.root.Lstat(name); err == nil {
		if st.Mode()&fs.ModeSymlink != 0 {
			// Replacing a link replaces the link, but one that leads out is refused anyway, so
			// the answer does not depend on where it points.
			if st, err = r.root.Stat(name); err != nil && escapes(err) {
				return nil, osErr(op, name, err)
			}
		}
		if err == nil && st.IsDir() {
			return nil, Err(op, name, ErrIsDir)
		}
		if err == nil && st.Mode().IsRegular() {
			mode = st.Mode().Perm()
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, osErr(op, name, err)
	}
	dir, _ := splitName(name)
	temp := path.Join(dir, TempName())
	f, err := r.root.OpenFile(temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return nil, osErr(op, name, err)
	}
	return &osWriter{r: r, op: op, name: name, temp: temp, f: f, fail: r.fail}, nil
}

type osWriter struct {
	r        *OSRoot
	op, name string
	temp     string
	f        *os.File
	fail     func(string, int64) error
	written  int64
	err      error
	done     bool
}

func (w *osWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, Err(w.op, w.name, fs.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.fail != nil {
		if err := w.fail(w.name, w.written+int64(len(p))); err != nil {
			// Fail part way, as a full disk does: some bytes reach the temp file first.
			n, _ := w.f.Write(p[:len(p)/2])
			w.written += int64(n)
			w.err = Err(w.op, w.name, err)
			return n, w.err
		}
	}
	n, err := w.f.Write(p)
	w.written += int64(n)
	if err != nil {
		w.err = osErr(w.op, w.name, err)
	}
	return n, w.err
}

func (w *osWriter) Commit() error {
	if w.done {
		return Err(w.op, w.name, fs.ErrClosed)
	}
	w.done = true
	err := w.err
	if err == nil {
		if e := w.f.Sync(); e != nil {
			err = osErr(w.op, w.name, e)
		}
	}
	if e := w.f.Close(); e != nil && err == nil {
		err = osErr(w.op, w.name, e)
	}
	if err == nil {
		if e := w.r.root.Rename(w.temp, w.name); e != nil {
			err = osErr(w.op, w.name, e)
		}
	}
	if err != nil {
		w.r.root.Remove(w.temp)
	}
	return err
}

func (w *osWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	w.r.root.Remove(w.temp)
	return nil
}

// ReadDir lists name ("" is the root) sorted by name.
func (r *OSRoot) ReadDir(ctx context.Context, name string) ([]Entry, error) {
	const op = "readdir"
	if err := CheckDir(name); err != nil {
		return nil, WithOp(err, op)
	}
	if err := r.viaDot(op, name, true); err != nil {
		return nil, err
	}
	open := name
	if open == "" {
		open = "."
	}
	f, err := r.root.Open(open)
	if err != nil {
		return nil, osErr(op, name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, osErr(op, name, err)
	} else if !st.IsDir() {
		return nil, Err(op, name, ErrNotDir)
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, osErr(op, name, err)
	}
	entries := make([]Entry, 0, len(des))
	for _, de := range des {
		if !ValidName(de.Name()) {
			continue
		}
		full := path.Join(name, de.Name())
		st, err := r.root.Lstat(full)
		if err == nil && st.Mode()&fs.ModeSymlink != 0 {
			if err = r.viaDot(op, full, true); err == nil {
				st, err = r.root.Stat(full)
			}
		}
		if err != nil || !(st.Mode().IsRegular() || st.IsDir()) {
			continue // gone meanwhile, leads outside or to a dot name, or neither a file nor a directory
		}
		entries = append(entries, osEntry(de.Name(), st))
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return entries, nil
}

func osEntry(name string, st fs.FileInfo) Entry {
	e := Entry{Name: name, Dir: st.IsDir(), ModTime: st.ModTime()}
	if !e.Dir {
		e.Size = st.Size()
	}
	return e
}

// Stat describes name, following links that stay inside.
func (r *OSRoot) Stat(ctx context.Context, name string) (Entry, error) {
	if err := Check(name); err != nil {
		return Entry{}, WithOp(err, "stat")
	}
	if err := r.viaDot("stat", name, true); err != nil {
		return Entry{}, err
	}
	st, err := r.root.Stat(name)
	if err != nil {
		return Entry{}, osErr("stat", name, err)
	}
	_, base := splitName(name)
	return osEntry(base, st), nil
}

// MkdirAll creates name and its missing parents (mode 0755).
func (r *OSRoot) MkdirAll(ctx context.Context, name string) error {
	if err := CheckCreate(name); err != nil {
		return WithOp(err, "mkdir")
	}
	if err := r.viaDot("mkdir", name, true); err != nil {
		return err
	}
	if err := r.root.MkdirAll(name, 0o755); err != nil {
		return osErr("mkdir", name, err)
	}
	return nil
}

// Remove removes the file name or the empty directory name. Removing a link removes the link;
// one that leads outside is refused like every other operation on it would be.
func (r *OSRoot) Remove(ctx context.Context, name string) error {
	if err := Check(name); err != nil {
		return WithOp(err, "remove")
	}
	if err := r.viaDot("remove", name, false); err != nil {
		return err
	}
	if err := r.root.Remove(name); err != nil {
		return osErr("remove", name, err)
	}
	return nil
}

// Rename moves the file or folder from to to (see Renamer). A link moves as the link; no dot
// name is reached through one.
func (r *OSRoot) Rename(ctx context.Context, from, to string) error {
	for _, n := range []string{from, to} {
		if err := Check(n); err != nil {
			return WithOp(err, "rename")
		}
		if err := r.viaDot("rename", n, false); err != nil {
			return err
		}
	}
	if err := CheckCreate(to); err != nil {
		return WithOp(err, "rename")
	}
	if to == from || strings.HasPrefix(to, from+"/") {
		return Err("rename", to, fs.ErrInvalid)
	}
	if _, err := r.root.Lstat(from); err != nil {
		return osErr("rename", from, err)
	}
	if _, err := r.root.Lstat(to); err == nil {
		return Err("rename", to, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return osErr("rename", to, err)
	}
	if err := r.root.Rename(from, to); err != nil {
		return osErr("rename", to, err)
	}
	return nil
}

// maxLinkHops bounds the symbolic links followed while resolving one name.
const maxLinkHops = 40

// viaDot refuses name with dotfile-refused when a symbolic link on its way resolves to a dot
// name inside the root: a link the person made (notes.txt -> .env, docs -> .git) must not carry
// a tool past the rule that hides dot names. With last false the final element is not followed,
// for the operations that act on a link itself (a replace renames over it, a remove removes it).
// Links that lead outside are left to os.Root, which refuses them; a name whose rest does not
// exist yet is judged by what exists.
func (r *OSRoot) viaDot(op, name string, last bool) error {
	pending := strings.Split(name, "/")
	var resolved []string
	for hops := 0; len(pending) > 0; {
		p := pending[0]
		pending = pending[1:]
		switch {
		case p == "" || p == ".":
			continue
		case p == "..":
			if len(resolved) == 0 {
				return nil // leads out: os.Root refuses it
			}
			resolved = resolved[:len(resolved)-1]
			continue
		case strings.HasPrefix(p, "."):
			return Err(op, name, refusal.New(refusal.DotfileRefused,
				"the path %q leads through a symbolic link to %q; names beginning with a dot are hidden from tools", name, path.Join(append(resolved, p)...)))
		}
		cur := path.Join(append(resolved, p)...)
		if len(pending) == 0 && !last {
			return nil
		}
		st, err := r.root.Lstat(cur)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			resolved = append(resolved, p) // a real folder or file, or nothing yet
			continue
		}
		if hops++; hops > maxLinkHops {
			return nil // a loop: os.Root refuses it
		}
		target, err := r.root.Readlink(cur)
		if err != nil || path.IsAbs(target) {
			return nil // os.Root judges absolute targets
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return nil
}

// A write's temporary file is tempPrefix, tempHexDigits lowercase hex digits, tempSuffix: a
// dot name beside its target.
const (
	tempPrefix    = ".vbx-"
	tempSuffix    = ".tmp"
	tempHexDigits = 16
)

// StaleTempAge is how long a temporary file of a write must have gone unchanged before
// SweepTemps takes it for one whose writer is gone (a process killed mid-write). A live write
// changes its file far more often, so a sweep never removes a file a writer still streams to.
const StaleTempAge = 10 * time.Minute

// MaxSweepEntries bounds the folder entries one SweepTemps looks at, so a sweep of a huge tree
// ends; what it did not reach is swept by the next.
const MaxSweepEntries = 200_000

// TempName returns a new name for a write's temporary file, to be put beside its target: a dot
// name, so no listing shows it and no tool can name it, that SweepTemps recognises. The relay's
// own state files are written under such names too (internal/core/durable).
func TempName() string {
	var rnd [tempHexDigits / 2]byte
	rand.Read(rnd[:])
	return tempPrefix + hex.EncodeToString(rnd[:]) + tempSuffix
}

// isTempName reports whether name is exactly a write's temporary file name.
func isTempName(name string) bool {
	hexPart, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return false
	}
	if hexPart, ok = strings.CutSuffix(hexPart, tempSuffix); !ok || len(hexPart) != tempHexDigits {
		return false
	}
	for _, c := range hexPart {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Swept is what SweepTemps removed.
type Swept struct {
	Files int   // temporary files removed
	Bytes int64 // their size
	Cut   bool  // the walk stopped at MaxSweepEntries before the end of the tree
}

// SweepTemps removes, anywhere in the tree (MetaDir too), the temporary files of writes that
// never ended: regular files named exactly as a write names its temporary file (never a link,
// never another dot name) and unchanged since before now less StaleTempAge. It looks at no more
// than MaxSweepEntries entries and never follows a link.
func (r *OSRoot) SweepTemps(now time.Time) (Swept, error) {
	var sw Swept
	seen := 0
	before := now.Add(-StaleTempAge)
	err := fs.WalkDir(r.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a folder that cannot be read is passed over
		}
		if seen++; seen > MaxSweepEntries {
			sw.Cut = true
			return fs.SkipAll
		}
		if !d.Type().IsRegular() || !isTempName(d.Name()) {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(before) {
			return nil
		}
		if r.root.Remove(name) == nil {
			sw.Files++
			sw.Bytes += info.Size()
		}
		return nil
	})
	return sw, err
}
