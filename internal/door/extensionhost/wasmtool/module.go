package wasmtool

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ReadModule reads the module file name, a slash-separated path relative to dir (the directory
// of the descriptor that names it), reading at most limit bytes. The name passes the same check
// as a workspace path (no "..", no absolute path, no dot-name), and the file is opened through
// os.Root, so neither a name nor a symbolic link reaches outside dir. A missing module, or one
// that is not a regular file, is refused wasm-unreadable; one over limit over-budget, before a
// byte of it is read.
func ReadModule(dir, name string, limit int) ([]byte, error) {
	if err := fsroot.Check(name); err != nil {
		if r, ok := refusal.As(err); ok {
			return nil, refusal.New(r.Rule, "the module path %q: %s", name, r.Why)
		}
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, refusal.New(refusal.WasmUnreadable, "the directory of module %s cannot be opened", name)
	}
	defer root.Close()
	// O_NONBLOCK: a FIFO in the module's place must not hold the call waiting for a writer.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, refusal.New(refusal.WasmUnreadable, "the module %s is not in its directory", name)
		}
		return nil, refusal.New(refusal.OutsideRoot, "the module %s cannot be opened inside its directory", name)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, refusal.New(refusal.WasmUnreadable, "the module %s is not a regular file", name)
	}
	if fi.Size() > int64(limit) {
		return nil, refusal.New(refusal.OverBudget, "the module %s is %d bytes, over the bound of %d; it was not read", name, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, refusal.New(refusal.WasmUnreadable, "the module %s could not be read", name)
	}
	if len(b) > limit {
		return nil, refusal.New(refusal.OverBudget, "the module %s grew over the bound of %d bytes while it was read", name, limit)
	}
	return b, nil
}
