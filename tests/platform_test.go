//go:build !js

package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// onNewDocument makes script run in every document tab loads from now on, before the page's own
// scripts: a test removes a platform feature with it, as a browser without it would be.
func onNewDocument(t *testing.T, tab *harness.Tab, script string) {
	t.Helper()
	err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
		return err
	}))
	if err != nil {
		t.Fatalf("add a script to new documents: %v", err)
	}
}

// workerWithout serves the page's worker script to tab with script run before it, as a browser
// whose workers lack a feature would: its request is paused and fulfilled with the checkout's
// public/worker.js after script.
func workerWithout(t *testing.T, tab *harness.Tab, script string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "public", "worker.js"))
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte(script+"\n"), src...)
	paused := make(chan cdpfetch.RequestID, 4)
	if err := chromedp.Listen(tab.Ctx, func(ev any) {
		if e, ok := ev.(*cdpfetch.EventRequestPaused); ok {
			select {
			case paused <- e.RequestID:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	fulfil := func(id cdpfetch.RequestID) {
		chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, cdpfetch.FulfillRequest, cdpfetch.FulfillRequestParams{RequestID: id, ResponseCode: 200,
				ResponseHeaders: []*cdpfetch.HeaderEntry{{Name: "Content-Type", Value: "text/javascript"}}, Body: body})
			return err
		}))
	}
	go func() {
		for {
			select {
			case id := <-paused:
				fulfil(id)
			case <-tab.Ctx.Done():
				return
			}
		}
	}()
	err = chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, cdpfetch.Enable, cdpfetch.EnableParams{Patterns: []*cdpfetch.RequestPattern{{URLPattern: "*/worker.js"}}})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
}

// TestMissingPlatformFeaturesAreSaid is issue 36's thirteenth problem: in a browser without browser
// storage the page said only "Your workspace is not open yet" for ever. Each feature the page needs
// is removed before its scripts run; the page says in words what is missing and what the person can
// do, and what does not depend on it still works.
func TestMissingPlatformFeaturesAreSaid(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	platform := func(t *testing.T, tab *harness.Tab, words ...string) string {
		t.Helper()
		text := harness.WaitFor[string](tab, `!document.querySelector('#platform').hidden && document.querySelector('#platform-list').textContent`, readyBound)
		for _, w := range words {
			if !strings.Contains(text, w) {
				t.Fatalf("the page says %q, which does not name %q", text, w)
			}
		}
		return text
	}
	t.Run("browser storage", func(t *testing.T) {
		t.Parallel()
		tab := harness.NewTab(t)
		onNewDocument(t, tab, `delete StorageManager.prototype.getDirectory;`)
		tab.Navigate(relay.URL)
		platform(t, tab, "browser storage", "Chromium", "relay env")
		status := harness.WaitFor[string](tab, `document.querySelector('#status').dataset.state === 'attention' && document.querySelector('#status').textContent`, readyBound)
		if !strings.Contains(status, "no browser storage") {
			t.Fatalf("the status says %q", status)
		}
		if start := harness.Eval[string](tab, `document.querySelector('#start-where').textContent`); !strings.Contains(start, "no browser storage") {
			t.Fatalf("the first steps say the workspace is %q", start)
		}
		if !harness.Eval[bool](tab, `document.querySelector('#root-kind option[value="opfs"]').disabled`) {
			t.Fatal("Browser storage is still offered")
		}
	})
	t.Run("sync access handles", func(t *testing.T) {
		t.Parallel()
		tab := harness.NewTab(t)
		// Only the worker has them: its script is served with the feature removed first.
		workerWithout(t, tab, `delete FileSystemFileHandle.prototype.createSyncAccessHandle;`)
		tab.Navigate(relay.URL)
		platform(t, tab, "sync access handles", "Chromium", "relay env")
		status := harness.WaitFor[string](tab, `document.querySelector('#status').dataset.state === 'attention' && document.querySelector('#status').textContent`, readyBound)
		if !strings.Contains(status, "no browser storage") {
			t.Fatalf("the status says %q", status)
		}
	})
	t.Run("folder picker", func(t *testing.T) {
		t.Parallel()
		tab := harness.NewTab(t)
		onNewDocument(t, tab, `delete window.showDirectoryPicker; delete Window.prototype.showDirectoryPicker;`)
		openWorkspace(t, tab, relay.URL)
		platform(t, tab, "folder picker", "browser storage", "relay env")
		if !harness.Eval[bool](tab, `document.querySelector('#root-kind option[value="handle"]').disabled`) {
			t.Fatal("Choose a folder… is still offered")
		}
	})
	t.Run("AudioWorklet", func(t *testing.T) {
		t.Parallel()
		tab := harness.NewTab(t)
		onNewDocument(t, tab, `delete window.AudioWorkletNode;`)
		openWorkspace(t, tab, relay.URL)
		platform(t, tab, "AudioWorklet", "Talk cannot start", "type commands")
		note := harness.WaitFor[string](tab, `document.querySelector('#mic').disabled && document.querySelector('#live-status').textContent`, readyBound)
		if !strings.Contains(note, "AudioWorklet") {
			t.Fatalf("the Talk panel says %q", note)
		}
	})
	t.Run("nothing missing", func(t *testing.T) {
		t.Parallel()
		tab := harness.NewTab(t)
		openWorkspace(t, tab, relay.URL)
		if !harness.Eval[bool](tab, `document.querySelector('#platform').hidden`) {
			t.Fatalf("in this Chromium the page says %q is missing", harness.Eval[string](tab, `document.querySelector('#platform-list').textContent`))
		}
	})
}
