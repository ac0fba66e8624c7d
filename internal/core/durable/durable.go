// Package durable is how the relay writes its state, so that an answer of success means the
// record is on the disk and a full disk is a named refusal, never a torn file:
//
//   - WriteFile and WriteFileIn replace a whole file (settings, vendor keys, pairings, bearers,
//     the host token, the extension store's files): a temporary file beside it, synced, renamed
//     over it, the directory synced; the temporary file is removed when anything fails.
//   - Log appends lines to an append-only record (the extension ledger, the audit log). A torn
//     tail (a last line without its newline, or one that does not parse) is cut back to the last
//     whole line before the next append and when the record is read, and the cut is logged; an
//     append that fails part way is cut back at once.
//   - SweepTemps removes, at start, the temporary files a killed process left (the state
//     directory's, and a machine environment's workspace: both write under fsroot.TempName).
//
// A write refused because the disk is full (ENOSPC) or the quota is spent (EDQUOT) returns a
// state-disk-full refusal (refusal.StateDiskFull) that still wraps the cause, so the HTTP door
// answers it 507 and the log keeps the errno.
//
// The relay's core (internal/core/hoststate) and its doors (internal/door/extensionhost) both import it; it
// imports neither.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

var logger atomic.Pointer[slog.Logger]

// SetLog sets where repairs are logged (slog.Default() until it is called). The relay calls it
// once with its own logger.
func SetLog(l *slog.Logger) { logger.Store(l) }

func log() *slog.Logger {
	if l := logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// DiskFull reports whether err is the disk refusing a write for want of space: ENOSPC, or
// EDQUOT (the user's quota).
func DiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Classify returns err as it is, or, when it is a full disk, a state-disk-full refusal that
// wraps it; what names the record for the sentence ("the extension ledger"). For the steps a
// caller takes itself before a write (making a folder).
func Classify(what string, err error) error { return classify(what, err) }

func classify(what string, err error) error {
	if err == nil || !DiskFull(err) {
		return err
	}
	rf := refusal.New(refusal.StateDiskFull,
		"the disk that holds the relay's state directory is full, so %s was not changed; free space on it and send the request again", what)
	return fmt.Errorf("%w (%w)", rf, err)
}

// WriteFile replaces the file at path with data (mode perm), durably: see WriteFileIn. The
// directory must exist.
func WriteFile(p string, data []byte, perm fs.FileMode) error {
	root, err := os.OpenRoot(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteFileIn(root, filepath.Base(p), data, perm)
}

// write is f.Write; a test puts a full disk in its place where it cannot mount one.
var write = (*os.File).Write

// WriteFileIn replaces the file name (slash-separated, in an existing folder of root) with data:
// it writes a temporary file beside it (fsroot.TempName, which SweepTemps knows), syncs it,
// renames it over name and syncs the folders from name's up to root's, so a reader sees the old
// content or the new and, once it returns nil, the new survives a crash. On any failure the
// temporary file is removed and the old content stays; a full disk is a state-disk-full refusal.
func WriteFileIn(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	dir, _ := path.Split(name)
	tmp := dir + fsroot.TempName()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return classify(name, err)
	}
	done := false
	defer func() {
		if !done {
			root.Remove(tmp)
		}
	}()
	_, err = write(f, data)
	if err == nil {
		err = f.Chmod(perm) // OpenFile's mode went through the umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		return classify(name, err)
	}
	done = true
	return classify(name, syncDirs(root, dir))
}

// syncDirs syncs the folder dir of root ("" is root itself) and every folder above it, so a
// rename in it, and the folder itself when it was just made, survive a crash.
func syncDirs(root *os.Root, dir string) error {
	d := path.Clean("/" + dir)[1:]
	for {
		if d == "" {
			d = "."
		}
		if err := syncDir(root, d); err != nil {
			return err
		}
		if d == "." {
			return nil
		}
		d = path.Dir(d)
		if d == "." {
			d = ""
		}
	}
}

func syncDir(root *os.Root, dir string) error {
	f, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) { // EINVAL: a file system that cannot sync folders
		return err
	}
	return nil
}

// SyncDir syncs the directory at p, so a file just created or renamed in it survives a crash.
func SyncDir(p string) error {
	root, err := os.OpenRoot(p)
	if err != nil {
		return err
	}
	defer root.Close()
	return syncDir(root, ".")
}

// SweepTemps removes from root the temporary files of writes that never finished (a process
// killed mid-write; fsroot.OSRoot.SweepTemps: only their exact names, only ones unchanged for
// fsroot.StaleTempAge) and says in log how many and how many bytes. where names the tree in the
// log ("the workspace", "the state directory").
func SweepTemps(root *fsroot.OSRoot, where string, log *slog.Logger) {
	sw, err := root.SweepTemps(time.Now())
	if err != nil {
		log.Warn("could not sweep the temporary files of unfinished writes", "where", where, "error", err)
	}
	if sw.Files > 0 {
		log.Info("removed temporary files of writes that never finished", "where", where, "files", sw.Files, "bytes", sw.Bytes, "older_than", fsroot.StaleTempAge)
	}
	if sw.Cut {
		log.Info("the sweep of temporary files stopped at its bound; entries past it were not looked at", "where", where, "entries", fsroot.MaxSweepEntries)
	}
}
