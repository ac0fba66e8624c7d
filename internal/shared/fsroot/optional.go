package fsroot

import (
	"context"
	"errors"
	"io/fs"
)

// Metadata is implemented by a root that keeps a hidden metadata area (MetaDir) beside the
// workspace. Meta returns a Root over that area, creating it if needed; its names are checked
// like any root's, and they are not names of the workspace root (which refuses every dot path).
// Holding the workspace root's concrete type is what grants it: code that only has a Root (a
// tool, a mini-app) never sees the area.
type Metadata interface {
	Meta(ctx context.Context) (Root, error)
}

// PrefixReader is implemented by a root that can read the start of a file without reading all of
// it. ReadFilePrefix returns at most n bytes from the start of the file name and the size of the
// whole file, both of one version of it (a replace in between cannot mix them).
type PrefixReader interface {
	ReadFilePrefix(ctx context.Context, name string, n int) (data []byte, size int64, err error)
}

// ReadPrefix returns at most n bytes from the start of the file name and the file's whole size,
// through the root's PrefixReader when it has one and ReadFile otherwise (which reads all of it).
func ReadPrefix(ctx context.Context, r Root, name string, n int) ([]byte, int64, error) {
	if pr, ok := r.(PrefixReader); ok {
		return pr.ReadFilePrefix(ctx, name, n)
	}
	data, err := r.ReadFile(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	size := int64(len(data))
	if len(data) > n {
		data = data[:n:n]
	}
	return data, size, nil
}

// NameLister is implemented by a root that lists a directory for less than ReadDir when only the
// entries' names and kinds are wanted (OPFS: ReadDir reads each file's size and time, a
// round trip to the browser a file). ReadDirNames returns what ReadDir would, in its order, with
// Size and ModTime zero.
type NameLister interface {
	ReadDirNames(ctx context.Context, name string) ([]Entry, error)
}

// ReadDirNames lists directory name, its entries' names and kinds (Size and ModTime may be zero):
// through the root's NameLister when it has one, and ReadDir otherwise.
func ReadDirNames(ctx context.Context, r Root, name string) ([]Entry, error) {
	if l, ok := r.(NameLister); ok {
		return l.ReadDirNames(ctx, name)
	}
	return r.ReadDir(ctx, name)
}

// Appender is implemented by a root that can add bytes at the end of a file in place, without
// writing again what the file already holds. AppendFile appends data to the file name, creating it
// empty first when it is missing (its parent must exist). Unlike WriteFile it is not atomic: a
// failure or a crash part way may leave a prefix of data at the file's end, so a caller appends
// what it can recognise whole when it reads it back (lines, say). A root that cannot append to
// name at the moment (no in-place writes for that file) returns errors.ErrUnsupported, and
// Append rewrites the file instead.
type Appender interface {
	AppendFile(ctx context.Context, name string, data []byte) error
}

// Append adds data at the end of the file name (created when missing): through the root's
// Appender when it has one and it can, and otherwise by replacing the file with its content and
// data, atomically (which costs a read and a write of the whole file).
func Append(ctx context.Context, r Root, name string, data []byte) error {
	if ap, ok := r.(Appender); ok {
		if err := ap.AppendFile(ctx, name, data); !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	old, err := r.ReadFile(ctx, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return r.WriteFile(ctx, name, append(old[:len(old):len(old)], data...))
}

// Renamer is a Root that can move a file or a folder (with everything in it) to another name in
// the root, in one step. Both names have passed Check; the parent of to must exist and to must
// not (fs.ErrExist), so a move never replaces anything; from missing is fs.ErrNotExist; a folder
// moved into itself is fs.ErrInvalid. Roots that cannot move (a browser that cannot move a
// folder) do not implement it, and the executor refuses the move.
type Renamer interface {
	Rename(ctx context.Context, from, to string) error
}

// RangeReader is implemented by a root that can read a file a piece at a time, so a reader of a
// large file (the workspace's download) holds a piece of it, never all of it. OpenRange opens one
// version of the file name: its errors are ReadFile's (a refused name, fs.ErrNotExist, ErrIsDir).
type RangeReader interface {
	OpenRange(ctx context.Context, name string) (FileReader, error)
}

// FileReader reads one version of a file in pieces (see RangeReader): every piece comes from the
// version it opened, so pieces read one after another make that version and nothing else. A
// root that keeps the version through a replace (the OS root holds the open file, the memory
// root the stored bytes) keeps reading it; a root that cannot (the browser invalidates a File
// once the file changes), or that sees the version itself change under it (another program
// writing the OS file in place), fails the read with ErrChanged rather than mix two versions.
// A FileReader is used by one goroutine at a time.
type FileReader interface {
	// Size is the length of the version opened.
	Size() int64
	// ReadAt reads into p the bytes at off of the version: min(len(p), Size()-off) of them,
	// none at or past the end, never fewer otherwise (a version that no longer has them is
	// ErrChanged). A negative off is fs.ErrInvalid; a read after Close is fs.ErrClosed.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	// Close releases what the reader holds. Closing twice does nothing.
	Close() error
}

// OpenRange opens the file name for reading in pieces through the root's RangeReader when it has
// one, and otherwise reads the whole file with ReadFile and hands it out in pieces (the memory
// saving is then lost, not the behaviour).
func OpenRange(ctx context.Context, r Root, name string) (FileReader, error) {
	if rr, ok := r.(RangeReader); ok {
		return rr.OpenRange(ctx, name)
	}
	data, err := r.ReadFile(ctx, name)
	if err != nil {
		return nil, err
	}
	return NewBytesReader(name, data), nil
}

// NewBytesReader returns a FileReader over data, a version that never changes: the caller must
// not modify data while the reader is in use. name is the path its errors name.
func NewBytesReader(name string, data []byte) FileReader {
	return &bytesReader{name: name, data: data}
}

type bytesReader struct {
	name   string
	data   []byte
	closed bool
}

func (b *bytesReader) Size() int64 { return int64(len(b.data)) }

func (b *bytesReader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := CheckReadAt(b.name, off, b.closed); err != nil {
		return 0, err
	}
	if off >= int64(len(b.data)) {
		return 0, nil
	}
	return copy(p, b.data[off:]), nil
}

func (b *bytesReader) Close() error {
	b.closed = true
	b.data = nil
	return nil
}

// CheckReadAt is the check every FileReader's ReadAt makes first: the error for a read at off of
// the file name by a reader that is closed, or at a negative offset; nil when the read may go on.
func CheckReadAt(name string, off int64, closed bool) error {
	switch {
	case closed:
		return Err("read", name, fs.ErrClosed)
	case off < 0:
		return Err("read", name, fs.ErrInvalid)
	}
	return nil
}
