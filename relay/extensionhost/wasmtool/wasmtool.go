// Package wasmtool runs the wasm primitive of admitted extensions in the relay, on wazero, with the
// calling convention buffer-abi/1 and hard bounds.
//
// # buffer-abi/1
//
// A module imports nothing and has one linear memory of at least one page. For a call, the relay
// writes the input bytes (at most MaxInputBytes) at InputOffset and calls the tool's export with
// their length as its one i32 parameter. The export either returns an i32, the number of output
// bytes it wrote at OutputOffset (0 to MaxOutputBytes), or returns nothing, and then all
// MaxOutputBytes bytes at OutputOffset are the output.
//
// # Bounds and refusals
//
// The caller reads the module's bytes afresh for every call (ReadModule), and Call checks them
// against the tool's pinned sha256 before anything else. In the order checked:
//
//	module larger than Limits.MaxModuleBytes            resource-exceeded
//	bytes whose sha256 is not the pinned digest          digest-mismatch
//	input larger than MaxInputBytes                      over-budget
//	not a WebAssembly module, no memory, no such export,
//	or an export of another type                         wasm-invalid
//	any import (function, memory, table or global)      import-undeclared
//	initial memory over Limits.MaxMemoryPages, or a
//	memory.grow past it                                  resource-exceeded
//	a table without a maximum, or tables whose maxima
//	add up to more than MaxTableElements                 resource-exceeded
//	still running after Limits.Timeout (start included)  time-exceeded
//	a trap (unreachable, out-of-bounds access, stack
//	overflow, division by zero, ...)                     wasm-trapped
//	an output length over MaxOutputBytes                 over-budget
//
// Each call gets a fresh instance, so nothing a call leaves behind (a grown memory, a global)
// reaches the next one, and a hostile call never stops the next from running. The runtime closes
// a module when its call's context ends (wazero's WithCloseOnContextDone), which is what stops a
// guest that loops forever.
package wasmtool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/voicebox-go/voicebox/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The buffer-abi/1 layout.
const (
	// InputOffset is where the input bytes are written in the module's memory.
	InputOffset = 0x400
	// MaxInputBytes bounds the input: it fills the memory from InputOffset up to OutputOffset.
	MaxInputBytes = 8192
	// OutputOffset is where the output bytes are read back from.
	OutputOffset = 0x2400
	// MaxOutputBytes bounds the output of one call.
	MaxOutputBytes = 32
)

// Default bounds (see Limits).
const (
	// DefaultMaxModuleBytes bounds a module's size: 1 MiB.
	DefaultMaxModuleBytes = 1 << 20
	// DefaultMaxMemoryPages bounds a module's memory: 16 pages of 64 KiB, 1 MiB.
	DefaultMaxMemoryPages = 16
	// DefaultTimeout bounds one call's wall clock, instantiation (a start function) included.
	DefaultTimeout = 5000 * time.Millisecond
	// DefaultMaxConcurrent bounds the calls running at once; a call waits for a slot within its
	// own time bound.
	DefaultMaxConcurrent = 4
)

// MaxTableElements bounds the elements a module's tables may ever hold, together. The runtime
// gives each element a machine word and lets table.grow go to 2^32 of them, so a table must
// declare a maximum (wasm-ld's default) and the maxima must stay under this.
const MaxTableElements = 1 << 16

// maxCompiled bounds the compiled modules kept (by digest) between calls.
const maxCompiled = 32

const pageBytes = 65536

// Limits are a Runner's bounds. A zero field takes its default.
type Limits struct {
	MaxModuleBytes int
	MaxMemoryPages uint32
	Timeout        time.Duration
	MaxConcurrent  int
}

func (l Limits) withDefaults() Limits {
	if l.MaxModuleBytes <= 0 {
		l.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if l.MaxMemoryPages == 0 {
		l.MaxMemoryPages = DefaultMaxMemoryPages
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = DefaultMaxConcurrent
	}
	return l
}

// Output is what a call observed: the output bytes in hex, and as text when they are valid UTF-8.
type Output struct {
	Bytes int     `json:"bytes"`
	Hex   string  `json:"hex"`
	Text  *string `json:"text,omitempty"`
}

// Runner runs wasm tools. It is safe for concurrent use; Close releases it.
type Runner struct {
	limits Limits
	rt     wazero.Runtime
	slots  chan struct{}

	mu       sync.Mutex
	compiled map[string]wazero.CompiledModule // by sha256
	order    []string                         // digests, oldest first
}

// New returns a Runner with limits (zero fields take the defaults).
func New(limits Limits) *Runner {
	limits = limits.withDefaults()
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	return &Runner{
		limits:   limits,
		rt:       wazero.NewRuntimeWithConfig(context.Background(), cfg),
		slots:    make(chan struct{}, limits.MaxConcurrent),
		compiled: map[string]wazero.CompiledModule{},
	}
}

// Limits returns the bounds r enforces.
func (r *Runner) Limits() Limits { return r.limits }

// Close releases the runtime and every compiled module.
func (r *Runner) Close(ctx context.Context) error { return r.rt.Close(ctx) }

// Call runs tool's export of module (the bytes read for this very call) on input, and returns
// its output or a refusal named in the package doc.
func (r *Runner) Call(ctx context.Context, module []byte, tool extensions.WasmTool, input []byte) (*Output, error) {
	if len(module) > r.limits.MaxModuleBytes {
		return nil, refusal.New(refusal.ResourceExceeded, "the module is %d bytes, over the bound of %d", len(module), r.limits.MaxModuleBytes)
	}
	sum := sha256.Sum256(module)
	digest := hex.EncodeToString(sum[:])
	if digest != tool.SHA256 {
		return nil, refusal.New(refusal.DigestMismatch, "the module %s has sha256 %s, not the %s it was admitted with; it does not run", tool.Module, digest, tool.SHA256)
	}
	if tool.ABI != "" && tool.ABI != extensions.ABI {
		return nil, refusal.New(refusal.UnsupportedABI, "the tool asks for ABI %q; only %s runs", tool.ABI, extensions.ABI)
	}
	if len(input) > MaxInputBytes {
		return nil, refusal.New(refusal.OverBudget, "the input is %d bytes; %s takes at most %d", len(input), extensions.ABI, MaxInputBytes)
	}
	shape, err := scan(module)
	if err != nil {
		return nil, refusal.New(refusal.WasmInvalid, "the module is not a valid WebAssembly binary: %s", err)
	}
	if shape.firstImport != "" {
		return nil, refusal.New(refusal.ImportUndeclared, "the module imports %s (%d imports); %s modules import nothing", shape.firstImport, shape.imports, extensions.ABI)
	}
	if !shape.memory {
		return nil, refusal.New(refusal.WasmInvalid, "the module has no linear memory; %s needs one of at least one page", extensions.ABI)
	}
	if shape.minPages > uint64(r.limits.MaxMemoryPages) {
		return nil, refusal.New(refusal.ResourceExceeded, "the module starts with %d memory pages, over the bound of %d", shape.minPages, r.limits.MaxMemoryPages)
	}
	if shape.minPages < 1 {
		return nil, refusal.New(refusal.WasmInvalid, "the module's memory starts empty; %s needs at least one page", extensions.ABI)
	}
	if shape.tableUnbounded {
		return nil, refusal.New(refusal.ResourceExceeded, "the module has a table without a maximum, which table.grow could take without bound; declare one of at most %d elements", MaxTableElements)
	}
	if shape.tableElements > MaxTableElements {
		return nil, refusal.New(refusal.ResourceExceeded, "the module's tables may hold %d elements, over the bound of %d", shape.tableElements, MaxTableElements)
	}

	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-ctx.Done():
		return nil, refusal.New(refusal.TimeExceeded, "no wasm slot came free within %d ms (%d calls run at once)", r.limits.Timeout.Milliseconds(), r.limits.MaxConcurrent)
	}
	compiled, err := r.compile(ctx, digest, module)
	if err != nil {
		return nil, refusal.New(refusal.WasmInvalid, "the module does not compile: %s", firstLine(err))
	}
	def, ok := compiled.ExportedFunctions()[tool.Export]
	if !ok {
		return nil, refusal.New(refusal.WasmInvalid, "the module exports no function %q", tool.Export)
	}
	results := def.ResultTypes()
	if p := def.ParamTypes(); len(p) != 1 || p[0] != api.ValueTypeI32 || len(results) > 1 || len(results) == 1 && results[0] != api.ValueTypeI32 {
		return nil, refusal.New(refusal.WasmInvalid, "the export %q must take one i32 (the input length) and return one i32 or nothing", tool.Export)
	}

	mem := &boundedMemory{max: uint64(r.limits.MaxMemoryPages) * pageBytes, over: cancel}
	mod, err := r.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), compiled,
		wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, r.failed(ctx, mem, err, "starting the module")
	}
	defer mod.Close(context.Background())
	if !mod.Memory().Write(InputOffset, input) {
		return nil, refusal.New(refusal.WasmInvalid, "the module's memory cannot hold the input at 0x%x", InputOffset)
	}
	out, err := mod.ExportedFunction(tool.Export).Call(ctx, uint64(len(input)))
	if err != nil {
		return nil, r.failed(ctx, mem, err, "running "+tool.Export)
	}
	n := uint64(MaxOutputBytes)
	if len(out) == 1 {
		n = uint64(uint32(out[0]))
	}
	if n > MaxOutputBytes {
		return nil, refusal.New(refusal.OverBudget, "the module reports %d output bytes; %s returns at most %d", int32(n), extensions.ABI, MaxOutputBytes)
	}
	b, ok := mod.Memory().Read(OutputOffset, uint32(n))
	if !ok {
		return nil, refusal.New(refusal.WasmInvalid, "the module's memory does not reach the output at 0x%x", OutputOffset)
	}
	res := &Output{Bytes: int(n), Hex: hex.EncodeToString(b)}
	if utf8.Valid(b) {
		s := string(b)
		res.Text = &s
	}
	return res, nil
}

// failed names why instantiating or calling stopped.
func (r *Runner) failed(ctx context.Context, mem *boundedMemory, err error, doing string) error {
	switch {
	case mem.exceeded.Load():
		return refusal.New(refusal.ResourceExceeded, "the module grew its memory past the bound of %d pages (%d KiB) while %s", r.limits.MaxMemoryPages, r.limits.MaxMemoryPages*pageBytes>>10, doing)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return refusal.New(refusal.TimeExceeded, "the module was still %s after %d ms; it was stopped", doing, r.limits.Timeout.Milliseconds())
	case ctx.Err() != nil:
		return refusal.New(refusal.TimeExceeded, "the call was cancelled while %s", doing)
	}
	return refusal.New(refusal.WasmTrapped, "the module trapped while %s: %s", doing, firstLine(err))
}

// compile returns the compiled module of digest, compiling module on a miss.
func (r *Runner) compile(ctx context.Context, digest string, module []byte) (wazero.CompiledModule, error) {
	r.mu.Lock()
	c, ok := r.compiled[digest]
	r.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := r.rt.CompileModule(ctx, module)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if have, ok := r.compiled[digest]; ok {
		c.Close(ctx)
		return have, nil
	}
	if len(r.order) >= maxCompiled {
		// Closing is safe while calls of the old module are still running (wazero documents it).
		r.compiled[r.order[0]].Close(ctx)
		delete(r.compiled, r.order[0])
		r.order = r.order[1:]
	}
	r.compiled[digest] = c
	r.order = append(r.order, digest)
	return c, nil
}

// boundedMemory backs one instance's linear memory and refuses to grow it past max: memory.grow
// then answers -1 to the guest, and the call's context is cancelled so that a guest which ignores
// the failure is stopped too.
type boundedMemory struct {
	max      uint64
	over     func()
	buf      []byte
	exceeded atomic.Bool
}

// Allocate implements experimental.MemoryAllocator; the backing array is grown on demand.
func (m *boundedMemory) Allocate(_, _ uint64) experimental.LinearMemory { return m }

// Reallocate implements experimental.LinearMemory.
func (m *boundedMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		m.exceeded.Store(true)
		m.over()
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size] // memory never shrinks, so the bytes past len are still zero
		return m.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.max))
	copy(grown, m.buf)
	m.buf = grown
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *boundedMemory) Free() { m.buf = nil }

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// String describes the limits, for logs and the disclosure.
func (l Limits) String() string {
	l = l.withDefaults()
	return fmt.Sprintf("module <= %d bytes, memory <= %d pages, %d ms, input <= %d bytes, output <= %d bytes",
		l.MaxModuleBytes, l.MaxMemoryPages, l.Timeout.Milliseconds(), MaxInputBytes, MaxOutputBytes)
}
