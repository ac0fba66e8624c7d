//go:build !js

package machine

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// BenchmarkCallThroughEnvironment is one read-file call of a 4 KiB file through the environment,
// the relay's end a test server's socket, one call at a time: what the environment adds to a
// call, its file read included (cpu-us/op is this process's CPU time, both ends, per call).
func BenchmarkCallThroughEnvironment(b *testing.B) {
	root := fsroot.NewMemory()
	if err := root.WriteFile(context.Background(), "notes.md", []byte(strings.Repeat("notes ", 4096/6))); err != nil {
		b.Fatal(err)
	}
	url, conns := relaySocket(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, Config{Relay: url, Bearer: "vbx_bench", Root: root})
	ws := <-conns
	frame := readCall("notes.md", "bench")
	call := func() {
		if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ws.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for range 200 {
		call()
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := cpu()
	b.ResetTimer()
	for range b.N {
		call()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpu()-before).Microseconds())/float64(b.N), "cpu-us/op")
}
