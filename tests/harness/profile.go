//go:build !js

package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// profileSampleUs is the profiler's sampling interval in microseconds: fine enough for a call of
// about a millisecond, coarse enough that sampling itself costs little.
const profileSampleUs = 50

// WorkerProfiler samples the CPU of a dedicated worker with V8's profiler (the DevTools
// Profiler domain), so a benchmark can say where a worker's time goes. The page's wasm names its
// functions only when it is built without -s -w (see BENCHMARKS.md).
type WorkerProfiler struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// ProfileWorker attaches to the first dedicated worker whose script URL ends with suffix (in any
// tab of the shared browser), with its Network and Log domains off so they cost nothing.
func ProfileWorker(t testing.TB, tab *Tab, suffix string) *WorkerProfiler {
	t.Helper()
	targets, err := chromedp.Targets(tab.Ctx)
	if err != nil {
		t.Fatalf("harness: list targets: %v", err)
	}
	var id target.ID
	for _, info := range targets {
		if info.Type == "worker" && strings.HasSuffix(info.URL, suffix) {
			id = info.TargetID
			break
		}
	}
	if id == "" {
		t.Fatalf("harness: no worker ends with %q", suffix)
	}
	ctx, cancel := chromedp.NewContext(tab.Ctx, chromedp.WithTargetID(id))
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, step := range []func() error{
			func() error { _, err := cdp.Call(ctx, t, network.Disable, cdp.Empty{}); return err },
			func() error { _, err := cdp.Call(ctx, t, log.Disable, cdp.Empty{}); return err },
			func() error { _, err := cdp.Call(ctx, t, profiler.Enable, cdp.Empty{}); return err },
			func() error {
				_, err := cdp.Call(ctx, t, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: profileSampleUs})
				return err
			},
		} {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}))
	if err != nil {
		cancel()
		t.Fatalf("harness: attach to the worker: %v", err)
	}
	t.Cleanup(cancel)
	return &WorkerProfiler{ctx: ctx, cancel: cancel}
}

// Start starts sampling.
func (p *WorkerProfiler) Start(t testing.TB) {
	t.Helper()
	err := chromedp.Do(p.ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, profiler.Start, cdp.Empty{})
		return err
	}))
	if err != nil {
		t.Fatalf("harness: start the profiler: %v", err)
	}
}

// Stop stops sampling and writes the functions that took the most time to w: by self time (the
// function on top of the stack) and by total time (anywhere on it), each with its share of all
// samples. With VOICEBOX_PROFILE_OUT naming a file, the whole profile is written there too, as
// DevTools saves one (a .cpuprofile to open in its Performance panel, or to walk by its call tree).
func (p *WorkerProfiler) Stop(t testing.TB, w io.Writer, top int) {
	t.Helper()
	var prof *profiler.Profile
	err := chromedp.Do(p.ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, profiler.Stop, cdp.Empty{})
		prof = res.Profile
		return err
	}))
	if err != nil || prof == nil {
		t.Fatalf("harness: stop the profiler: %v", err)
	}
	if out := os.Getenv("VOICEBOX_PROFILE_OUT"); out != "" {
		// The whole profile, as DevTools saves it (a .cpuprofile): its call tree, for a reader
		// that wants to know who calls what.
		b, err := json.Marshal(prof)
		if err == nil {
			err = os.WriteFile(out, b, 0o644)
		}
		if err != nil {
			t.Fatalf("harness: write the profile to %s: %v", out, err)
		}
	}
	WriteProfileSummary(w, prof, top)
}

// WriteProfileSummary writes prof's heaviest functions by self and by total time, counting each
// sample as one sampling interval (profileSampleUs). Idle samples
// ("(idle)", "(program)") count in the whole but are named so they can be told apart.
func WriteProfileSummary(w io.Writer, prof *profiler.Profile, top int) {
	parent := map[int64]int64{}
	name := map[int64]string{}
	for _, n := range prof.Nodes {
		fn := n.CallFrame.FunctionName
		if fn == "" {
			fn = "(anonymous " + n.CallFrame.URL + ")"
		}
		name[n.ID] = fn
		for _, c := range n.Children {
			parent[c] = n.ID
		}
	}
	self := map[string]int64{}
	total := map[string]int64{}
	var all int64
	for _, id := range prof.Samples {
		// Each sample counts as one sampling interval, whatever time passed before the next: on
		// a loaded machine the sampler itself waits for a core, and a sample's delta reaches
		// 200 ms, so weighting samples by their deltas let a handful of them outweigh the rest.
		dt := int64(profileSampleUs)
		all += dt
		self[name[id]] += dt
		seen := map[string]bool{}
		for n, ok := id, true; ok; n, ok = parent[n] {
			if fn := name[n]; !seen[fn] {
				seen[fn] = true
				total[fn] += dt
			}
		}
	}
	dump := func(title string, m map[string]int64) {
		type row struct {
			fn string
			us int64
		}
		var rows []row
		for fn, us := range m {
			rows = append(rows, row{fn, us})
		}
		slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.us, a.us) })
		fmt.Fprintf(w, "%s (of %d us sampled):\n", title, all)
		for i, r := range rows {
			if i == top {
				break
			}
			fmt.Fprintf(w, "  %9d us %5.1f%%  %s\n", r.us, 100*float64(r.us)/float64(max(all, 1)), r.fn)
		}
	}
	dump("self", self)
	dump("total", total)
}
