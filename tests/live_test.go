//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"voicebox/tests/harness"
	"voicebox/tests/vendorfixture"
)

// liveBound is the hang guard of the live tests' waits (the machine is shared; this is never a
// timing assertion).
const liveBound = 60 * time.Second

// energy is the RMS of PCM16 little-endian samples, as a fraction of full scale.
func energy(pcm []byte) float64 {
	var sum float64
	n := len(pcm) / 2
	for i := range n {
		v := float64(int16(uint16(pcm[2*i])|uint16(pcm[2*i+1])<<8)) / 32768
		sum += v * v
	}
	if n == 0 {
		return 0
	}
	return math.Sqrt(sum / float64(n))
}

// startLive starts a vendor fixture and a relay whose OpenAI endpoint is the fixture, and opens
// the page as the relay's executor with OpenAI chosen in its voice settings.
func startLive(t *testing.T, script vendorfixture.Script) (*vendorfixture.Fixture, *harness.Relay, *harness.Tab) {
	t.Helper()
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: script})
	relay := harness.StartRelay(t, "VOICEBOX_OPENAI_URL="+fx.OpenAIURL(), "OPENAI_API_KEY="+fx.Key(), "GEMINI_API_KEY=")
	tab := openExecutor(t, relay)
	// Choose OpenAI through the settings panel, as a person would.
	harness.WaitFor[bool](tab, `document.querySelector('#live-provider').options.length > 0`, liveBound)
	harness.Eval[bool](tab, `(() => {
		document.querySelector('#live-settings-toggle').click();
		const p = document.querySelector('#live-provider');
		p.value = 'openai';
		p.dispatchEvent(new Event('change'));
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#live-model').value === 'gpt-realtime' &&
		document.querySelector('#live-key-note').textContent.includes('key configured')`, liveBound)
	t.Cleanup(func() {
		if v := fx.Violations(); len(v) > 0 {
			t.Errorf("the vendor fixture refused what the relay sent: %q", v)
		}
		if strings.Contains(relay.Stderr(), fx.Key()) {
			t.Errorf("the vendor key reached the relay's log")
		}
	})
	return fx, relay, tab
}

// clickMic presses the microphone button with a real (trusted) click, which also lets the page
// start audio.
func clickMic(t *testing.T, tab *harness.Tab) {
	t.Helper()
	if _, err := chromedp.Run(tab.Ctx, chromedp.Click(chromedp.ID("mic"))); err != nil {
		t.Fatalf("click the microphone: %v", err)
	}
}

type liveStats struct {
	FramesSent     int `json:"framesSent"`
	BytesSent      int `json:"bytesSent"`
	ChunksReceived int `json:"chunksReceived"`
	SamplesQueued  int `json:"samplesQueued"`
	SamplesPlayed  int `json:"samplesPlayed"`
	Interrupts     int `json:"interrupts"`
	ToolCalls      int `json:"toolCalls"`
	ToolResults    int `json:"toolResults"`
}

func stats(tab *harness.Tab) liveStats { return harness.Eval[liveStats](tab, `voicebox.live.stats()`) }

// TestBargeInStopsThePlaybackAtOnce: a long reply is playing when the vendor hears the person
// speak; the page stops everything queued at once and tells the relay how much was heard, which
// the vendor gets as a truncation.
func TestBargeInStopsThePlaybackAtOnce(t *testing.T) {
	t.Parallel()
	long := vendorfixture.Tone(24000, 8000, 300)
	started := make(chan *vendorfixture.Conn, 1)
	var once sync.Once
	fx, _, tab := startLive(t, vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
			once.Do(func() {
				c.Say("This is a long answer that will be cut off.", long)
				started <- c
			})
		},
	})
	clickMic(t, tab)
	var c *vendorfixture.Conn
	select {
	case c = <-started:
	case <-time.After(liveBound):
		t.Fatal("no audio reached the vendor")
	}
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'speaking' && voicebox.live.stats().samplesQueued >= 8 * 24000`, liveBound)
	c.SpeechStarted()
	fr := c.WaitType(t, liveBound, "conversation.item.truncate", 1)
	var tr struct {
		AudioEndMs int `json:"audio_end_ms"`
	}
	json.Unmarshal(fr.Raw, &tr)
	s := stats(tab)
	if s.Interrupts != 1 || tr.AudioEndMs >= 8000 {
		t.Fatalf("after the barge-in: stats %+v, truncated at %d ms of 8000", s, tr.AudioEndMs)
	}
	if st := harness.Eval[string](tab, `voicebox.live.state()`); st != "listening" {
		t.Fatalf("state %q after the barge-in", st)
	}
	// Nothing more plays: what was queued was stopped, not left to finish.
	harness.Eval[bool](tab, `new Promise(r => setTimeout(() => r(true), 300))`)
	if after := stats(tab); after.SamplesPlayed != s.SamplesPlayed {
		t.Fatalf("%d samples played after the stop", after.SamplesPlayed-s.SamplesPlayed)
	}
	_ = fx
}

// TestWithoutAKeyThePagePointsToTheOfflineMode: no key for the chosen provider, so the settings
// say so, and pressing the microphone ends in the relay's refusal, shown to the person.
func TestWithoutAKeyThePagePointsToTheOfflineMode(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "OPENAI_API_KEY=", "GEMINI_API_KEY=")
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#live-key-note').textContent.includes('offline mode')`, liveBound)
	note := harness.Eval[string](tab, `document.querySelector('#live-key-note').textContent`)
	if !strings.Contains(note, "GEMINI_API_KEY") {
		t.Fatalf("key note %q", note)
	}
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'error'`, liveBound)
	status := harness.Eval[string](tab, `document.querySelector('#live-status').textContent`)
	if !strings.Contains(status, "live-key-missing") || !strings.Contains(status, "offline mode") {
		t.Fatalf("status %q", status)
	}
}

// TestCaptureWorkletResamplesAndClamps runs the capture worklet's code in the page with a stand-in
// for the AudioWorklet globals: a 48 kHz sine comes out as 16 kHz PCM16 frames of 20 ms with the
// same tone, and samples past full scale are clamped, not wrapped.
func TestCaptureWorkletResamplesAndClamps(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	// The page's policy forbids evaluating strings, rightly; this test turns it off for its tab
	// only, to load the worklet's source into a stand-in scope.
	if err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	tab.Navigate(relay.URL)
	type result struct {
		Rate    int     `json:"rate"`
		Frames  int     `json:"frames"`
		Samples int     `json:"samples"`
		MaxErr  float64 `json:"maxErr"`
		Bytes   int     `json:"bytes"`
	}
	type results struct {
		Runs    []result `json:"runs"`
		Clamped []int    `json:"clamped"`
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, liveBound)
	defer cancel()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[results](`(async () => {
		const code = await (await fetch('/audio-worklet.js')).text();
		const run = (rate, target, blocks) => {
			const posted = [];
			let Proc;
			const scope = {
				sampleRate: rate,
				AudioWorkletProcessor: class { constructor() { this.port = { postMessage: (b) => posted.push(b), onmessage: null }; } },
				registerProcessor: (name, cls) => { Proc = cls; },
			};
			new Function(...Object.keys(scope), code)(...Object.values(scope));
			const p = new Proc({ processorOptions: { targetRate: target } });
			for (const b of blocks) p.process([[b]]);
			return posted;
		};
		const runs = [];
		for (const rate of [48000, 44100, 16000]) {
			const blocks = [];
			let i = 0;
			for (let k = 0; k < 150; k++) {
				const b = new Float32Array(128);
				for (let j = 0; j < 128; j++, i++) b[j] = 0.5 * Math.sin(2 * Math.PI * 440 * i / rate);
				blocks.push(b);
			}
			const frames = run(rate, 16000, blocks);
			let maxErr = 0, n = 0;
			for (const f of frames) {
				const v = new DataView(f);
				for (let j = 0; j < f.byteLength / 2; j++, n++) {
					const want = 0.5 * Math.sin(2 * Math.PI * 440 * n / 16000);
					maxErr = Math.max(maxErr, Math.abs(v.getInt16(2 * j, true) / 32768 - want));
				}
			}
			runs.push({ rate, frames: frames.length, samples: n, maxErr, bytes: frames[0].byteLength });
		}
		const loud = run(16000, 16000, [Float32Array.from({ length: 320 }, (_, j) => (j % 2 ? -3 : 3))]);
		const lv = new DataView(loud[0]);
		return { runs, clamped: [lv.getInt16(0, true), lv.getInt16(2, true)] };
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	// 150 blocks of 128 samples are 19200 input samples: at 16 kHz out, 6400 from 48 kHz and
	// 6966 from 44.1 kHz, posted in whole 20 ms frames of 320 samples.
	want := map[int]int{48000: 20, 44100: 21, 16000: 60}
	for _, run := range r.Runs {
		if run.Frames != want[run.Rate] || run.Samples != 320*run.Frames || run.Bytes != 640 {
			t.Errorf("from %d Hz: %+v; want %d frames of 640 bytes", run.Rate, run, want[run.Rate])
		}
		if run.MaxErr > 0.01 {
			t.Errorf("from %d Hz the tone is off by %.4f of full scale", run.Rate, run.MaxErr)
		}
	}
	if r.Clamped[0] != 32767 || r.Clamped[1] != -32768 {
		t.Fatalf("clamped samples %v; want 32767, -32768", r.Clamped)
	}
}

// TestGeminiSessionCapturesAt16kHz: with Gemini (the default provider) the relay announces 16 kHz,
// the page captures at that rate (320-sample frames of 20 ms), the vendor hears the tone, and the
// page plays Gemini's 24 kHz reply.
func TestGeminiSessionCapturesAt16kHz(t *testing.T) {
	t.Parallel()
	reply := vendorfixture.Tone(24000, 400, 520)
	var mu sync.Mutex
	var heard []byte
	var once sync.Once
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
			mu.Lock()
			heard = append(heard, pcm...)
			enough := len(heard) >= 16000*2/2
			mu.Unlock()
			if enough {
				once.Do(func() { c.Say("Hello from Gemini.", reply) })
			}
		},
	}})
	relay := harness.StartRelay(t, "VOICEBOX_GEMINI_URL="+fx.GeminiURL(), "GEMINI_API_KEY="+fx.Key(), "OPENAI_API_KEY=")
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#live-key-note').textContent.includes('Gemini Live key configured')`, liveBound)
	clickMic(t, tab)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.live.stats().samplesPlayed >= %d`, len(reply)/2), liveBound)
	s := stats(tab)
	if s.BytesSent != s.FramesSent*640 {
		t.Fatalf("page stats %+v; want 20 ms frames of 640 bytes at 16 kHz", s)
	}
	mu.Lock()
	level := energy(heard)
	mu.Unlock()
	if level < 0.05 {
		t.Fatalf("the vendor heard RMS %.4f; want the fake microphone's tone", level)
	}
	conn := fx.Conn(t, 0, liveBound)
	if conn.Model != "models/gemini-3.8-live" {
		t.Fatalf("model %q", conn.Model)
	}
	if got := harness.Eval[string](tab, `document.querySelector('#caption-model').textContent`); got != "Hello from Gemini." {
		t.Fatalf("model caption %q", got)
	}
	if v := fx.Violations(); len(v) > 0 {
		t.Fatalf("violations %q", v)
	}
}
