//go:build !js

package tests

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

//go:embed benchpeer
var benchPeer embed.FS

// benchRelay serves the checkout's public/ (built) plus the JavaScript peer page, with a hub on
// /channel, in this process, so a benchmark can time the hub's Ask directly.
func benchRelay(b *testing.B) (*hub.Hub, string) {
	return benchRelayOf(b, filepath.Join(harness.RepoRoot(), "public"))
}

// benchRelayOf is benchRelay serving the public/ folder src (another build's, say).
func benchRelayOf(b *testing.B, src string) (*hub.Hub, string) {
	b.Helper()
	public := b.TempDir()
	if err := os.CopyFS(public, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	peer, _ := fs.Sub(benchPeer, "benchpeer")
	if err := os.CopyFS(public, peer); err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{Public: public, Build: "bench", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	h := hub.New(hub.Options{})
	hub.Register(srv, h, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	b.Cleanup(func() { h.Close(); hs.Close() })
	return h, "http://" + ln.Addr().String()
}

func readCallFor(h *hub.Hub, path string) wire.Call {
	args, _ := json.Marshal(map[string]string{"path": path})
	return wire.Call{CallID: h.NewCallID(), Tool: "read-file", DescriptorID: executor.BuiltinDescriptor, Args: args, BoundsEcho: json.RawMessage(`{}`)}
}

// timeRoundTrips asks n read-file calls of path through h and returns their durations in us.
func timeRoundTrips(b *testing.B, h *hub.Hub, path string, n int) []float64 {
	b.Helper()
	var samples []float64
	for range n {
		start := time.Now()
		a := h.Ask(context.Background(), readCallFor(h, path))
		d := time.Since(start)
		if !a.OK {
			b.Fatalf("read-file answered %s: %s", a.Refused, a.Why)
		}
		samples = append(samples, float64(d)/float64(time.Microsecond))
	}
	return samples
}

// roundTripWarmUp is how many calls each Go page answers before BenchmarkRoundTripRelayPageRelay
// times any: enough for V8 to have optimized the worker's hot wasm (the thread pool's CPU per
// call falls from about 1.6 ms in the first 200 calls to under 0.2 ms after 800, load 11-14).
const roundTripWarmUp = 1000

// roundTripSteady is how many calls each Go page has answered in all when
// BenchmarkRoundTripRelayPageRelay times its rounds a second time (the -steady figures): V8's
// optimizing compiler, which after 1,000 calls still costs a Go page 150-300 us of CPU a call,
// costs it 0-140 (mostly 20-80) after 10,000-20,000 (BENCHMARKS.md, trip48).
const roundTripSteady = 20000

// warmUpStep is how many warm-up calls one line of the warm-up's CPU by thread covers.
const warmUpStep = 500

// profileTop is how many functions a worker profile lists, by self and by total time.
const profileTop = 60

// BenchmarkRoundTripRelayPageRelay times a 4 KiB read-file from the relay's hub to the page and
// back: the page's Go in its worker (the product), a plain JavaScript peer on the main thread (what
// the design is measured against) and a plain JavaScript peer in a dedicated worker reading
// through a sync access handle (the floor: the same socket, thread and storage without Go), in
// the same browser, alternating. The tabs are quiet (no Network or Log domain).
//
// Beside the latencies it reports the CPU each call cost Chromium (all its processes: the page's
// renderer, the network service, the browser) while the Go worker and the JavaScript worker
// peer were timed: the figure a loaded machine moves least, and its thread pools' share (-pool-:
// V8's optimizing compiler, still at work on the Go page's wasm). Each Go page first answers
// roundTripWarmUp calls untimed (their CPU is reported apart), so its rounds measure the worker
// once V8 has optimized its hottest functions; then, each Go page having answered roundTripSteady
// calls in all, the Go and JavaScript workers' rounds are timed again (the -steady figures: V8
// has by then optimized most of what a call runs once). With VOICEBOX_BENCH_CPU_BY_THREAD set,
// that CPU is printed by Chromium's process and thread too (the warm-up's by steps of
// warmUpStep calls, each of the Go worker's rounds, then every peer's whole);
// VOICEBOX_BENCH_ROUNDTRIP_ROUNDS sets how many rounds (3), VOICEBOX_BENCH_ROUNDTRIP_WARMUP and
// VOICEBOX_BENCH_ROUNDTRIP_STEADY the two calls' counts (0 for no steady rounds), and
// VOICEBOX_BENCH_WASM_TRACE a file for V8's wasm trace events of the Go page's first warm-up (a
// diagnosis: which compiling happens when; see wasmTrace).
//
// With VOICEBOX_BENCH_ROUNDTRIP_BEFORE naming another build's public/ folder (main's, built), a
// second hub serves that page too, in a tab of its own, and its Go worker is measured in the same
// rounds (go-before-us): a change measured before and after under the same load.
//
// With VOICEBOX_PROFILE set, the worker's CPU is sampled during the first round of the Go peer and
// its heaviest functions printed; build the page's wasm with its names for that (see
// BENCHMARKS.md).
func BenchmarkRoundTripRelayPageRelay(b *testing.B) {
	h, url := benchRelay(b)
	const path = "bench-4k.txt"
	rounds, perRound := 3, 200
	if n, err := strconv.Atoi(os.Getenv("VOICEBOX_BENCH_ROUNDTRIP_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}

	goPage := harness.NewTab(b)
	goPage.Quiet()
	goPage.Navigate(url)
	harness.WaitFor[bool](goPage, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	args, _ := json.Marshal(map[string]string{"path": path, "content": strings.Repeat("x", 4096)})
	if a := h.Ask(context.Background(), wire.Call{CallID: h.NewCallID(), Tool: "write-file", DescriptorID: executor.BuiltinDescriptor, Args: args, BoundsEcho: json.RawMessage(`{}`)}); !a.OK {
		b.Fatalf("write-file answered %s: %s", a.Refused, a.Why)
	}
	jsPage := harness.NewTab(b)
	jsPage.Quiet()
	jsPage.Allow(`.`) // the JavaScript peer is only measured; the Go page's tab keeps its checks

	var beforeHub *hub.Hub
	var beforePage *harness.Tab
	if dir := os.Getenv("VOICEBOX_BENCH_ROUNDTRIP_BEFORE"); dir != "" {
		var beforeURL string
		beforeHub, beforeURL = benchRelayOf(b, dir)
		beforePage = harness.NewTab(b)
		beforePage.Quiet()
		beforePage.Navigate(beforeURL)
		harness.WaitFor[bool](beforePage, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
		if a := beforeHub.Ask(context.Background(), wire.Call{CallID: beforeHub.NewCallID(), Tool: "write-file", DescriptorID: executor.BuiltinDescriptor, Args: args, BoundsEcho: json.RawMessage(`{}`)}); !a.OK {
			b.Fatalf("write-file (before) answered %s: %s", a.Refused, a.Why)
		}
	}
	// Each Go page's first calls run its wasm as V8's baseline compiler made it while V8 compiles
	// the hot functions again, optimized, on the renderer's thread pool: a one-time cost of a
	// worker's first few hundred calls, most of the CPU per call it first costs. Both Go pages
	// answer roundTripWarmUp calls before any is timed, and what those cost is reported apart
	// (go-warmup-cpu-us/call, go-before-warmup-cpu-us/call).
	warmCalls := roundTripWarmUp
	if n, err := strconv.Atoi(os.Getenv("VOICEBOX_BENCH_ROUNDTRIP_WARMUP")); err == nil && n >= 0 {
		warmCalls = n
	}
	// V8 goes on optimizing the Go page's functions long after the first warm-up (each function
	// when its own budget of executed code is spent, and a function run once a call spends it
	// thousands of calls late): the same rounds are timed again once each Go page has answered
	// steadyCalls calls in all (the -steady figures), the early state and the steadier one side by side.
	steadyCalls := roundTripSteady
	if n, err := strconv.Atoi(os.Getenv("VOICEBOX_BENCH_ROUNDTRIP_STEADY")); err == nil && n >= 0 {
		steadyCalls = n
	}
	// With VOICEBOX_BENCH_CPU_BY_THREAD set, Chromium's CPU is also told by process and thread.
	byThread := os.Getenv("VOICEBOX_BENCH_CPU_BY_THREAD") != ""
	var goWarmCPU, beforeWarmCPU float64
	var trace *wasmTrace // VOICEBOX_BENCH_WASM_TRACE's, while the Go page warms up
	// warmUp has h's page answer its calls from+1 to to, untimed, adding their CPU to cpu.
	warmUp := func(cpu *float64, h *hub.Hub, who string, from, to int) {
		c0 := childrenCPU()
		defer func() { *cpu += childrenCPU() - c0 }()
		if !byThread {
			timeRoundTrips(b, h, path, to-from)
			return
		}
		// By thread, the warm-up is told in steps of warmUpStep calls: how V8's compiling of the
		// worker's wasm (the renderers' thread pools) falls, or does not, as the calls go on.
		for done := from; done < to; {
			n := min(warmUpStep, to-done)
			t0 := childrenCPUByThread()
			samples := timeRoundTrips(b, h, path, n)
			step := processCPU{}
			step.add(childrenCPUByThread(), t0)
			fmt.Printf("warm-up of %s, calls %d-%d: %s\n", who, done+1, done+n, step.threadSummary(n, samples))
			done += n
			if trace != nil && who == "the Go worker" {
				trace.mark("warm-up " + strconv.Itoa(done))
			}
		}
	}
	if os.Getenv("VOICEBOX_BENCH_WASM_TRACE") != "" {
		trace = startWasmTrace(b, goPage)
	}
	warmUp(&goWarmCPU, h, "the Go worker", 0, warmCalls)
	if trace != nil {
		trace.stop(b, os.Getenv("VOICEBOX_BENCH_WASM_TRACE"))
		trace = nil
	}
	if beforeHub != nil {
		warmUp(&beforeWarmCPU, beforeHub, "the Go worker before", 0, warmCalls)
	}
	// A phase is one set of rounds: each peer's samples, and Chromium's CPU (every process of it,
	// from /proc) while each was timed, in seconds: all of it, and its thread pools' alone (V8's
	// compiling, and its collector's concurrent work).
	type phase struct {
		goSamples, jsSamples, jsWorkerSamples, beforeSamples []float64
		goCPU, jsWorkerCPU, beforeCPU                        float64
		goPool, jsWorkerPool, beforePool                     float64
		byThread                                             map[*float64]processCPU
	}
	timed := func(ph *phase, cpu, pool *float64, h *hub.Hub) []float64 {
		t0 := childrenCPUByThread()
		c0 := childrenCPU()
		samples := timeRoundTrips(b, h, path, perRound)
		*cpu += childrenCPU() - c0
		round := processCPU{}
		round.add(childrenCPUByThread(), t0)
		*pool += round.threadPools()
		if byThread {
			ph.byThread[cpu].add(round, processCPU{})
			if cpu == &ph.goCPU {
				round.print(os.Stdout, "the Go worker, one round", len(samples))
			}
		}
		return samples
	}
	var prof *harness.WorkerProfiler
	if os.Getenv("VOICEBOX_PROFILE") != "" {
		prof = harness.ProfileWorker(b, goPage, "/worker.js")
	}
	// measure times rounds of every peer into ph (the JavaScript main-thread peer only with jsMain).
	measure := func(ph *phase, jsMain bool) {
		ph.byThread = map[*float64]processCPU{&ph.goCPU: {}, &ph.jsWorkerCPU: {}, &ph.beforeCPU: {}}
		for round := range rounds {
			if jsMain {
				jsPage.Navigate(url + "/jspeer.html")
				harness.Eval[bool](jsPage, `window.peerReady`)
				waitForRoot(b, h, "JavaScript peer") // its take may reach the hub after peerReady
				timeRoundTrips(b, h, path, 20)       // warm up
				ph.jsSamples = append(ph.jsSamples, timeRoundTrips(b, h, path, perRound)...)
			}

			jsPage.Navigate(url + "/jsworker.html")
			harness.Eval[bool](jsPage, `window.peerReady`)
			waitForRoot(b, h, "JavaScript worker peer")
			timeRoundTrips(b, h, path, 20)
			ph.jsWorkerSamples = append(ph.jsWorkerSamples, timed(ph, &ph.jsWorkerCPU, &ph.jsWorkerPool, h)...)

			harness.Eval[bool](goPage, `voicebox.call('channel.connect').then(() => true)`)
			harness.WaitFor[bool](goPage, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
			waitForRoot(b, h, "Browser storage")
			before := func() {
				if beforeHub != nil {
					timeRoundTrips(b, beforeHub, path, 20)
					ph.beforeSamples = append(ph.beforeSamples, timed(ph, &ph.beforeCPU, &ph.beforePool, beforeHub)...)
				}
			}
			if round%2 == 1 {
				before() // the two builds' order swapped every round
			}
			timeRoundTrips(b, h, path, 20)
			if prof != nil && round == 0 {
				prof.Start(b)
			}
			ph.goSamples = append(ph.goSamples, timed(ph, &ph.goCPU, &ph.goPool, h)...)
			if prof != nil && round == 0 {
				prof.Stop(b, os.Stdout, profileTop)
				prof = nil
			}
			if round%2 == 0 {
				before()
			}
		}
	}
	var early, steady phase
	for b.Loop() {
		measure(&early, true)
		if steadyCalls > warmCalls {
			// Each Go page has answered warmCalls calls, the rounds' and their warm-ups' beside them.
			had := warmCalls + rounds*(perRound+20)
			var ignored float64
			warmUp(&ignored, h, "the Go worker", had, steadyCalls)
			if beforeHub != nil {
				warmUp(&ignored, beforeHub, "the Go worker before", had, steadyCalls)
			}
			measure(&steady, false)
		}
	}
	b.StopTimer()
	if byThread {
		idle, t0 := processCPU{}, childrenCPUByThread()
		time.Sleep(time.Second)
		idle.add(childrenCPUByThread(), t0)
		idle.print(os.Stdout, "nothing asked for a second (the figure is per second)", 1)
		for _, ph := range []struct {
			name string
			*phase
		}{{"", &early}, {" (steady)", &steady}} {
			if len(ph.goSamples) == 0 {
				continue
			}
			ph.byThread[&ph.goCPU].print(os.Stdout, "the Go worker"+ph.name, len(ph.goSamples))
			ph.byThread[&ph.jsWorkerCPU].print(os.Stdout, "the JavaScript worker"+ph.name, len(ph.jsWorkerSamples))
			if beforeHub != nil {
				ph.byThread[&ph.beforeCPU].print(os.Stdout, "the Go worker before"+ph.name, len(ph.beforeSamples))
			}
		}
	}
	perCall := func(cpu float64, n int) float64 { return cpu / float64(max(n, 1)) * 1e6 }
	b.ReportMetric(perCall(goWarmCPU, warmCalls), "go-warmup-cpu-us/call")
	if beforeHub != nil {
		b.ReportMetric(perCall(beforeWarmCPU, warmCalls), "go-before-warmup-cpu-us/call")
	}
	harness.ReportPercentiles(b, early.jsSamples, "js-main-us")
	for _, ph := range []struct {
		suffix string
		*phase
	}{{"", &early}, {"-steady", &steady}} {
		if len(ph.goSamples) == 0 {
			continue
		}
		b.ReportMetric(perCall(ph.goCPU, len(ph.goSamples)), "go-worker"+ph.suffix+"-cpu-us/call")
		b.ReportMetric(perCall(ph.goPool, len(ph.goSamples)), "go-worker"+ph.suffix+"-pool-cpu-us/call")
		b.ReportMetric(perCall(ph.jsWorkerCPU, len(ph.jsWorkerSamples)), "js-worker"+ph.suffix+"-cpu-us/call")
		b.ReportMetric(perCall(ph.jsWorkerPool, len(ph.jsWorkerSamples)), "js-worker"+ph.suffix+"-pool-cpu-us/call")
		harness.ReportPercentiles(b, ph.goSamples, "go-worker"+ph.suffix+"-us")
		harness.ReportPercentiles(b, ph.jsWorkerSamples, "js-worker"+ph.suffix+"-us")
		if beforeHub != nil {
			b.ReportMetric(perCall(ph.beforeCPU, len(ph.beforeSamples)), "go-before"+ph.suffix+"-cpu-us/call")
			b.ReportMetric(perCall(ph.beforePool, len(ph.beforeSamples)), "go-before"+ph.suffix+"-pool-cpu-us/call")
			harness.ReportPercentiles(b, ph.beforeSamples, "go-before"+ph.suffix+"-us")
		}
	}
}

// waitForRoot waits until the hub's executor is the one that named its root name.
func waitForRoot(b *testing.B, h *hub.Hub, name string) {
	deadline := time.Now().Add(channelBound)
	for time.Now().Before(deadline) {
		if r := h.Holding(); r.Connected && r.Name == name {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("the executor named %q did not take the slot", name)
}

// threadSummary tells a step's CPU per call (calls of it, their durations samples in us): all of
// Chromium, the renderers' thread pools (V8's compiling and collecting off the thread), the
// dedicated workers' threads, and the step's p50.
func (c processCPU) threadSummary(calls int, samples []float64) string {
	var all, pool, worker float64
	for name, t := range c {
		all += t
		_, thread, _ := strings.Cut(name, " / ")
		switch {
		case strings.HasPrefix(thread, "ThreadPool"):
			pool += t
		case strings.HasPrefix(thread, "DedicatedWorker"):
			worker += t
		}
	}
	per := func(t float64) float64 { return t / float64(max(calls, 1)) * 1e6 }
	slices.Sort(samples)
	p50 := 0.0
	if len(samples) > 0 {
		p50 = samples[len(samples)/2]
	}
	return fmt.Sprintf("CPU per call %.0f us, thread pools %.0f us, worker threads %.0f us, p50 %.0f us", per(all), per(pool), per(worker), p50)
}

// threadPools is the CPU of the thread pools' threads in c (Chromium's ThreadPool* threads: in a
// renderer, V8's optimizing compiler and its collector's concurrent work).
func (c processCPU) threadPools() float64 {
	var t float64
	for name, cpu := range c {
		if _, thread, _ := strings.Cut(name, " / "); strings.HasPrefix(thread, "ThreadPool") {
			t += cpu
		}
	}
	return t
}
