//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/public"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestWasmCodeCacheSecondLoad: a page's second load in one browser profile takes voicebox.wasm's
// compiled code from Chromium's code cache instead of compiling the module again.
//
// The first load's worker answers calls (so V8 optimizes some of its functions) and V8 hands the
// module's code to Chromium, which writes it to the profile's disk keyed by the response's URL
// and time. The second load's fetch of /voicebox.wasm is asked again (Cache-Control: no-cache);
// only when the relay's answer is a 304 to the validator the first response carried does the
// browser keep that response, and with it the compiled code ("v8.wasm.moduleCacheHit" in the
// trace of that load). The relay serves the page it was compiled with (package public), as one
// built binary does: files without modification times, so an ETag is their only validator.
func TestWasmCodeCacheSecondLoad(t *testing.T) {
	h, url := embeddedRelay(t, false)

	tab, profile := harness.NewTabWithOwnProfile(t)
	tab.Quiet()
	tab.Allow(`.`) // a relay of the page and the channel only: the rest of the page's API answers 404
	before := harness.WasmCodeCacheEntries(t, profile)
	ready := func() {
		harness.WaitFor[bool](tab, `performance.getEntriesByName('voicebox-ready').length > 0`, readyBound)
	}

	tab.Navigate(url)
	ready()
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	askReads(t, h, 300)
	// Chromium writes the entry a moment after V8 hands it the code (WasmCachingFlags).
	waitForCacheEntry(t, profile, before)

	var mu sync.Mutex
	var events []string
	done := make(chan struct{})
	err := chromedp.Listen(tab.Ctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			defer mu.Unlock()
			for _, raw := range e.Value {
				var te struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(raw, &te) == nil && strings.HasPrefix(te.Name, "v8.wasm.module") {
					events = append(events, te.Name)
				}
			}
		case *tracing.EventTracingComplete:
			close(done)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(f func(ctx context.Context, tg *chromedp.Target) error) {
		t.Helper()
		if err := chromedp.Do(tab.Ctx, chromedp.Func(f)); err != nil {
			t.Fatal(err)
		}
	}
	call(func(ctx context.Context, tg *chromedp.Target) error {
		// Blink's wasm streaming marks a cache hit in this category (wasm_response_extensions.cc).
		_, err := cdp.Call(ctx, tg, tracing.Start, tracing.StartParams{
			TraceConfig:  &tracing.TraceConfig{IncludedCategories: []string{"disabled-by-default-devtools.timeline"}},
			TransferMode: tracing.StartTransferModeReportEvents})
		return err
	})
	tab.Navigate(url)
	ready()
	call(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, tracing.End, cdp.Empty{})
		return err
	})
	select {
	case <-done:
	case <-tab.Ctx.Done():
		t.Fatal("the trace did not complete")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(events, "v8.wasm.moduleCacheHit") || slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "v8.wasm.moduleCacheInvalid") }) {
		t.Errorf("the second load compiled voicebox.wasm again instead of taking its code from the cache; its cache trace events: %v", events)
	}
}

// embeddedRelay serves the page this test binary was compiled with (package public: files
// without modification times, as one built relay serves them) and a hub on /channel, in this
// process. With asBefore, the relay answers as it did before its files carried an ETag: every
// request's If-None-Match is dropped, so each load gets a fresh 200.
func embeddedRelay(t testing.TB, asBefore bool) (*hub.Hub, string) {
	t.Helper()
	srv, err := server.New(server.Config{Files: public.Files(), Build: "test", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(hub.Options{})
	hub.Register(srv, h, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler = srv
	if asBefore {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("If-None-Match")
			srv.ServeHTTP(w, r)
		})
	}
	hs := &http.Server{Handler: handler}
	go hs.Serve(ln)
	t.Cleanup(func() { h.Close(); hs.Close() })
	return h, "http://" + ln.Addr().String()
}

// askReads writes probe.txt through h's page and reads it back n times.
func askReads(t testing.TB, h *hub.Hub, n int) {
	t.Helper()
	ask := func(tool string, args map[string]string) {
		raw, _ := json.Marshal(args)
		if a := h.Ask(context.Background(), wire.Call{CallID: h.NewCallID(), Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: raw, BoundsEcho: json.RawMessage(`{}`)}); !a.OK {
			t.Fatalf("%s answered %s: %s", tool, a.Refused, a.Why)
		}
	}
	ask("write-file", map[string]string{"path": "probe.txt", "content": "x"})
	for range n {
		ask("read-file", map[string]string{"path": "probe.txt"})
	}
}

// waitForCacheEntry waits until the profile holds more wasm code cache entries than before:
// Chromium writes one a moment after V8 hands it a module's code (harness.WasmCachingFlags).
func waitForCacheEntry(t testing.TB, profile string, before int) {
	t.Helper()
	deadline := time.Now().Add(readyBound)
	for harness.WasmCodeCacheEntries(t, profile) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("the first load left no wasm code cache entry in the profile within %s", readyBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkPageSecondLoad: a page loaded twice in one browser profile, each load timed from
// navigation to the worker's "ready" and costed in Chromium's CPU (every process of it, from
// /proc) to ready and over its first 200 calls; beside it the same with the relay answering as
// before its files carried an ETag (every load a fresh 200, so the second load compiles
// voicebox.wasm again). Each turn takes a fresh relay (a new address, so a first load is a first
// load). The browser is harness.WasmCachingFlags's: V8 hands Chromium the module's code at each
// 1,000 bytes of optimized code rather than two seconds after the last, which adds the
// serializing to the first load's calls.
func BenchmarkPageSecondLoad(b *testing.B) {
	tab, profile := harness.NewTabWithOwnProfile(b)
	tab.Quiet()
	tab.Allow(`.`)
	const calls = 200
	type load struct{ readyMs, readyCPU, callsCPU []float64 }
	var loads [2][2]load // [asBefore][first, second]
	run := func(asBefore bool) {
		h, url := embeddedRelay(b, asBefore)
		for i := range 2 {
			before := harness.WasmCodeCacheEntries(b, profile)
			c0 := childrenCPU()
			tab.Navigate(url)
			ms := harness.WaitFor[float64](tab, `performance.getEntriesByName('voicebox-ready').length > 0 && performance.getEntriesByName('voicebox-ready')[0].startTime`, readyBound)
			c1 := childrenCPU()
			harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
			c2 := childrenCPU()
			askReads(b, h, calls)
			c3 := childrenCPU()
			l := &loads[map[bool]int{false: 0, true: 1}[asBefore]][i]
			l.readyMs, l.readyCPU, l.callsCPU = append(l.readyMs, ms), append(l.readyCPU, (c1-c0)*1e3), append(l.callsCPU, (c3-c2)/calls*1e6)
			if i == 0 {
				waitForCacheEntry(b, profile, before)
			}
		}
	}
	for b.Loop() {
		run(false)
		run(true)
	}
	b.StopTimer()
	for k, side := range []string{"", "before-"} {
		for i, which := range []string{"first", "second"} {
			l := loads[k][i]
			harness.ReportPercentiles(b, l.readyMs, side+which+"-ready-ms")
			b.ReportMetric(mean(l.readyCPU), side+which+"-cpu-ms-to-ready")
			b.ReportMetric(mean(l.callsCPU), side+which+"-cpu-us/call")
		}
	}
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(max(len(v), 1))
}
