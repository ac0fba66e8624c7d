package wasmabi

import (
	"errors"
	"fmt"
	"strings"
)

// Shape is what a runner needs to know of a module before it compiles it: its imports, its
// memory and its tables.
type Shape struct {
	Imports     uint64
	FirstImport string // "module.name" of the first import, "" for none
	Memory      bool   // the module defines a memory
	MinPages    uint64 // its initial size
	// MaxPages is its declared maximum, when HasMax.
	MaxPages uint64
	HasMax   bool
	// TableElements is the most elements the module's tables can ever hold together (their
	// declared maxima), and TableUnbounded reports a table declared without a maximum.
	TableElements  uint64
	TableUnbounded bool
}

// Scan walks the sections of a WebAssembly binary far enough to find its imports, the size of
// its memory and the bounds of its tables. It checks only the framing; a compiler validates the
// rest.
func Scan(b []byte) (Shape, error) {
	var s Shape
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
			s.Imports = sec.uleb()
			if s.Imports > 0 {
				mod, name := sec.name(), sec.name()
				s.FirstImport = fmt.Sprintf("%s.%s", mod, name)
			}
		case 4: // tables: a reference type, then limits (flags, min, and max when flags&1)
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				sec.byte()
				flags := sec.byte()
				limit := sec.uleb()
				if flags&1 != 0 {
					limit = sec.uleb()
				} else {
					s.TableUnbounded = true
				}
				s.TableElements += min(limit, 1<<32)
			}
		case 5: // memories
			if sec.uleb() > 0 {
				s.Memory = true
				flags := sec.byte() // the limits: whether a maximum (or sharing) follows
				s.MinPages = sec.uleb()
				if flags&1 != 0 {
					s.MaxPages, s.HasMax = sec.uleb(), true
				}
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
