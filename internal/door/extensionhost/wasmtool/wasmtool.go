// Package wasmtool runs WebAssembly modules in the relay, on wazero, under the two buffer ABIs
// and the order of checks that internal/shared/wasmabi describes, with hard bounds: the wasm tools of
// admitted extensions and the modules of the WASM shelf.
//
// # Bounds
//
// The caller reads the module's bytes afresh for every call (ReadModule) and Call checks them
// against the pinned sha256 before anything else; the refusals and their order are wasmabi's.
// wasmabi.CheckBytes holds every memory and table of the module, together, to the bounds before
// wazero compiles it (wazero itself refuses a second memory: it does not run the multi-memory
// proposal, so such a module within the bounds is wasm-invalid here and runs in a browser).
// The runner's own bounds (Limits): the module's size, its memory (checked when it starts and
// enforced while it grows: memory.grow past the bound answers -1 and the call is stopped
// resource-exceeded), the tables' maxima, a wall-clock deadline that includes a start function,
// and how many calls run at once.
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

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Default bounds (see Limits).
const (
	// DefaultMaxModuleBytes bounds a module's size: 1 MiB.
	DefaultMaxModuleBytes = 1 << 20
	// DefaultMaxMemoryPages bounds a module's memory: wasmabi.MaxMemoryPages, the bound the
	// page holds modules to as well.
	DefaultMaxMemoryPages = wasmabi.MaxMemoryPages
	// DefaultTimeout bounds one call's wall clock, instantiation (a start function) included:
	// wasmabi.Deadline.
	DefaultTimeout = wasmabi.Deadline
	// DefaultMaxConcurrent bounds the calls running at once; a call waits for a slot within its
	// own time bound.
	DefaultMaxConcurrent = 4
)

// maxCompiled bounds the compiled modules kept (by digest) between calls.
const maxCompiled = 32

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

// Call runs tool's export of module (the bytes read for this very call) on inputs, one per input
// buffer of the tool's ABI, and returns what it observed or a refusal, checked in wasmabi's order.
func (r *Runner) Call(ctx context.Context, module []byte, tool extensions.WasmTool, inputs [][]byte) (*wasmabi.Output, error) {
	if len(module) > r.limits.MaxModuleBytes {
		return nil, refusal.New(refusal.OverBudget, "the module is %d bytes, over the bound of %d", len(module), r.limits.MaxModuleBytes)
	}
	sum := sha256.Sum256(module)
	digest := hex.EncodeToString(sum[:])
	if digest != tool.SHA256 {
		return nil, refusal.New(refusal.DigestMismatch, "%s", wasmabi.MismatchWhy("the module "+tool.Module, digest, tool.SHA256))
	}
	layout, ok := wasmabi.LayoutOf(tool.ABI)
	if !ok {
		return nil, refusal.New(refusal.UnsupportedABI, "the tool asks for ABI %q; the ABIs are %s and %s", tool.ABI, wasmabi.ABI1, wasmabi.ABIDiff)
	}
	shape, err := wasmabi.CheckBytes(module, uint64(r.limits.MaxMemoryPages), false)
	if err != nil {
		return nil, err
	}
	compiled, err := r.compile(ctx, digest, module)
	if err != nil {
		return nil, refusal.New(refusal.WasmInvalid, "the module does not compile: %s", firstLine(err))
	}
	if shape.FirstImport != "" {
		return nil, refusal.New(refusal.ImportUndeclared, "the module imports %s (%d imports); %s modules import nothing", shape.FirstImport, shape.Imports, layout.ABI)
	}
	if err := layout.CheckInputs(inputs); err != nil {
		return nil, err
	}
	if err := layout.CheckMemory(shape); err != nil {
		return nil, err
	}
	if err := layout.CheckExports(shape, tool.Export); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-ctx.Done():
		return nil, refusal.New(refusal.TimeExceeded, "no wasm slot came free within %d ms (%d calls run at once)", r.limits.Timeout.Milliseconds(), r.limits.MaxConcurrent)
	}

	mem := &boundedMemory{max: uint64(r.limits.MaxMemoryPages) * wasmabi.PageBytes, over: cancel}
	mod, err := r.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), compiled,
		wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, r.failed(ctx, mem, err, "starting the module")
	}
	defer mod.Close(context.Background())
	params := make([]uint64, len(inputs))
	for i, in := range inputs {
		if !mod.Memory().Write(layout.Inputs[i].Offset, in) {
			return nil, refusal.New(refusal.UnsupportedABI, "the module's memory cannot hold input %d at 0x%x", i+1, layout.Inputs[i].Offset)
		}
		params[i] = uint64(len(in))
	}
	res, err := mod.ExportedFunction(tool.Export).Call(ctx, params...)
	if err != nil {
		return nil, r.failed(ctx, mem, err, "running "+tool.Export)
	}
	size := min(uint64(layout.Output.MaxBytes), uint64(mod.Memory().Size())-min(uint64(mod.Memory().Size()), uint64(layout.Output.Offset)))
	out, _ := mod.Memory().Read(layout.Output.Offset, uint32(size))
	var returned uint64
	if len(res) == 1 {
		returned = res[0]
	}
	return layout.Result(int64(returned), len(res) == 1, out)
}

// failed names why instantiating or calling stopped.
func (r *Runner) failed(ctx context.Context, mem *boundedMemory, err error, doing string) error {
	switch {
	case mem.exceeded.Load():
		return refusal.New(refusal.ResourceExceeded, "the module grew its memory past the bound of %d pages (%d KiB) while %s", r.limits.MaxMemoryPages, r.limits.MaxMemoryPages*wasmabi.PageBytes>>10, doing)
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
	return fmt.Sprintf("module <= %d bytes, memory <= %d pages, %d ms", l.MaxModuleBytes, l.MaxMemoryPages, l.Timeout.Milliseconds())
}
