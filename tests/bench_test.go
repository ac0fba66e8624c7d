//go:build !js

package tests

import (
	"testing"

	"voicebox/tests/harness"
)

// BenchmarkPageReady measures navigation to the worker's "ready" (performance.mark
// 'voicebox-ready', relative to navigation start) on loopback, with the HTTP cache warm after the
// first load, as a returning user has it.
func BenchmarkPageReady(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	var samples []float64
	for b.Loop() {
		tab.Navigate(relay.URL)
		ms := harness.WaitFor[float64](tab, `(performance.getEntriesByName('voicebox-ready')[0] || {}).startTime`, readyBound)
		samples = append(samples, ms)
	}
	b.StopTimer()
	harness.ReportPercentiles(b, samples, "ms")
}
