//go:build !js

package tests

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/tests/harness"
)

//go:embed livefloor
var liveFloor embed.FS

const (
	// liveBenchOnsets is how many onsets each direction is measured over, per page and load.
	liveBenchOnsets = 30
	// liveBenchGap is the time between two onsets, and the silence after a reply before the next:
	// each reply starts from silence (the tap needs 50 ms of it to count an onset), as an answer
	// does after the person spoke.
	liveBenchGap = 250 * time.Millisecond
	// liveBenchStreamMs is the streamed reply's length: three of the fixture's 100 ms chunks, the
	// second and third sent when the audio before them has had time to play, its end after the
	// last, as a vendor sends speech while it makes it.
	liveBenchStreamMs = 300
	// liveBenchQuiet is the silence (samples at the 24 kHz input rate) before a sample the
	// fixture counts as an onset: 50 ms, as the page's tap counts them.
	liveBenchQuiet = 1200
	// liveBenchBargeIns is how many barge-ins are measured, per page and load.
	liveBenchBargeIns = 10
	// liveBenchSettle bounds the wait for the last onsets' frames to reach the vendor.
	liveBenchSettle = 10 * time.Second
	// liveBenchTabBound bounds one page's run: a busy page answers each evaluation late, and
	// its run outlasts harness.TabBound on a loaded machine.
	liveBenchTabBound = 6 * time.Minute
	// liveBenchLevel is the PCM16 level an onset sample exceeds (5% of full scale).
	liveBenchLevel = 1638
)

// liveBenchInstrument gives the page a microphone whose onsets the benchmark places, and an
// ear on its output. The microphone is a generator AudioContext (an oscillator behind a gain at
// 0) whose stream getUserMedia returns; __bench.onset() opens the gain for 40 ms, 50 ms ahead,
// and keeps when the onset leaves the generator (epoch ms: getOutputTimestamp's mapping less the
// generator's output latency). The ear is the tap worklet (livefloor/live-tap.js): every node the
// page connects to a context's destination is connected to it too, and each onset it renders is
// kept as the epoch ms the platform says it is heard (getOutputTimestamp), with that context's
// output and base latency (what the platform adds after the page). busy() redraws a 1,000-entry
// list in the page (a fresh list, laid out) 16 ms after each redraw ended, as a file list
// following a sync would. The third load, on the product page only, is a mini-app sending
// within its message budget (liveBenchApp).
const liveBenchInstrument = `(() => {
	const B = window.__bench = { mic: [], heard: [], silent: [], platformMs: 0, genLatencyMs: 0, redraws: 0, redrawMs: 0, stopBusy: null };
	const gen = new AudioContext({ sampleRate: 48000 });
	const osc = gen.createOscillator();
	osc.frequency.value = 1000;
	const gain = gen.createGain();
	gain.gain.value = 0;
	const dest = gen.createMediaStreamDestination();
	osc.connect(gain).connect(dest);
	osc.start();
	navigator.mediaDevices.getUserMedia = async () => { await gen.resume(); return dest.stream; };
	B.onset = () => {
		const at = gen.currentTime + 0.05;
		gain.gain.setValueAtTime(0.5, at);
		gain.gain.setValueAtTime(0, at + 0.04);
		const ts = gen.getOutputTimestamp();
		B.genLatencyMs = (gen.outputLatency + gen.baseLatency) * 1000;
		B.mic.push(performance.timeOrigin + ts.performanceTime + (at - ts.contextTime) * 1000 - B.genLatencyMs);
		return true;
	};
	const Real = window.AudioContext;
	window.AudioContext = class extends Real {
		constructor(opts) {
			super(opts);
			this.__tap = this.audioWorklet.addModule('/live-tap.js').then(() => {
				const tap = new AudioWorkletNode(this, 'bench-tap');
				const mute = this.createGain();
				mute.gain.value = 0;
				tap.connect(mute);
				mute.connect(this.destination);
				tap.port.onmessage = (e) => {
					if (e.data.hops) { window.__benchWorkletHops?.(e.data.hops); return; }
					const ts = this.getOutputTimestamp();
					B.platformMs = (this.outputLatency + this.baseLatency) * 1000;
					const at = e.data.on ?? e.data.off;
					(e.data.on !== undefined ? B.heard : B.silent).push(performance.timeOrigin + ts.performanceTime + (at - ts.contextTime) * 1000);
				};
				return tap;
			});
		}
	};
	const connect = AudioNode.prototype.connect;
	AudioNode.prototype.connect = function (dst, ...rest) {
		const out = connect.call(this, dst, ...rest);
		const tap = this.context.__tap;
		if (dst instanceof AudioDestinationNode && tap) tap.then((n) => { if (n !== this) connect.call(this, n); });
		return out;
	};
	B.busy = () => {
		const ul = document.body.appendChild(document.createElement('ul'));
		let on = true;
		const redraw = () => {
			if (!on) return;
			const t0 = performance.now();
			const items = [];
			for (let i = 0; i < 1000; i++) {
				const li = document.createElement('li');
				li.textContent = 'notes/file-' + i + '-' + B.redraws + '.txt';
				items.push(li);
			}
			ul.replaceChildren(...items);
			void ul.offsetHeight;
			B.redraws++;
			B.redrawMs += performance.now() - t0;
			setTimeout(redraw, 16);
		};
		redraw();
		B.stopBusy = () => { on = false; ul.remove(); };
		return true;
	};
	return true;
})()`

// liveBenchApp is the mini-app load: once its chatter tool is called, it posts
// liveBenchAppPerTick messages every 10 ms (300 a second, inside miniapp.MessageBudget), as an app
// reporting its progress would; each is charged against its budget and dropped by the page.
const liveBenchApp = `<!doctype html><title>Chatter</title><script>
webMcp.registerTool({name: 'chatter', description: 'posts messages to the page, within its budget', execute: () => {
  let n = 0;
  setInterval(() => { for (let i = 0; i < 3; i++) parent.postMessage({type: 'progress', n: n++, text: 'step ' + n}, '*'); }, 10);
  return 'chattering';
}});
webMcp.ready();
</script>`

// onsetEars is the vendor's ear: when each onset of the microphone arrived.
type onsetEars struct {
	mu    sync.Mutex
	quiet int
	at    []time.Time
}

func (e *onsetEars) hear(pcm []byte) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 0; i+1 < len(pcm); i += 2 {
		v := int(int16(uint16(pcm[i]) | uint16(pcm[i+1])<<8))
		if v < liveBenchLevel && v > -liveBenchLevel {
			e.quiet++
			continue
		}
		if e.quiet >= liveBenchQuiet {
			e.at = append(e.at, now)
		}
		e.quiet = 0
	}
}

func (e *onsetEars) reset() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	at := e.at
	e.at, e.quiet = nil, liveBenchQuiet // the microphone is silent between onsets
	return at
}

func (e *onsetEars) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.at)
}

// epochMs is t as the page's performance.timeOrigin + performance.now() counts (same clock).
func epochMs(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// pairOnsets pairs the onsets placed (epoch ms, in order) with those detected, in order, and
// returns the delays and how many placed onsets found no detection. A detection before the
// onset it would pair with (a glitch) is skipped. A busy page delays onsets by more than the
// gap between them, so no detection is bounded by the next placement.
func pairOnsets(placed, detected []float64) (delays []float64, missed int) {
	// clockSlack allows for the two clocks' readings (the page's and the Go process's) to
	// disagree by less than a millisecond.
	const clockSlack = 1.0
	j := 0
	for _, p := range placed {
		for j < len(detected) && detected[j] < p-clockSlack {
			j++
		}
		if j == len(detected) {
			missed++
			continue
		}
		delays = append(delays, detected[j]-p)
		j++
	}
	return delays, missed
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// BenchmarkLiveVoiceLatency measures the live voice path as a person hears it, in real Chromium
// against the vendor fixture, for the product page and two hand-written floor pages
// (tests/livefloor: "floor" keeps the socket on the main thread, "floorworker" in a worker with
// the worklets' ports handed to it, as the product page does), idle and busy:
//   - capture-ms: a marked onset leaves the microphone -> the vendor receives the frame holding
//     it (the relay and the framing, 10 ms frames on every page, included);
//   - playback-ms: the vendor sends a finished reply whose first sample is an onset (60 ms, one
//     chunk, its end at once: Conn.Say) -> the platform says that sample is heard
//     (getOutputTimestamp, so the platform's output latency, reported as platform-ms, is
//     included). The product page's player starts a reply known to have ended at once, so this
//     is the path without the player's lead;
//   - playback-stream-ms: the same onset, the reply streamed as a vendor speaking sends it
//     (liveBenchStreamMs in 100 ms chunks at real time, its end after the last:
//     Conn.SayInRealTime). The product page's player waits its lead after the first chunk (20 ms
//     at the start, more after an underrun), so this is the path a real reply takes; the floor
//     pages have no lead, so theirs is as playback-ms. stream-underruns is what each page's
//     player counted during these replies (the floors': a chunk that came after the audio before
//     it ran out), stream-lead-ms the product page's lead after them,
//     stream-vendor-late-ms the latest the fixture sent a chunk against the real-time schedule
//     (on a loaded machine the sender is woken late too);
//   - bargein-ms: the vendor says the person started speaking during a 3 s reply -> the reply's
//     output is heard to go silent (getOutputTimestamp again);
//   - underruns: what the page's player counted (the product page only).
func BenchmarkLiveVoiceLatency(b *testing.B) {
	var ears onsetEars
	bench := startLiveBench(b, func(_ *vendorfixture.Conn, pcm []byte) { ears.hear(pcm) })
	reply := vendorfixture.Tone(24000, 60, 440)
	stream := vendorfixture.Tone(24000, liveBenchStreamMs, 440)
	long := vendorfixture.Tone(24000, 3000, 440)

	pages := liveBenchPages
	if bench.base != nil {
		pages = append([]liveBenchPage{liveBenchBase}, pages...)
	}
	for _, p := range pages {
		loads := []string{"idle", "busy"}
		if p.name == "page" {
			loads = append(loads, "app") // the floor page has no mini-apps
		}
		for _, load := range loads {
			b.Run(p.name+"-"+load, func(b *testing.B) {
				for range b.N {
					tab, conn, appID := bench.open(b, p, load)
					ears.reset()
					bench.vendorTap.ears.reset()

					// Capture: onsets placed in the microphone, heard by the vendor.
					for range liveBenchOnsets {
						harness.Eval[bool](tab, `__bench.onset()`)
						time.Sleep(liveBenchGap)
					}
					// The last onset's frame is waited for (bounded); one the vendor never hears is
					// reported as missed.
					for deadline := time.Now().Add(liveBenchSettle); ears.count() < liveBenchOnsets && time.Now().Before(deadline); {
						time.Sleep(20 * time.Millisecond)
					}
					mic := harness.Eval[[]float64](tab, `__bench.mic`)
					var at []float64
					for _, t := range ears.reset() {
						at = append(at, epochMs(t))
					}
					capture, missed := pairOnsets(mic, at)
					if len(capture) == 0 {
						b.Fatalf("the vendor heard none of %d onsets", len(mic))
					}
					b.ReportMetric(float64(missed), "capture-missed")
					reportCaptureHops(b, tab, liveBenchOnsets, mic, epochs(bench.vendorTap.ears.reset()), at)

					// Playback: replies starting with an onset, heard through the page.
					var sent []float64
					for i := range liveBenchOnsets {
						sent = append(sent, epochMs(time.Now()))
						conn.Say("", reply)
						harness.WaitFor[bool](tab, fmt.Sprintf(`__bench.heard.length > %d`, i), liveBound)
						time.Sleep(liveBenchGap)
					}
					heard := harness.Eval[[]float64](tab, `__bench.heard`)
					playback, missed := pairOnsets(sent, heard)
					if missed > 0 {
						b.Fatalf("%d replies of %d were not heard", missed, len(sent))
					}

					// Playback, streamed: each reply's first chunk leaves with the onset, the rest at
					// the pace of speech. The delay is to the first onset heard after the send (an
					// underrun's gap inside a reply may be heard as an onset of its own, later);
					// the next reply is sent once this one has had time to play and fall silent.
					product := p.name == "page" || p.name == liveBenchBase.name
					underruns0 := 0.0
					if product {
						underruns0 = harness.Eval[float64](tab, `voicebox.live.stats().underruns || 0`)
					} else {
						underruns0 = harness.Eval[float64](tab, `window.floor.dry`)
					}
					var streamed []float64
					vendorLate := time.Duration(0)
					for range liveBenchOnsets {
						before := harness.Eval[int](tab, `__bench.heard.length`)
						start := time.Now()
						vendorLate = max(vendorLate, slices.Max(conn.SayInRealTime("", stream)))
						sent := epochMs(start)
						harness.WaitFor[bool](tab, fmt.Sprintf(`__bench.heard.slice(%d).some(t => t >= %f)`, before, sent-1), liveBound)
						d, _ := pairOnsets([]float64{sent}, harness.Eval[[]float64](tab, fmt.Sprintf(`__bench.heard.slice(%d)`, before)))
						streamed = append(streamed, d[0])
						time.Sleep(time.Until(start.Add(liveBenchStreamMs*time.Millisecond + 2*liveBenchGap)))
					}
					b.ReportMetric(float64(vendorLate.Microseconds())/1000, "stream-vendor-late-ms")
					if product {
						b.ReportMetric(harness.Eval[float64](tab, `voicebox.live.stats().underruns || 0`)-underruns0, "stream-underruns")
						b.ReportMetric(harness.Eval[float64](tab, `voicebox.live.stats().leadMs`), "stream-lead-ms")
					} else {
						// A floor's count has one more a reply: its end (floorworker) or its first
						// chunk, after silence (floor).
						b.ReportMetric(harness.Eval[float64](tab, `window.floor.dry`)-underruns0-liveBenchOnsets, "stream-underruns")
					}

					// Barge-in: a long reply plays when the vendor hears the person start to
					// speak; the delay runs to when the reply's output is heard to go silent.
					var bargeIn []float64
					bargeInMissed := 0
					for range liveBenchBargeIns {
						before := harness.Eval[int](tab, `__bench.heard.length`)
						conn.Say("", long)
						harness.WaitFor[bool](tab, fmt.Sprintf(`__bench.heard.length > %d`, before), liveBound)
						time.Sleep(liveBenchGap)
						silent := harness.Eval[int](tab, `__bench.silent.length`)
						at := epochMs(time.Now())
						conn.SpeechStarted()
						// A silence never heard (on a starved machine) is counted, not waited for
						// past liveBenchSettle.
						end := 0.0
						for deadline := time.Now().Add(liveBenchSettle); end == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
							end = harness.Eval[float64](tab, fmt.Sprintf(`__bench.silent[%d] || 0`, silent))
						}
						if end == 0 {
							bargeInMissed++
						} else {
							bargeIn = append(bargeIn, end-at)
						}
						time.Sleep(liveBenchGap)
					}
					b.ReportMetric(float64(bargeInMissed), "bargein-missed")
					slices.Sort(bargeIn)
					b.ReportMetric(percentile(bargeIn, 0.5), "bargein-p50-ms")
					b.ReportMetric(percentile(bargeIn, 0.99), "bargein-p99-ms")
					platform := harness.Eval[float64](tab, `__bench.platformMs`)
					underruns := 0.0
					if product {
						underruns = harness.Eval[float64](tab, `voicebox.live.stats().underruns || 0`)
					}
					if load == "app" {
						// The load is within budget only if the app ran to the end.
						if why := harness.Eval[string](tab, fmt.Sprintf(`JSON.stringify(voicebox.miniApps.stats(%q).stopped || '')`, appID)); why != `""` {
							b.Fatalf("the chatter app was stopped: %s", why)
						}
					}
					if load == "busy" {
						b.ReportMetric(harness.Eval[float64](tab, `(__bench.stopBusy(), __bench.redraws)`), "redraws")
						b.ReportMetric(harness.Eval[float64](tab, `__bench.redrawMs / __bench.redraws`), "redraw-ms")
					}
					slices.Sort(capture)
					slices.Sort(playback)
					b.ReportMetric(percentile(capture, 0.5), "capture-p50-ms")
					b.ReportMetric(percentile(capture, 0.99), "capture-p99-ms")
					b.ReportMetric(percentile(playback, 0.5), "playback-p50-ms")
					b.ReportMetric(percentile(playback, 0.99), "playback-p99-ms")
					slices.Sort(streamed)
					b.ReportMetric(percentile(streamed, 0.5), "playback-stream-p50-ms")
					b.ReportMetric(percentile(streamed, 0.99), "playback-stream-p99-ms")
					b.ReportMetric(platform, "platform-ms")
					b.ReportMetric(underruns, "underruns")
					b.Logf("%s %s: capture %.1f..%.1f ms, playback %.1f..%.1f ms, streamed %.1f..%.1f ms, generator latency %.1f ms", p.name, load,
						capture[0], capture[len(capture)-1], playback[0], playback[len(playback)-1], streamed[0], streamed[len(streamed)-1], harness.Eval[float64](tab, `__bench.genLatencyMs`))
					tab.Close()
				}
			})
		}
	}
	bench.checkVendor(b)
}

// liveBenchPage is a page the live benchmarks drive: where it is, the button that starts its
// session, and when it is ready (the session is up and the microphone's frames flow).
type liveBenchPage struct{ name, path, button, ready string }

// liveBenchPages are the product page and the hand-written floor pages (tests/livefloor: "floor"
// keeps the socket on the main thread, "floorworker" in a worker with the worklets' ports handed
// to it, as the product page does).
var liveBenchPages = []liveBenchPage{
	{"page", "/", "mic", `voicebox.live.state() === 'listening' && voicebox.live.stats().framesSent > 10`},
	{"floor", "/live-floor.html", "start", `window.floor.ready && window.floor.framesSent > 10`},
	{"floorworker", "/live-floor-worker.html", "start", `window.floor.ready && window.floor.framesSent > 10`},
}

// liveBench is a relay serving the product page and the floor pages, with the vendor fixture
// behind it; each session's vendor connection arrives on conns.
type liveBench struct {
	relay *harness.Relay
	// vendorTap stamps the onsets on the wire from the relays to the vendor fixture (wireTap).
	vendorTap *wireTap
	// base, when liveBenchBaseEnv names a folder, serves the product page with that folder's
	// files over this page's (main's, for a cut measured against it in the same run).
	base  *harness.Relay
	fx    *vendorfixture.Fixture
	conns chan *vendorfixture.Conn
}

// startLiveBench starts the vendor fixture (onAudio hears the microphone's frames, when not nil)
// and a relay serving public/ with the floor pages beside it.
func startLiveBench(b *testing.B, onAudio func(*vendorfixture.Conn, []byte)) *liveBench {
	public := b.TempDir()
	if err := os.CopyFS(public, os.DirFS(filepath.Join(harness.RepoRoot(), "public"))); err != nil {
		b.Fatal(err)
	}
	floor, _ := fs.Sub(liveFloor, "livefloor")
	if err := os.CopyFS(public, floor); err != nil {
		b.Fatal(err)
	}
	conns := make(chan *vendorfixture.Conn, 16)
	fx := vendorfixture.Start(b, vendorfixture.Options{Script: vendorfixture.Script{
		OnSetup: func(c *vendorfixture.Conn) { conns <- c },
		OnAudio: onAudio,
	}})
	vendorTap := startWireTap(b, hostOf(b, fx.OpenAIURL()), vendorAudio)
	env := []string{"VOICEBOX_OPENAI_URL=ws://" + vendorTap.addr() + vendorfixture.OpenAIPath, "OPENAI_API_KEY=" + fx.Key(),
		"GEMINI_API_KEY=", "VOICEBOX_LIVE_PROVIDER=openai"}
	lb := &liveBench{relay: harness.StartRelayWith(b, []string{"--public", public}, env...), fx: fx, conns: conns, vendorTap: vendorTap}
	probeLiveHops(b, public)
	if over := os.Getenv(liveBenchBaseEnv); over != "" {
		base := b.TempDir()
		if err := os.CopyFS(base, os.DirFS(public)); err != nil {
			b.Fatal(err)
		}
		overlay, err := os.ReadDir(over)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range overlay {
			src, err := os.ReadFile(filepath.Join(over, f.Name()))
			if err == nil {
				err = os.WriteFile(filepath.Join(base, f.Name()), src, 0o644)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		lb.base = harness.StartRelayWith(b, []string{"--public", base}, env...)
		probeLiveHops(b, base)
	}
	return lb
}

// liveBenchBaseEnv names a folder of the page's files (e.g. main's public/audio-worklet.js and
// live.js) that the benchmark serves over this branch's, as page "base", beside the others in
// the same run.
const liveBenchBaseEnv = "VOICEBOX_LIVE_BENCH_BASE"

// liveBenchBase is the product page served by liveBench.base.
var liveBenchBase = liveBenchPage{"base", "/", "mic", liveBenchPages[0].ready}

// open opens page p instrumented (liveBenchInstrument), starts its session and puts the load on
// it: "idle" none, "busy" the list redrawn, "app" the chatter mini-app (the product page only).
// It returns the tab, the session's vendor connection and the app's id.
func (lb *liveBench) open(b *testing.B, p liveBenchPage, load string) (*harness.Tab, *vendorfixture.Conn, string) {
	tab := harness.NewTabFor(b, liveBenchTabBound)
	relay := lb.relay
	if p.name == liveBenchBase.name {
		relay = lb.base
	}
	tab.Navigate(relay.URL + p.path)
	if p.name == "page" || p.name == liveBenchBase.name {
		harness.WaitFor[bool](tab, `!!(window.voicebox && voicebox.live) && !document.querySelector('#mic').disabled`, liveBound)
	}
	harness.Eval[bool](tab, liveBenchInstrument)
	harness.Eval[bool](tab, liveHopsInstrument)
	harness.Eval[bool](tab, liveHopProbeSource+"true")
	if _, err := chromedp.Run(tab.Ctx, chromedp.Click(chromedp.ID(p.button))); err != nil {
		b.Fatalf("press %s: %v", p.button, err)
	}
	harness.WaitFor[bool](tab, p.ready, liveBound)
	var conn *vendorfixture.Conn
	select {
	case conn = <-lb.conns:
	case <-time.After(liveBound):
		b.Fatal("no vendor connection")
	}
	if load == "busy" {
		harness.Eval[bool](tab, `__bench.busy()`)
	}
	appID := ""
	if load == "app" {
		harness.WaitFor[bool](tab, workspaceReady, readyBound)
		content, _ := json.Marshal(liveBenchApp)
		harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: 'chatter.html', content: %s}).then(() => true)`, content))
		appID = harness.Eval[string](tab, `voicebox.miniApps.launch({path: 'chatter.html'}).then(a => a.appId)`)
		harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length >= 1`, appID), liveBound)
		if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('miniapps.call', {appId: %q, tool: 'chatter', args: {}}).then(a => a.ok)`, appID)) {
			b.Fatal("the chatter app's tool was refused")
		}
	}
	return tab, conn, appID
}

// checkVendor fails the benchmark when the vendor fixture refused what the relay sent.
func (lb *liveBench) checkVendor(b *testing.B) {
	if v := lb.fx.Violations(); len(v) > 0 {
		b.Errorf("the vendor fixture refused what the relay sent: %q", v)
	}
}
