//go:build !js

package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/tests/harness"
)

const (
	// liveLongReplyMs is the reply the underrun benchmark streams: a minute, as a long answer.
	liveLongReplyMs = 60_000
	// liveLongReplySettle bounds the wait, once the vendor sent the last chunk, for the reply to
	// be heard to its end.
	liveLongReplySettle = 15 * time.Second
	// liveLateSend is how late against the real-time schedule the fixture may send a chunk before
	// it is counted late: the player's starting cushion (20 ms), which such a chunk can overrun
	// whatever the page does.
	liveLateSend = 20 * time.Millisecond
)

// BenchmarkLiveVoiceUnderruns streams a 60 s reply from the vendor fixture at real time (a 100 ms
// chunk each 100 ms, on a schedule kept from the start), as a vendor speaking as it thinks, to
// the product page idle, busy (a 1,000-entry list redrawn) and with a mini-app sending within its
// budget, and to the hand-written worker floor page (tests/livefloor) idle and busy, one after
// the other in the same run. It reports what each page's player saw and what was heard:
//   - underruns: the product page's player's count (voicebox.live.stats()); the floor's player
//     counts each time it ran dry, less the reply's end;
//   - late-ms: the silence the underruns put inside the reply (the product page's player);
//   - gaps-heard: the silences of 5 ms or more the ear (the tap) heard inside the reply;
//   - stretch-ms: how much longer than 60 s the reply took to be heard, first sound to last (the
//     platform's clock, getOutputTimestamp);
//   - chunks: the reply's chunks that reached the page (600 were sent);
//   - dropped-chunks: reply chunks let go before the player (the product page's worker);
//   - vendor-late-ms, vendor-late-chunks: how late the fixture sent its latest chunk against the
//     real-time schedule, and how many it sent more than liveLateSend late (on a loaded machine
//     the sender is woken late too: an underrun then is not the page's).
func BenchmarkLiveVoiceUnderruns(b *testing.B) {
	bench := startLiveBench(b, nil)
	reply := vendorfixture.Tone(24000, liveLongReplyMs, 440)
	runs := []struct {
		page liveBenchPage
		load string
	}{
		{liveBenchPages[0], "idle"}, {liveBenchPages[0], "busy"}, {liveBenchPages[0], "app"},
		{liveBenchPages[2], "idle"}, {liveBenchPages[2], "busy"},
	}
	for _, r := range runs {
		p, load := r.page, r.load
		b.Run(p.name+"-"+load, func(b *testing.B) {
			for range b.N {
				tab, conn, appID := bench.open(b, p, load)
				product := p.name == "page"
				heard0 := harness.Eval[int](tab, `__bench.heard.length`)
				silent0 := harness.Eval[int](tab, `__bench.silent.length`)
				dry0 := 0
				if !product {
					dry0 = harness.Eval[int](tab, `window.floor.dry`)
				}
				vendorLate := conn.SayInRealTime("", reply)
				// The reply is heard to its end when the ear has heard as much sound as was sent
				// since its first onset (gaps only add to it); bounded.
				ended := fmt.Sprintf(`(() => {
					const on = __bench.heard.slice(%d), off = __bench.silent.slice(%d);
					return on.length > 0 && off.length > 0 && off[off.length - 1] - on[0] >= %d && off.length >= on.length;
				})()`, heard0, silent0, liveLongReplyMs-50)
				harness.WaitFor[bool](tab, ended, liveLongReplySettle)
				type heard struct {
					On  []float64 `json:"on"`
					Off []float64 `json:"off"`
				}
				h := harness.Eval[heard](tab, fmt.Sprintf(`({on: __bench.heard.slice(%d), off: __bench.silent.slice(%d)})`, heard0, silent0))
				stretch := h.Off[len(h.Off)-1] - h.On[0] - liveLongReplyMs
				b.ReportMetric(float64(len(h.On)-1), "gaps-heard")
				b.ReportMetric(stretch, "stretch-ms")
				worst, lateChunks := time.Duration(0), 0
				for _, d := range vendorLate {
					worst = max(worst, d)
					if d > liveLateSend {
						lateChunks++
					}
				}
				b.ReportMetric(float64(worst.Microseconds())/1000, "vendor-late-ms")
				b.ReportMetric(float64(lateChunks), "vendor-late-chunks")
				if product {
					type stats struct {
						Underruns     float64 `json:"underruns"`
						LateMs        float64 `json:"lateMs"`
						LeadMs        float64 `json:"leadMs"`
						ChunksDropped float64 `json:"chunksDropped"`
					}
					s := harness.Eval[stats](tab, `voicebox.live.stats()`)
					b.ReportMetric(harness.Eval[float64](tab, `voicebox.live.stats().chunksReceived`), "chunks")
					b.ReportMetric(s.Underruns, "underruns")
					b.ReportMetric(s.LateMs, "late-ms")
					b.ReportMetric(s.LeadMs, "lead-ms")
					b.ReportMetric(s.ChunksDropped, "dropped-chunks")
				} else {
					// The floor's player runs dry once at the reply's end; every other time is an underrun.
					b.ReportMetric(float64(harness.Eval[int](tab, `window.floor.dry`)-dry0-1), "underruns")
					b.ReportMetric(harness.Eval[float64](tab, `window.floor.chunks`), "chunks")
				}
				if load == "app" {
					if why := harness.Eval[string](tab, fmt.Sprintf(`JSON.stringify(voicebox.miniApps.stats(%q).stopped || '')`, appID)); why != `""` {
						b.Fatalf("the chatter app was stopped: %s", why)
					}
				}
				if load == "busy" {
					b.ReportMetric(harness.Eval[float64](tab, `(__bench.stopBusy(), __bench.redraws)`), "redraws")
					b.ReportMetric(harness.Eval[float64](tab, `__bench.redrawMs / __bench.redraws`), "redraw-ms")
				}
				tab.Close()
			}
		})
	}
	bench.checkVendor(b)
}
