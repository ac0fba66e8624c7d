//go:build !js

package tests

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkMiniAppToolCall measures one mini-app tool call end to end, twice: from the page's
// own API (main thread -> worker: validation -> the worker's port to the app's document -> the
// app's execute, and back), and from the relay (POST /api/root/call -> /channel -> the worker ->
// the same path -> the relay's answer). Beside the latencies it reports the CPU time each call
// costs the processes this test started (the relay and all of Chromium's, see childrenCPU): on a
// 2-core machine the p50 follows that more than any single hop.
//
// With VOICEBOX_BENCH_MINIAPP_BEFORE naming another build's relay binary (main's, say: it carries
// its page and wasm inside it), that relay is started too, with a tab of its own, and the page
// path is measured on both in turns (rounds of miniAppRound calls, the order swapped each round),
// reported as page-before-us and page-before-cpu-us/call: a change measured before and after in
// one run, under the same load.
func BenchmarkMiniAppToolCall(b *testing.B) {
	relay := harness.StartRelay(b)
	type side struct {
		tab *harness.Tab
		us  []float64
		cpu float64
	}
	open := func(url string) *side {
		tab := harness.NewTab(b)
		tab.Quiet()
		tab.Navigate(url)
		harness.WaitFor[bool](tab, `!!(window.voicebox && voicebox.miniApps) && !document.querySelector('#new-file').disabled`, readyBound)
		harness.Eval[string](tab, `voicebox.miniApps.launch({name: 'Scoreboard'}).then(a => a.appId)`)
		harness.WaitFor[bool](tab, `voicebox.miniApps.tools('app_scoreboard').length === 4`, appBound)
		return &side{tab: tab}
	}
	page := open(relay.URL)
	sides := []*side{page}
	var before *side
	if bin := os.Getenv("VOICEBOX_BENCH_MINIAPP_BEFORE"); bin != "" {
		before = open(harness.StartAlone(b, bin).URL)
		sides = append(sides, before)
	}
	const n = 300
	var fromRelay []float64
	var relayCPU float64
	name := miniapp.ModelName("app_scoreboard", "add_points")
	for b.Loop() {
		for round := range n / miniAppRound {
			for i := range sides {
				s := sides[(i+round)%len(sides)]
				c0 := childrenCPU()
				s.us = append(s.us, harness.Eval[[]float64](s.tab, fmt.Sprintf(`(async () => {
					const out = [];
					for (let i = 0; i < %d; i++) {
						const t0 = performance.now();
						await voicebox.miniApps.call('app_scoreboard', 'add_points', {team: 'home', points: 1});
						out.push((performance.now() - t0) * 1000);
					}
					return out;
				})()`, miniAppRound))...)
				s.cpu += childrenCPU() - c0
			}
		}
		c1 := childrenCPU()
		for range n {
			t0 := time.Now()
			if a := relay.Call(b, name, map[string]any{"team": "away", "points": 1}); !a.OK {
				b.Fatalf("the relay's call was refused: %s", a.Raw)
			}
			fromRelay = append(fromRelay, float64(time.Since(t0).Microseconds()))
		}
		relayCPU += childrenCPU() - c1
	}
	b.StopTimer()
	b.ReportMetric(page.cpu/float64(len(page.us))*1e6, "page-cpu-us/call")
	b.ReportMetric(relayCPU/float64(len(fromRelay))*1e6, "relay-cpu-us/call")
	harness.ReportPercentiles(b, page.us, "page-us")
	harness.ReportPercentiles(b, fromRelay, "relay-us")
	if before != nil {
		b.ReportMetric(before.cpu/float64(len(before.us))*1e6, "page-before-cpu-us/call")
		harness.ReportPercentiles(b, before.us, "page-before-us")
	}
}

// miniAppRound is how many page calls BenchmarkMiniAppToolCall makes in one turn of a side.
const miniAppRound = 25

// childrenCPU is the CPU time, in seconds, that the processes descending from this test binary
// and still running have spent (user and system, from /proc; 0 where there is none). Clock ticks
// are 10 ms: read it around hundreds of calls, not one.
func childrenCPU() float64 {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	spent := map[int]float64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state, ppid, ... utime (14th
		// field of the line), stime (15th).
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		user, _ := strconv.ParseFloat(f[11], 64)
		system, _ := strconv.ParseFloat(f[12], 64)
		spent[pid] = (user + system) / clockTicks
	}
	me, total := os.Getpid(), 0.0
	for pid, t := range spent {
		for p, hops := parent[pid], 0; p > 1 && hops < maxProcDepth; p, hops = parent[p], hops+1 {
			if p == me {
				total += t
				break
			}
		}
	}
	return total
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTicks = 100

// maxProcDepth bounds the walk from a process up to this test binary (Chromium's processes are
// two or three levels below it).
const maxProcDepth = 16
