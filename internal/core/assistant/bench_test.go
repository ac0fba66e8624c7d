package assistant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
)

// BenchmarkTypedTurn measures one typed turn end to end in process: POST /api/turn over loopback
// HTTP, the resolver, the mapping, the hub, a loopback /channel WebSocket to a page peer whose
// executor reads a 4 KiB file from a memory root, and the answer back.
func BenchmarkTypedTurn(b *testing.B) {
	r := newRig(b, assistant.Options{})
	p := r.page()
	if err := p.root.WriteFile(context.Background(), "notes.md", bytes.Repeat([]byte("note "), 4<<10/5)); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"transcript":"read notes.md"}`)
	var samples []float64
	for b.Loop() {
		t0 := time.Now()
		resp, err := http.Post(r.url+"/api/turn", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		samples = append(samples, float64(time.Since(t0).Microseconds()))
		var turn assistant.Turn
		if json.Unmarshal(raw, &turn) != nil || !turn.OK {
			b.Fatalf("the turn answered %s", raw)
		}
	}
	b.StopTimer()
	slices.Sort(samples)
	b.ReportMetric(samples[len(samples)/2], "us-p50")
	b.ReportMetric(samples[min(len(samples)-1, len(samples)*99/100)], "us-p99")
}
