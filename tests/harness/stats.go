//go:build !js

package harness

import (
	"slices"
	"testing"
)

// ReportPercentiles reports the p50 and p99 of samples as benchmark metrics named unit-p50 and
// unit-p99 (p99 is the largest sample when there are fewer than 100).
func ReportPercentiles(b *testing.B, samples []float64, unit string) {
	b.Helper()
	if len(samples) == 0 {
		return
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	b.ReportMetric(s[len(s)/2], unit+"-p50")
	b.ReportMetric(s[min(len(s)-1, len(s)*99/100)], unit+"-p99")
}
