package wasmtool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ReadModule reads the module file name, a slash-separated path relative to dir (the directory
// of the descriptor that names it), reading at most limit bytes. The name passes the same check
// as a workspace path (no "..", no absolute path, no dot-name), and the file is opened through
// os.Root, so neither a name nor a symbolic link reaches outside dir. A module over limit is
// refused resource-exceeded; a missing one not-found.
func ReadModule(dir, name string, limit int) ([]byte, error) {
	if err := fsroot.Check(name); err != nil {
		if r, ok := refusal.As(err); ok {
			return nil, refusal.New(r.Rule, "the module path %q: %s", name, r.Why)
		}
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, refusal.New(refusal.NotFound, "the extensions directory cannot be opened to find module %s", name)
	}
	defer root.Close()
	// O_NONBLOCK: a FIFO in the module's place must not hold the call waiting for a writer.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, refusal.New(refusal.NotFound, "the module %s is not in the extensions directory", name)
		}
		return nil, refusal.New(refusal.OutsideRoot, "the module %s cannot be opened inside the extensions directory", name)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, refusal.New(refusal.NotFound, "the module %s is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, refusal.New(refusal.FileError, "the module %s could not be read", name)
	}
	if len(b) > limit {
		return nil, refusal.New(refusal.ResourceExceeded, "the module %s is over the bound of %d bytes", name, limit)
	}
	return b, nil
}

// shape is what Call needs to know of a module before handing it to wazero.
type shape struct {
	imports     uint64
	firstImport string // "module.name" of the first import, "" for none
	memory      bool   // the module defines a memory
	minPages    uint64 // its initial size
	// tableElements is the most elements the module's tables can ever hold together (their
	// declared maxima), and tableUnbounded reports a table declared without a maximum.
	tableElements  uint64
	tableUnbounded bool
}

// scan walks the sections of a WebAssembly binary far enough to find its imports, the initial
// size of its memory and the bounds of its tables. It checks only the framing; wazero validates the rest when it compiles.
func scan(b []byte) (shape, error) {
	var s shape
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return s, errors.New("it does not start with the \\0asm magic")
	}
	if b[4] != 1 || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return s, errors.New("it is not binary format version 1")
	}
	r := reader{b: b[8:]}
	for !r.done() {
		id := r.byte()
		size := r.uleb()
		body := r.take(size)
		if r.err != nil {
			return s, r.err
		}
		sec := reader{b: body}
		switch id {
		case 2: // imports
			s.imports = sec.uleb()
			if s.imports > 0 {
				mod, name := sec.name(), sec.name()
				s.firstImport = fmt.Sprintf("%s.%s", mod, name)
			}
		case 4: // tables: a reference type, then limits (flags, min, and max when flags&1)
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				sec.byte()
				flags := sec.byte()
				limit := sec.uleb()
				if flags&1 != 0 {
					limit = sec.uleb()
				} else {
					s.tableUnbounded = true
				}
				s.tableElements += min(limit, 1<<32)
			}
		case 5: // memories
			if sec.uleb() > 0 {
				s.memory = true
				sec.byte() // the limits' flags: whether a maximum (or sharing) follows
				s.minPages = sec.uleb()
			}
		}
		if sec.err != nil {
			return s, fmt.Errorf("section %d: %w", id, sec.err)
		}
	}
	return s, nil
}

// reader reads the binary's primitive encodings; the first failure sticks in err.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("it ends in the middle of a section")

func (r *reader) done() bool { return len(r.b) == 0 || r.err != nil }

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail(errShort)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// uleb reads an unsigned LEB128 of at most 64 bits.
func (r *reader) uleb() uint64 {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("an integer is longer than 64 bits"))
	return 0
}

func (r *reader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail(errShort)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) name() string {
	s := string(r.take(r.uleb()))
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}
