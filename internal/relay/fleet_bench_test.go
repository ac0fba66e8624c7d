package relay

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// benchFleet starts three relays on one embedded NATS with a Go page on the first, whose memory
// root holds the 4 KiB file the benchmarks read.
func benchFleet(b *testing.B) []*member {
	nats := fleettest.Start(b)
	ms := []*member{startMember(b, nats, "bench", false), startMember(b, nats, "bench", false), startMember(b, nats, "bench", false)}
	root := fsroot.NewMemory()
	if err := root.WriteFile(context.Background(), "bench.txt", []byte(strings.Repeat("voicebox", 512))); err != nil {
		b.Fatal(err)
	}
	dialPage(b, ms[0], executor.New(root, executor.Options{}), nil)
	for _, m := range ms[1:] {
		connectedOn(b, m)
	}
	return ms
}

func benchRead(b *testing.B, m *member, id string) {
	a := m.Hub.Ask(context.Background(), wire.Call{CallID: id, Tool: "read-file", DescriptorID: executor.BuiltinDescriptor,
		Args: json.RawMessage(`{"path":"bench.txt"}`), BoundsEcho: json.RawMessage(`{}`)})
	if !a.OK || len(a.Observed) < 4096 {
		b.Fatalf("read-file answered %+v", a)
	}
}

// BenchmarkFleetRead4KiB: a read-file of 4 KiB from a Go page over /channel, asked on the
// executor's own relay (local) and on another relay of the fleet, which routes it by NATS
// request/reply (routed); the two are interleaved call by call so both see the same load. It
// reports the p50 and p99 of each, in microseconds.
func BenchmarkFleetRead4KiB(b *testing.B) {
	ms := benchFleet(b)
	for i := range 200 { // warm up the sockets, the subscription and the allocator
		benchRead(b, ms[0], "warm-l"+strconv.Itoa(i))
		benchRead(b, ms[1], "warm-r"+strconv.Itoa(i))
	}
	local := make([]time.Duration, 0, b.N)
	routed := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		id := strconv.Itoa(i)
		t0 := time.Now()
		benchRead(b, ms[0], "l"+id)
		t1 := time.Now()
		benchRead(b, ms[1], "r"+id)
		local, routed = append(local, t1.Sub(t0)), append(routed, time.Since(t1))
	}
	report := func(d []time.Duration, name string) {
		slices.Sort(d)
		at := func(q float64) float64 { return float64(d[min(len(d)-1, int(q*float64(len(d))))].Nanoseconds()) / 1e3 }
		b.ReportMetric(at(0.50), name+"-p50-us")
		b.ReportMetric(at(0.99), name+"-p99-us")
	}
	report(local, "local")
	report(routed, "routed")
}

// BenchmarkFleetCallsPerSecond: 4 KiB reads asked on all three relays at once, round robin, by
// parallel callers (GOMAXPROCS x 4); one page on the first relay answers them all. It reports
// calls per second.
func BenchmarkFleetCallsPerSecond(b *testing.B) {
	ms := benchFleet(b)
	var n atomic.Uint64
	b.SetParallelism(4)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			benchRead(b, ms[i%3], "p"+strconv.FormatUint(i, 10))
		}
	})
	b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "calls/s")
}
