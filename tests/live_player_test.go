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
// a reply shorter than the lead waits at most the lead (20 ms) and then plays; running dry before
// the reply ended is an underrun that doubles the lead; a reply longer than the lead starts at
// once; a second played without an underrun halves the lead back; stop drops everything queued.
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
		const code = await (await fetch('/audio-player.js')).text();
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

		push(4800); // 200 ms, more than the lead: at once
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
	if r.FirstWaitMs > 20+quantumMs {
		t.Errorf("a short reply waited %.1f ms before it played; want at most the 20 ms lead", r.FirstWaitMs)
	}
	if r.Underruns != 1 || r.LeadAfter != 40 {
		t.Errorf("after running dry: %d underruns, lead %v ms; want 1 and 40", r.Underruns, r.LeadAfter)
	}
	if r.LongStartMs > quantumMs || r.UnderrunsLong != 1 {
		t.Errorf("a reply longer than the lead started after %.1f ms with %d underruns in all; want the next quantum and still 1", r.LongStartMs, r.UnderrunsLong)
	}
	if r.LeadShrunk != 20 || r.Played != 240+4800+24000 {
		t.Errorf("after a second without an underrun the lead is %v ms, %d samples played; want 20 and %d", r.LeadShrunk, r.Played, 240+4800+24000)
	}
	if r.AfterStop != 0 || r.StoppedPos != r.Pushed {
		t.Errorf("after stop: level %v, %d of %d samples taken; want silence and every sample dropped", r.AfterStop, r.StoppedPos, r.Pushed)
	}
}
