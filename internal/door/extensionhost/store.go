package extensionhost

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/voicebox-go/voicebox/internal/core/durable"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmtool"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Store is where Admissions keeps what it shares with every relay that admits extensions: the
// proposals (proposals/<id>.json), the admitted descriptors (<id>.json) and the WASM modules
// they name, by slash-separated names fsroot.Check accepts; the ledger, append only; and the
// approval codes' document, changed only by compare-and-set on its revision, so a code is
// redeemed once and its attempts count once across every relay on the store.
//
// DirStore, the host state directory, is the default; internal/door/fleet keeps the same things in
// JetStream for a fleet. Both are held to one conformance suite (storetest.Run). The audit log is
// not in a Store: every relay keeps its own, beside its host state.
type Store interface {
	// ReadFile returns the file name, reading at most max bytes: fs.ErrNotExist when missing,
	// ErrStoreFileTooLarge when larger.
	ReadFile(name string, max int64) ([]byte, error)
	// WriteFile replaces the file name with data; a reader sees the old content or the new.
	WriteFile(name string, data []byte) error
	// Remove removes the file name; fs.ErrNotExist when there is none.
	Remove(name string) error
	// List returns the base names of the files directly in the folder dir ("" for the top),
	// sorted; a missing folder lists nothing.
	List(dir string) ([]string, error)
	// AppendLedger appends one line (without its newline) to the ledger; nil means the line is
	// kept durably (a DirStore syncs it, and cuts back the part of a failed append).
	AppendLedger(line []byte) error
	// ReadLedger returns the ledger's lines, oldest first, each ended by a newline.
	ReadLedger() ([]byte, error)
	// Codes returns the approval codes' document and its revision; (nil, 0) when there is none.
	Codes() (doc []byte, rev uint64, err error)
	// SwapCodes replaces the document with doc when its revision is still rev (0: there is
	// none), and reports whether it did; an empty doc removes the document.
	SwapCodes(doc []byte, rev uint64) (bool, error)
}

// ErrStoreFileTooLarge is returned by Store.ReadFile for a file over the bound it was read with:
// the host state's own error, so a store another door supplies (internal/door/fleet's) returns it
// without importing this one.
var ErrStoreFileTooLarge = hoststate.ErrFileTooLarge

// DirStore is a Store in a directory: the host state directory by default, where the files lie
// as they always did (LedgerFile, PendingFile, proposals/, <id>.json and the modules). Two
// DirStores on one directory in one process share its codes' compare-and-set; two processes on
// one directory do not (the file is never torn, but one of two changes at the same instant may
// be lost), as with the pairings file.
type DirStore struct{ dir string }

// NewDirStore returns the Store in dir.
func NewDirStore(dir string) *DirStore { return &DirStore{dir: dir} }

var _ Store = (*DirStore)(nil)

// codesLocks serializes the codes' compare-and-set of every DirStore of one directory.
var codesLocks sync.Map // cleaned directory path -> *sync.Mutex

func (s *DirStore) codesLock() *sync.Mutex {
	m, _ := codesLocks.LoadOrStore(filepath.Clean(s.dir), &sync.Mutex{})
	return m.(*sync.Mutex)
}

func checkStoreName(name string) error {
	if err := fsroot.Check(name); err != nil {
		return fmt.Errorf("extensionhost: %q is not a store name: %w", name, err)
	}
	return nil
}

// ReadFile implements Store.
func (s *DirStore) ReadFile(name string, max int64) ([]byte, error) {
	if err := checkStoreName(name); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO in a descriptor's place must not hold a reload waiting for a writer.
	f, err := os.OpenFile(filepath.Join(s.dir, filepath.FromSlash(name)), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("extensionhost: %s is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, ErrStoreFileTooLarge
	}
	return b, nil
}

// WriteFile implements Store: through os.Root, durably (durable.WriteFileIn: a synced temporary
// file renamed over the name, the folders synced); a full disk is state-disk-full.
func (s *DirStore) WriteFile(name string, data []byte) error {
	if err := checkStoreName(name); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return durable.Classify(name, err)
		}
	}
	return durable.WriteFileIn(root, name, data, 0o600)
}

// Remove implements Store.
func (s *DirStore) Remove(name string) error {
	if err := checkStoreName(name); err != nil {
		return err
	}
	return os.Remove(filepath.Join(s.dir, filepath.FromSlash(name)))
}

// List implements Store.
func (s *DirStore) List(dir string) ([]string, error) {
	if err := fsroot.CheckDir(dir); err != nil {
		return nil, fmt.Errorf("extensionhost: %q is not a store folder: %w", dir, err)
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, filepath.FromSlash(dir)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && fsroot.ValidName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// AppendLedger implements Store: durably (durable.Log, synced before it returns), after cutting
// a torn last line a failed append may have left; a full disk is state-disk-full.
func (s *DirStore) AppendLedger(line []byte) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return s.ledger().Append(line, true)
}

// ReadLedger implements Store: a torn last line is cut from the file and left out.
func (s *DirStore) ReadLedger() ([]byte, error) { return s.ledger().Read() }

func (s *DirStore) ledger() *durable.Log {
	return durable.NewLog(filepath.Join(s.dir, LedgerFile), "the extension ledger", nil)
}

// Codes implements Store: the document is PendingFile, its revision a digest of its content.
func (s *DirStore) Codes() ([]byte, uint64, error) {
	m := s.codesLock()
	m.Lock()
	defer m.Unlock()
	return s.readCodes()
}

func (s *DirStore) readCodes() ([]byte, uint64, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, PendingFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	sum := sha256.Sum256(b)
	return b, binary.BigEndian.Uint64(sum[:8]) | 1, nil // never 0, which means none
}

// SwapCodes implements Store.
func (s *DirStore) SwapCodes(doc []byte, rev uint64) (bool, error) {
	m := s.codesLock()
	m.Lock()
	defer m.Unlock()
	_, now, err := s.readCodes()
	if err != nil {
		return false, err
	}
	if now != rev {
		return false, nil
	}
	p := filepath.Join(s.dir, PendingFile)
	if len(doc) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		return true, nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return false, err
	}
	if err := durable.WriteFile(p, doc, 0o600); err != nil {
		return false, err
	}
	return true, nil
}

// readModule reads the module name of an admitted descriptor, at most limit bytes: from the
// directory through wasmtool.ReadModule (which refuses what is not a regular file inside it),
// or from another Store with the same refusals.
func readModule(st Store, name string, limit int) ([]byte, error) {
	if d, ok := st.(*DirStore); ok {
		return wasmtool.ReadModule(d.dir, name, limit)
	}
	if err := fsroot.Check(name); err != nil {
		if r, ok := refusal.As(err); ok {
			return nil, refusal.New(r.Rule, "the module path %q: %s", name, r.Why)
		}
		return nil, err
	}
	b, err := st.ReadFile(name, int64(limit))
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, refusal.New(refusal.WasmUnreadable, "the module %s is not in the extension store", name)
	case errors.Is(err, ErrStoreFileTooLarge):
		return nil, refusal.New(refusal.OverBudget, "the module %s is over the bound of %d bytes; it was not read", name, limit)
	}
	if _, ok := refusal.As(err); ok {
		return nil, err // fleet-unavailable
	}
	return nil, refusal.New(refusal.WasmUnreadable, "the module %s could not be read", name)
}
