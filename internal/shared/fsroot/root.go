// Package fsroot is the workspace folder the assistant works in: one small interface that every
// root implements (memory, the OS, the browser's OPFS, a granted directory handle), and the one
// path check every root applies before it touches anything.
//
// The roots here are MemRoot (NewMemory) and, outside the browser, OSRoot (OpenOS); the page's
// OPFS and directory-handle roots live in opfs/. Every root passes the conformance suite in
// fsroottest. Roots may add Metadata (the hidden MetaDir area, where the executor keeps its
// audit log), PrefixReader (reading the start of a large file without all of it),
// RangeReader (reading one version of a file a piece at a time; every root here and in opfs/ has
// it, and OpenRange falls back to ReadFile for a root without) and Appender (adding to a file's
// end in place, which the audit log uses; Append rewrites the file for a root without).
//
// # Wasm
//
// OSRoot does not exist under GOOS=js (os_root.go is built with !js). Everything else is
// portable and tested in Chromium too.
package fsroot

import (
	"context"
	"time"
)

// Root is a workspace folder. Every name is a relative, slash-separated path that has passed
// Check (ReadDir also takes "" for the root itself); a root refuses any other name before it does
// anything.
//
// Errors are *fs.PathError values whose Path is the name as given (never a host path): their Err
// wraps the standard sentinel (fs.ErrNotExist, fs.ErrExist, fs.ErrInvalid, fs.ErrPermission),
// or one of ErrIsDir, ErrNotDir, ErrNotEmpty (which wrap fs.ErrInvalid, fs.ErrInvalid and
// fs.ErrExist), and, for a refused name, the refusal with its rule id (outside-root,
// dotfile-refused, path-too-long), so both errors.Is(err, fs.ErrNotExist) and
// refusal.RuleOf(err) work. Err and Refused build them.
//
// A Root is safe for concurrent use.
type Root interface {
	// ReadFile returns the whole content of the file name.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// WriteFile replaces (or creates) the file name with data, atomically: a reader sees the
	// old content or the new, never a part, and a failed write leaves the old content intact.
	// The parent directory must exist.
	WriteFile(ctx context.Context, name string, data []byte) error
	// Create starts an atomic replacement of the file name written in pieces, for content too
	// large to hold at once. Nothing is visible under name until Commit succeeds; Abort (or a
	// failed Commit) leaves the old content intact.
	Create(ctx context.Context, name string) (Writer, error)
	// ReadDir lists the directory name ("" is the root) sorted by name (byte order). It lists
	// only entries whose names ValidName accepts, so dot entries (temporary files, metadata)
	// never show. An empty directory gives an empty, non-nil slice.
	ReadDir(ctx context.Context, name string) ([]Entry, error)
	// Stat describes the file or directory name.
	Stat(ctx context.Context, name string) (Entry, error)
	// MkdirAll creates the directory name and any parents it lacks.
	MkdirAll(ctx context.Context, name string) error
	// Remove removes the file name, or the directory name when it is empty.
	Remove(ctx context.Context, name string) error
}

// Writer is an atomic replacement in progress (see Root.Create).
type Writer interface {
	// Write appends p to the pending content.
	Write(p []byte) (int, error)
	// Commit makes the written content the file's content, in one step.
	Commit() error
	// Abort discards what was written; the file keeps its old content. Abort after Commit does
	// nothing.
	Abort() error
}

// Entry describes a file or directory.
type Entry struct {
	// Name is the last element of the path.
	Name string `json:"name"`
	// Dir reports a directory.
	Dir bool `json:"dir"`
	// Size is the file's length in bytes (0 for a directory).
	Size int64 `json:"size"`
	// ModTime is the last modification, where the root knows it (zero otherwise).
	ModTime time.Time `json:"modTime,omitzero"`
}

// WriteAll writes data through w, a fresh atomic replacement, and commits it; when a write
// fails it aborts, so the old content stays. Roots whose WriteFile is Create plus one write use
// it.
func WriteAll(w Writer, data []byte) error {
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}
