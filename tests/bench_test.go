//go:build !js

package tests

import (
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkPageReady measures, from navigation start on loopback, the worker's "ready"
// (performance.mark 'voicebox-ready') and the channel's first "connected" (the page is the
// relay's executor: 'voicebox-channel'), with the HTTP cache warm after the first load, as a
// returning user has it.
func BenchmarkPageReady(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	tab.Quiet()
	var ready, channel []float64
	for b.Loop() {
		tab.Navigate(relay.URL)
		ms := harness.WaitFor[[]float64](tab, `performance.getEntriesByName('voicebox-channel').length > 0 &&
			['voicebox-ready', 'voicebox-channel'].map(n => performance.getEntriesByName(n)[0].startTime)`, readyBound)
		ready, channel = append(ready, ms[0]), append(channel, ms[1])
	}
	b.StopTimer()
	harness.ReportPercentiles(b, ready, "ready-ms")
	harness.ReportPercentiles(b, channel, "channel-ms")
}
