//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// wasmTraceCategories are the trace categories a wasm trace records: V8's wasm compiling (each
// function compiled, its tier and index, in the detailed category), V8's collector, and the
// page's performance.mark calls the benchmark makes between its warm-up steps.
var wasmTraceCategories = []string{
	"v8.wasm", "disabled-by-default-v8.wasm.detailed", "disabled-by-default-v8.wasm.turbofan",
	"v8", "disabled-by-default-v8.compile", "disabled-by-default-v8.gc", "blink.user_timing",
}

// wasmTrace records Chromium's trace events of wasmTraceCategories from start to stop and writes
// them, one JSON object a line, to a file: a diagnosis of what V8 compiles while a page runs
// (VOICEBOX_BENCH_WASM_TRACE names the file). It is not part of any figure.
type wasmTrace struct {
	tab    *harness.Tab
	mu     sync.Mutex
	events []json.RawMessage
	done   chan struct{}
}

func startWasmTrace(b *testing.B, tab *harness.Tab) *wasmTrace {
	b.Helper()
	tr := &wasmTrace{tab: tab, done: make(chan struct{})}
	err := chromedp.Listen(tab.Ctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			tr.mu.Lock()
			for _, v := range e.Value {
				tr.events = append(tr.events, json.RawMessage(v))
			}
			tr.mu.Unlock()
		case *tracing.EventTracingComplete:
			close(tr.done)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	err = chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, tracing.Start, tracing.StartParams{
			TraceConfig:  &tracing.TraceConfig{IncludedCategories: wasmTraceCategories},
			TransferMode: tracing.StartTransferModeReportEvents})
		return err
	}))
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// mark puts a performance.mark named name in the page's trace.
func (tr *wasmTrace) mark(name string) {
	harness.Eval[bool](tr.tab, `(performance.mark(`+strconv.Quote(name)+`), true)`)
}

// stop ends the trace and writes its events to path.
func (tr *wasmTrace) stop(b *testing.B, path string) {
	b.Helper()
	err := chromedp.Do(tr.tab.Ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, tracing.End, cdp.Empty{})
		return err
	}))
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-tr.done:
	case <-tr.tab.Ctx.Done():
		b.Fatal("the trace did not complete")
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []byte
	for _, e := range tr.events {
		out = append(out, e...)
		out = append(out, '\n')
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		b.Fatal(err)
	}
}
