//go:build !js

package tests

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestPlayerWorkletLeadAdapts runs the reply's worklet (audio-player.js) in the page with a
// stand-in for the AudioWorklet globals and a clock that advances one render quantum per block:
// a reply waits the lead (20 ms) and then plays; running dry before the reply ended is an
// underrun that doubles the lead; the audio after it waits the new lead (40 ms) however long it
// is (the lead is a cushion in time, not in audio); a second played without an underrun halves
// the lead back; stop drops everything queued.
func TestPlayerWorkletLeadAdapts(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	// As TestCaptureWorkletResamplesAndClamps: this tab only may evaluate the worklet's source.
	if err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	tab.Navigate(relay.URL)
	type result struct {
		FirstWaitMs   float64 `json:"firstWaitMs"`
		Underruns     int     `json:"underruns"`
		LeadAfter     float64 `json:"leadAfter"`
		LongStartMs   float64 `json:"longStartMs"`
		UnderrunsLong int     `json:"underrunsLong"`
		LeadShrunk    float64 `json:"leadShrunk"`
		Played        int     `json:"played"`
		AfterStop     float64 `json:"afterStop"`
		StoppedPos    int     `json:"stoppedPos"`
		Pushed        int     `json:"pushed"`
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, liveBound)
	defer cancel()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[result](`(async () => {
		const code = await (`+workletSource+`)('/audio-player.js');
		const posted = [];
		let Proc;
		let now = 0;
		const scope = {
			sampleRate: 24000,
			get currentTime() { return now; },
			AudioWorkletProcessor: class { constructor() { this.port = { postMessage: (m) => posted.push(m), onmessage: null }; } },
			registerProcessor: (name, cls) => { Proc = cls; },
		};
		new Function('scope', 'with (scope) {' + code + '}')(scope);
		const p = new Proc({ processorOptions: { rate: 24000, leadStart: 0.02, leadMax: 0.2, shrinkAfter: 1 } });
		let pushed = 0;
		const push = (n) => { pushed += n; p.port.onmessage({ data: { type: 'push', pcm: new Int16Array(n).fill(16384).buffer } }); };
		const send = (type) => p.port.onmessage({ data: { type } });
		const block = () => {
			const out = new Float32Array(128);
			p.process([], [[out]]);
			now += 128 / 24000;
			return out;
		};
		// blocks until one holds sound, in ms of the clock (bounded)
		const untilSound = () => { const from = now; for (let i = 0; i < 1000 && !block().some((v) => v !== 0); i++); return (now - from) * 1000 - 128 / 24; };
		const until = (cond) => { for (let i = 0; i < 10000 && !cond(); i++) block(); };
		const underruns = () => posted.filter((m) => m.type === 'underrun');
		const r = {};

		push(240); // 10 ms, less than the lead
		r.firstWaitMs = untilSound();
		until(() => underruns().length > 0); // no end was said: running dry is an underrun
		r.underruns = underruns().length;
		r.leadAfter = underruns()[0].leadMs;

		push(4800); // 200 ms, more than the lead: still after the lead
		r.longStartMs = untilSound();
		send('end');
		until(() => posted.some((m) => m.drained));
		r.underrunsLong = underruns().length;

		push(24000);
		send('end');
		posted.length = 0;
		until(() => posted.some((m) => m.drained));
		r.leadShrunk = posted.filter((m) => m.type === 'progress').pop().leadMs;
		r.played = posted.filter((m) => m.type === 'progress').pop().played;

		push(24000);
		untilSound();
		block();
		send('stop');
		let loud = 0;
		for (let i = 0; i < 10; i++) loud = Math.max(loud, ...block().map(Math.abs));
		r.afterStop = loud;
		r.stoppedPos = posted.find((m) => m.type === 'stopped').pos;
		r.pushed = pushed;
		return r;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	const quantumMs = 128.0 / 24
	if r.FirstWaitMs < 20-quantumMs || r.FirstWaitMs > 20+quantumMs {
		t.Errorf("a short reply waited %.1f ms before it played; want the 20 ms lead", r.FirstWaitMs)
	}
	if r.Underruns != 1 || r.LeadAfter != 40 {
		t.Errorf("after running dry: %d underruns, lead %v ms; want 1 and 40", r.Underruns, r.LeadAfter)
	}
	if r.LongStartMs < 40-quantumMs || r.LongStartMs > 40+quantumMs || r.UnderrunsLong != 1 {
		t.Errorf("audio longer than the lead, after an underrun, started after %.1f ms with %d underruns in all; want the 40 ms lead and still 1", r.LongStartMs, r.UnderrunsLong)
	}
	if r.LeadShrunk != 20 || r.Played != 240+4800+24000 {
		t.Errorf("after a second without an underrun the lead is %v ms, %d samples played; want 20 and %d", r.LeadShrunk, r.Played, 240+4800+24000)
	}
	if r.AfterStop != 0 || r.StoppedPos != r.Pushed {
		t.Errorf("after stop: level %v, %d of %d samples taken; want silence and every sample dropped", r.AfterStop, r.StoppedPos, r.Pushed)
	}
}

// TestPlayerWorkletResamplesThroughTheLowPass runs the reply's worklet (audio-player.js) as
// TestPlayerWorkletLeadAdapts does, in a context the browser gave another rate than the reply's
// 24 kHz (48 and 44.1 kHz): tones across the reply's band come out as the same tones, and what
// else comes out (the images of the lower rate's spectrum, which linear interpolation leaves in)
// is at least minAliasRejectionDB under them.
func TestPlayerWorkletResamplesThroughTheLowPass(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	if err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	tab.Navigate(relay.URL)
	type result struct {
		Rate      int     `json:"rate"`
		Hz        int     `json:"hz"`
		LevelDB   float64 `json:"levelDb"`
		RestDB    float64 `json:"restDb"`
		Delivered int     `json:"delivered"`
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, liveBound)
	defer cancel()
	rs, err := chromedp.Run(ctx, chromedp.Evaluate[[]result](`(async () => {
		const code = await (`+workletSource+`)('/audio-player.js');
		const results = [];
		for (const rate of [48000, 44100]) {
			for (const hz of [300, 1000, 3000, 5000, 7000, 9000, 10000]) {
				let Proc;
				let now = 0;
				const scope = {
					sampleRate: rate,
					get currentTime() { return now; },
					AudioWorkletProcessor: class { constructor() { this.port = { postMessage: () => {}, onmessage: null }; } },
					registerProcessor: (name, cls) => { Proc = cls; },
				};
				new Function('scope', 'with (scope) {' + code + '}')(scope);
				const p = new Proc({ processorOptions: { rate: 24000, leadStart: 0.02, leadMax: 0.2, shrinkAfter: 1 } });
				// Half a second of the tone at half scale, at the reply's 24 kHz, then its end.
				const pcm = new Int16Array(12000);
				for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(16384 * Math.sin(2 * Math.PI * hz * i / 24000));
				p.port.onmessage({ data: { type: 'push', pcm: pcm.buffer } });
				p.port.onmessage({ data: { type: 'end' } });
				const out = [];
				for (let k = 0; k < 400; k++) {
					const b = new Float32Array(128);
					p.process([], [[b]]);
					now += 128 / rate;
					out.push(...b);
				}
				// The steady part (the filter's start and end left out): fit the tone at hz, then
				// what is left is everything else.
				const first = out.findIndex((v) => v !== 0);
				const from = first + Math.round(0.02 * rate), to = first + Math.round(0.48 * rate);
				let ss = 0, sc = 0, cc = 0, scx = 0, ys = 0, yc = 0;
				for (let n = from; n < to; n++) {
					const s = Math.sin(2 * Math.PI * hz * n / rate), c = Math.cos(2 * Math.PI * hz * n / rate);
					ss += s * s; cc += c * c; scx += s * c; ys += out[n] * s; yc += out[n] * c;
				}
				const det = ss * cc - scx * scx;
				const a = (ys * cc - yc * scx) / det, b = (yc * ss - ys * scx) / det;
				let tone = 0, rest = 0;
				for (let n = from; n < to; n++) {
					const fit = a * Math.sin(2 * Math.PI * hz * n / rate) + b * Math.cos(2 * Math.PI * hz * n / rate);
					tone += fit * fit;
					rest += (out[n] - fit) ** 2;
				}
				const delivered = out.filter((v) => v !== 0).length;
				results.push({ rate, hz, levelDb: 10 * Math.log10(tone / (to - from) / 0.125), restDb: 10 * Math.log10(tone / Math.max(rest, 1e-30)), delivered });
			}
		}
		return results;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	worst := map[int]float64{}
	for _, r := range rs {
		if r.LevelDB < -0.5 || r.LevelDB > 0.5 {
			t.Errorf("a %d Hz tone played at %d Hz comes out at %.2f dB; want the same level (within 0.5 dB)", r.Hz, r.Rate, r.LevelDB)
		}
		// Half a second at 24 kHz is 0.5 s at the context's rate: all of it, the filter's tail included.
		if want := r.Rate / 2; r.Delivered < want-r.Rate/100 {
			t.Errorf("a %d Hz tone played at %d Hz: %d samples sounded; want about %d", r.Hz, r.Rate, r.Delivered, want)
		}
		if w, ok := worst[r.Rate]; !ok || r.RestDB < w {
			worst[r.Rate] = r.RestDB
		}
	}
	for _, rate := range []int{48000, 44100} {
		if worst[rate] < minAliasRejectionDB {
			t.Errorf("24 -> %d Hz: what is not the tone comes out %.1f dB under it; want %d dB or more", rate, worst[rate], minAliasRejectionDB)
		}
	}
	t.Logf("player alias rejection, worst tone of 300 Hz to 10 kHz: %.1f dB (24 -> 48 kHz), %.1f dB (24 -> 44.1 kHz)", worst[48000], worst[44100])
}
