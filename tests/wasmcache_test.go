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
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	t.Cleanup(func() { h.Close(); hs.Close() })
	url := "http://" + ln.Addr().String()

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
	ask := func(tool string, args map[string]string) {
		raw, _ := json.Marshal(args)
		if a := h.Ask(context.Background(), wire.Call{CallID: h.NewCallID(), Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: raw, BoundsEcho: json.RawMessage(`{}`)}); !a.OK {
			t.Fatalf("%s answered %s: %s", tool, a.Refused, a.Why)
		}
	}
	ask("write-file", map[string]string{"path": "probe.txt", "content": "x"})
	for range 300 {
		ask("read-file", map[string]string{"path": "probe.txt"})
	}
	// Chromium writes the entry a moment after V8 hands it the code (WasmCachingFlags).
	deadline := time.Now().Add(readyBound)
	for harness.WasmCodeCacheEntries(t, profile) == before {
		if time.Now().After(deadline) {
			t.Fatalf("the first load left no wasm code cache entry in the profile within %s", readyBound)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var mu sync.Mutex
	var events []string
	done := make(chan struct{})
	err = chromedp.Listen(tab.Ctx, func(ev any) {
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
