//go:build !js

package tests

import (
	"cmp"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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
// one run, under the same load. With VOICEBOX_BENCH_CPU_BY_PROCESS set, the page path's CPU is
// printed by process; with VOICEBOX_BENCH_CPU_BY_THREAD, each side's by Chromium's process and
// thread (CrRendererMain, DedicatedWorker thread, Chrome_ChildIOThread, ...), whose clock ticks
// of 10 ms want more calls than the 300 a side of each path: VOICEBOX_BENCH_MINIAPP_CALLS sets
// how many.
//
// A side's calls are measured in two regimes. Back to back (page-us): each call made as the last
// one is answered, in turns; a turn's first miniAppTurnStart calls follow the pause between turns
// and are reported apart as well (page-turnstart-us-p50, and page-steady-us for the rest), since
// they cost what a call after a pause does. Spaced (page-spaced-us, p50 and p90): each call after miniAppPause
// of idle, as a person's spoken calls come, miniAppSpaced a side in turns of miniAppSpacedTurn;
// page-spaced-cpu-us/call is their CPU less that of the same pauses without calls. A call after a
// pause finds every thread on its path cold and costs its threads two to three times the CPU of a
// call back to back (BENCHMARKS.md, call48). The relay path is measured spaced too
// (relay-spaced-us), the path a spoken call takes. VOICEBOX_BENCH_MINIAPP_DUMP names a file to
// write every back-to-back page call to, one a line: its side (0 this build, 1 the build before),
// its turn, its place in the turn and its microseconds.
//
// With VOICEBOX_BENCH_MINIAPP_FLOOR set, the call's floor is measured as further sides in the same
// rounds (floor-us, floor-cpu-us/call, ...; tests/miniappfloor): the same app (the scoreboard
// sample) in a sandboxed frame of its own process, called from a page through a dedicated worker
// over a MessagePort, the same four messages, with plain JavaScript in the worker (no Go, no
// checks) and a stand-in for the SDK ("floor"; with the SDK's watch of the document for forms,
// "floor-observed"), or the product's SDK ("floor-sdk"; in a frame of
// another site as the bridge nests the app, "floor-sdk-nested"; and
// "floor-sdk-before", the SDK file VOICEBOX_BENCH_MINIAPP_FLOOR_SDK_BEFORE names). What the
// product costs over the floor is the worker's Go, the SDK and the bridge's frame; the floor itself
// is Chromium's messages and the app's drawing.
func BenchmarkMiniAppToolCall(b *testing.B) {
	relay := harness.StartRelay(b)
	type side struct {
		tab *harness.Tab
		// call is a JavaScript function of a call's args that makes one add_points call.
		call string
		us   []float64
		cpu  float64
		// turnStart and steady are us split by a call's place in its turn; spaced are the calls
		// made after a pause, spacedCPU their CPU in seconds, idleCPU the same pauses' alone.
		turnStart, steady, spaced []float64
		spacedCPU, idleCPU        float64
		// byThread is its CPU by Chromium's process and thread over its turns
		// (VOICEBOX_BENCH_CPU_BY_THREAD): the other side's threads idle meanwhile.
		byThread processCPU
	}
	// The page's calls are of add_points (it writes the app's document, which then draws a frame),
	// or with VOICEBOX_BENCH_MINIAPP_TOOL=get_scores of that (it reads it: no frame), so the
	// drawing's share of a side's CPU can be told from the rest: a side whose calls are faster
	// shares one frame among more of them.
	pageCall, floorCall := `(args) => voicebox.miniApps.call('app_scoreboard', 'add_points', args)`, `(args) => floor.call('add_points', args)`
	if os.Getenv("VOICEBOX_BENCH_MINIAPP_TOOL") == "get_scores" {
		pageCall, floorCall = `() => voicebox.miniApps.call('app_scoreboard', 'get_scores', {})`, `() => floor.call('get_scores', {})`
	}
	warm := func(tab *harness.Tab, call string) {
		// Warmed up first: for some seconds after a page and its app load, Chromium's own UI
		// renderer and the browser process work (about 2 ms of CPU per call over the first few
		// hundred calls, none after), and the page's renderer compiles the worker's hot wasm
		// again in its thread pool (250-700 us of CPU per call over the first 600-900 calls,
		// 30-80 after 1,200), neither of which is the call's cost.
		harness.Eval[bool](tab, fmt.Sprintf(`(async () => {
			const call = %s;
			for (let i = 0; i < %d; i++) await call({team: 'home', points: 1});
			return true;
		})()`, call, miniAppWarmUp))
	}
	open := func(url string) *side {
		tab := harness.NewTabFor(b, miniAppTabBound)
		tab.Quiet()
		tab.Navigate(url)
		harness.WaitFor[bool](tab, `!!(window.voicebox && voicebox.miniApps) && !document.querySelector('#new-file').disabled`, readyBound)
		harness.Eval[string](tab, `voicebox.miniApps.launch({name: 'Scoreboard'}).then(a => a.appId)`)
		harness.WaitFor[bool](tab, `voicebox.miniApps.tools('app_scoreboard').length === 4`, appBound)
		warm(tab, pageCall)
		return &side{tab: tab, call: pageCall, byThread: processCPU{}}
	}
	page := open(relay.URL)
	sides := []*side{page}
	var before *side
	if bin := os.Getenv("VOICEBOX_BENCH_MINIAPP_BEFORE"); bin != "" {
		before = open(harness.StartAlone(b, bin).URL)
		sides = append(sides, before)
	}
	// The floors (VOICEBOX_BENCH_MINIAPP_FLOOR): the same four messages on the same threads with
	// none of the product's work, the app's webMcp a stand-in ("floor"; "floor-observed" with a
	// MutationObserver like the SDK's forms watch), or the product's SDK ("floor-sdk"), that in a frame of another site as the product's bridge is
	// ("floor-sdk-nested"); with VOICEBOX_BENCH_MINIAPP_FLOOR_SDK_BEFORE naming another SDK's
	// file, that one too ("floor-sdk-before"). VOICEBOX_BENCH_MINIAPP_FLOOR_STYLE is the CSS of
	// the floors' outer frame (480x360 without a border by default).
	type floorSide struct {
		name string
		*side
	}
	var floors []floorSide
	if os.Getenv("VOICEBOX_BENCH_MINIAPP_FLOOR") != "" {
		url := serveMiniAppFloor(b)
		app := readFile(b, filepath.Join(harness.RepoRoot(), "samples", "scoreboard.html"))
		sdk := readFile(b, filepath.Join(harness.RepoRoot(), "public", "mini-app-sdk.js"))
		middle := strings.Replace(url, "127.0.0.1", "localhost", 1)
		middle = middle[:strings.LastIndex(middle, "/")] + "/miniapp-floor-middle.html"
		type floorKind struct {
			name, sdk, middle string
			observed          bool
		}
		sdks := []floorKind{{"floor", "", "", false}, {"floor-observed", "", "", true}, {"floor-sdk", sdk, "", false}, {"floor-sdk-nested", sdk, middle, false}}
		if f := os.Getenv("VOICEBOX_BENCH_MINIAPP_FLOOR_SDK_BEFORE"); f != "" {
			sdks = append(sdks, floorKind{"floor-sdk-before", readFile(b, f), "", false})
		}
		for _, f := range sdks {
			tab := harness.NewTabFor(b, miniAppTabBound)
			tab.Quiet()
			tab.Navigate(url)
			harness.Eval[bool](tab, fmt.Sprintf(`(floor.start(%s, %s, %s, %s, %t), true)`, strconv.Quote(app), strconv.Quote(f.sdk),
				strconv.Quote(os.Getenv("VOICEBOX_BENCH_MINIAPP_FLOOR_STYLE")), strconv.Quote(f.middle), f.observed))
			harness.WaitFor[bool](tab, `window.floor.ready`, appBound)
			s := &side{tab: tab, call: floorCall, byThread: processCPU{}}
			warm(tab, s.call)
			floors = append(floors, floorSide{f.name, s})
			sides = append(sides, s)
		}
	}
	var prof *harness.WorkerProfiler
	if os.Getenv("VOICEBOX_PROFILE") != "" {
		prof = harness.ProfileWorker(b, page.tab, "/worker.js")
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("VOICEBOX_BENCH_MINIAPP_CALLS")); err == nil && v >= miniAppRound {
		n = v / miniAppRound * miniAppRound
	}
	var fromRelay, relaySpaced []float64
	pageCPU, relayCPUBy := processCPU{}, processCPU{}
	var relayCPU float64
	name := miniapp.ModelName("app_scoreboard", "add_points")
	byThread := os.Getenv("VOICEBOX_BENCH_CPU_BY_THREAD") != ""
	for b.Loop() {
		for round := range n / miniAppRound {
			for i := range sides {
				s := sides[(i+round)%len(sides)]
				c0, by0 := childrenCPU(), childrenCPUByProcess()
				var th0 processCPU
				if byThread {
					th0 = childrenCPUByThread()
				}
				if prof != nil && s == page && round == 0 {
					prof.Start(b)
				}
				turn := harness.Eval[[]float64](s.tab, fmt.Sprintf(`(async () => {
					const call = %s;
					const out = [];
					for (let i = 0; i < %d; i++) {
						const t0 = performance.now();
						await call({team: 'home', points: 1});
						out.push((performance.now() - t0) * 1000);
					}
					return out;
				})()`, s.call, miniAppRound))
				s.us = append(s.us, turn...)
				s.turnStart = append(s.turnStart, turn[:miniAppTurnStart]...)
				s.steady = append(s.steady, turn[miniAppTurnStart:]...)
				if prof != nil && s == page && round == 0 {
					fmt.Println("the worker during a turn of page calls:")
					prof.Stop(b, os.Stdout, profileTop)
				}
				s.cpu += childrenCPU() - c0
				if byThread {
					s.byThread.add(childrenCPUByThread(), th0)
				}
				if s == page {
					pageCPU.add(childrenCPUByProcess(), by0)
				}
			}
		}
		spacedByThread := map[*side]processCPU{}
		for round := range miniAppSpaced / miniAppSpacedTurn {
			for i := range sides {
				s := sides[(i+round)%len(sides)]
				for _, calls := range []bool{true, false} {
					c0 := childrenCPU()
					var th0 processCPU
					if byThread && calls {
						th0 = childrenCPUByThread()
					}
					us := harness.Eval[[]float64](s.tab, fmt.Sprintf(`(async () => {
						const call = %s;
						const out = [];
						for (let i = 0; i < %d; i++) {
							await new Promise((resolve) => setTimeout(resolve, %d));
							if (!%t) continue;
							const t0 = performance.now();
							await call({team: 'away', points: 1});
							out.push((performance.now() - t0) * 1000);
						}
						return out;
					})()`, s.call, miniAppSpacedTurn, miniAppPause.Milliseconds(), calls))
					if !calls {
						s.idleCPU += childrenCPU() - c0
						continue
					}
					s.spacedCPU += childrenCPU() - c0
					s.spaced = append(s.spaced, us...)
					if byThread {
						if spacedByThread[s] == nil {
							spacedByThread[s] = processCPU{}
						}
						spacedByThread[s].add(childrenCPUByThread(), th0)
					}
				}
			}
		}
		if byThread {
			spacedByThread[page].print(os.Stdout, "spaced page calls, by thread, this build (the pauses' own idle included)", len(page.spaced))
		}
		c1, by1 := childrenCPU(), childrenCPUByProcess()
		for range n {
			t0 := time.Now()
			if a := relay.Call(b, name, map[string]any{"team": "away", "points": 1}); !a.OK {
				b.Fatalf("the relay's call was refused: %s", a.Raw)
			}
			fromRelay = append(fromRelay, float64(time.Since(t0).Microseconds()))
		}
		relayCPU += childrenCPU() - c1
		relayCPUBy.add(childrenCPUByProcess(), by1)
		for range miniAppSpaced {
			time.Sleep(miniAppPause)
			t0 := time.Now()
			if a := relay.Call(b, name, map[string]any{"team": "away", "points": 1}); !a.OK {
				b.Fatalf("the relay's call was refused: %s", a.Raw)
			}
			relaySpaced = append(relaySpaced, float64(time.Since(t0).Microseconds()))
		}
	}
	b.StopTimer()
	b.ReportMetric(page.cpu/float64(len(page.us))*1e6, "page-cpu-us/call")
	b.ReportMetric(relayCPU/float64(len(fromRelay))*1e6, "relay-cpu-us/call")
	harness.ReportPercentiles(b, page.us, "page-us")
	report := func(s *side, name string) {
		harness.ReportPercentiles(b, s.steady, name+"-steady-us")
		b.ReportMetric(median(s.turnStart), name+"-turnstart-us-p50")
		reportP50P90(b, s.spaced, name+"-spaced-us")
		b.ReportMetric((s.spacedCPU-s.idleCPU)/float64(max(len(s.spaced), 1))*1e6, name+"-spaced-cpu-us/call")
	}
	report(page, "page")
	harness.ReportPercentiles(b, fromRelay, "relay-us")
	reportP50P90(b, relaySpaced, "relay-spaced-us")
	if os.Getenv("VOICEBOX_BENCH_CPU_BY_PROCESS") != "" {
		// Which renderer is the page's: its main thread busy for a while, alone.
		by0 := childrenCPUByProcess()
		harness.Eval[bool](page.tab, `(() => { const t = performance.now(); while (performance.now() - t < 500); return true; })()`)
		burnt := processCPU{}
		burnt.add(childrenCPUByProcess(), by0)
		burnt.print(os.Stdout, "the page's main thread busy for 500 ms", 1)
		pageCPU.print(os.Stdout, "page path", len(page.us))
		relayCPUBy.print(os.Stdout, "relay path", len(fromRelay))
	}
	if byThread {
		page.byThread.print(os.Stdout, "page path, by thread, this build", len(page.us))
		if before != nil {
			before.byThread.print(os.Stdout, "page path, by thread, the build before", len(before.us))
		}
		for _, f := range floors {
			f.byThread.print(os.Stdout, "page path, by thread, "+f.name, len(f.us))
		}
	}
	if f := os.Getenv("VOICEBOX_BENCH_MINIAPP_DUMP"); f != "" {
		var sb strings.Builder
		sb.WriteString("side turn place us\n")
		for i, s := range sides {
			for j, us := range s.us {
				fmt.Fprintf(&sb, "%d %d %d %.0f\n", i, j/miniAppRound, j%miniAppRound, us)
			}
		}
		if err := os.WriteFile(f, []byte(sb.String()), 0o644); err != nil {
			b.Error(err)
		}
	}
	if before != nil {
		b.ReportMetric(before.cpu/float64(len(before.us))*1e6, "page-before-cpu-us/call")
		harness.ReportPercentiles(b, before.us, "page-before-us")
		report(before, "page-before")
	}
	for _, f := range floors {
		b.ReportMetric(f.cpu/float64(len(f.us))*1e6, f.name+"-cpu-us/call")
		harness.ReportPercentiles(b, f.us, f.name+"-us")
		report(f.side, f.name)
	}
}

//go:embed miniappfloor
var miniAppFloor embed.FS

// serveMiniAppFloor serves the floor of a mini-app tool call (tests/miniappfloor: the product's
// four messages between the page, a dedicated worker and a sandboxed app document, with none of
// its work) and returns its page's address.
func serveMiniAppFloor(b *testing.B) string {
	files, _ := fs.Sub(miniAppFloor, "miniappfloor")
	srv := httptest.NewServer(http.FileServerFS(files))
	b.Cleanup(srv.Close)
	return srv.URL + "/miniapp-floor.html"
}

// readFile is the text of the file at path.
func readFile(b *testing.B, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// reportP50P90 reports the p50 and p90 of samples as unit-p50 and unit-p90: for the spaced calls,
// of which there are too few for a p99 that is not their slowest.
func reportP50P90(b *testing.B, samples []float64, unit string) {
	s := slices.Clone(samples)
	slices.Sort(s)
	b.ReportMetric(s[len(s)/2], unit+"-p50")
	b.ReportMetric(s[len(s)*9/10], unit+"-p90")
}

// miniAppTabBound bounds the life of each of BenchmarkMiniAppToolCall's tabs: with the floors and
// more calls a side its run takes longer than harness.TabBound, which would close the tab that
// holds the workspace under the relay's calls (page-closed).
const miniAppTabBound = 8 * time.Minute

// miniAppWarmUp is how many calls BenchmarkMiniAppToolCall makes on a side before it measures.
const miniAppWarmUp = 1200

// miniAppRound is how many page calls BenchmarkMiniAppToolCall makes in one turn of a side.
const miniAppRound = 25

// miniAppTurnStart is how many of a turn's first calls are reported apart: they follow the pause
// between turns (the harness's round trip, the other side's turn) and cost what a call after a
// pause does (2.2-4.1 ms p50 for the first, 1.3-1.5 for the third, 0.9-1.1 from the fourth on).
const miniAppTurnStart = 3

// miniAppPause is the idle before each spaced call; miniAppSpaced is how many a side makes, in
// turns of miniAppSpacedTurn, each turn followed by the same pauses without calls (their CPU is
// the pauses' own, taken off the calls').
const (
	miniAppPause      = 50 * time.Millisecond
	miniAppSpaced     = 60
	miniAppSpacedTurn = 10
)

// childrenCPU is the CPU time, in seconds, that the processes descending from this test binary
// and still running have spent (user and system, from /proc; 0 where there is none). Clock ticks
// are 10 ms: read it around hundreds of calls, not one.
func childrenCPU() float64 {
	total := 0.0
	for _, t := range childrenCPUByProcess() {
		total += t
	}
	return total
}

// processCPU is CPU seconds by process, named by processName.
type processCPU map[string]float64

// add adds what each process spent between from and to (two childrenCPUByProcess readings).
func (c processCPU) add(to, from processCPU) {
	for name, t := range to {
		c[name] += t - from[name]
	}
}

// print writes the CPU each process spent per call, largest first; calls is how many were made.
func (c processCPU) print(w io.Writer, what string, calls int) {
	names := slices.Collect(maps.Keys(c))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(c[b], c[a]) })
	fmt.Fprintf(w, "CPU per call by process, %s (%d calls):\n", what, calls)
	for _, name := range names {
		if us := c[name] / float64(calls) * 1e6; us >= 1 {
			fmt.Fprintf(w, "  %8.0f us  %s\n", us, name)
		}
	}
}

// childrenCPUByProcess is childrenCPU per process, each named by processName (its pid after it).
func childrenCPUByProcess() processCPU {
	out := processCPU{}
	me := os.Getpid()
	parents, spent := procTable()
	for pid, t := range spent {
		for p, hops := parents[pid], 0; p > 1 && hops < maxProcDepth; p, hops = parents[p], hops+1 {
			if p == me {
				out[fmt.Sprintf("%s %d", processName(pid), pid)] = t
				break
			}
		}
	}
	return out
}

// childrenCPUByThread is childrenCPUByProcess per thread, each named by its process's name and
// the thread's own (Chromium names its threads: CrRendererMain, DedicatedWorker thread,
// NetworkService, ...); threads of one name in one process are summed. Each thread's figure is
// the scheduler's own count in nanoseconds (/proc/PID/task/TID/schedstat), not stat's 10 ms
// ticks; with VOICEBOX_BENCH_RUNQUEUE set, each thread's time waiting on a run queue (runnable,
// not running: the CPU was another's) is added as a row of its own, named "... (runqueue)".
func childrenCPUByThread() processCPU {
	out := processCPU{}
	me := os.Getpid()
	parents, _ := procTable()
	runQueue := os.Getenv("VOICEBOX_BENCH_RUNQUEUE") != ""
	for pid := range parents {
		mine := false
		for p, hops := parents[pid], 0; p > 1 && hops < maxProcDepth; p, hops = parents[p], hops+1 {
			if p == me {
				mine = true
				break
			}
		}
		if !mine {
			continue
		}
		proc := processName(pid) + " " + strconv.Itoa(pid)
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, t := range tasks {
			dir := "/proc/" + strconv.Itoa(pid) + "/task/" + t.Name()
			comm, err1 := os.ReadFile(dir + "/comm")
			sched, err2 := os.ReadFile(dir + "/schedstat")
			f := strings.Fields(string(sched))
			if err1 != nil || err2 != nil || len(f) < 2 {
				continue
			}
			name := proc + " / " + strings.TrimSpace(string(comm))
			run, _ := strconv.ParseFloat(f[0], 64)
			out[name] += run / 1e9
			if runQueue {
				wait, _ := strconv.ParseFloat(f[1], 64)
				out[name+" (runqueue)"] += wait / 1e9
			}
		}
	}
	return out
}

// procTable reads every process's parent and CPU seconds (user and system) from /proc.
func procTable() (parent map[int]int, spent map[int]float64) {
	entries, _ := os.ReadDir("/proc")
	parent, spent = map[int]int{}, map[int]float64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
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
	return parent, spent
}

// processName names a process by its command and Chromium's --type (and the renderer of
// Chromium's own UI, --top-chrome-webui, apart from the pages').
func processName(pid int) string {
	raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	// Chromium rewrites its processes' titles: the arguments may be one string, space-separated.
	args := strings.Fields(strings.ReplaceAll(string(raw), "\x00", " "))
	if len(args) == 0 {
		return "?"
	}
	name := filepath.Base(args[0])
	if strings.HasPrefix(name, "voicebox-chromium") {
		name = "chromium"
	}
	for _, a := range args[1:] {
		switch {
		case strings.HasPrefix(a, "--type="):
			name += " " + strings.TrimPrefix(a, "--type=")
		case a == "--top-chrome-webui":
			name += " (UI)"
		case strings.HasPrefix(a, "--utility-sub-type="):
			name += " " + strings.TrimPrefix(a, "--utility-sub-type=")
		case strings.HasPrefix(a, "--renderer-client-id="):
			name += " #" + strings.TrimPrefix(a, "--renderer-client-id=")
		}
	}
	return name
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTicks = 100

// maxProcDepth bounds the walk from a process up to this test binary (Chromium's processes are
// two or three levels below it).
const maxProcDepth = 16
