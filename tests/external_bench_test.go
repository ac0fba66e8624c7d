//go:build !js

package tests

import (
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkExternalAppToolCall measures one read-only tool call of the sample external app, Order
// Book, end to end, twice: from the page's own API (main thread -> postMessage to the app's origin
// -> the guest library -> the app's execute, and back), and from the relay the way the model's
// calls come (POST /api/root/call -> /channel -> the worker -> the main thread -> the same path ->
// the relay's answer).
func BenchmarkExternalAppToolCall(b *testing.B) {
	s := startExternal(b)
	s.tab.Quiet()
	harness.Eval[bool](s.tab, `(voicebox.externalApps.open('orders'), true)`)
	harness.WaitFor[bool](s.tab, `(voicebox.externalApps.state('orders') || {}).live && voicebox.externalApps.state('orders').tools.length === 2`, externalBound)
	const n = 300
	var page, fromRelay []float64
	for b.Loop() {
		page = append(page, harness.Eval[[]float64](s.tab, `(async () => {
			const out = [];
			for (let i = 0; i < 300; i++) {
				const t0 = performance.now();
				const a = await voicebox.externalApps.callTool('orders', 'list_orders', {status: 'open'});
				if (!a.ok) throw new Error(a.why);
				out.push((performance.now() - t0) * 1000);
			}
			return out;
		})()`)...)
		for range n {
			t0 := time.Now()
			if a := s.relay.Call(b, "app_x_orders__list_orders", map[string]any{}); !a.OK {
				b.Fatalf("the relay's call was refused: %s", a.Raw)
			}
			fromRelay = append(fromRelay, float64(time.Since(t0).Microseconds()))
		}
	}
	b.StopTimer()
	harness.ReportPercentiles(b, page, "page-us")
	harness.ReportPercentiles(b, fromRelay, "relay-us")
}
