package fsroot

import (
	"errors"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of a name. They keep a name well inside what every backing store accepts (most
// file systems allow 255 bytes per element and a few thousand per path).
const (
	// MaxPathBytes is the longest name Check accepts, in bytes.
	MaxPathBytes = 1024
	// MaxPathDepth is the most elements a name may have ("a/b/c" has 3).
	MaxPathDepth = 32
	// MaxNameBytes is the longest single element, in bytes.
	MaxNameBytes = 255
)

// MetaDir is the hidden directory at the top of a root where Voicebox keeps its own records, such
// as the executor's audit log. Check refuses it like every dot name, so no tool can reach it; see
// Metadata.
const MetaDir = ".voicebox"

// Check reports whether name may be used with a Root. It accepts a relative, slash-separated path
// of at most MaxPathDepth elements and MaxPathBytes bytes, every element a non-empty name of at
// most MaxNameBytes bytes that does not begin with a dot. Anything else is refused, as a
// *fs.PathError (Op "check") whose Err wraps fs.ErrInvalid and a *refusal.Refusal:
//
//   - outside-root: the empty name, ".", "..", any ".." or "." element, a leading "/", an empty
//     element ("a//b", "a/"), a backslash, a NUL byte, or bytes that are not UTF-8 (the browser
//     would rewrite them, so the name checked would not be the name used);
//   - dotfile-refused: any element beginning with "." (host secrets and metadata live there);
//   - path-too-long: over one of the bounds above.
//
// A name Check accepts is its own path.Clean and stays inside the root however it is joined.
func Check(name string) error {
	if r := check(name); r != nil {
		return &fs.PathError{Op: "check", Path: name, Err: &refusedError{r}}
	}
	return nil
}

// CheckDir is Check for a directory name, which may also be "" for the root itself (the name
// Root.ReadDir takes for the top).
func CheckDir(name string) error {
	if name == "" {
		return nil
	}
	return Check(name)
}

// CheckCreate is Check for a name a root is about to create or write (a file written, a folder
// made, the new name of a move): it also refuses, invalid-name, a name holding a character that
// hides or reorders text, or one not in Unicode NFC (internal/shared/names), in any element. Reading,
// listing, moving away and removing go by Check alone, so a file stored under such a name by
// another program can still be read and cleaned up.
func CheckCreate(name string) error {
	if err := Check(name); err != nil {
		return err
	}
	if r := names.Check("the path", name); r != nil {
		return &fs.PathError{Op: "check", Path: name, Err: &refusedError{r}}
	}
	return nil
}

// ValidName reports whether elem may be one element of a name: what a root lists in ReadDir.
func ValidName(elem string) bool {
	return !strings.Contains(elem, "/") && check(elem) == nil
}

func check(name string) *refusal.Refusal {
	switch {
	case name == "":
		return refusal.New(refusal.OutsideRoot, "the path is empty; name a file or folder inside the workspace")
	case len(name) > MaxPathBytes:
		return refusal.New(refusal.PathTooLong, "the path is %d bytes, over the bound of %d", len(name), MaxPathBytes)
	case name[0] == '/':
		return refusal.New(refusal.OutsideRoot, "the path %q is absolute; paths are relative to the workspace", name)
	case strings.IndexByte(name, 0) >= 0:
		return refusal.New(refusal.OutsideRoot, "the path %q contains a NUL byte", name)
	case strings.IndexByte(name, '\\') >= 0:
		return refusal.New(refusal.OutsideRoot, "the path %q contains a backslash; separate folders with /", name)
	case !utf8.ValidString(name):
		return refusal.New(refusal.OutsideRoot, "the path %q is not valid UTF-8", name)
	}
	depth, dotted := 0, ""
	for rest := name; ; {
		elem, more, found := strings.Cut(rest, "/")
		depth++
		switch {
		case elem == "":
			return refusal.New(refusal.OutsideRoot, "the path %q has an empty element (// or a trailing /)", name)
		case elem == "." || elem == "..":
			return refusal.New(refusal.OutsideRoot, "the path %q contains %q; name the file directly, without . or ..", name, elem)
		case elem[0] == '.' && dotted == "":
			dotted = elem
		case len(elem) > MaxNameBytes:
			return refusal.New(refusal.PathTooLong, "the path %q has an element of %d bytes, over the bound of %d", name, len(elem), MaxNameBytes)
		}
		if !found {
			break
		}
		rest = more
	}
	if dotted != "" {
		return refusal.New(refusal.DotfileRefused, "the path %q names %q; names beginning with a dot are hidden from tools", name, dotted)
	}
	if depth > MaxPathDepth {
		return refusal.New(refusal.PathTooLong, "the path %q is %d folders deep, over the bound of %d", name, depth, MaxPathDepth)
	}
	return nil
}

// refusedError is what a refused name's *fs.PathError carries: it is both fs.ErrInvalid and the
// refusal, so errors.Is and refusal.RuleOf both work.
type refusedError struct{ r *refusal.Refusal }

func (e *refusedError) Error() string   { return e.r.Error() }
func (e *refusedError) Unwrap() []error { return []error{fs.ErrInvalid, e.r} }

// Refused returns the error a root reports when it refuses op on name with r: a *fs.PathError
// wrapping fs.ErrInvalid and r, like Check's. The OS root uses it for a symbolic link that leads
// outside.
func Refused(op, name string, r *refusal.Refusal) error {
	return &fs.PathError{Op: op, Path: name, Err: &refusedError{r}}
}

// The error kinds a root reports beyond the fs sentinels. Each wraps the sentinel closest to it
// (the one os uses for the matching errno, where it has one), so errors.Is(err, fs.ErrInvalid)
// and errors.Is(err, fsroot.ErrIsDir) both hold.
var (
	// ErrIsDir: a file operation (read, write, create) named a directory.
	ErrIsDir error = &kindError{"is a directory", fs.ErrInvalid}
	// ErrNotDir: a directory operation (list, mkdir) named a file, or a path goes through one.
	ErrNotDir error = &kindError{"not a directory", fs.ErrInvalid}
	// ErrNotEmpty: Remove named a directory that still has entries.
	ErrNotEmpty error = &kindError{"directory not empty", fs.ErrExist}
	// ErrNotRegular: a read named a FIFO, a device or a socket, which no file tool opens.
	ErrNotRegular error = &kindError{"not a regular file", fs.ErrInvalid}
	// ErrChanged: a FileReader's version of the file is gone (replaced, or written in place by
	// another program) before the read was done; reading on would mix two versions.
	ErrChanged error = &kindError{"the file changed while it was read", fs.ErrInvalid}
	// ErrNoSpace: a write found no room: the disk is full or a quota is spent (ENOSPC, EDQUOT;
	// the browser's QuotaExceededError). No fs sentinel is close to it, so it wraps none.
	ErrNoSpace error = &kindError{"no space left for the write", nil}
	// ErrBusy: another program or context holds the file locked and did not let go of it in
	// time (a browser's other tab keeping a sync access handle open); the same call may succeed
	// later. No fs sentinel is close to it, so it wraps none.
	ErrBusy error = &kindError{"the file is held open elsewhere", nil}
)

type kindError struct {
	msg  string
	base error
}

func (k *kindError) Error() string { return "fsroot: " + k.msg }
func (k *kindError) Unwrap() error { return k.base }

// Err returns the error a root reports for op on name failing with kind: one of fs.ErrNotExist,
// fs.ErrExist, fs.ErrPermission, fs.ErrClosed, ErrIsDir, ErrNotDir, ErrNotEmpty, or another
// error wrapping one of them. Roots build their errors with it so every root reports the same
// shapes.
func Err(op, name string, kind error) error {
	return &fs.PathError{Op: op, Path: name, Err: kind}
}

// WithOp returns err with its Op set to op when it is a *fs.PathError (such as Check's, whose Op
// is "check"), and err unchanged otherwise. The original is not modified.
func WithOp(err error, op string) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Op != op {
		return &fs.PathError{Op: op, Path: pe.Path, Err: pe.Err}
	}
	return err
}
