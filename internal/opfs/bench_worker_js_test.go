//go:build js && voicebox_worker

package opfs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// The worker side of the OPFS benchmarks: the same operations tests/opfs_bench_test.go times in
// page JavaScript on the main thread, done here by the page's Go in its worker. Each reports the
// p50 and p99 of its operations in microseconds.

const benchArea = "bench-go"

func benchRoot(b *testing.B) *Root {
	r, err := OpenOPFS(context.Background(), benchArea)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	return r
}

func reportPercentiles(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(samples[len(samples)/2]), "us-p50")
	b.ReportMetric(us(samples[min(len(samples)-1, len(samples)*99/100)]), "us-p99")
}

func timeOps(b *testing.B, op func() error) {
	var samples []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, samples)
}

func call(tool string, args any) wire.Call {
	raw, _ := json.Marshal(args)
	return wire.Call{CallID: "bench", Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: raw, BoundsEcho: json.RawMessage(`{}`)}
}

var benchSizes = []struct {
	name string
	n    int
}{{"4KiB", 4 << 10}, {"8MiB", 8 << 20}}

// BenchmarkWorkerRead reads a file through the executor's read-file (4 KiB: what a tool call
// does) and, for 8 MiB, the whole file through the root (read-file returns at most 64 KiB).
func BenchmarkWorkerRead(b *testing.B) {
	ctx := context.Background()
	r := benchRoot(b)
	exec := executor.New(r, executor.Options{})
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			name := "read-" + size.name
			if err := r.WriteFile(ctx, name, bytes.Repeat([]byte("r"), size.n)); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size.n))
			if size.n <= executor.MaxReadBytes {
				c := call("read-file", map[string]string{"path": name})
				timeOps(b, func() error { _, err := exec.Execute(ctx, c); return err })
				return
			}
			timeOps(b, func() error {
				got, err := r.ReadFile(ctx, name)
				if err == nil && len(got) != size.n {
					err = fmt.Errorf("read %d bytes, want %d", len(got), size.n)
				}
				return err
			})
		})
	}
}

// BenchmarkWorkerWrite replaces a file atomically: 4 KiB through the executor's write-file (what
// a tool call does), 8 MiB through the root (the way large content arrives: an upload; a tool
// call may write at most executor.MaxWriteBytes, as a JSON string).
func BenchmarkWorkerWrite(b *testing.B) {
	ctx := context.Background()
	r := benchRoot(b)
	exec := executor.New(r, executor.Options{})
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			name := "write-" + size.name
			data := bytes.Repeat([]byte("w"), size.n)
			b.SetBytes(int64(size.n))
			if size.n <= executor.MaxWriteBytes {
				c := call("write-file", map[string]string{"path": name, "content": string(data)})
				timeOps(b, func() error { _, err := exec.Execute(ctx, c); return err })
				return
			}
			timeOps(b, func() error { return r.WriteFile(ctx, name, data) })
		})
	}
}
