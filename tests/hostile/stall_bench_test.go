//go:build !js

package hostile

import (
	"net/http"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// benchStalled is how many stalled-body connections BenchmarkHealthWithStalledBodies holds open.
const benchStalled = 5000

// benchSettle is how long after the stalled connections end the relay's memory is read again.
const benchSettle = 30 * time.Second

// BenchmarkHealthWithStalledBodies measures, in one run against an idle relay: /api/health
// p50/p99 (ms) with nothing else open, then with benchStalled connections that sent a header and
// one byte of a body open at once (25 addresses of 200), and the relay's resident memory before,
// during, and benchSettle after the relay ended them. b.N requests are timed each way (at least
// 200). Run:
//
//	./build.sh build && go test -run '^$' -bench HealthWithStalledBodies -benchtime 400x ./tests/hostile/
func BenchmarkHealthWithStalledBodies(b *testing.B) {
	raiseNoFile(b, 3*benchStalled)
	relay := harness.StartRelay(b)
	n := max(b.N, 200)
	health := func() []float64 {
		out := make([]float64, 0, n)
		for range n {
			start := time.Now()
			if r := send(b, nil, http.MethodGet, relay.URL+"/api/health", nil, ""); r.status != http.StatusOK {
				b.Fatalf("/api/health answered %d", r.status)
			}
			out = append(out, float64(time.Since(start).Microseconds())/1000)
		}
		return out
	}
	b.ResetTimer()
	idle := health()
	before := statsOf(b, relay.PID())
	stallers := stall(b, relay, benchStalled, soakPerAddress, 2, false)
	loaded := health()
	during := statsOf(b, relay.PID())
	b.StopTimer()
	if during.fds < before.fds+benchStalled {
		b.Fatalf("the relay held %d descriptors with %d stalled connections (%d before): some ended before they were measured", during.fds, benchStalled, before.fds)
	}
	ended(b, stallers)
	waitFor(b, "the relay's descriptors to come back", func() bool { return statsOf(b, relay.PID()).fds <= before.fds+8 })
	time.Sleep(benchSettle)
	after := statsOf(b, relay.PID())
	harness.ReportPercentiles(b, idle, "idle-ms")
	harness.ReportPercentiles(b, loaded, "stalled-ms")
	b.ReportMetric(float64(before.rssKB)/1024, "rss-before-MiB")
	b.ReportMetric(float64(during.rssKB)/1024, "rss-during-MiB")
	b.ReportMetric(float64(after.rssKB)/1024, "rss-after-MiB")
	b.ReportMetric(float64(after.peakKB)/1024, "rss-peak-MiB")
	b.ReportMetric(float64(during.fds), "fds-during")
}
