package core

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The bounds of the tuned collector (TuneCollector).
const (
	// GCHeadroomBytes bounds how far past the live heap the tuned collector lets the heap grow
	// before its next cycle (Go's default lets it grow by as much as is live): a relay with less
	// live than this collects less often and holds at most this much past what is live; one with
	// more collects as Go's default does.
	GCHeadroomBytes = 32 << 20
	// MaxGCPercent bounds the GOGC the tuned collector sets, however small the live heap: the heap
	// grows to at most five times what is live before the next cycle.
	MaxGCPercent = 400
)

// defaultGCPercent is Go's own GOGC, the least the tuned collector sets.
const defaultGCPercent = 100

// TuneCollector has the garbage collector run less often while the live heap is small: after
// each cycle GOGC is set so that the next cycle starts once GCHeadroomBytes more are allocated,
// within Go's default (100) and MaxGCPercent. A relay's live heap is a few MiB, and an MCP read
// makes about 300 KB of garbage (the SDK's JSON decoder starts a 32 KiB buffer for every value it
// decodes), so at Go's default the collector ran every few dozen reads and was a large share of
// the relay's CPU. The heap is never more than GCHeadroomBytes past what is live, or twice what is
// live when that is more (Go's default), so no soft memory limit is needed, and none is set:
// a limit would make the collector run ever more often as the live heap neared it.
//
// An operator's GOGC or GOMEMLIMIT wins: with either set, the collector is left as the runtime
// set it from them, and TuneCollector reports false.
func TuneCollector() bool {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return false
	}
	t := &gcTuner{percent: MaxGCPercent, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	debug.SetGCPercent(t.percent)
	t.arm()
	return true
}

// gcTuner sets GOGC after each collection from the live heap it left. One sentinel is armed at a
// time, so its cleanup never runs concurrently with another.
type gcTuner struct {
	percent int
	live    []metrics.Sample
}

// gcSentinel is allocated for its cleanup to run after the next collection; it holds a pointer
// so that it is never packed with other small objects by the tiny allocator.
type gcSentinel struct{ _ *gcSentinel }

func (t *gcTuner) arm() {
	runtime.AddCleanup(&gcSentinel{}, func(t *gcTuner) {
		t.tune()
		t.arm()
	}, t)
}

func (t *gcTuner) tune() {
	metrics.Read(t.live)
	if t.live[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(t.live[0].Value.Uint64()); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}

// gcPercentFor is the GOGC that lets a heap of live bytes grow by GCHeadroomBytes, within Go's
// default and MaxGCPercent.
func gcPercentFor(live uint64) int {
	if live == 0 || live*MaxGCPercent <= GCHeadroomBytes*100 {
		return MaxGCPercent
	}
	return max(defaultGCPercent, int(GCHeadroomBytes*100/live))
}
