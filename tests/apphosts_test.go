//go:build !js

package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// fallbackBound bounds a launch that falls back to the shared app host: the handshake's bound on
// the per-app host, then the app's start on the shared one.
const fallbackBound = miniapp.BridgeHandshakeTimeout + appBound

// TestAnAppWhoseHostCannotLoadFallsBackAndSaysSo is issue 36's fourth problem: where the per-app
// hosts (app-<hex>.localhost) do not resolve, the card said "Waiting for the app to register its
// tools…" for ever. In a browser where they do not resolve, the app starts on the shared app host
// within the bridge's handshake bound, registers its tools and answers the relay, and its card and
// the page say that apps are less isolated; a frame that never answers on the shared host either
// is stopped within the bound with the words of what failed.
func TestAnAppWhoseHostCannotLoadFallsBackAndSaysSo(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	t.Run("falls back", func(t *testing.T) {
		tab := harness.NewTabWithoutAppHosts(t)
		tab.Allow(`ERR_NAME_NOT_RESOLVED`)
		openWorkspace(t, tab, relay.URL)
		harness.WaitFor[bool](tab, `document.querySelectorAll('#app-tray li[data-kind="app"]').length >= 3`, appBound)
		harness.Eval[bool](tab, `(voicebox.miniApps.launch({name: 'Scoreboard'}), true)`)
		harness.WaitFor[bool](tab, `voicebox.miniApps.tools('app_scoreboard').length >= 4`, fallbackBound)
		note := harness.Eval[string](tab, `(() => { const n = document.querySelector('.app-card[data-app-id="app_scoreboard"] .app-host-note'); return n && !n.hidden ? n.textContent : ''; })()`)
		if !strings.Contains(note, "did not load") || !strings.Contains(note, "shared app host") || !strings.Contains(note, "less isolated") {
			t.Fatalf("the card says %q", note)
		}
		if lacks := harness.WaitFor[string](tab, `!document.querySelector('#platform').hidden && document.querySelector('#platform-list').textContent`, appBound); !strings.Contains(lacks, "per-app hosts") {
			t.Fatalf("the page says %q is missing", lacks)
		}
		ans := relay.Call(t, miniapp.ModelName("app_scoreboard", "add_points"), map[string]any{"team": "home", "points": 2})
		if !ans.OK {
			t.Fatalf("the relay's call to the app on the shared host answered %s", ans.Raw)
		}
	})
	t.Run("never answers", func(t *testing.T) {
		tab := harness.NewTabWithoutAppHosts(t)
		tab.Allow(`ERR_NAME_NOT_RESOLVED`)
		tab.Allow(`could not start`)
		openWorkspace(t, tab, relay.URL)
		harness.WaitFor[bool](tab, `document.querySelectorAll('#app-tray li[data-kind="app"]').length >= 3`, appBound)
		// The shared host's bridge does not load either: its request is held and never answered,
		// so its frame never says it is ready.
		err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, cdpfetch.Enable, cdpfetch.EnableParams{Patterns: []*cdpfetch.RequestPattern{{URLPattern: "*/mini-app-bridge.html*"}}})
			return err
		}))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		launched := harness.Eval[string](tab, `voicebox.miniApps.launch({name: 'Scoreboard'}).then(() => 'started', (e) => 'failed: ' + e.message)`)
		if !strings.HasPrefix(launched, "failed: ") || !strings.Contains(launched, "did not load") {
			t.Fatalf("the launch ended %q", launched)
		}
		if took := time.Since(start); took > 2*miniapp.BridgeHandshakeTimeout+appBound {
			t.Fatalf("the launch took %v", took)
		}
		stopped := harness.Eval[string](tab, `document.querySelector('.app-card[data-app-id="app_scoreboard"] .app-stopped p').textContent`)
		if !strings.Contains(stopped, "mini-app-frame-timeout") || !strings.Contains(stopped, fmt.Sprintf("within %d s", miniapp.BridgeHandshakeTimeout/time.Second)) {
			t.Fatalf("the card says %q", stopped)
		}
		if strings.Contains(harness.Eval[string](tab, `document.querySelector('.app-card[data-app-id="app_scoreboard"]').textContent`), "Waiting for the app") {
			t.Fatal("the stopped app's card still says it is waiting")
		}
	})
}
