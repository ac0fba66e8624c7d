package hub

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// benchRoot is a memory root holding the 4 KiB file the benchmarks read.
func benchRoot(b *testing.B) *fsroot.MemRoot {
	root := fsroot.NewMemory()
	if err := root.WriteFile(context.Background(), "bench.txt", []byte(strings.Repeat("voicebox", 512))); err != nil {
		b.Fatal(err)
	}
	return root
}

func readCall(id string) wire.Call {
	return wire.Call{CallID: id, Tool: "read-file", DescriptorID: executor.BuiltinDescriptor, Args: json.RawMessage(`{"path":"bench.txt"}`), BoundsEcho: json.RawMessage(`{}`)}
}

// reportPercentiles reports the p50 and p99 of per-operation durations in microseconds.
func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[min(len(d)-1, int(q*float64(len(d))))].Nanoseconds()) / 1e3 }
	b.ReportMetric(at(0.50), "us-p50")
	b.ReportMetric(at(0.99), "us-p99")
}

func askRead(b *testing.B, ask func(context.Context, wire.Call) wire.Answer, id string) {
	a := ask(context.Background(), readCall(id))
	if !a.OK || len(a.Observed) < 4096 {
		b.Fatalf("read-file answered %+v", a)
	}
}

// BenchmarkRelayRoundTripInProcess: the relay's router sends a read-file of 4 KiB over a real
// /channel WebSocket (loopback TCP) to a peer in this process that runs the executor door over a
// memory root, and reads the answer back.
func BenchmarkRelayRoundTripInProcess(b *testing.B) {
	r := startRelay(b, Options{}, server.Config{})
	hubtest.Serve(r.dial(b, r.origin("127.0.0.1"), nil), executor.New(benchRoot(b), executor.Options{}))
	r.waitRoot(b, connected)
	for i := range 200 { // warm up the socket and the allocator
		askRead(b, r.hub.Ask, "warm-"+itoa(i))
	}
	d := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		askRead(b, r.hub.Ask, r.hub.NewCallID())
		d = append(d, time.Since(start))
	}
	reportPercentiles(b, d)
}

// directPeer hands each call frame straight to a door and its answer straight back: no socket,
// so what is left is the relay's broker (encode the call, match and parse the answer) plus the
// executor side (parse, verify, read 4 KiB from memory, encode the answer).
type directPeer struct {
	door   *channel.Door
	broker *channel.Broker
}

func (p *directPeer) Connected() bool { return true }

func (p *directPeer) Send(frame []byte) error {
	if a := p.door.Serve(context.Background(), frame); a != nil {
		p.broker.Answer(a)
	}
	return nil
}

// BenchmarkRelaySideDirect measures the round trip with no socket: broker and door in one
// goroutine.
func BenchmarkRelaySideDirect(b *testing.B) {
	p := &directPeer{door: channel.NewDoor(executor.New(benchRoot(b), executor.Options{}), executor.BuiltinAdmitted(), channel.DoorOptions{})}
	p.broker = channel.New(channel.Page, p, channel.Options{})
	var seq int
	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		seq++
		start := time.Now()
		askRead(b, p.broker.Ask, "c"+itoa(seq))
		d = append(d, time.Since(start))
	}
	reportPercentiles(b, d)
}

// cannedPeer answers every call with one prepared 4 KiB answer (its callId patched in), so only
// the relay's own work is measured: encode the call, parse and match the answer.
type cannedPeer struct {
	broker       *channel.Broker
	before, rest []byte
}

func (p *cannedPeer) Connected() bool { return true }

func (p *cannedPeer) Send(frame []byte) error {
	c, err := wire.ParseCall(frame)
	if err != nil {
		return err
	}
	id, _ := json.Marshal(c.CallID)
	p.broker.Answer(slices.Concat(p.before, id, p.rest))
	return nil
}

// BenchmarkRelaySideOnly is the relay's share of a 4 KiB read round trip (the peer's parse of
// the call is included, its execution is not).
func BenchmarkRelaySideOnly(b *testing.B) {
	obs, _ := json.Marshal(map[string]any{"path": "bench.txt", "size": 4096, "bytes": 4096, "truncated": false, "encoding": "utf-8", "content": strings.Repeat("voicebox", 512)})
	frame, err := wire.OK("ID", obs).MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	i := strings.Index(string(frame), `"ID"`)
	p := &cannedPeer{before: frame[:i], rest: frame[i+4:]}
	p.broker = channel.New(channel.Page, p, channel.Options{})
	var seq int
	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		seq++
		start := time.Now()
		askRead(b, p.broker.Ask, "c"+itoa(seq))
		d = append(d, time.Since(start))
	}
	reportPercentiles(b, d)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
