//go:build !js

package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkTypedTurnThroughThePage measures a typed turn as the page's command box makes it:
// POST /api/turn {"transcript": "read notes.md"} -> the resolver and the catalogue -> /channel ->
// the page's worker reading 4 KiB from OPFS -> the turn's answer.
func BenchmarkTypedTurnThroughThePage(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	tab.Quiet()
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	if a := relay.Call(b, "write-file", map[string]string{"path": "notes.md", "content": strings.Repeat("note ", 4<<10/5)}); !a.OK {
		b.Fatalf("write-file: %s", a.Raw)
	}
	body := []byte(`{"transcript":"read notes.md"}`)
	const n = 300
	var samples []float64
	for b.Loop() {
		for range n {
			t0 := time.Now()
			resp, err := http.Post(relay.URL+"/api/turn", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			samples = append(samples, float64(time.Since(t0).Microseconds()))
			var turn struct{ OK bool }
			if json.Unmarshal(raw, &turn) != nil || !turn.OK {
				b.Fatalf("the turn answered %s", raw)
			}
		}
	}
	b.StopTimer()
	harness.ReportPercentiles(b, samples, "us")
}
