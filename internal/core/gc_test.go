package core

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// TestGCPercentKeepsTheHeadroomBounded: a small live heap gets MaxGCPercent, a larger one the
// GOGC that lets it grow by GCHeadroomBytes, and one past the headroom Go's default; the heap's
// goal is never more than GCHeadroomBytes past what is live, or twice what is live.
func TestGCPercentKeepsTheHeadroomBounded(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, MaxGCPercent},
		{1 << 20, MaxGCPercent},
		{GCHeadroomBytes / 4, MaxGCPercent},
		{GCHeadroomBytes / 2, 200},
		{GCHeadroomBytes, defaultGCPercent},
		{4 * GCHeadroomBytes, defaultGCPercent},
	} {
		if got := gcPercentFor(tc.live); got != tc.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
	for live := uint64(1 << 16); live < 1<<32; live = live*3/2 + 1 {
		goal := live + live*uint64(gcPercentFor(live))/100
		if goal > max(live+GCHeadroomBytes, 2*live) {
			t.Fatalf("a live heap of %d bytes may grow to %d", live, goal)
		}
	}
}

// TestTuneCollectorLeavesTheOperatorsSetting: with GOGC or GOMEMLIMIT set, the collector is not
// tuned; without, each collection sets GOGC from the live heap it left (half the headroom held
// live here, so the GOGC it sets is not the one it starts with).
func TestTuneCollectorLeavesTheOperatorsSetting(t *testing.T) {
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(v, "100")
		if TuneCollector() {
			t.Errorf("TuneCollector tuned with %s set", v)
		}
		t.Setenv(v, "")
	}
	if !TuneCollector() {
		t.Fatal("TuneCollector did not tune with neither variable set")
	}
	held := make([]byte, GCHeadroomBytes/2)
	defer runtime.KeepAlive(held)
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		metrics.Read(gogc)
		if got, want := int(gogc[0].Value.Uint64()), gcPercentFor(gogc[1].Value.Uint64()); got == want && got < MaxGCPercent {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d after collections, want %d for %d bytes live", got, want, gogc[1].Value.Uint64())
		}
	}
}
