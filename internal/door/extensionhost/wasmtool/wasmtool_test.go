package wasmtool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

//go:embed testdata/*.wasm
var fixtures embed.FS

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := fixtures.ReadFile("testdata/" + name + ".wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sample(t testing.TB) []byte {
	t.Helper()
	b, err := fs.ReadFile(catalogue.Files, "wasm/text-tools.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pin(module []byte, export string) extensions.WasmTool {
	sum := sha256.Sum256(module)
	return extensions.WasmTool{Module: "m.wasm", SHA256: hex.EncodeToString(sum[:]), Export: export, ABI: wasmabi.ABI1}
}

func call(t testing.TB, r *Runner, module []byte, export string, input []byte) (*wasmabi.Output, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	return r.Call(ctx, module, pin(module, export), [][]byte{input})
}

// run calls and returns the output as text.
func run(t testing.TB, r *Runner, module []byte, export string, input []byte) string {
	t.Helper()
	out, err := call(t, r, module, export, input)
	return text(t, out, err)
}

func text(t testing.TB, out *wasmabi.Output, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("call refused: %v", err)
	}
	if out.Text == nil {
		t.Fatalf("output %s is not text", out.Hex)
	}
	return *out.Text
}

func TestSampleKnownAnswers(t *testing.T) {
	t.Parallel()
	r := New(Limits{})
	defer r.Close(context.Background())
	m := sample(t)
	for _, c := range []struct{ export, input, want string }{
		{"crc32", "123456789", "cbf43926"},
		{"crc32", "", "00000000"},
		{"crc32", "The quick brown fox jumps over the lazy dog", "414fa339"},
		{"word_count", "", "0 0 0"},
		{"word_count", "hello world\nsecond line\n", "2 4 24"},
		{"word_count", "  héllo\twörld  ", "0 2 15"},
		{"word_count", strings.Repeat("a ", 4096), "0 4096 8192"},
	} {
		if got := run(t, r, m, c.export, []byte(c.input)); got != c.want {
			t.Errorf("%s(%q) = %q, want %q", c.export, c.input, got, c.want)
		}
	}
}

// wc is the reference word_count: newline bytes, runs of non-space bytes, UTF-8 code points.
func wc(b []byte) string {
	words := len(bytes.FieldsFunc(b, func(r rune) bool { return r == ' ' || r >= '\t' && r <= '\r' }))
	chars := 0
	for _, c := range b {
		if c&0xc0 != 0x80 {
			chars++
		}
	}
	return fmt.Sprintf("%d %d %d", bytes.Count(b, []byte("\n")), words, chars)
}

// TestSampleAgreesWithGo holds the sample to hash/crc32 and a reference count on random inputs.
func TestSampleAgreesWithGo(t *testing.T) {
	t.Parallel()
	r := New(Limits{})
	defer r.Close(context.Background())
	m := sample(t)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \t\n\r\v\fé\xe2\x82\xac.")
	for i := range 200 {
		in := make([]byte, rng.IntN(wasmabi.MaxInputBytes+1))
		for j := range in {
			if i%2 == 0 {
				in[j] = byte(rng.Uint32())
			} else {
				in[j] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		if got, want := run(t, r, m, "crc32", in), fmt.Sprintf("%08x", crc32.ChecksumIEEE(in)); got != want {
			t.Fatalf("crc32 of %d bytes = %s, want %s", len(in), got, want)
		}
		if got, want := run(t, r, m, "word_count", in), wc(in); got != want {
			t.Fatalf("word_count of %q = %s, want %s", in, got, want)
		}
	}
}

// TestHostileModulesAreStoppedAndTheNextCallRuns runs every hostile fixture on one runner, and
// after each one a well-behaved call on the same runner.
func TestHostileModulesAreStoppedAndTheNextCallRuns(t *testing.T) {
	t.Parallel()
	r := New(Limits{Timeout: 2 * time.Second})
	defer r.Close(context.Background())
	good := fixture(t, "echo")
	for _, c := range []struct {
		name string
		want refusal.Rule
	}{
		{"loop", refusal.TimeExceeded},
		{"startloop", refusal.TimeExceeded},
		{"grow", refusal.ResourceExceeded},
		{"bigmem", refusal.ResourceExceeded},
		{"tablegrow", refusal.ResourceExceeded},
		{"bigtable", refusal.ResourceExceeded},
		{"trap", refusal.WasmTrapped},
		{"import", refusal.ImportUndeclared},
		{"overflow", refusal.OverBudget},
		{"nomemory", refusal.UnsupportedABI},
		{"signature", refusal.UnsupportedABI},
		{"garbage", refusal.WasmInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := call(t, r, fixture(t, c.name), "run", []byte("x"))
			if refusal.RuleOf(err) != c.want {
				t.Fatalf("got %+v, %v; want %s", out, err, c.want)
			}
			if r, _ := refusal.As(err); r.Why == "" {
				t.Fatal("a refusal must say why")
			}
			if got := run(t, r, good, "run", []byte("still answering")); got != "still answering" {
				t.Fatalf("the next call answered %q", got)
			}
		})
	}
}

// TestMultiMemoryModulesAreRefused: memories past the bound together are refused
// resource-exceeded before anything compiles them, however small the first one is; within the
// bound, wazero (which does not run the multi-memory proposal) refuses to compile them.
func TestMultiMemoryModulesAreRefused(t *testing.T) {
	t.Parallel()
	r := New(Limits{})
	defer r.Close(context.Background())
	good := fixture(t, "echo")
	for _, c := range []struct {
		name  string
		extra []wasmabitest.Memory
		want  refusal.Rule
	}{
		{"eight of 4,096 pages behind one of one", slices.Repeat([]wasmabitest.Memory{{Min: 4096, Max: 4096}}, 8), refusal.ResourceExceeded},
		{"two of 40 pages", []wasmabitest.Memory{{Min: 40, Max: 40}, {Min: 40, Max: 40}}, refusal.ResourceExceeded},
		{"two of one page", []wasmabitest.Memory{{Min: 1, Max: 1}}, refusal.WasmInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := call(t, r, wasmabitest.MultiMemory(c.extra...), "run", []byte("x")); refusal.RuleOf(err) != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
			if got := run(t, r, good, "run", []byte("still answering")); got != "still answering" {
				t.Fatalf("the next call answered %q", got)
			}
		})
	}
}

// TestABoundedTableRuns: a table with a maximum within MaxTableElements is no reason to refuse a
// module; its indirect call runs.
func TestABoundedTableRuns(t *testing.T) {
	t.Parallel()
	r := New(Limits{})
	defer r.Close(context.Background())
	if got := run(t, r, fixture(t, "smalltable"), "run", []byte("through the table")); got != "through the table" {
		t.Fatalf("smalltable answered %q", got)
	}
}

// TestDefaultBoundStopsAnInfiniteLoop runs the loop under the real 5,000 ms bound.
func TestDefaultBoundStopsAnInfiniteLoop(t *testing.T) {
	t.Parallel()
	r := New(Limits{})
	defer r.Close(context.Background())
	if r.Limits().Timeout != 5000*time.Millisecond {
		t.Fatalf("default timeout %v", r.Limits().Timeout)
	}
	_, err := call(t, r, fixture(t, "loop"), "run", nil)
	if refusal.RuleOf(err) != refusal.TimeExceeded || !strings.Contains(err.Error(), "5000 ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestCallBounds(t *testing.T) {
	t.Parallel()
	r := New(Limits{})
	defer r.Close(context.Background())
	echo := fixture(t, "echo")
	t.Run("digest re-checked", func(t *testing.T) {
		tool := pin(echo, "run")
		tampered := append(bytes.Clone(echo), 0) // one byte more than the pinned module
		_, err := r.Call(context.Background(), tampered, tool, [][]byte{nil})
		if refusal.RuleOf(err) != refusal.DigestMismatch {
			t.Fatalf("err = %v", err)
		}
		sum := sha256.Sum256(tampered)
		if r, _ := refusal.As(err); !strings.Contains(r.Why, hex.EncodeToString(sum[:])[:16]) || !strings.Contains(r.Why, tool.SHA256[:16]) {
			t.Fatalf("a digest-mismatch names both digests' prefixes: %q", r.Why)
		}
	})
	t.Run("input at the bound", func(t *testing.T) {
		in := bytes.Repeat([]byte("z"), wasmabi.MaxInputBytes)
		if got := run(t, r, echo, "run", in); got != strings.Repeat("z", 32) {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("input over the bound", func(t *testing.T) {
		if _, err := call(t, r, echo, "run", make([]byte, wasmabi.MaxInputBytes+1)); refusal.RuleOf(err) != refusal.OverBudget {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no result reads 32 bytes", func(t *testing.T) {
		out, err := call(t, r, echo, "fill", []byte("q"))
		if got := text(t, out, err); got != strings.Repeat("q", 32) || out.Bytes != 32 {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("binary output is hex only", func(t *testing.T) {
		out, err := call(t, r, echo, "run", []byte{0xff, 0x00})
		if err != nil || out.Hex != "ff00" || out.Text != nil {
			t.Fatalf("got %+v, %v", out, err)
		}
	})
	t.Run("missing export", func(t *testing.T) {
		if _, err := call(t, r, echo, "nope", nil); refusal.RuleOf(err) != refusal.UnsupportedABI {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("module size", func(t *testing.T) {
		small := New(Limits{MaxModuleBytes: 64})
		defer small.Close(context.Background())
		if _, err := call(t, small, sample(t), "crc32", nil); refusal.RuleOf(err) != refusal.OverBudget {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unsupported abi", func(t *testing.T) {
		tool := pin(echo, "run")
		tool.ABI = "wasi"
		if _, err := r.Call(context.Background(), echo, tool, [][]byte{nil}); refusal.RuleOf(err) != refusal.UnsupportedABI {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestHammer: many goroutines share one runner, mixing traps and good calls.
func TestHammer(t *testing.T) {
	t.Parallel()
	r := New(Limits{})
	defer r.Close(context.Background())
	m, trap := sample(t), fixture(t, "trap")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 25 {
				in := []byte(fmt.Sprintf("goroutine %d call %d", g, i))
				if i%5 == 0 {
					if _, err := call(t, r, trap, "run", in); refusal.RuleOf(err) != refusal.WasmTrapped {
						errs <- fmt.Errorf("trap answered %v", err)
						return
					}
					continue
				}
				out, err := call(t, r, m, "crc32", in)
				if err != nil || out.Text == nil || *out.Text != fmt.Sprintf("%08x", crc32.ChecksumIEEE(in)) {
					errs <- fmt.Errorf("crc32(%q) = %+v, %v", in, out, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestReadModule(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, "wasm"), 0o700)
	os.WriteFile(filepath.Join(dir, "wasm", "m.wasm"), []byte("module"), 0o600)
	os.WriteFile(filepath.Join(dir, ".hidden.wasm"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(outside, "o.wasm"), []byte("outside"), 0o600)
	os.Symlink(filepath.Join(outside, "o.wasm"), filepath.Join(dir, "link.wasm"))
	os.WriteFile(filepath.Join(dir, "big.wasm"), make([]byte, 100), 0o600)
	if b, err := ReadModule(dir, "wasm/m.wasm", 64); err != nil || string(b) != "module" {
		t.Fatalf("read %q, %v", b, err)
	}
	for name, want := range map[string]refusal.Rule{
		"../o.wasm":     refusal.OutsideRoot,
		"/etc/passwd":   refusal.OutsideRoot,
		".hidden.wasm":  refusal.DotfileRefused,
		"link.wasm":     refusal.OutsideRoot,
		"missing.wasm":  refusal.WasmUnreadable,
		"wasm":          refusal.WasmUnreadable,
		"big.wasm":      refusal.OverBudget,
		"wasm/../m.x":   refusal.OutsideRoot,
		"":              refusal.OutsideRoot,
		"wasm//m.wasm":  refusal.OutsideRoot,
		"wasm/./m.wasm": refusal.OutsideRoot,
	} {
		if _, err := ReadModule(dir, name, 64); refusal.RuleOf(err) != want {
			t.Errorf("ReadModule(%q) = %v, want %s", name, err, want)
		}
	}
}

// TestCommittedModulesMatchTheirSource rebuilds every committed .wasm from its .wat with wabt's
// wat2wasm. build.sh installs it and sets VOICEBOX_REQUIRE_WAT2WASM, under which a missing
// wat2wasm fails the test; a bare `go test` without it skips.
func TestCommittedModulesMatchTheirSource(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		if os.Getenv("VOICEBOX_REQUIRE_WAT2WASM") != "" {
			t.Fatal("wat2wasm (Debian package wabt) is not on PATH, and build.sh requires it")
		}
		t.Skip("wat2wasm (Debian package wabt) is not installed")
	}
	sources, _ := filepath.Glob("testdata/*.wat")
	sources = append(sources, filepath.Join("..", "..", "..", "..", "catalogue", "wasm", "text-tools.wat"))
	shelf, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "catalogue", "shelf", "*.wat"))
	sources = append(sources, shelf...)
	for _, src := range sources {
		out := filepath.Join(t.TempDir(), "m.wasm")
		if b, err := exec.Command(wat2wasm, src, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", src, err, b)
		}
		built, _ := os.ReadFile(out)
		committed, err := os.ReadFile(strings.TrimSuffix(src, ".wat") + ".wasm")
		if err != nil || !bytes.Equal(built, committed) {
			t.Errorf("%s does not match the committed .wasm (%v); rebuild it", src, err)
		}
	}
}

// BenchmarkCall is one call on a warm runner (compiled module cached): digest check, scan,
// instantiate, write the input, call, read the output. The inputs: "123456789" (the fixed cost)
// and 1 KiB and 8 KiB (crc32 goes bit by bit, about 8 loop turns a byte).
func BenchmarkCall(b *testing.B) {
	r := New(Limits{})
	defer r.Close(context.Background())
	m := sample(b)
	ctx := context.Background()
	for _, c := range []struct {
		name, export string
		input        []byte
	}{
		{"crc32/9B", "crc32", []byte("123456789")},
		{"crc32/1KiB", "crc32", bytes.Repeat([]byte("voicebox "), 1024/9)},
		{"crc32/8KiB", "crc32", bytes.Repeat([]byte("voicebox "), wasmabi.MaxInputBytes/9)},
		{"word_count/8KiB", "word_count", bytes.Repeat([]byte("voicebox "), wasmabi.MaxInputBytes/9)},
	} {
		b.Run(c.name, func(b *testing.B) {
			tool := pin(m, c.export)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Call(ctx, m, tool, [][]byte{c.input}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallCold is the first call of a runner: compiling the module is part of it.
func BenchmarkCallCold(b *testing.B) {
	m := sample(b)
	tool := pin(m, "crc32")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r := New(Limits{})
		if _, err := r.Call(ctx, m, tool, [][]byte{[]byte("123456789")}); err != nil {
			b.Fatal(err)
		}
		r.Close(ctx)
	}
}
