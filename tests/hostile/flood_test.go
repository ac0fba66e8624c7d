//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/voicebox-go/voicebox/tests/harness"
	"github.com/voicebox-go/voicebox/tests/sampleapp"
)

// floodApp is a mini-app whose flood tool, once it has answered, posts 100,000 forged messages to
// its parent (the bridge) and 100,000 to the top window (the page), as the review did.
const floodApp = `<!doctype html><title>Flooder</title><script>
webMcp.registerTool({name: 'ping', description: 'answers pong', execute: () => 'pong'});
webMcp.registerTool({name: 'flood', description: 'posts 100,000 forged messages to parent and to top', execute: () => {
  setTimeout(() => {
    for (let i = 0; i < 100000; i++) {
      parent.postMessage({type: 'register_tool', generation: 1, tool: {name: 'forged_' + i, description: 'forged'}}, '*');
      top.postMessage({type: 'register_tool', generation: 1, tool: {name: 'forged_top_' + i, description: 'forged'}}, '*');
    }
  }, 0);
  return 'flooding';
}});
webMcp.ready();
</script>`

// probeJS puts a text field first on the page and focuses it; every keydown it gets records how
// many messages the page's listener had handled by then (seen: every message of %[1]q's frames,
// and every stray, since the probe started) and the event's queueing delay (lag, in ms, from the
// event's time stamp to its handler). probe.state() answers what a test polls.
const probeJS = `(() => {
  const id = %[1]q;
  const seen = () => {
    const c = voicebox.miniApps.counters(), s = voicebox.miniApps.stats(id);
    return c.strays + c.afterStop + s.foreign + s.dropped;
  };
  let base = seen();
  const input = document.createElement('input');
  input.id = 'probe';
  document.body.prepend(input);
  const keys = [];
  input.addEventListener('keydown', (e) => keys.push({ seen: seen() - base, lag: performance.now() - e.timeStamp }));
  input.focus();
  window.probe = {
    keys,
    state: () => ({ keys: keys.length, seen: seen() - base, stopped: !!voicebox.miniApps.stats(id).stopped }),
    // reset starts counting afresh, for the next flood.
    reset: () => { keys.length = 0; base = seen(); input.focus(); return true; },
  };
  return true;
})()`

// probeState is what probe.state() answers.
type probeState struct {
	Keys    int  `json:"keys"`
	Seen    int  `json:"seen"`
	Stopped bool `json:"stopped"`
}

// probeKey is one keydown the probe recorded.
type probeKey struct {
	Seen int     `json:"seen"`
	Lag  float64 `json:"lag"`
}

const (
	// quietKeys is how many keys in a row must find the page's count of messages unchanged, with
	// the app stopped, before a test takes the flood as over.
	quietKeys = 50
	// maxKeys bounds the keys a test presses while it waits for a flood to end.
	maxKeys = 20000
)

// pressKey presses the key "a" in the focused field and returns once the page has handled the
// keydown (Chromium answers Input.dispatchKeyEvent after the renderer has).
func pressKey(ctx context.Context) error {
	return chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeRawKeyDown, Key: "a", Code: "KeyA", WindowsVirtualKeyCode: 65})
		return err
	}))
}

// keysThrough presses keys in the probe one after another from now, while start (the attack)
// runs, until the app is stopped and quietKeys keys in a row found no new message; it returns
// every key the probe recorded and how many messages the page saw in all. The keys run in a
// goroutine of their own so that they are already arriving when the attack does.
func keysThrough(t testing.TB, tab *harness.Tab, start func()) ([]probeKey, int) {
	t.Helper()
	stop := make(chan struct{})
	pressed := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				pressed <- nil
				return
			default:
			}
			if i >= maxKeys {
				pressed <- fmt.Errorf("pressed %d keys and the flood had not ended", maxKeys)
				return
			}
			if err := pressKey(tab.Ctx); err != nil {
				pressed <- err
				return
			}
		}
	}()
	harness.WaitFor[bool](tab, `probe.keys.length > 0`, appBound) // the keys arrive first
	start()
	last, quiet := -1, 0
	var s probeState
	for quiet < quietKeys {
		select {
		case err := <-pressed:
			t.Fatalf("pressing keys: %v", err)
		default:
		}
		// Each state read waits for at least one key more, so quiet counts keys, not time.
		s = harness.WaitFor[probeState](tab, fmt.Sprintf(`(() => { const s = probe.state(); return s.keys > %d && s; })()`, s.Keys), appBound)
		if s.Stopped && s.Seen == last {
			quiet++
		} else {
			quiet = 0
		}
		last = s.Seen
	}
	close(stop)
	if err := <-pressed; err != nil {
		t.Fatalf("pressing keys: %v", err)
	}
	return harness.Eval[[]probeKey](tab, `probe.keys`), harness.Eval[probeState](tab, `probe.state()`).Seen
}

// TestFloodingMiniAppIsStopped is review item 3: a mini-app posting 100,000 forged messages to
// its parent and to the top window froze the page's main thread for about 30 s, and could do it
// again forever. Now every message listener looks at the source first and counts what it drops;
// the app is stopped at its message budget (its frame removed, its tools unregistered in the
// worker too, the reason in its card with Start again), the page handles input while the flood
// arrives, other apps keep working, and nothing forged gets in.
func TestFloodingMiniAppIsStopped(t *testing.T) {
	// Not parallel: the wall is a rate (messages a second) the app must reach; beside other tests on two cores it could fall short of it.
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "hostile/flood.html", floodApp, 2)
	harness.Eval[bool](tab, fmt.Sprintf(probeJS, id))

	keys, seen := keysThrough(t, tab, func() {
		if a := callTool(tab, id, "flood", "{}"); !a.OK || !strings.Contains(string(a.Value), "flooding") {
			t.Fatalf("the flood tool answered %+v", a)
		}
	})

	// The wall: stopped, and why, where the person sees it.
	why := stopped(t, tab, id)
	for _, want := range []string{"message-budget-exceeded", "500 messages within 1000 ms", "Start again"} {
		if !strings.Contains(why, want) {
			t.Errorf("the stopped app's card says %q, want %q in it", why, want)
		}
	}
	if n := harness.Eval[int](tab, cardOf(id)+`.querySelectorAll('iframe').length`); n != 0 {
		t.Errorf("the stopped app's card still holds %d frames", n)
	}
	if tools := workerTools(tab, id); len(tools) != 0 {
		t.Errorf("the worker still offers the stopped app's tools %v", tools)
	}
	if tools := harness.Eval[[]string](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q)`, id)); len(tools) != 0 {
		t.Errorf("the page still lists the stopped app's tools %v", tools)
	}
	// Its tools are refused by name, as any tool no open app offers.
	if a := callTool(tab, id, "ping", "{}"); a.Refused != "unknown-tool" {
		t.Errorf("the stopped app's ping answered %+v", a)
	}
	// Nothing forged was registered, here or anywhere.
	all := harness.Eval[[]string](tab, `voicebox.call('miniapps.tools', {}).then(a => a.value.tools.map(t => t.name))`)
	for _, name := range all {
		if strings.HasPrefix(name, "forged") {
			t.Fatalf("a forged tool was registered: %v", all)
		}
	}

	// The page handled input while the flood arrived: some key found part of it handled and
	// more of it still to come. That is order, not time; BenchmarkInputDuringFlood measures it.
	during := 0
	for _, k := range keys {
		if k.Seen > 0 && k.Seen < seen {
			during++
		}
	}
	if during == 0 {
		t.Errorf("no key was handled while the flood's %d messages arrived (keys saw %v)", seen, keys)
	}
	t.Logf("the page saw %d of the flood's messages; %d of %d keys were handled among them", seen, during, len(keys))

	// The next legitimate requests are served, and the app starts again when the person asks.
	stillServes(t, tab)
	startAgain(t, tab, id, 2)
	if a := callTool(tab, id, "ping", "{}"); !a.OK || !strings.Contains(string(a.Value), "pong") {
		t.Errorf("started again, ping answered %+v", a)
	}
	stillServes(t, tab)
}

// TestFloodingExternalAppIsStopped is review item 3 for an external mini-app: its frame is on
// its own origin, so what it posts is well-formed and from the right window, and each message
// cost the page real work. 100,000 of them stop it at its budget, with the reason in its card;
// started again, it answers.
func TestFloodingExternalAppIsStopped(t *testing.T) {
	// Not parallel: the wall is a rate (messages a second) the app must reach; beside other tests on two cores it could fall short of it.
	appOrigin := newOrigin(t)
	reg, _ := json.Marshal(map[string]any{"flooder": map[string]any{
		"name": "Post flood", "url": appOrigin.URL + "/fixtures/postflood.html", "origin": appOrigin.URL}})
	relay := harness.StartRelay(t, "MINI_APPS="+string(reg))
	appOrigin.serve(t, sampleapp.Handler(sampleapp.Options{Host: relay.URL, Fixtures: true}))
	tab := pageWithScoreboard(t, relay.URL)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)
	harness.Eval[bool](tab, `(voicebox.externalApps.open('flooder'), true)`)
	harness.WaitFor[bool](tab, `(() => { const s = voicebox.externalApps.state('flooder'); return s.live && s.tools.length === 2; })()`, appBound)

	if a := harness.Eval[answer](tab, `voicebox.externalApps.callTool('flooder', 'flood', {})`); !a.OK {
		t.Fatalf("the flood tool answered %+v", a)
	}
	why := harness.WaitFor[string](tab, `document.querySelector('.xa-card[data-app-id="flooder"] .app-stopped:not([hidden])')?.textContent`, appBound)
	if !strings.Contains(why, "message-budget-exceeded") || !strings.Contains(why, "Start again") {
		t.Errorf("the stopped app's card says %q", why)
	}
	st := harness.Eval[struct {
		Live  bool
		Tools []any
	}](tab, `voicebox.externalApps.state('flooder')`)
	if st.Live || len(st.Tools) != 0 {
		t.Errorf("the stopped app is live %v with tools %v", st.Live, st.Tools)
	}
	if n := harness.Eval[int](tab, `document.querySelectorAll('.xa-card[data-app-id="flooder"] iframe').length`); n != 0 {
		t.Errorf("the stopped app's card still holds %d frames", n)
	}
	if a := harness.Eval[answer](tab, `voicebox.externalApps.callTool('flooder', 'ping', {})`); a.OK {
		t.Errorf("the stopped app's ping answered %+v", a)
	}
	stillServes(t, tab)

	harness.Eval[bool](tab, `document.querySelector('.xa-card[data-app-id="flooder"] .app-stopped button').click() || true`)
	harness.WaitFor[bool](tab, `(() => { const s = voicebox.externalApps.state('flooder'); return s.live && s.tools.length === 2 && !s.stats.stopped; })()`, appBound)
	if a := harness.Eval[answer](tab, `voicebox.externalApps.callTool('flooder', 'ping', {})`); !a.OK {
		t.Errorf("started again, ping answered %+v", a)
	}
}

// origin is a loopback listener that serves an external app: another port is another origin.
type origin struct {
	ln  net.Listener
	URL string // http://127.0.0.1:PORT
}

func newOrigin(t testing.TB) *origin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &origin{ln: ln, URL: "http://" + ln.Addr().String()}
}

func (o *origin) serve(t testing.TB, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: appBound}
	go srv.Serve(o.ln)
	t.Cleanup(func() { srv.Close() })
}

// bigPostApp is a mini-app whose big tool, once it has answered, posts 8 MiB messages, 200 a
// second and 600 in all, to the window its argument names: the top window (the page), or its
// parent (the bridge). Its chatter tool posts 450 messages of 8 KiB to its bridge at once: 3.7 MB,
// under both budgets (500 messages, 4 MiB).
const bigPostApp = `<!doctype html><title>Big posts</title><script>
const big = 'x'.repeat(8 << 20);
webMcp.registerTool({name: 'ping', description: 'answers pong', execute: () => 'pong'});
webMcp.registerTool({name: 'big', description: 'posts 8 MiB messages, 200 a second',
  inputSchema: {type: 'object', properties: {to: {type: 'string'}}}, execute: (a) => {
  const target = a.to === 'top' ? top : parent;
  let n = 0;
  const timer = setInterval(() => {
    if (++n > 600) return clearInterval(timer);
    target.postMessage({type: 'big', n, text: big}, '*');
  }, 5);
  return 'posting';
}});
webMcp.registerTool({name: 'chatter', description: 'posts 450 messages of 8 KiB to its bridge', execute: () => {
  const text = 'c'.repeat(8192);
  for (let i = 0; i < 450; i++) parent.postMessage({type: 'chat', text}, '*');
  return 'chattered';
}});
webMcp.ready();
</script>`

// TestBigMessagesStopAMiniApp is issue 32 item 7 for a mini-app: 8 MiB messages at 200 a second
// are under the count budget, and held the page's main thread up to 1.5 s each time. Every
// message is charged its bytes too (miniapp.MessageByteBudget) where it lands: posted to the
// page, by the page; posted to its bridge, by the bridge. The app is stopped by the first
// message over the bytes, with the reason saying bytes; the page handles input after it; the
// other app answers; an app chattering under both budgets is not stopped.
func TestBigMessagesStopAMiniApp(t *testing.T) {
	// Not parallel: the wall is a rate (bytes a second) the app must reach; beside other tests on two cores it could fall short of it.
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "hostile/bigpost.html", bigPostApp, 3)
	harness.Eval[bool](tab, fmt.Sprintf(probeJS, id))

	if a := callTool(tab, id, "chatter", "{}"); !a.OK || !strings.Contains(string(a.Value), "chattered") {
		t.Fatalf("the chatter tool answered %+v", a)
	}
	if a := callTool(tab, id, "ping", "{}"); !a.OK {
		t.Fatalf("after 450 small messages the app answered %+v", a)
	}
	if s := harness.Eval[probeState](tab, `probe.state()`); s.Stopped {
		t.Fatal("an app under both budgets was stopped")
	}

	for i, to := range []string{"top", "parent"} {
		t.Run(to, func(t *testing.T) {
			if i > 0 {
				startAgain(t, tab, id, 3)
				harness.Eval[bool](tab, `probe.reset()`)
			}
			keys, _ := keysThrough(t, tab, func() {
				if a := callTool(tab, id, "big", fmt.Sprintf(`{"to":%q}`, to)); !a.OK {
					t.Fatalf("the big tool answered %+v", a)
				}
			})
			why := stopped(t, tab, id)
			for _, want := range []string{"message-budget-exceeded", "bytes within 1000 ms", "Start again"} {
				if !strings.Contains(why, want) {
					t.Errorf("the stopped app's card says %q, want %q in it", why, want)
				}
			}
			// Stopped by the first big message, where it landed (the page or the bridge): at most
			// one of them was read there (the window may also hold the restarted app's handshake,
			// small messages read in the same second on a slow machine), and the page took none
			// from inside the app but that one.
			spent := harness.Eval[struct{ Messages, Bytes int }](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).stopped.spent`, id))
			if spent.Bytes <= 4<<20 || spent.Bytes >= 2*(8<<20) {
				t.Errorf("the app was stopped after %d messages of %d bytes, want one message of 8 MiB over the budget", spent.Messages, spent.Bytes)
			}
			if n := harness.Eval[int](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).foreign`, id)); n > 1 {
				t.Errorf("the page took %d of the app's messages before it stopped it", n)
			}
			// The page handled input after the app began: keys pressed until the flood was over
			// found the app stopped.
			after := 0
			for _, k := range keys {
				if k.Seen > 0 {
					after++
				}
			}
			if to == "top" && after == 0 {
				t.Errorf("no key was handled after the page received the app's message (keys %v)", keys)
			}
			stillServes(t, tab)
		})
	}
	startAgain(t, tab, id, 3)
	if a := callTool(tab, id, "ping", "{}"); !a.OK {
		t.Errorf("started again, ping answered %+v", a)
	}
}

// TestBigMessagesStopAnExternalApp is issue 32 item 7 for an external app: its frame posts
// well-formed 8 MiB notifications to the page, 200 a second; the page, which receives and reads
// them, charges their bytes and stops the app at the first one over miniapp.MessageByteBudget,
// with the reason saying bytes, before it takes it; the page keeps serving, and the app started
// again answers.
func TestBigMessagesStopAnExternalApp(t *testing.T) {
	// Not parallel: the wall is a rate (bytes a second) the app must reach; beside other tests on two cores it could fall short of it.
	appOrigin := newOrigin(t)
	reg, _ := json.Marshal(map[string]any{"big": map[string]any{
		"name": "Big posts", "url": appOrigin.URL + "/fixtures/bigpost.html", "origin": appOrigin.URL}})
	relay := harness.StartRelay(t, "MINI_APPS="+string(reg))
	appOrigin.serve(t, sampleapp.Handler(sampleapp.Options{Host: relay.URL, Fixtures: true}))
	tab := pageWithScoreboard(t, relay.URL)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)
	harness.Eval[bool](tab, `(voicebox.externalApps.open('big'), true)`)
	harness.WaitFor[bool](tab, `(() => { const s = voicebox.externalApps.state('big'); return s.live && s.tools.length === 2; })()`, appBound)

	if a := harness.Eval[answer](tab, `voicebox.externalApps.callTool('big', 'big', {})`); !a.OK {
		t.Fatalf("the big tool answered %+v", a)
	}
	why := harness.WaitFor[string](tab, `document.querySelector('.xa-card[data-app-id="big"] .app-stopped:not([hidden])')?.textContent`, appBound)
	if !strings.Contains(why, "message-budget-exceeded") || !strings.Contains(why, "bytes within 1000 ms") || !strings.Contains(why, "Start again") {
		t.Errorf("the stopped app's card says %q", why)
	}
	st := harness.Eval[struct {
		Live      bool
		Selection any
		Budget    struct{ Count, Bytes int }
	}](tab, `(() => { const s = voicebox.externalApps.state('big'); return {live: s.live, selection: s.selection, budget: s.budget}; })()`)
	if st.Live || st.Selection != nil {
		t.Errorf("the stopped app is live %v, its selection taken: %v", st.Live, st.Selection != nil)
	}
	// The message that passed the bytes was within the first few the app sent in that window.
	if st.Budget.Count > 3 || st.Budget.Bytes <= 4<<20 {
		t.Errorf("the app was stopped after %d messages of %d bytes", st.Budget.Count, st.Budget.Bytes)
	}
	stillServes(t, tab)

	harness.Eval[bool](tab, `document.querySelector('.xa-card[data-app-id="big"] .app-stopped button').click() || true`)
	harness.WaitFor[bool](tab, `(() => { const s = voicebox.externalApps.state('big'); return s.live && s.tools.length === 2 && !s.stats.stopped; })()`, appBound)
	if a := harness.Eval[answer](tab, `voicebox.externalApps.callTool('big', 'ping', {})`); !a.OK {
		t.Errorf("started again, ping answered %+v", a)
	}
}
