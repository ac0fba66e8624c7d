// Package wasmabi is the one description of how Voicebox drives a WebAssembly module: the two
// buffer ABIs the original Voicebox documents, the order of the checks a call passes, and the
// decoding of what a module writes. The relay's runner (wazero) and the page's (a Worker) both
// follow it, so a module behaves the same wherever it runs.
//
// # buffer-abi/1
//
// One input buffer, one integer in, a fixed-size answer out. The caller writes the input (at most
// MaxInputBytes) at InputOffset and calls the export with its length as the one i32 parameter.
// The export returns an i32, the number of answer bytes it wrote at OutputOffset (0 to
// MaxOutputBytes), or returns nothing, and then all MaxOutputBytes bytes are the answer. A sha256
// module, the original's hash tool, writes the 32-byte digest and returns 32.
//
// # buffer-abi/diff
//
// Two input buffers, one output buffer of blocks. The caller writes text A (at most
// DiffMaxInputBytes) at DiffInputAOffset and text B at DiffInputBOffset and calls the export with
// their two lengths. The export writes DiffBlockBytes-byte blocks at DiffOutputOffset and returns
// how many bytes it wrote (at most DiffMaxOutputBytes); a negative return is refused diff-failed.
// A block is an operation byte (0 equal, 1 delete, 2 insert, 255 ends the list) and four
// little-endian uint32: the first line in A, the count of lines in A, the first line in B, the
// count of lines in B. Lines are counted from 0.
//
// # The checks of a call, in order
//
// The first failing check is the refusal:
//
//	wasm-unreadable     the module file cannot be read (missing, not a regular file)
//	over-budget         the module file is over the host's bound (before it is read)
//	digest-mismatch     its bytes do not hash to the pinned sha256 (both prefixes are named)
//	wasm-invalid        the bytes are not framed as a WebAssembly module (CheckBytes)
//	resource-exceeded   memories or tables, imported and defined, that the host's bounds cannot
//	                    hold together (CheckBytes)
//	wasm-invalid        the module does not compile
//	import-undeclared   the module imports anything (both ABIs import nothing)
//	over-budget         an input is over its buffer
//	unsupported-abi     no exported memory "memory", a memory smaller than the ABI's buffers,
//	                    no such export, or an export of another signature
//	time-exceeded       still running at the host's deadline (the run is stopped)
//	resource-exceeded   memory grown past the host's bound while running
//	wasm-trapped        a trap: unreachable, an access out of bounds, a division by zero, ...
//	over-budget         buffer-abi/1: an answer length over MaxOutputBytes
//	diff-failed         buffer-abi/diff: a negative return, an output over its buffer, or a
//	                    block with an unknown operation
//
// The first three happen where the bytes are read (the relay); the rest wherever the module runs.
// CheckBytes needs no compiler, so it also runs where a module is admitted (the shelf pinning a
// digest, an extension's admission): a module the bounds cannot hold is never admitted, and a
// module swapped for one after admission is refused at its call before anything compiles it.
//
// The package is portable: the relay and the page compile it alike.
package wasmabi

import (
	"encoding/binary"
	"encoding/hex"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The ABIs.
const (
	// ABI1 is buffer-abi/1: one input buffer, a fixed-size answer.
	ABI1 = "buffer-abi/1"
	// ABIDiff is buffer-abi/diff: two input buffers, blocks of a line diff out.
	ABIDiff = "buffer-abi/diff"
)

// The buffer-abi/1 layout.
const (
	// InputOffset is where the input bytes are written in the module's memory.
	InputOffset = 0x400
	// MaxInputBytes bounds the input: it fills the memory from InputOffset up to OutputOffset.
	MaxInputBytes = 8192
	// OutputOffset is where the answer bytes are read back from.
	OutputOffset = 0x2400
	// MaxOutputBytes bounds the answer of one call.
	MaxOutputBytes = 32
)

// The buffer-abi/diff layout.
const (
	// DiffInputAOffset is where text A is written.
	DiffInputAOffset = 0x10000
	// DiffInputBOffset is where text B is written.
	DiffInputBOffset = 0x20000
	// DiffMaxInputBytes bounds each text.
	DiffMaxInputBytes = 65536
	// DiffOutputOffset is where the blocks are read back from.
	DiffOutputOffset = 0x30000
	// DiffMaxOutputBytes bounds the blocks' bytes.
	DiffMaxOutputBytes = 262144
	// DiffBlockBytes is the size of one block.
	DiffBlockBytes = 17
	// MaxDiffBlocks bounds the blocks one answer carries (each is about 70 bytes of JSON); past
	// it the answer is flagged truncated. Full blocks fill DiffMaxOutputBytes at 15,420.
	MaxDiffBlocks = 4096
)

// PageBytes is the size of a WebAssembly memory page.
const PageBytes = 65536

// Buffer is one buffer of a layout: where it starts and how many bytes it may hold.
type Buffer struct {
	Offset   uint32
	MaxBytes uint32
}

// End returns the first byte past the buffer.
func (b Buffer) End() uint64 { return uint64(b.Offset) + uint64(b.MaxBytes) }

// Layout is an ABI's buffers and its export's signature.
type Layout struct {
	ABI    string
	Inputs []Buffer
	Output Buffer
}

// MemoryBytes is the least memory a module must start with to hold every buffer.
func (l Layout) MemoryBytes() uint64 {
	var need uint64
	for _, b := range append([]Buffer{l.Output}, l.Inputs...) {
		need = max(need, b.End())
	}
	return need
}

// Params is how many i32 parameters the export takes: one length per input.
func (l Layout) Params() int { return len(l.Inputs) }

// LayoutOf returns the layout of abi, or false for an ABI Voicebox does not drive. An empty abi
// is buffer-abi/1.
func LayoutOf(abi string) (Layout, bool) {
	switch abi {
	case ABI1, "":
		return Layout{ABI: ABI1, Inputs: []Buffer{{InputOffset, MaxInputBytes}}, Output: Buffer{OutputOffset, MaxOutputBytes}}, true
	case ABIDiff:
		return Layout{ABI: ABIDiff, Inputs: []Buffer{{DiffInputAOffset, DiffMaxInputBytes}, {DiffInputBOffset, DiffMaxInputBytes}},
			Output: Buffer{DiffOutputOffset, DiffMaxOutputBytes}}, true
	}
	return Layout{}, false
}

// Spec is what a call runs: the ABI and the export it calls.
type Spec struct {
	ABI    string `json:"abi"`
	Export string `json:"export"`
}

// CheckInputs refuses inputs that do not fit the layout: over-budget for one over its buffer.
// It is the sixth check of a call.
func (l Layout) CheckInputs(inputs [][]byte) error {
	if len(inputs) != len(l.Inputs) {
		return refusal.New(refusal.InvalidArgument, "%s takes %d inputs, not %d", l.ABI, len(l.Inputs), len(inputs))
	}
	for i, in := range inputs {
		if uint64(len(in)) > uint64(l.Inputs[i].MaxBytes) {
			return refusal.New(refusal.OverBudget, "input %d is %d bytes; %s holds at most %d", i+1, len(in), l.ABI, l.Inputs[i].MaxBytes)
		}
	}
	return nil
}

// Block is one block of a line diff.
type Block struct {
	Op     string `json:"op"` // equal, delete or insert
	ALine  uint32 `json:"aLine"`
	ACount uint32 `json:"aCount"`
	BLine  uint32 `json:"bLine"`
	BCount uint32 `json:"bCount"`
}

var opNames = map[byte]string{0: "equal", 1: "delete", 2: "insert"}

// opEnd ends a block list before the output's end.
const opEnd = 255

// Output is what a call observed.
type Output struct {
	ABI string `json:"abi"`
	// Returned is what the export returned (for an export that returns nothing, the answer's
	// length).
	Returned int64 `json:"returned"`
	// Bytes is how many bytes the module wrote as its answer.
	Bytes int `json:"bytes"`
	// Hex and Text are a buffer-abi/1 answer, in hex and (when it is UTF-8) as text.
	Hex  string  `json:"hex,omitempty"`
	Text *string `json:"text,omitempty"`
	// Blocks are a buffer-abi/diff answer, and Truncated says they were cut at MaxDiffBlocks.
	Blocks    []Block `json:"blocks,omitempty"`
	Truncated bool    `json:"truncated,omitempty"`
}

// Result reads what a module wrote: returned is the export's result (hasResult false for an
// export that returns nothing) and out the output buffer as far as the module's memory reaches
// (at most the layout's output buffer). It refuses an answer over the ABI's bounds.
func (l Layout) Result(returned int64, hasResult bool, out []byte) (*Output, error) {
	switch l.ABI {
	case ABI1:
		n := int64(MaxOutputBytes)
		if hasResult {
			n = int64(int32(returned))
		}
		if n < 0 || n > MaxOutputBytes {
			return nil, refusal.New(refusal.OverBudget, "the module reports %d answer bytes; %s answers with 0 to %d", n, ABI1, MaxOutputBytes)
		}
		if int64(len(out)) < n {
			return nil, refusal.New(refusal.UnsupportedABI, "the module's memory does not reach its answer at 0x%x", OutputOffset)
		}
		b := out[:n]
		o := &Output{ABI: ABI1, Returned: n, Bytes: int(n), Hex: hex.EncodeToString(b)}
		if utf8.Valid(b) {
			s := string(b)
			o.Text = &s
		}
		return o, nil
	case ABIDiff:
		n := int64(int32(returned))
		if !hasResult || n < 0 {
			return nil, refusal.New(refusal.DiffFailed, "the diff module returned %d: it could not diff the texts (a negative length is its failure)", n)
		}
		if n > DiffMaxOutputBytes || n > int64(len(out)) {
			return nil, refusal.New(refusal.DiffFailed, "the diff module reports %d bytes of blocks, over its buffer of %d", n, DiffMaxOutputBytes)
		}
		blocks, truncated, err := DecodeDiff(out[:n], MaxDiffBlocks)
		if err != nil {
			return nil, err
		}
		return &Output{ABI: ABIDiff, Returned: n, Bytes: int(n), Blocks: blocks, Truncated: truncated}, nil
	}
	return nil, refusal.New(refusal.UnsupportedABI, "%q is not an ABI Voicebox drives", l.ABI)
}

// DecodeDiff reads the blocks of a buffer-abi/diff answer: whole blocks up to an end block or
// the answer's end, at most maxBlocks of them (truncated reports more). A block with an unknown
// operation is refused diff-failed.
func DecodeDiff(out []byte, maxBlocks int) (blocks []Block, truncated bool, err error) {
	blocks = []Block{}
	for off := 0; off+DiffBlockBytes <= len(out); off += DiffBlockBytes {
		op := out[off]
		if op == opEnd {
			break
		}
		name, ok := opNames[op]
		if !ok {
			return nil, false, refusal.New(refusal.DiffFailed, "block %d has the operation %d; the operations are 0 (equal), 1 (delete), 2 (insert) and 255 (end)", off/DiffBlockBytes, op)
		}
		if len(blocks) == maxBlocks {
			return blocks, true, nil
		}
		u := func(i int) uint32 { return binary.LittleEndian.Uint32(out[off+1+4*i:]) }
		blocks = append(blocks, Block{Op: name, ALine: u(0), ACount: u(1), BLine: u(2), BCount: u(3)})
	}
	return blocks, false, nil
}

// DigestPrefix is how many hex digits of a digest a refusal names.
const DigestPrefix = 16

// MismatchWhy is the sentence of a digest-mismatch: both digests' prefixes.
func MismatchWhy(what, measured, pinned string) string {
	return textf.Sprintf("%s hashes %s... but the pin is %s...: these are not the bytes that were admitted, so nothing runs", what, prefix(measured), prefix(pinned))
}

func prefix(s string) string {
	if len(s) > DigestPrefix {
		return s[:DigestPrefix]
	}
	return s
}

// MaxTableElements bounds the elements a module's tables may ever hold, together. A runtime
// gives each element a machine word and lets table.grow go to 2^32 of them, so a table must
// declare a maximum (wasm-ld's default) and the maxima must stay under this.
const MaxTableElements = 1 << 16

// CheckMemory is the memory half of the unsupported-abi check: the module must define a memory
// whose initial size holds every buffer of l. (That it is exported as "memory", and the export's
// signature, a runner checks on the compiled module.)
func (l Layout) CheckMemory(s Shape) error {
	if !s.Memory {
		return refusal.New(refusal.UnsupportedABI, "the module has no linear memory; %s needs one to hold its buffers", l.ABI)
	}
	if need := l.MemoryBytes(); s.MinPages*PageBytes < need {
		return refusal.New(refusal.UnsupportedABI, "the module's memory starts at %d bytes but %s needs %d for its buffers", s.MinPages*PageBytes, l.ABI, need)
	}
	return nil
}

// CheckResources is the resource-exceeded check of a module's shape: its memories' initial sizes
// together within maxPages, and its tables' maxima together within MaxTableElements. Every
// memory and table counts, imported or defined: a runtime that runs the multi-memory proposal
// (every browser) allocates each one. A runner that cannot stop a memory.grow while the module
// runs (the page's Worker) passes needMax, and then every memory must also declare a maximum,
// and the maxima together must be within maxPages.
func CheckResources(s Shape, maxPages uint64, needMax bool) error {
	if s.MemoryPages > maxPages {
		return refusal.New(refusal.ResourceExceeded, "the module starts with %d memory pages (%s), over the bound of %d", s.MemoryPages, memoriesOf(s.Memories), maxPages)
	}
	if needMax && (s.MemoryUnbounded || s.MemoryMaxPages > maxPages) {
		return refusal.New(refusal.ResourceExceeded, "here a module's memories must declare a maximum, of at most %d pages (%d KiB) together, and this one's (%s) do not", maxPages, maxPages*PageBytes>>10, memoriesOf(s.Memories))
	}
	if s.TableUnbounded {
		return refusal.New(refusal.ResourceExceeded, "the module has a table without a maximum, which table.grow could take without bound; declare one of at most %d elements", MaxTableElements)
	}
	if s.TableElements > MaxTableElements {
		return refusal.New(refusal.ResourceExceeded, "the module's tables may hold %d elements together, over the bound of %d", s.TableElements, MaxTableElements)
	}
	return nil
}

func memoriesOf(n uint64) string {
	if n == 1 {
		return "one memory"
	}
	return textf.Sprintf("%d memories, imported and defined, together", n)
}

// CheckBytes is the check of a module's bytes that needs no compiler: wasm-invalid when they are
// not framed as a module (Scan), resource-exceeded when CheckResources refuses its shape. It
// returns the shape for the checks that follow.
func CheckBytes(module []byte, maxPages uint64, needMax bool) (Shape, error) {
	s, err := Scan(module)
	if err != nil {
		return s, refusal.New(refusal.WasmInvalid, "the module is not a valid WebAssembly binary: %s", err)
	}
	return s, CheckResources(s, maxPages, needMax)
}

// CheckExports is the export half of the unsupported-abi check: the memory exported as "memory",
// and spec's export a function that takes one i32 per input and returns one i32 or nothing.
func (l Layout) CheckExports(s Shape, export string) error {
	if e, ok := s.Exports["memory"]; !ok || e.Kind != KindMemory {
		return refusal.New(refusal.UnsupportedABI, "the module does not export its memory as \"memory\", which %s needs", l.ABI)
	}
	sig, ok := s.Signature(export)
	if !ok {
		return refusal.New(refusal.UnsupportedABI, "the module exports no function %q", export)
	}
	good := len(sig.Params) == l.Params() && len(sig.Results) <= 1
	for _, t := range slices.Concat(sig.Params, sig.Results) {
		good = good && t == ValI32
	}
	if !good {
		return refusal.New(refusal.UnsupportedABI, "the export %q must take %d i32 (the input lengths) and return one i32 or nothing, as %s calls it", export, l.Params(), l.ABI)
	}
	return nil
}

// The host's bounds of a run, the same wherever it runs. No descriptor or manifest can raise
// them: the digest binds a module's bytes, never what they do.
const (
	// Deadline bounds one call's wall clock, starting the module included; past it the run is
	// stopped (the page terminates its Worker) and the call refused time-exceeded.
	Deadline = 5 * time.Second
	// MaxMemoryPages bounds a module's memory: 64 pages of 64 KiB, 4 MiB (a buffer-abi/diff
	// module needs 7 for its buffers, and room to work in).
	MaxMemoryPages = 64
	// MaxPageModuleBytes bounds a module sent to the page to run: with its inputs it must fit
	// one /channel frame (wire.MaxFrameBytes) once base64-encoded.
	MaxPageModuleBytes = 512 << 10
)
