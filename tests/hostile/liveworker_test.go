//go:build !js

package hostile

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/internal/core/voice"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestTheLiveWorkerTakesOnlyItsOwnMessages: the live session's worker (public/live-worker.js),
// which owns the /live socket for the page, is sent messages of no known shape (no object,
// unknown types, a second open, ports that are no ports, a rate that is no rate, text that is no
// string), and its microphone port is sent what is no PCM16 frame: a string spelling a typed-text
// frame (which, sent on the socket as it came, would reach the model as typed text), an odd
// number of bytes, an object. Each is refused by name (live-message-invalid,
// live-audio-frame-invalid) and none reaches the relay; the PCM16 frame and the text sent after
// them reach the vendor. The player worklet's port is sent reports whose counts are no numbers
// or run backwards: they are dropped, and the counts a barge-in reports from stay as they were.
// A barge-in carrying a playedMs of its own is answered with the worker's count (the relay
// refuses nothing), and stop closes the session.
func TestTheLiveWorkerTakesOnlyItsOwnMessages(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var typed []string
	audio := 0
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnText: func(_ *vendorfixture.Conn, text string) {
			mu.Lock()
			defer mu.Unlock()
			typed = append(typed, text)
		},
		OnAudio: func(_ *vendorfixture.Conn, pcm []byte) {
			mu.Lock()
			defer mu.Unlock()
			audio += len(pcm)
		},
	}})
	relay := harness.StartRelay(t, "VOICEBOX_OPENAI_URL="+fx.OpenAIURL(), "OPENAI_API_KEY="+fx.Key(), "GEMINI_API_KEY=", "VOICEBOX_LIVE_PROVIDER=openai")
	tab := harness.NewTab(t)
	tab.Allow(`favicon\.ico`) // the JSON document the worker starts from has no icon
	tab.Navigate(relay.URL + "/api/health")
	type result struct {
		Rules      []string `json:"rules"`
		Whys       []string `json:"whys"`
		FramesSent int      `json:"framesSent"`
		Ready      bool     `json:"ready"`
		Player     []int    `json:"player"`
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, patience)
	defer cancel()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[result](`(async () => {
		const w = new Worker('/live-worker.js', { type: 'module' });
		const got = [];
		window.__live = { w, got };
		w.onmessage = (e) => got.push(e.data);
		w.onerror = () => got.push({ type: 'error' });
		// until waits (bounded) for a message the predicate takes.
		const until = async (pred) => {
			for (let i = 0; i < 1000; i++) {
				const m = got.find(pred);
				if (m) return m;
				await new Promise((r) => setTimeout(r, 10));
			}
			return null;
		};
		const rules = [], whys = [];
		// refusedAfter posts what send does and waits for the next refusal.
		const refusedAfter = async (send) => {
			const n = got.filter((m) => m.type === 'refused').length;
			send();
			const m = await until((m) => m.type === 'error' || got.filter((m) => m.type === 'refused').length > n);
			const last = got.filter((m) => m.type === 'refused')[n];
			rules.push(last ? last.refused : 'none');
			whys.push(last ? last.why : '');
		};
		const port = () => new MessageChannel().port1;
		for (const m of ['open', null, 5, [], { type: 'dance' }, { type: 'open' }, { type: 'open', url: 7 },
			{ type: 'capture', port: 'x' }, { type: 'player', port: 'x', rate: 24000 }, { type: 'text', text: 5 }]) {
			await refusedAfter(() => w.postMessage(m));
		}
		const p = port();
		await refusedAfter(() => w.postMessage({ type: 'player', port: p, rate: -1 }, [p]));
		w.postMessage({ type: 'open', url: 'ws://' + location.host + '/live' });
		const ready = !!(await until((m) => m.type === 'frame' && m.frame.type === 'state' && m.frame.state === 'ready'));
		await refusedAfter(() => w.postMessage({ type: 'open', url: 'ws://' + location.host + '/live' }));
		const mic = new MessageChannel();
		w.postMessage({ type: 'capture', port: mic.port2 }, [mic.port2]);
		const again = port();
		await refusedAfter(() => w.postMessage({ type: 'capture', port: again }, [again]));
		await refusedAfter(() => mic.port1.postMessage('{"type":"text","text":"smuggled"}'));
		await refusedAfter(() => mic.port1.postMessage(new ArrayBuffer(3)));
		await refusedAfter(() => mic.port1.postMessage({ pcm: new ArrayBuffer(640) }));
		// The player's port: reports whose counts are no numbers, or run backwards, are dropped;
		// the last, a real one, shows they were read before it.
		const pl = new MessageChannel();
		w.postMessage({ type: 'player', port: pl.port2, rate: 24000 }, [pl.port2]);
		for (const m of [{ type: 'progress', pos: 'x', played: 'x', leadMs: 20 }, { type: 'progress', pos: 5, played: -5, leadMs: 20 },
			{ type: 'progress', pos: 1e300, played: 1e300, leadMs: 20 }, { type: 'underrun', leadMs: 'x' }, { type: 'stopped' }, null, 'progress']) {
			pl.port1.postMessage(m);
		}
		pl.port1.postMessage({ type: 'progress', pos: 0, played: 0, playing: false, leadMs: 25 });
		const player = await until((m) => m.type === 'stats' && m.stats.leadMs === 25);
		mic.port1.postMessage(new Int16Array(320).fill(8000).buffer);
		const stats = await until((m) => m.type === 'stats' && m.stats.framesSent === 1);
		w.postMessage({ type: 'text', text: 'still here' });
		return { rules, whys, framesSent: stats ? stats.stats.framesSent : 0, ready,
			player: player ? [player.stats.samplesPlayed, player.stats.underruns] : [-1, -1] };
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"live-message-invalid", "live-message-invalid", "live-message-invalid", "live-message-invalid", "live-message-invalid",
		"live-message-invalid", "live-message-invalid", "live-message-invalid", "live-message-invalid", "live-message-invalid",
		"live-message-invalid", // a player whose rate is no rate
		"live-message-invalid", // a second open
		"live-message-invalid", // a second microphone port
		"live-audio-frame-invalid", "live-audio-frame-invalid", "live-audio-frame-invalid",
	}
	if !r.Ready || !slices.Equal(r.Rules, want) || slices.Contains(r.Whys, "") {
		t.Fatalf("the worker answered %q (why %q, session ready %v); want %q, each with a why", r.Rules, r.Whys, r.Ready, want)
	}
	if !slices.Equal(r.Player, []int{0, 0}) {
		t.Fatalf("after the player's malformed reports: samples played, underruns %v; want 0, 0", r.Player)
	}
	if r.FramesSent != 1 {
		t.Fatalf("the worker sent %d microphone frames; want the one PCM16 frame", r.FramesSent)
	}
	waitFor(t, "the text typed after the refusals to reach the vendor", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(typed, "still here")
	})
	mu.Lock()
	if slices.Contains(typed, "smuggled") || audio != 640 {
		t.Fatalf("the vendor got text %q and %d bytes of audio; want only \"still here\" and the 640-byte frame", typed, audio)
	}
	mu.Unlock()

	// A barge-in says how much was heard from the worker's own counts (a playedMs of the page's
	// is not taken): the relay refuses nothing. Stop ends the session: the socket closes.
	type ending struct {
		Refused []string `json:"refused"`
		Closed  bool     `json:"closed"`
	}
	end, err := chromedp.Run(ctx, chromedp.Evaluate[ending](`(async () => {
		const { w, got } = window.__live;
		const until = async (pred) => {
			for (let i = 0; i < 1000; i++) {
				if (got.some(pred)) return true;
				await new Promise((r) => setTimeout(r, 10));
			}
			return false;
		};
		const from = got.length;
		w.postMessage({ type: 'barge-in', playedMs: 'x' });
		await until((m) => m.type === 'interrupted');
		w.postMessage({ type: 'stop', code: 'x' });
		const closed = await until((m) => m.type === 'closed');
		const refused = got.slice(from).filter((m) => m.type === 'refused' || (m.type === 'frame' && m.frame.type === 'refused'))
			.map((m) => m.refused || m.frame.refused);
		return { refused, closed };
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !end.Closed || len(end.Refused) > 0 {
		t.Fatalf("after a barge-in and stop: closed %v, refused %q; want closed, nothing refused", end.Closed, end.Refused)
	}
	served(t, relay)
}

// replyBeforePlayerChunks is how many audio chunks of 4,800 bytes the vendor sends in
// TestAReplyBeforeThePlayerIsHeldWithinItsBound: more than the worker keeps for a player that has
// not arrived (MAX_PLAYER_PENDING, 256, in public/live-worker.js).
const replyBeforePlayerChunks = 400

// TestAReplyBeforeThePlayerIsHeldWithinItsBound: the vendor sends a long reply while the page
// has not handed the live worker its player's port (a page whose playback graph never started).
// The worker keeps at most 256 messages for the player, the newest: when the port comes it is
// handed no more than that, and the session still takes the text typed after.
func TestAReplyBeforeThePlayerIsHeldWithinItsBound(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var typed []string
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnText: func(c *vendorfixture.Conn, text string) {
			mu.Lock()
			typed = append(typed, text)
			mu.Unlock()
			if text == "a long reply" {
				c.Say("", make([]byte, replyBeforePlayerChunks*4800))
			}
		},
	}})
	relay := harness.StartRelay(t, "VOICEBOX_OPENAI_URL="+fx.OpenAIURL(), "OPENAI_API_KEY="+fx.Key(), "GEMINI_API_KEY=", "VOICEBOX_LIVE_PROVIDER=openai")
	tab := harness.NewTab(t)
	tab.Allow(`favicon\.ico`)
	tab.Navigate(relay.URL + "/api/health")
	type result struct {
		Ready    bool `json:"ready"`
		Received int  `json:"received"`
		Pushes   int  `json:"pushes"`
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, patience)
	defer cancel()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[result](`(async () => {
		const w = new Worker('/live-worker.js', { type: 'module' });
		const got = [];
		w.onmessage = (e) => got.push(e.data);
		const until = async (pred) => {
			for (let i = 0; i < 1000; i++) {
				const m = got.find(pred);
				if (m) return m;
				await new Promise((r) => setTimeout(r, 10));
			}
			return null;
		};
		w.postMessage({ type: 'open', url: 'ws://' + location.host + '/live' });
		const ready = !!(await until((m) => m.type === 'frame' && m.frame.type === 'state' && m.frame.state === 'ready'));
		w.postMessage({ type: 'text', text: 'a long reply' });
		const all = await until((m) => m.type === 'stats' && m.stats.chunksReceived >= `+strconv.Itoa(replyBeforePlayerChunks)+`);
		const pl = new MessageChannel();
		let pushes = 0;
		pl.port1.onmessage = (e) => { if (e.data && e.data.type === 'push') pushes++; };
		w.postMessage({ type: 'player', port: pl.port2, rate: 24000 }, [pl.port2]);
		w.postMessage({ type: 'text', text: 'still here' });
		for (let i = 0; i < 100 && pushes === 0; i++) await new Promise((r) => setTimeout(r, 10));
		await new Promise((r) => setTimeout(r, 100)); // what was handed over arrives in one go
		return { ready, received: all ? all.stats.chunksReceived : 0, pushes };
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ready || r.Received < replyBeforePlayerChunks {
		t.Fatalf("session ready %v, %d chunks received; want ready and %d", r.Ready, r.Received, replyBeforePlayerChunks)
	}
	if r.Pushes == 0 || r.Pushes > 256 {
		t.Fatalf("the player was handed %d of the %d chunks that came before it; want the newest, at most 256", r.Pushes, r.Received)
	}
	waitFor(t, "the text typed after the reply to reach the vendor", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(typed, "still here")
	})
	served(t, relay)
}

// TestTheLiveWorkerHoldsMicrophoneFramesToTheRelaysBound: the live worker's microphone port is
// sent a PCM16 frame two bytes over the relay's bound (voice.MaxAudioFrameBytes, which the worker
// has from public/rules.js) and one exactly at it. The worker refuses the first itself, by name
// (live-audio-frame-invalid), so it never reaches the socket (the relay has nothing to refuse);
// the second, and a frame after, reach the vendor.
func TestTheLiveWorkerHoldsMicrophoneFramesToTheRelaysBound(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	audio := 0
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnAudio: func(_ *vendorfixture.Conn, pcm []byte) {
			mu.Lock()
			defer mu.Unlock()
			audio += len(pcm)
		},
	}})
	relay := harness.StartRelay(t, "VOICEBOX_OPENAI_URL="+fx.OpenAIURL(), "OPENAI_API_KEY="+fx.Key(), "GEMINI_API_KEY=", "VOICEBOX_LIVE_PROVIDER=openai")
	tab := harness.NewTab(t)
	tab.Allow(`favicon\.ico`)
	tab.Navigate(relay.URL + "/api/health")
	type result struct {
		Ready        bool     `json:"ready"`
		Worker       []string `json:"worker"`
		Relay        []string `json:"relay"`
		FramesSent   int      `json:"framesSent"`
		FramesRefuse int      `json:"framesRefused"`
	}
	ctx, cancel := context.WithTimeout(tab.Ctx, patience)
	defer cancel()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[result](`(async () => {
		const w = new Worker('/live-worker.js', { type: 'module' });
		const got = [];
		w.onmessage = (e) => got.push(e.data);
		const until = async (pred) => {
			for (let i = 0; i < 1000; i++) {
				const m = got.find(pred);
				if (m) return m;
				await new Promise((r) => setTimeout(r, 10));
			}
			return null;
		};
		w.postMessage({ type: 'open', url: 'ws://' + location.host + '/live' });
		const ready = !!(await until((m) => m.type === 'frame' && m.frame.type === 'state' && m.frame.state === 'ready'));
		const mic = new MessageChannel();
		w.postMessage({ type: 'capture', port: mic.port2 }, [mic.port2]);
		mic.port1.postMessage(new ArrayBuffer(`+strconv.Itoa(voice.MaxAudioFrameBytes+2)+`));
		mic.port1.postMessage(new Int16Array(`+strconv.Itoa(voice.MaxAudioFrameBytes/2)+`).fill(8000).buffer);
		mic.port1.postMessage(new Int16Array(320).fill(8000).buffer);
		const stats = await until((m) => m.type === 'stats' && m.stats.framesSent + m.stats.framesRefused >= 3);
		// A refusal of the relay's would come on the socket after the frame it answers: the
		// session's typed text, answered after every frame before it, bounds the wait for one.
		w.postMessage({ type: 'text', text: 'a'.repeat(5000) });
		await until((m) => m.type === 'frame' && m.frame.type === 'refused' && m.frame.refused === 'live-message-invalid');
		return { ready,
			worker: got.filter((m) => m.type === 'refused').map((m) => m.refused),
			relay: got.filter((m) => m.type === 'frame' && m.frame.type === 'refused' && m.frame.refused !== 'live-message-invalid').map((m) => m.frame.refused),
			framesSent: stats ? stats.stats.framesSent : -1, framesRefused: stats ? stats.stats.framesRefused : -1 };
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ready || !slices.Equal(r.Worker, []string{"live-audio-frame-invalid"}) || r.FramesRefuse != 1 {
		t.Fatalf("session ready %v; the worker refused %q (%d frames); want ready and the oversize frame refused live-audio-frame-invalid by the worker", r.Ready, r.Worker, r.FramesRefuse)
	}
	if len(r.Relay) > 0 || r.FramesSent != 2 {
		t.Fatalf("the relay refused %q and the worker sent %d frames; want nothing for the relay to refuse and the 2 frames within the bound sent", r.Relay, r.FramesSent)
	}
	waitFor(t, "the two frames within the bound to reach the vendor", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return audio == voice.MaxAudioFrameBytes+640
	})
	served(t, relay)
}
