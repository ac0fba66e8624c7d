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

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/tests/harness"
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
	chooseOpenAI(t, tab)
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

// chooseOpenAI chooses OpenAI through the page's voice settings panel, as a person would.
func chooseOpenAI(t *testing.T, tab *harness.Tab) {
	t.Helper()
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

// ears keeps what the vendor fixture hears, and how much of it is the fake microphone's tone.
// Before Chromium's fake capture device delivers its first buffers, and whenever a loaded machine
// starves it, the page's worklet captures silence and sends it on, as it would from a real
// microphone: so the tests wait for, and count, the tone itself, never the first bytes heard.
type ears struct {
	mu   sync.Mutex
	pcm  []byte
	tone int // bytes heard in frames at the tone's level
}

// toneRMS is the level (RMS, as a fraction of full scale) over which a frame counts as the fake
// microphone's tone: the tone is a sine at half scale, RMS 0.35; a frame half tone and half
// silence is still over it.
const toneRMS = 0.05

// hear keeps pcm (one frame) and returns how many bytes of tone were heard in all.
func (e *ears) hear(pcm []byte) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pcm = append(e.pcm, pcm...)
	if energy(pcm) >= toneRMS {
		e.tone += len(pcm)
	}
	return e.tone
}

// mustBeTheTone fails the test unless the vendor heard at least half a second of the fake
// microphone's tone at rate (samples a second), as audio, not silence.
func (e *ears) mustBeTheTone(t *testing.T, rate int) {
	t.Helper()
	e.mu.Lock()
	tone, all, level := e.tone, len(e.pcm), energy(e.pcm)
	e.mu.Unlock()
	if tone < rate*2/2 {
		t.Fatalf("the vendor heard %d bytes of the fake microphone's tone in %d (RMS %.4f of all); want half a second", tone, all, level)
	}
}

// TestTalkingWritesAFileThroughATool is the product's main path: the fake microphone's tone
// streams from the page's AudioWorklet through /live to the vendor; the vendor answers with a
// write_file call; the assistant's catalogue runs it on the page's OPFS over /channel; the vendor
// gets the tool output under the call's id and speaks; the page plays the reply and shows the
// captions, the call and its result.
func TestTalkingWritesAFileThroughATool(t *testing.T) {
	t.Parallel()
	const content = "Written by voice, through the catalogue."
	reply := vendorfixture.Tone(24000, 600, 660)
	var heard ears
	outputs := make(chan string, 1)
	var once sync.Once
	fx, _, tab := startLive(t, vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
			if heard.hear(pcm) >= 24000*2/2 { // half a second of the tone
				once.Do(func() {
					c.Hear("please save a note")
					args, _ := json.Marshal(map[string]string{"name": "voice-note.txt", "content": content})
					c.CallTools(vendorfixture.ToolCall{ID: "call_voice_1", Name: "write_file", Args: string(args)})
				})
			}
		},
		OnToolOutput:     func(c *vendorfixture.Conn, id string, out json.RawMessage) { outputs <- id + " " + string(out) },
		OnResponseCreate: func(c *vendorfixture.Conn) { c.Say("I saved your note.", reply) },
	})
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'listening' || voicebox.live.state() === 'speaking'`, liveBound)

	var out string
	select {
	case out = <-outputs:
	case <-time.After(liveBound):
		t.Fatalf("the vendor got no tool output; page transcript %q", harness.Eval[[]string](tab, `voicebox.live.transcript()`))
	}
	var output string
	if !strings.HasPrefix(out, "call_voice_1 ") || json.Unmarshal([]byte(strings.TrimPrefix(out, "call_voice_1 ")), &output) != nil {
		t.Fatalf("tool output %q", out)
	}
	if strings.Contains(output, `"refused"`) {
		t.Fatalf("write_file was refused: %s", output)
	}

	// The microphone's tone reached the vendor as audio, not silence, at 24 kHz in frames of one
	// render quantum.
	heard.mustBeTheTone(t, 24000)
	conn := fx.Conn(t, 0, liveBound)
	for _, fr := range conn.Frames() {
		if fr.Type == "input_audio_buffer.append" && fr.Raw != nil {
			t.Fatalf("audio payloads were kept")
		}
	}

	// The file is in the page's OPFS.
	type view struct {
		OK    bool `json:"ok"`
		Value struct {
			Text string `json:"text"`
		} `json:"value"`
	}
	if v := harness.Eval[view](tab, `voicebox.call('files.read', {path: 'voice-note.txt'})`); !v.OK || v.Value.Text != content {
		t.Fatalf("the page's OPFS has %+v", v)
	}

	// The page plays the reply and shows what happened.
	want := len(reply) / 2
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.live.stats().samplesPlayed >= %d`, want), liveBound)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'listening'`, liveBound)
	s := stats(tab)
	if s.ToolCalls != 1 || s.ToolResults != 1 || s.FramesSent < 25 || s.BytesSent != s.FramesSent*captureFrameBytes {
		t.Fatalf("page stats %+v; want one call and result, frames of one render quantum (%d bytes)", s, captureFrameBytes)
	}
	lines := strings.Join(harness.Eval[[]string](tab, `voicebox.live.transcript()`), "\n")
	for _, w := range []string{"You: please save a note", `Tool: write_file({"content":"` + content + `","name":"voice-note.txt"})`, "→ Wrote", "Model: I saved your note."} {
		if !strings.Contains(lines, w) {
			t.Fatalf("transcript lacks %q:\n%s", w, lines)
		}
	}
	if got := harness.Eval[string](tab, `document.querySelector('#caption-model').textContent`); got != "I saved your note." {
		t.Fatalf("model caption %q", got)
	}
	if page := harness.Eval[string](tab, `document.documentElement.outerHTML`); strings.Contains(page, fx.Key()) {
		t.Fatal("the vendor key reached the page")
	}
	tab.Screenshot("live-talk")
	checkAccessibility(t, tab, "a voice session")

	// Stop: the session ends cleanly and the vendor connection closes.
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'idle'`, liveBound)
	conn.Wait(t, liveBound, "the vendor connection to close", func(c *vendorfixture.Conn) bool { closed, _ := c.Closed(); return closed })
	types := strings.Join(conn.Types(), " ")
	if !strings.HasPrefix(types, "session.update conversation.item.create response.create") {
		t.Fatalf("the vendor got %q", types)
	}
}

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

// TestWithoutAKeyTheTalkPanelSaysSoOnce is problem 7 of the page as people use it: with no key
// for the chosen provider, Start was enabled (and ended in the relay's refusal), the operator's
// message showed twice, typed text was dropped without a word, and Claude, which has no live
// API, was offered as if it worked. Now the button cannot start, the message shows once, typed
// text goes to the assistant as a typed command, and Claude is marked and not offered.
func TestWithoutAKeyTheTalkPanelSaysSoOnce(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "OPENAI_API_KEY=", "GEMINI_API_KEY=")
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'no-key' && document.querySelector('#mic').disabled`, liveBound)
	status := harness.Eval[string](tab, `document.querySelector('#live-status').textContent`)
	if !strings.Contains(status, "GEMINI_API_KEY") || !strings.Contains(status, "offline mode") {
		t.Fatalf("the Talk panel says %q", status)
	}
	if n := harness.Eval[int](tab, `document.body.innerText.split('GEMINI_API_KEY').length - 1`); n != 1 {
		t.Fatalf("the page shows the operator's message %d times, want once", n)
	}
	claude := harness.WaitFor[[]any](tab, `(() => { const o = [...document.querySelector('#live-provider').options].find((o) => o.value === 'claude');
		return o && [o.textContent, o.disabled]; })()`, liveBound)
	if !strings.Contains(claude[0].(string), "no live voice API") || claude[1] != true {
		t.Fatalf("the Claude option is %v, want marked and not offered", claude)
	}
	// Typed text while no session runs is not dropped: it is a typed command.
	harness.Eval[bool](tab, `(() => {
		document.querySelector('#live-text').value = 'list files';
		document.querySelector('#live-text-form').requestSubmit();
		return true;
	})()`)
	if state, _ := lastTurn(t, tab); state != "ok" {
		t.Fatalf("the typed text's turn ended %s", state)
	}
	if said := harness.Eval[string](tab, `document.querySelector('#turns li .said').textContent`); said != "list files" {
		t.Fatalf("the newest turn is %q, want the text typed in the Talk panel", said)
	}
	if status := harness.Eval[string](tab, `document.querySelector('#live-status').textContent`); !strings.Contains(status, "typed command") {
		t.Fatalf("after typing the Talk panel says %q", status)
	}
}

// TestCaptureWorkletResamplesAndClamps runs the capture worklet's code in the page with a stand-in
// for the AudioWorklet globals: a 48 kHz sine comes out as 16 kHz PCM16 with the same tone, in one
// frame per render quantum (what that quantum made: no sample waits for a later one), and samples
// past full scale are clamped, not wrapped.
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
		Runs     []result  `json:"runs"`
		Clamped  []int     `json:"clamped"`
		Aliasing []float64 `json:"aliasing"`
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, liveBound)
	defer cancel()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[results](`(async () => {
		const code = await (`+workletSource+`)('/audio-worklet.js');
		const run = (rate, target, blocks) => {
			const posted = [];
			let Proc;
			const scope = {
				sampleRate: rate,
				AudioWorkletProcessor: class { constructor() { this.port = { onmessage: null }; } },
				registerProcessor: (name, cls) => { Proc = cls; },
			};
			new Function(...Object.keys(scope), code)(...Object.values(scope));
			const p = new Proc({ processorOptions: { targetRate: target } });
			// Frames go to the port the page hands over (the live worker's); those made before it
			// arrives are held for it, so it arrives after the first block here.
			p.process([[blocks[0]]]);
			p.port.onmessage({ data: { type: 'port', port: { postMessage: (b) => posted.push(b) } } });
			for (const b of blocks.slice(1)) p.process([[b]]);
			posted.delay = p.delay || 0;
			return posted;
		};
		// tone is n blocks of 128 samples of a sine of hz at rate, at half scale.
		const tone = (rate, hz, n) => {
			const blocks = [];
			for (let k = 0, i = 0; k < n; k++) {
				const b = new Float32Array(128);
				for (let j = 0; j < 128; j++, i++) b[j] = 0.5 * Math.sin(2 * Math.PI * hz * i / rate);
				blocks.push(b);
			}
			return blocks;
		};
		// alias is how far below the input a tone above the target's Nyquist frequency comes
		// out (dB), after the filter's start.
		const alias = (rate, target, hz) => {
			const frames = run(rate, target, tone(rate, hz, 150));
			let sum = 0, n = 0, k = 0;
			for (const f of frames) {
				const v = new DataView(f);
				for (let j = 0; j < f.byteLength / 2; j++, k++) {
					if (k < 2 * frames.delay + 1) continue;
					sum += (v.getInt16(2 * j, true) / 32768) ** 2;
					n++;
				}
			}
			return 20 * Math.log10((0.5 / Math.SQRT2) / Math.max(Math.sqrt(sum / n), 1e-9));
		};
		const aliasing = [];
		for (const [rate, target] of [[48000, 16000], [44100, 16000], [48000, 24000]]) {
			let worst = Infinity;
			for (let hz = target / 2 + 500; hz < rate / 2; hz += 500) worst = Math.min(worst, alias(rate, target, hz));
			aliasing.push(worst);
		}
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
					if (n < 2 * frames.delay + 1) continue; // the filter's start
					const want = 0.5 * Math.sin(2 * Math.PI * 440 * (n - frames.delay) / 16000);
					maxErr = Math.max(maxErr, Math.abs(v.getInt16(2 * j, true) / 32768 - want));
				}
			}
			runs.push({ rate, frames: frames.length, samples: n, maxErr, bytes: Math.max(...frames.map((f) => f.byteLength)) });
		}
		const loud = run(16000, 16000, [Float32Array.from({ length: 320 }, (_, j) => (j % 2 ? -3 : 3))]);
		const lv = new DataView(loud[0]);
		return { runs, clamped: [lv.getInt16(0, true), lv.getInt16(2, true)], aliasing };
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	// 150 blocks of 128 samples are 19200 input samples: at 16 kHz out, 6400 from 48 kHz, 6965
	// from 44.1 kHz (less what the filter still holds) and 19200 from 16 kHz, posted at the end of
	// each block: at most 150 frames, none longer than what one block makes.
	want := map[int]int{48000: 6400, 44100: 6965, 16000: 19200}
	for _, run := range r.Runs {
		most := 2 * ((128*16000 + run.Rate - 1) / run.Rate)
		if run.Frames > 150 || run.Frames < 140 || run.Samples < want[run.Rate]-1 || run.Samples > want[run.Rate]+1 || run.Bytes > most {
			t.Errorf("from %d Hz: %+v; want %d samples in one frame a block (at most 150), none over %d bytes", run.Rate, run, want[run.Rate], most)
		}
		if run.MaxErr > 0.01 {
			t.Errorf("from %d Hz the tone is off by %.4f of full scale", run.Rate, run.MaxErr)
		}
	}
	if r.Clamped[0] != 32767 || r.Clamped[1] != -32768 {
		t.Fatalf("clamped samples %v; want 32767, -32768", r.Clamped)
	}
	// Tones from the target's Nyquist frequency + 500 Hz up to the input's, every 500 Hz: the
	// loudest that comes out (folded back into the band) is 60 dB under the input or less.
	for i, pair := range []string{"48 -> 16 kHz", "44.1 -> 16 kHz", "48 -> 24 kHz"} {
		if r.Aliasing[i] < minAliasRejectionDB {
			t.Errorf("%s: a tone above the Nyquist frequency comes out %.1f dB under the input; want %d dB or more", pair, r.Aliasing[i], minAliasRejectionDB)
		}
	}
	t.Logf("alias rejection, worst tone: %.1f dB (48 -> 16 kHz), %.1f dB (44.1 -> 16 kHz), %.1f dB (48 -> 24 kHz)", r.Aliasing[0], r.Aliasing[1], r.Aliasing[2])
}

// captureFrameBytes is one microphone frame where the capture context runs at the relay's rate:
// the 128 samples of one render quantum, PCM16 (audio-worklet.js posts one a quantum).
const captureFrameBytes = 256

// workletSource is a JavaScript function that fetches an AudioWorklet module of public/ and returns
// its source as a script a stand-in scope can run: the resampler both worklets import
// (resampler.js) first, the imports and exports dropped.
const workletSource = `(async (path) => {
	const text = async (p) => (await fetch(p)).text();
	const shared = (await text('/resampler.js')).replace(/^export /gm, '');
	return shared + '\n' + (await text(path)).replace(/^import .*$/gm, '');
})`

// minAliasRejectionDB is issue 38's goal for the resampler's alias rejection.
const minAliasRejectionDB = 60

// TestGeminiSessionCapturesAt16kHz: with Gemini (the default provider) the relay announces 16 kHz,
// the page captures at that rate (frames of one render quantum), the vendor hears the tone, and the
// page plays Gemini's 24 kHz reply.
func TestGeminiSessionCapturesAt16kHz(t *testing.T) {
	t.Parallel()
	reply := vendorfixture.Tone(24000, 400, 520)
	var heard ears
	var once sync.Once
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
			if heard.hear(pcm) >= 16000*2/2 { // half a second of the tone
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
	if s.BytesSent != s.FramesSent*captureFrameBytes {
		t.Fatalf("page stats %+v; want frames of one render quantum (%d bytes) at 16 kHz", s, captureFrameBytes)
	}
	heard.mustBeTheTone(t, 16000)
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
