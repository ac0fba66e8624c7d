package wasmabi

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// section frames one section of a module.
func section(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }

// module is the header and the sections.
func module(sections ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s...)
	}
	return b
}

func TestScan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mod  []byte
		want Shape
		bad  bool
	}{
		{"empty module", module(), Shape{}, false},
		{"memory 1 to 2", module(section(5, 1, 1, 1, 2)), Shape{Memory: true, MinPages: 1, MaxPages: 2, HasMax: true, Memories: 1, MemoryPages: 1, MemoryMaxPages: 2}, false},
		{"memory 8, no maximum", module(section(5, 1, 0, 8)), Shape{Memory: true, MinPages: 8, Memories: 1, MemoryPages: 8, MemoryMaxPages: 8, MemoryUnbounded: true}, false},
		{"three memories", module(section(5, 3, 1, 1, 1, 1, 0, 9, 0, 2)), Shape{Memory: true, MinPages: 1, MaxPages: 1, HasMax: true, Memories: 3, MemoryPages: 3, MemoryMaxPages: 12, MemoryUnbounded: true}, false},
		{"an imported memory and a defined one", module(section(2, 1, 1, 'e', 1, 'm', 2, 1, 5, 6), section(5, 1, 1, 1, 1)),
			Shape{Imports: 1, FirstImport: "e.m", Memory: true, MinPages: 1, MaxPages: 1, HasMax: true, Memories: 2, MemoryPages: 6, MemoryMaxPages: 7}, false},
		{"memories whose sizes overflow", module(section(5, 2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1)),
			Shape{Memory: true, MinPages: 1<<64 - 1, Memories: 2, MemoryPages: 1<<64 - 1, MemoryMaxPages: 1<<64 - 1, MemoryUnbounded: true}, false},
		{"an import", module(section(2, 1, 3, 'e', 'n', 'v', 4, 'l', 'e', 'a', 'k', 0, 0)), Shape{Imports: 1, FirstImport: "env.leak"}, false},
		{"a table without a maximum", module(section(4, 1, 0x70, 0, 4)), Shape{TableElements: 4, TableUnbounded: true}, false},
		{"a table of at most 9", module(section(4, 1, 0x70, 1, 1, 9)), Shape{TableElements: 9}, false},
		{"an imported table and a defined one", module(section(2, 1, 1, 'e', 1, 't', 1, 0x70, 1, 0, 7), section(4, 1, 0x70, 1, 1, 9)),
			Shape{Imports: 1, FirstImport: "e.t", TableElements: 16}, false},
		{"no magic", []byte("\x00asn\x01\x00\x00\x00"), Shape{}, true},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00"), Shape{}, true},
		{"a section longer than the module", append(module(), 5, 9, 1), Shape{}, true},
		{"a 70-bit integer", module(section(5, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1)), Shape{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Scan(c.mod)
			if c.bad {
				if err == nil {
					t.Fatalf("Scan = %+v, want an error", got)
				}
				return
			}
			got.Exports, got.types, got.funcTypes, got.importedFuncs = nil, nil, nil, 0
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Scan = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// runModule is a module with one type (i32) -> i32, one function of it exported as "run", and
// an exported memory of one page.
var runModule = module(
	section(1, 1, 0x60, 1, ValI32, 1, ValI32),
	section(3, 1, 0),
	section(5, 1, 0, 1),
	section(7, 2, 3, 'r', 'u', 'n', KindFunc, 0, 6, 'm', 'e', 'm', 'o', 'r', 'y', KindMemory, 0),
	section(10, 1, 4, 0, 0x20, 0, 0x0b),
)

func TestCheckResourcesCountsEveryMemoryAndTable(t *testing.T) {
	t.Parallel()
	// memories: a module whose memory section holds one memory of limits per entry.
	memories := func(limits ...byte) []byte {
		return module(section(5, append([]byte{byte(len(limits) / 3)}, limits...)...))
	}
	cases := []struct {
		name    string
		mod     []byte
		needMax bool
		want    refusal.Rule
		why     string
	}{
		{"one memory at the bound", memories(1, 64, 64), true, "", ""},
		{"one memory past it", memories(1, 65, 65), false, refusal.ResourceExceeded, "65 memory pages (one memory)"},
		{"a small first memory and big others", memories(1, 1, 1, 1, 40, 40, 1, 40, 40), false, refusal.ResourceExceeded, "81 memory pages (3 memories"},
		{"memories at the bound together", memories(1, 1, 1, 1, 63, 63), true, "", ""},
		{"maxima past the bound together, where growth cannot be stopped", memories(1, 1, 1, 1, 0, 64), true, refusal.ResourceExceeded, "maximum"},
		{"the same where it can", memories(1, 1, 1, 1, 0, 64), false, "", ""},
		{"a second memory without a maximum", memories(1, 1, 1, 0, 0, 0), true, refusal.ResourceExceeded, "maximum"},
		{"an imported memory past the bound", module(section(2, 1, 1, 'e', 1, 'm', 2, 0, 65)), false, refusal.ResourceExceeded, "65 memory pages"},
		{"an imported table without a maximum", module(section(2, 1, 1, 'e', 1, 't', 1, 0x70, 0, 0)), false, refusal.ResourceExceeded, "without a maximum"},
		{"tables past the bound together", module(section(4, 2, 0x70, 1, 0, 0x80, 0x80, 4, 0x70, 1, 0, 1)), false, refusal.ResourceExceeded, "65537 elements"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := CheckBytes(c.mod, MaxMemoryPages, c.needMax)
			if refusal.RuleOf(err) != c.want || c.want != "" && !strings.Contains(err.Error(), c.why) {
				t.Fatalf("CheckBytes = %v, want %q (%q)", err, c.want, c.why)
			}
		})
	}
	if _, err := CheckBytes([]byte("not wasm"), MaxMemoryPages, false); refusal.RuleOf(err) != refusal.WasmInvalid {
		t.Fatalf("not a module: %v", err)
	}
}

func TestScanReadsExportsAndSignatures(t *testing.T) {
	t.Parallel()
	before := bytes.Clone(runModule)
	s, err := Scan(runModule)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if !bytes.Equal(runModule, before) {
			t.Fatal("reading the shape changed the module's bytes")
		}
	}()
	sig, ok := s.Signature("run")
	if !ok || !bytes.Equal(sig.Params, []byte{ValI32}) || !bytes.Equal(sig.Results, []byte{ValI32}) {
		t.Fatalf("run: %+v %v", sig, ok)
	}
	if _, ok := s.Signature("memory"); ok {
		t.Fatal("a memory has a signature")
	}
	one, _ := LayoutOf(ABI1)
	diff, _ := LayoutOf(ABIDiff)
	if err := one.CheckExports(s, "run"); err != nil {
		t.Fatalf("buffer-abi/1 run: %v", err)
	}
	for name, err := range map[string]error{
		"two inputs for one":  diff.CheckExports(s, "run"),
		"no such export":      one.CheckExports(s, "nope"),
		"the memory unnamed":  one.CheckExports(Shape{Exports: map[string]Export{}}, "run"),
		"a memory as the run": one.CheckExports(s, "memory"),
	} {
		if refusal.RuleOf(err) != refusal.UnsupportedABI {
			t.Errorf("%s: %v, want unsupported-abi", name, err)
		}
	}
}

func TestScanNeverPanicsOnATruncation(t *testing.T) {
	t.Parallel()
	good := module(section(2, 1, 3, 'e', 'n', 'v', 4, 'l', 'e', 'a', 'k', 0, 0), section(5, 1, 1, 1, 2))
	for n := range len(good) {
		Scan(good[:n])
	}
	if _, err := Scan(good[:len(good)-1]); err == nil {
		t.Fatal("a truncated module scanned clean")
	}
}

func FuzzScan(f *testing.F) {
	f.Add(module(section(5, 1, 1, 1, 2)))
	f.Add(module(section(2, 1, 3, 'e', 'n', 'v', 4, 'l', 'e', 'a', 'k', 0, 0)))
	f.Add(runModule)
	f.Add(module(section(5, 3, 1, 1, 1, 1, 0, 9, 0, 2)))
	f.Add(module(section(2, 1, 1, 'e', 1, 't', 1, 0x70, 1, 0, 7), section(4, 1, 0x70, 1, 1, 9)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Scan(b)
		if err == nil {
			for name := range s.Exports {
				s.Signature(name)
			}
			if s.Memory && (s.Memories == 0 || s.MemoryPages < s.MinPages) {
				t.Fatalf("the first memory is not counted: %+v", s)
			}
			if CheckResources(s, MaxMemoryPages, true) == nil && (s.MemoryUnbounded || s.MemoryMaxPages > MaxMemoryPages || s.MemoryPages > MaxMemoryPages) {
				t.Fatalf("memories past the bound passed: %+v", s)
			}
		}
	})
}

func TestLayouts(t *testing.T) {
	t.Parallel()
	one, ok := LayoutOf("")
	if !ok || one.ABI != ABI1 || one.Params() != 1 || one.MemoryBytes() != OutputOffset+MaxOutputBytes {
		t.Fatalf("buffer-abi/1: %+v", one)
	}
	diff, ok := LayoutOf(ABIDiff)
	if !ok || diff.Params() != 2 || diff.MemoryBytes() != DiffOutputOffset+DiffMaxOutputBytes {
		t.Fatalf("buffer-abi/diff: %+v", diff)
	}
	if _, ok := LayoutOf("wasi"); ok {
		t.Fatal("an ABI nobody drives has a layout")
	}
	// The buffers of one layout never overlap, so writing one input never spoils another.
	for _, l := range []Layout{one, diff} {
		all := append([]Buffer{l.Output}, l.Inputs...)
		for i := range all {
			for j := i + 1; j < len(all); j++ {
				if uint64(all[i].Offset) < all[j].End() && uint64(all[j].Offset) < all[i].End() {
					t.Errorf("%s: buffers %d and %d overlap", l.ABI, i, j)
				}
			}
		}
	}
}

func TestCheckInputs(t *testing.T) {
	t.Parallel()
	one, _ := LayoutOf(ABI1)
	diff, _ := LayoutOf(ABIDiff)
	cases := []struct {
		name   string
		l      Layout
		inputs [][]byte
		want   refusal.Rule
	}{
		{"one input at the bound", one, [][]byte{make([]byte, MaxInputBytes)}, ""},
		{"one input past it", one, [][]byte{make([]byte, MaxInputBytes+1)}, refusal.OverBudget},
		{"two texts at the bound", diff, [][]byte{make([]byte, DiffMaxInputBytes), nil}, ""},
		{"text B past it", diff, [][]byte{nil, make([]byte, DiffMaxInputBytes+1)}, refusal.OverBudget},
		{"one input for two", diff, [][]byte{nil}, refusal.InvalidArgument},
	}
	for _, c := range cases {
		if got := refusal.RuleOf(c.l.CheckInputs(c.inputs)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// block encodes one diff block.
func block(op byte, al, ac, bl, bc uint32) []byte {
	b := []byte{op}
	for _, v := range []uint32{al, ac, bl, bc} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func TestDecodeDiff(t *testing.T) {
	t.Parallel()
	out := bytes.Join([][]byte{block(0, 0, 2, 0, 2), block(1, 2, 1, 2, 0), block(2, 3, 0, 2, 3), block(255, 0, 0, 0, 0), block(7, 0, 0, 0, 0)}, nil)
	blocks, truncated, err := DecodeDiff(out, 10)
	if err != nil || truncated || len(blocks) != 3 {
		t.Fatalf("DecodeDiff = %v, %v, %v", blocks, truncated, err)
	}
	if blocks[1] != (Block{Op: "delete", ALine: 2, ACount: 1, BLine: 2}) || blocks[2].Op != "insert" || blocks[2].BCount != 3 {
		t.Fatalf("blocks = %+v", blocks)
	}
	if blocks, truncated, _ := DecodeDiff(out, 2); !truncated || len(blocks) != 2 {
		t.Fatalf("at most 2: %v, %v", blocks, truncated)
	}
	if _, _, err := DecodeDiff(block(9, 0, 0, 0, 0), 10); refusal.RuleOf(err) != refusal.DiffFailed {
		t.Fatalf("an unknown operation: %v", err)
	}
	if blocks, _, err := DecodeDiff(out[:DiffBlockBytes+5], 10); err != nil || len(blocks) != 1 {
		t.Fatalf("a partial block is not read: %v, %v", blocks, err)
	}
}

func FuzzDecodeDiff(f *testing.F) {
	f.Add(block(0, 0, 2, 0, 2))
	f.Add(append(block(1, 0, 1, 0, 0), block(255, 0, 0, 0, 0)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		blocks, _, err := DecodeDiff(b, MaxDiffBlocks)
		if err == nil && len(blocks) > len(b)/DiffBlockBytes {
			t.Fatalf("%d blocks from %d bytes", len(blocks), len(b))
		}
	})
}

func TestResult(t *testing.T) {
	t.Parallel()
	one, _ := LayoutOf(ABI1)
	diff, _ := LayoutOf(ABIDiff)
	answer := append([]byte("cbf43926"), make([]byte, MaxOutputBytes-8)...)
	if o, err := one.Result(8, true, answer); err != nil || o.Text == nil || *o.Text != "cbf43926" || o.Hex != "6362663433393236" {
		t.Fatalf("an 8-byte answer: %+v, %v", o, err)
	}
	if o, err := one.Result(0, false, answer); err != nil || o.Bytes != MaxOutputBytes {
		t.Fatalf("no result means the whole buffer: %+v, %v", o, err)
	}
	if _, err := one.Result(33, true, answer); refusal.RuleOf(err) != refusal.OverBudget {
		t.Fatalf("33 bytes: %v", err)
	}
	if _, err := one.Result(0xffffffff, true, answer); refusal.RuleOf(err) != refusal.OverBudget {
		t.Fatalf("-1 (the original's answer to a long input): %v", err)
	}
	blocks := block(0, 0, 1, 0, 1)
	if o, err := diff.Result(int64(len(blocks)), true, blocks); err != nil || len(o.Blocks) != 1 {
		t.Fatalf("a diff: %+v, %v", o, err)
	}
	for _, c := range []struct {
		name string
		ret  int64
		has  bool
	}{{"negative", -1, true}, {"as uint32", 0xffffffff, true}, {"no result", 0, false}, {"past the buffer", DiffMaxOutputBytes + 1, true}} {
		if _, err := diff.Result(c.ret, c.has, blocks); refusal.RuleOf(err) != refusal.DiffFailed {
			t.Errorf("%s: %v, want diff-failed", c.name, err)
		}
	}
}

func TestMismatchNamesBothPrefixes(t *testing.T) {
	t.Parallel()
	why := MismatchWhy("the module", strings.Repeat("a", 64), strings.Repeat("b", 64))
	if !strings.Contains(why, strings.Repeat("a", DigestPrefix)+"...") || !strings.Contains(why, strings.Repeat("b", DigestPrefix)+"...") || strings.Contains(why, strings.Repeat("a", DigestPrefix+1)) {
		t.Fatalf("why = %q", why)
	}
}
