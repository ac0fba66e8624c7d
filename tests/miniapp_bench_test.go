//go:build !js

package tests

import (
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkMiniAppToolCall measures one mini-app tool call end to end, twice: from the page's
// own API (main thread -> worker: validation -> the worker's port to the app's bridge -> the
// app's port -> the app's execute, and back), and from the relay (POST /api/root/call -> /channel
// -> the worker -> the same path -> the relay's answer).
func BenchmarkMiniAppToolCall(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	tab.Quiet()
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `!!(window.voicebox && voicebox.miniApps) && !document.querySelector('#new-file').disabled`, readyBound)
	harness.Eval[string](tab, `voicebox.miniApps.launch({name: 'Scoreboard'}).then(a => a.appId)`)
	harness.WaitFor[bool](tab, `voicebox.miniApps.tools('app_scoreboard').length === 4`, appBound)
	const n = 300
	var page, fromRelay []float64
	name := miniapp.ModelName("app_scoreboard", "add_points")
	for b.Loop() {
		page = append(page, harness.Eval[[]float64](tab, `(async () => {
			const out = [];
			for (let i = 0; i < 300; i++) {
				const t0 = performance.now();
				await voicebox.miniApps.call('app_scoreboard', 'add_points', {team: 'home', points: 1});
				out.push((performance.now() - t0) * 1000);
			}
			return out;
		})()`)...)
		for range n {
			t0 := time.Now()
			if a := relay.Call(b, name, map[string]any{"team": "away", "points": 1}); !a.OK {
				b.Fatalf("the relay's call was refused: %s", a.Raw)
			}
			fromRelay = append(fromRelay, float64(time.Since(t0).Microseconds()))
		}
	}
	b.StopTimer()
	harness.ReportPercentiles(b, page, "page-us")
	harness.ReportPercentiles(b, fromRelay, "relay-us")
}
