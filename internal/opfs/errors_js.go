package opfs

import (
	"context"
	"errors"
	"io/fs"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// pathError turns what a File System API call failed with into the *fs.PathError every root
// reports: the fs sentinel or fsroot kind for the DOMException, with the exception itself kept
// (jsutil.Name still finds it). wantDir says the call expected a directory, which decides what a
// TypeMismatchError (the other kind of entry is there) means.
func pathError(op, name string, err error, wantDir bool) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, fs.ErrClosed) {
		return fsroot.Err(op, name, fs.ErrClosed)
	}
	var kind error
	switch jsutil.Name(err) {
	case "NotFoundError":
		kind = fs.ErrNotExist
	case "TypeMismatchError":
		kind = fsroot.ErrIsDir
		if wantDir {
			kind = fsroot.ErrNotDir
		}
	case "InvalidModificationError":
		kind = fsroot.ErrNotEmpty
	case "NotAllowedError", "SecurityError":
		kind = fs.ErrPermission
	case "TypeError":
		kind = fs.ErrInvalid
	case "QuotaExceededError":
		kind = fsroot.ErrNoSpace
	case "NoModificationAllowedError":
		// Another context of the origin holds the file open and did not let go when asked.
		kind = fsroot.ErrBusy
	default:
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fsroot.Err(op, name, &domError{kind: kind, cause: err})
}

// domError is an fs kind together with the DOMException it came from.
type domError struct{ kind, cause error }

func (e *domError) Error() string   { return e.kind.Error() + " (" + e.cause.Error() + ")" }
func (e *domError) Unwrap() []error { return []error{e.kind, e.cause} }
