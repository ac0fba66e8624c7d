package hoststate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/voicebox-go/voicebox/internal/core/durable"
)

// Files are small state files by name (".agent-settings.json"): the state directory's (Dir), or
// a fleet's shared bucket (internal/door/fleet), so a setting changed through one relay holds on all.
// Both are held to one conformance suite (hoststatetest.RunFiles). Vendor keys are never kept in
// a shared Files: they stay in each relay's Dir or environment.
type Files interface {
	// ReadFile returns the file name, reading at most max bytes; a missing file reads as
	// (nil, nil), a larger one is an error.
	ReadFile(name string, max int64) ([]byte, error)
	// WriteFile replaces the file name with data; a reader sees the old content or the new.
	WriteFile(name string, data []byte) error
}

var _ Files = (*Dir)(nil)

// ErrFileTooLarge is what a store of state files (Files, and the extension door's store) returns
// for a file over the bound it was read with.
var ErrFileTooLarge = errors.New("hoststate: the file is over the bound it is read with")

// ValidFileName reports whether name can name a state file: a base name, not "." or "..".
func ValidFileName(name string) bool {
	return name != "" && name == filepath.Base(name) && name != "." && name != ".."
}

// WriteFile replaces the state file name (a base name, such as ".vendor-keys.json") with data,
// 0600, atomically and durably (durable.WriteFile): a reader sees the old content or the new, nil
// means the new survives a crash, and a full disk is a state-disk-full refusal.
func (d *Dir) WriteFile(name string, data []byte) error {
	if !ValidFileName(name) {
		return fmt.Errorf("hoststate: %q is not a file name", name)
	}
	return durable.WriteFile(filepath.Join(d.path, name), data, 0o600)
}

// ReadFile returns the state file name, reading at most max bytes; a missing file reads as
// (nil, nil), a larger one is an error.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	if !ValidFileName(name) {
		return nil, fmt.Errorf("hoststate: %q is not a file name", name)
	}
	f, err := os.Open(filepath.Join(d.path, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("hoststate: %s is over %d bytes", name, max)
	}
	return b, nil
}
