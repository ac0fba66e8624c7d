package wasmshelf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmtool"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// sampleDir is the sample shelf that ships in catalogue/shelf.
var sampleDir = filepath.Join("..", "..", "..", "..", "catalogue", "shelf")

func sampleTool(t testing.TB, id string) (*Tool, []byte) {
	t.Helper()
	s := Read(sampleDir, wasmtool.DefaultMaxModuleBytes)
	tool := s.Find(id)
	if !s.OK || tool == nil || !tool.Offered {
		t.Fatalf("the sample shelf: %+v", s)
	}
	b, err := ReadModule(sampleDir, tool, wasmtool.DefaultMaxModuleBytes)
	if err != nil {
		t.Fatal(err)
	}
	return tool, b
}

func runner(t testing.TB) *wasmtool.Runner {
	r := wasmtool.New(wasmtool.Limits{})
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func call(t testing.TB, r *wasmtool.Runner, tool *Tool, module []byte, inputs ...[]byte) (*wasmabi.Output, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	return r.Call(ctx, module, tool.WasmTool(), inputs)
}

// TestTheSampleShelf: both of the sample shelf's tools are admitted and offered, driven as the
// original drives them.
func TestTheSampleShelf(t *testing.T) {
	t.Parallel()
	s := Read(sampleDir, wasmtool.DefaultMaxModuleBytes)
	if !s.OK || len(s.Tools) != 2 {
		t.Fatalf("the sample shelf: %+v", s)
	}
	for _, want := range []Tool{{ID: "hash", ABI: wasmabi.ABI1, Export: "sha256"}, {ID: "diff", ABI: wasmabi.ABIDiff, Export: "diff"}} {
		got := s.Find(want.ID)
		if got == nil || !got.Admitted || !got.Offered || got.ABI != want.ABI || got.Export != want.Export || got.Extension() != "wasm-shelf-"+want.ID {
			t.Errorf("%s: %+v", want.ID, got)
		}
	}
}

// TestHashIsSHA256 holds the hash module to crypto/sha256, on every padding boundary and random
// inputs up to the ABI's bound; "abc" is the original's known answer.
func TestHashIsSHA256(t *testing.T) {
	t.Parallel()
	tool, m := sampleTool(t, "hash")
	r := runner(t)
	out, err := call(t, r, tool, m, []byte("abc"))
	if err != nil || out.Hex != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("sha256(abc) = %+v, %v", out, err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1024, wasmabi.MaxInputBytes - 1, wasmabi.MaxInputBytes}
	for range 40 {
		sizes = append(sizes, rng.IntN(wasmabi.MaxInputBytes+1))
	}
	for _, n := range sizes {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(rng.Uint32())
		}
		want := sha256.Sum256(in)
		out, err := call(t, r, tool, m, in)
		if err != nil || out.Hex != hex.EncodeToString(want[:]) || out.Returned != 32 {
			t.Fatalf("sha256 of %d bytes = %+v, %v; want %x", n, out, err, want)
		}
	}
	if _, err := call(t, r, tool, m, make([]byte, wasmabi.MaxInputBytes+1)); refusal.RuleOf(err) != refusal.OverBudget {
		t.Fatalf("8193 bytes: %v", err)
	}
}

// lines splits a text as the diff module does: at "\n", a last line without one included.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// lcs is the length of a longest common subsequence of a and b.
func lcs(a, b []string) int {
	row := make([]int, len(b)+1)
	for i := range a {
		prev := 0
		for j := range b {
			cur := row[j+1]
			if a[i] == b[j] {
				row[j+1] = prev + 1
			} else if row[j] > row[j+1] {
				row[j+1] = row[j]
			}
			prev = cur
		}
	}
	return row[len(b)]
}

// checkDiff holds blocks to being a diff of a and b: in order, covering both texts, equal blocks
// equal, and as many equal lines as a longest common subsequence (a minimal diff).
func checkDiff(t *testing.T, a, b string, blocks []wasmabi.Block) {
	t.Helper()
	la, lb := lines(a), lines(b)
	ai, bi, equal := uint32(0), uint32(0), 0
	for k, blk := range blocks {
		if blk.ALine != ai || blk.BLine != bi {
			t.Fatalf("block %d %+v starts at (%d, %d), not where the last ended (%d, %d)", k, blk, blk.ALine, blk.BLine, ai, bi)
		}
		switch blk.Op {
		case "equal":
			if blk.ACount != blk.BCount {
				t.Fatalf("block %d: an equal block of unequal counts %+v", k, blk)
			}
			for i := range blk.ACount {
				if la[ai+i] != lb[bi+i] {
					t.Fatalf("block %d: %q is not %q", k, la[ai+i], lb[bi+i])
				}
			}
			equal += int(blk.ACount)
		case "delete":
			if blk.BCount != 0 {
				t.Fatalf("block %d: %+v", k, blk)
			}
		case "insert":
			if blk.ACount != 0 {
				t.Fatalf("block %d: %+v", k, blk)
			}
		}
		if k > 0 && blocks[k-1].Op == blk.Op {
			t.Fatalf("blocks %d and %d are of one operation and were not joined", k-1, k)
		}
		ai, bi = ai+blk.ACount, bi+blk.BCount
	}
	if int(ai) != len(la) || int(bi) != len(lb) {
		t.Fatalf("the blocks cover (%d, %d) lines of (%d, %d)", ai, bi, len(la), len(lb))
	}
	if want := lcs(la, lb); equal != want {
		t.Fatalf("%d equal lines, but the texts have %d in common: not minimal", equal, want)
	}
}

func TestDiffIsAMinimalLineDiff(t *testing.T) {
	t.Parallel()
	tool, m := sampleTool(t, "diff")
	r := runner(t)
	cases := []struct{ a, b string }{
		{"", ""},
		{"", "one\ntwo\n"},
		{"one\ntwo\n", ""},
		{"same\ntext\n", "same\ntext\n"},
		{"a\nb\nc\n", "a\nc\n"},
		{"a\nc\n", "a\nb\nc\n"},
		{"a\nb\nc", "a\nB\nc"},
		{"no newline at the end", "no newline at the end\n"},
		{"x\ny\nz\n", "p\nq\n"},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 60 {
		gen := func() string {
			var sb strings.Builder
			for range rng.IntN(40) {
				fmt.Fprintf(&sb, "line %d\n", rng.IntN(8))
			}
			return sb.String()
		}
		cases = append(cases, struct{ a, b string }{gen(), gen()})
	}
	for _, c := range cases {
		out, err := call(t, r, tool, m, []byte(c.a), []byte(c.b))
		if err != nil {
			t.Fatalf("diff(%q, %q): %v", c.a, c.b, err)
		}
		checkDiff(t, c.a, c.b, out.Blocks)
	}
	if _, err := call(t, r, tool, m, make([]byte, wasmabi.DiffMaxInputBytes+1), nil); refusal.RuleOf(err) != refusal.OverBudget {
		t.Fatalf("a text over 65536 bytes: %v", err)
	}
}

// TestDiffOfTwo64KiBTexts: the benchmark's inputs, two texts of 64 KiB in lines of prose with
// edits spread through them.
//
// The relay's budget for a call is wall-clock time (wasmtool.Limits.Timeout, 5 s), and its own
// tests hold it; this one checks the diff's output, so its runner's budget is a minute: the
// module needs about 0.1 s of CPU (0.8 s under -race), which a machine at a load of 40 on two
// cores stretches past 5 s of wall clock.
func TestDiffOfTwo64KiBTexts(t *testing.T) {
	t.Parallel()
	tool, m := sampleTool(t, "diff")
	a, b := wasmabitest.BigTexts()
	r := wasmtool.New(wasmtool.Limits{Timeout: time.Minute})
	t.Cleanup(func() { r.Close(context.Background()) })
	out, err := call(t, r, tool, m, a, b)
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(t, string(a), string(b), out.Blocks)
}

// shelfWith writes a shelf of the sample's modules and manifest into a new directory.
func shelfWith(t *testing.T, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"hash.wasm", "diff.wasm"} {
		b, _ := os.ReadFile(filepath.Join(sampleDir, name))
		os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	if manifest != "" {
		os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o600)
	}
	return dir
}

func digestOf(t *testing.T, name string) string {
	b, _ := os.ReadFile(filepath.Join(sampleDir, name))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestShelfRefusals(t *testing.T) {
	t.Parallel()
	hashDigest := digestOf(t, "hash.wasm")
	entry := func(fields string) string { return `{"tools":[{` + fields + `}]}` }
	for _, c := range []struct {
		name, manifest string
		shelf, tool    refusal.Rule
	}{
		{"no manifest", "", refusal.ShelfUnavailable, ""},
		{"not JSON", "{tools:", refusal.ShelfUnreadable, ""},
		{"an unknown field", `{"tools":[],"grant":"all"}`, refusal.ShelfUnreadable, ""},
		{"too large", `{"tools":[],"name":"` + strings.Repeat("x", MaxManifestBytes) + `"}`, refusal.ShelfUnreadable, ""},
		{"no module", entry(`"id":"hash","digest":"` + hashDigest + `"`), "", refusal.WasmUnreadable},
		{"a missing module", entry(`"id":"hash","wasm":"gone.wasm","digest":"` + hashDigest + `"`), "", refusal.WasmUnreadable},
		{"a module outside the shelf", entry(`"id":"hash","wasm":"../hash.wasm","digest":"` + hashDigest + `"`), "", refusal.WasmUnreadable},
		{"another module's digest", entry(`"id":"hash","wasm":"diff.wasm","digest":"` + hashDigest + `"`), "", refusal.DigestMismatch},
		{"an ABI nobody drives", entry(`"id":"hash","wasm":"hash.wasm","digest":"` + hashDigest + `","abi":"wasi"`), "", refusal.UnsupportedABI},
		{"an id that names no tool", entry(`"id":"Hash!","wasm":"hash.wasm","digest":"` + hashDigest + `"`), "", refusal.BadDescriptor},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := Read(shelfWith(t, c.manifest), wasmtool.DefaultMaxModuleBytes)
			if s.Refused != c.shelf || (c.shelf != "") == s.OK || c.shelf != "" && s.Why == "" {
				t.Fatalf("shelf %+v, want %q", s, c.shelf)
			}
			if c.tool != "" && (len(s.Tools) != 1 || s.Tools[0].Refused != c.tool || s.Tools[0].Admitted || s.Tools[0].Offered || s.Tools[0].Why == "") {
				t.Fatalf("tools %+v, want %s", s.Tools, c.tool)
			}
		})
	}
	t.Run("the digest-mismatch names both prefixes", func(t *testing.T) {
		s := Read(shelfWith(t, entry(`"id":"hash","wasm":"diff.wasm","digest":"`+hashDigest+`"`)), wasmtool.DefaultMaxModuleBytes)
		why := s.Tools[0].Why
		if !strings.Contains(why, digestOf(t, "diff.wasm")[:wasmabi.DigestPrefix]) || !strings.Contains(why, hashDigest[:wasmabi.DigestPrefix]) {
			t.Fatalf("why = %q", why)
		}
	})
	t.Run("an undriven tool is admitted, not offered", func(t *testing.T) {
		s := Read(shelfWith(t, entry(`"id":"mystery","wasm":"hash.wasm","digest":"`+hashDigest+`"`)), wasmtool.DefaultMaxModuleBytes)
		if tool := s.Tools[0]; !tool.Admitted || tool.Offered || tool.Note == "" {
			t.Fatalf("%+v", tool)
		}
		s = Read(shelfWith(t, entry(`"id":"mystery","wasm":"hash.wasm","digest":"`+hashDigest+`","export":"sha256"`)), wasmtool.DefaultMaxModuleBytes)
		if tool := s.Tools[0]; !tool.Offered || tool.ABI != wasmabi.ABI1 {
			t.Fatalf("with its export: %+v", tool)
		}
	})
	t.Run("one id twice", func(t *testing.T) {
		s := Read(shelfWith(t, `{"tools":[{"id":"hash","wasm":"hash.wasm","digest":"`+hashDigest+`"},{"id":"hash","wasm":"hash.wasm","digest":"`+hashDigest+`"}]}`), wasmtool.DefaultMaxModuleBytes)
		if !s.Tools[0].Offered || s.Tools[1].Refused != refusal.BadDescriptor {
			t.Fatalf("%+v", s.Tools)
		}
	})
	t.Run("a module whose memories pass the bound together is not admitted, nor run", func(t *testing.T) {
		dir := shelfWith(t, "")
		multi := wasmabitest.MultiMemory(wasmabitest.Memory{Min: 40, Max: 40}, wasmabitest.Memory{Min: 40, Max: 40})
		os.WriteFile(filepath.Join(dir, "multi.wasm"), multi, 0o600)
		sum := sha256.Sum256(multi)
		os.WriteFile(filepath.Join(dir, ManifestFile), []byte(entry(`"id":"multi","wasm":"multi.wasm","digest":"`+hex.EncodeToString(sum[:])+`","export":"run"`)), 0o600)
		s := Read(dir, wasmtool.DefaultMaxModuleBytes)
		if tool := s.Tools[0]; tool.Admitted || tool.Offered || tool.Refused != refusal.ResourceExceeded || !strings.Contains(tool.Why, "81 memory pages (3 memories") {
			t.Fatalf("%+v", tool)
		}
		if _, err := ReadModule(dir, &s.Tools[0], wasmtool.DefaultMaxModuleBytes); refusal.RuleOf(err) != refusal.ResourceExceeded {
			t.Fatalf("a call's read: %v", err)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		if s := Read(filepath.Join(t.TempDir(), "none"), 1<<20); s.Refused != refusal.ShelfUnavailable {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("a FIFO for a manifest", func(t *testing.T) {
		dir := shelfWith(t, "")
		if err := syscall.Mkfifo(filepath.Join(dir, ManifestFile), 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		if s := Read(dir, 1<<20); s.Refused != refusal.ShelfUnreadable {
			t.Fatalf("%+v", s)
		}
	})
}

func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"tools":[{"id":"hash","wasm":"hash.wasm","digest":"00"}]}`))
	f.Add([]byte(`{"name":"x","tools":[{"id":"diff","wasm":"diff.wasm","digest":"00","abi":"buffer-abi/diff"}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > MaxManifestBytes {
			return
		}
		os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o600)
		s := Manifest(dir)
		if s.OK == (s.Refused != "") || len(s.Tools) > MaxTools {
			t.Fatalf("%+v", s)
		}
		for _, tool := range s.Tools {
			if tool.Refused == "" && tool.ID == "" {
				t.Fatalf("a tool without an id passed: %+v", tool)
			}
		}
	})
}
