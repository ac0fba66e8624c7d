package wasmabi

import (
	"bytes"
	"errors"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// Shape is what a runner needs to know of a module before it runs it: its imports, its memory,
// its tables and its exports with their signatures.
type Shape struct {
	Imports     uint64
	FirstImport string // "module.name" of the first import, "" for none
	Memory      bool   // the module defines a memory
	MinPages    uint64 // the first defined memory's initial size
	// MaxPages is its declared maximum, when HasMax.
	MaxPages uint64
	HasMax   bool
	// Memories counts every memory, imported and defined (more than one is the multi-memory
	// proposal, which browsers run). MemoryPages is their initial sizes together and
	// MemoryMaxPages their declared maxima together; MemoryUnbounded reports one declared
	// without a maximum. The sums saturate at 2^64-1.
	Memories        uint64
	MemoryPages     uint64
	MemoryMaxPages  uint64
	MemoryUnbounded bool
	// TableElements is the most elements the module's tables, imported and defined, can ever
	// hold together (their declared maxima, or their minima when they declare none), and
	// TableUnbounded reports a table declared without a maximum.
	TableElements  uint64
	TableUnbounded bool
	// Exports are the module's exports by name.
	Exports map[string]Export

	types         []FuncType
	funcTypes     []uint64 // the type index of each function the module defines
	importedFuncs uint64
}

// Export is one export: its kind (0 function, 1 table, 2 memory, 3 global) and index.
type Export struct {
	Kind  byte
	Index uint64
}

// The export kinds.
const (
	KindFunc   = 0
	KindMemory = 2
)

// ValI32 is the value type byte of i32.
const ValI32 = 0x7f

// FuncType is a function's signature: its parameters' and results' value types.
type FuncType struct {
	Params, Results []byte
}

// Signature returns the signature of the function exported as name, or false when there is no
// such function.
func (s Shape) Signature(name string) (FuncType, bool) {
	e, ok := s.Exports[name]
	if !ok || e.Kind != KindFunc || e.Index < s.importedFuncs {
		return FuncType{}, false
	}
	i := e.Index - s.importedFuncs
	if i >= uint64(len(s.funcTypes)) || s.funcTypes[i] >= uint64(len(s.types)) {
		return FuncType{}, false
	}
	return s.types[s.funcTypes[i]], true
}

// Scan walks the sections of a WebAssembly binary far enough to find its imports, the size of
// its memory, the bounds of its tables and its exports with their signatures. It checks only the
// framing; a compiler validates the rest.
func Scan(b []byte) (Shape, error) {
	s := Shape{Exports: map[string]Export{}}
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
		case 1: // types: 0x60, the parameters' and the results' value types
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				if sec.byte() != 0x60 {
					sec.fail(errors.New("a type is not a function type"))
					break
				}
				params := bytes.Clone(sec.take(sec.uleb())) // a Shape never aliases the module
				results := bytes.Clone(sec.take(sec.uleb()))
				s.types = append(s.types, FuncType{Params: params, Results: results})
			}
		case 2: // imports: module, name, then what is imported
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				mod, name := sec.name(), sec.name()
				if s.Imports == 0 {
					s.FirstImport = textf.Sprintf("%s.%s", mod, name)
				}
				s.Imports++
				switch sec.byte() {
				case 0: // a function: its type
					sec.uleb()
					s.importedFuncs++
				case 1: // a table: a reference type and limits
					sec.byte()
					s.addTable(sec.limits())
				case 2: // a memory: limits
					s.addMemory(sec.limits())
				case 3: // a global: a value type and mutability
					sec.byte()
					sec.byte()
				default:
					sec.fail(errors.New("an import of an unknown kind"))
				}
			}
		case 3: // functions: each one's type
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				s.funcTypes = append(s.funcTypes, sec.uleb())
			}
		case 4: // tables: a reference type, then limits
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				sec.byte()
				s.addTable(sec.limits())
			}
		case 5: // memories: limits each
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				minPages, maxPages, hasMax := sec.limits()
				if !s.Memory {
					s.Memory, s.MinPages, s.MaxPages, s.HasMax = true, minPages, maxPages, hasMax
				}
				s.addMemory(minPages, maxPages, hasMax)
			}
		case 7: // exports: name, kind, index
			for n := sec.uleb(); n > 0 && sec.err == nil; n-- {
				name := string(sec.take(sec.uleb()))
				kind := sec.byte()
				s.Exports[name] = Export{Kind: kind, Index: sec.uleb()}
			}
		}
		if sec.err != nil {
			return s, textf.Errorf("section %d: %w", id, sec.err)
		}
	}
	return s, nil
}

// addMemory counts one memory, imported or defined, into the totals.
func (s *Shape) addMemory(minPages, maxPages uint64, hasMax bool) {
	s.Memories = addSat(s.Memories, 1)
	s.MemoryPages = addSat(s.MemoryPages, minPages)
	if hasMax {
		s.MemoryMaxPages = addSat(s.MemoryMaxPages, maxPages)
	} else {
		s.MemoryUnbounded = true
		s.MemoryMaxPages = addSat(s.MemoryMaxPages, minPages)
	}
}

// addTable counts one table, imported or defined: its maximum, or its minimum when it declares
// none (and then it is unbounded).
func (s *Shape) addTable(minElems, maxElems uint64, hasMax bool) {
	if hasMax {
		minElems = maxElems
	} else {
		s.TableUnbounded = true
	}
	s.TableElements = addSat(s.TableElements, minElems)
}

// addSat is a+b, or the largest uint64 when that overflows.
func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
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

// limits reads limits: flags, the minimum, and the maximum when flags&1.
func (r *reader) limits() (min, max uint64, hasMax bool) {
	flags := r.byte()
	min = r.uleb()
	if flags&1 != 0 {
		max, hasMax = r.uleb(), true
	}
	return min, max, hasMax
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
