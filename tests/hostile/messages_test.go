//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The message sweeps, in Chromium: every method the page's worker answers, every message type
// the bridge and the page's Apps panel dispatch on, and every method the page serves an external
// app (the doors of doors_test.go, so one added tomorrow is swept too) are sent malformed
// messages. Each is refused by name or dropped; nothing hangs or throws on the page, no forged
// message registers a tool or reaches another app, and the page serves on.

// callBound bounds one answer of the worker in the sweep.
const callBound = 20_000 // ms

// TestEveryWorkerMethodRefusesMalformedParams: each of the worker's methods is called with
// params that are no object, null, a list, fields of every wrong type and a 256 KiB string. Each
// call is answered within callBound: a value, or a refusal {rule, why} that is never
// internal-error. The worker lists files and the scoreboard answers after.
func TestEveryWorkerMethodRefusesMalformedParams(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	params := []string{
		`"x"`, `null`, `[]`, `12`,
		`{appId: {}, path: 5, dir: [], name: 7, content: {}, tool: [], args: 'x', id: {}, token: 5, html: 1, kind: 3, from: 1, to: [], uploadId: {}, callId: [], seq: 'x', offset: -1, size: 1e308}`,
		`{appId: 'x'.repeat(1 << 18), path: 'x'.repeat(1 << 18), dir: '../'.repeat(1000)}`,
	}
	var methods []string
	for _, d := range workerDoors() {
		methods = append(methods, strings.TrimPrefix(d, "worker method "))
	}
	if len(methods) < 20 {
		t.Fatalf("the worker answers %d methods; it has more", len(methods))
	}
	type swept struct {
		answer
		Hung bool `json:"hung"`
	}
	for _, m := range methods {
		// One evaluation per method, its calls one after another, each raced against the bound.
		as := harness.Eval[[]swept](tab, fmt.Sprintf(`(async () => {
			const out = [];
			for (const p of [%s]) out.push(await Promise.race([voicebox.call(%q, p), new Promise((r) => setTimeout(() => r({hung: true}), %d))]));
			return out;
		})()`, strings.Join(params, ", "), m, callBound))
		if len(as) != len(params) {
			t.Fatalf("%s: %d answers to %d calls", m, len(as), len(params))
		}
		for i, a := range as {
			switch {
			case a.Hung:
				t.Errorf("%s(%.60s) was not answered within %d ms", m, params[i], callBound)
			case !a.OK && (a.Refused == "" || a.Why == "" || a.Refused == "internal-error"):
				t.Errorf("%s(%.60s) answered %+v, want a value or a named refusal", m, params[i], a.answer)
			}
		}
	}
	if a := harness.Eval[answer](tab, `voicebox.call('status')`); !a.OK {
		t.Fatalf("status after the sweep: %+v", a)
	}
	stillServes(t, tab)
}

// messageTypes returns the message types doors lists with prefix.
func messageTypes(t *testing.T, prefix string) []string {
	var out []string
	for _, d := range doors(t) {
		if ty, ok := strings.CutPrefix(d, prefix); ok {
			out = append(out, ty)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no door starts %q", prefix)
	}
	return out
}

// sweepApp is a mini-app whose attack tool posts every message type in TYPES to its bridge
// (parent) and to the page (top): bare, with fields of every wrong type, and as JSON-RPC requests
// and notifications with wrong params; to the bridge also with 64 KB strings (the page reads
// nothing of a message from a frame inside an app but its source: it counts and charges it).
//
// It stays within the message budget by construction, so the whole sweep is read and the test's
// verdict never depends on when a budget stop lands: it posts two types at a time, then asks the
// bridge a JSON-RPC ping (one window's messages to another arrive in order, so the answer comes
// after the bridge read everything before it) and waits a quarter second more. The bridge's window
// of a second then holds at most four rounds (about 2 MB, half its byte budget); the page's is
// small whatever the timing. progress says "rounds read/rounds/messages posted to the page".
const sweepApp = `<!doctype html><title>Sweeper</title><script>
const TYPES = %s;
const big = 'x'.repeat(65536);
const small = (type) => [
  {type},
  {type, generation: 'x', callId: {}, checkId: [], name: 12, tool: 'x', args: 'x', id: {}, ok: 'yes', html: 5, sdk: [], view: 7, result: 5, refused: {}, why: [], method: 5, params: 'x', error: 'x', hostContext: 5, width: 'x', height: -1},
  {jsonrpc: '2.0', id: 1e9, method: type, params: 'x'},
  {jsonrpc: '2.0', method: type, params: {arguments: 5, name: {}, url: 'javascript:alert(1)', content: 7, width: 1e308}},
];
const large = (type) => ({type, name: big, tool: {name: big, description: big}, generation: 1, callId: big});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
webMcp.registerTool({name: 'ping', description: 'answers pong', execute: () => 'pong'});
// A view may ask to be torn down, and the bridge takes that from any app: those types close the
// app, so they go last, once the rest is checked (the finale tool).
const last = TYPES.filter((t) => t.includes('teardown'));
const first = TYPES.filter((t) => !last.includes(t));
let seq = 0;
const read = (id) => new Promise((resolve) => {
  const on = (e) => {
    if (e.source !== parent || !e.data || e.data.id !== id) return;
    removeEventListener('message', on);
    resolve();
  };
  addEventListener('message', on);
});
let rounds = 0, toTop = 0;
const post = async (types) => {
  for (let i = 0; i < types.length; i += 2) {
    for (const type of types.slice(i, i + 2)) {
      for (const m of [...small(type), large(type)]) try { parent.postMessage(m, '*'); } catch {}
      for (const m of small(type)) try { top.postMessage(m, '*'); toTop++; } catch {}
    }
    const id = 'swept-' + ++seq;
    const answered = read(id);
    parent.postMessage({jsonrpc: '2.0', id, method: 'ping'}, '*');
    await answered;
    rounds++;
    await sleep(250);
  }
};
const total = Math.ceil(first.length / 2);
webMcp.registerTool({name: 'attack', description: 'starts posting every message type, malformed', execute: () => { post(first); return 'started'; }});
webMcp.registerTool({name: 'progress', description: 'rounds the bridge read, of how many, and the messages posted to the page', execute: () => rounds + '/' + total + '/' + toTop});
webMcp.registerTool({name: 'finale', description: 'posts the teardown requests', execute: () => { post(last); return last.length; }});
webMcp.ready();
</script>`

// TestEveryMiniAppMessageIsRefusedOrDropped: a mini-app posts every message type the bridge
// (mini-app-bridge.js) and the Apps panel (mini-apps.js) dispatch on, malformed, to both, within
// its budget. No forged tool is registered in the worker, no other app is reached, nothing throws
// on the page, the app is not stopped; its own tool answers; its teardown requests close it and
// nothing else; the page serves on.
func TestEveryMiniAppMessageIsRefusedOrDropped(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	types := append(messageTypes(t, "mini-app-bridge.js message "), messageTypes(t, "mini-apps.js message ")...)
	slices.Sort(types)
	types = slices.Compact(types)
	list, _ := json.Marshal(types)
	id := writeAndLaunch(t, tab, "sweeper.html", fmt.Sprintf(sweepApp, list), 4)
	if a := callTool(tab, id, "attack", "{}"); !a.OK {
		t.Fatalf("the attack did not start: %+v", a)
	}
	// The bridge has read every round once the app counts them all (see sweepApp); the page has
	// read what the app posted to it once it counts that many messages from inside the app.
	var toTop int
	waitFor(t, "the bridge to read every round of the sweep", func() bool {
		a := callTool(tab, id, "progress", "{}")
		if !a.OK {
			t.Fatalf("the sweeper's progress answered %+v; stats %v", a, appStats(tab, id))
		}
		var p struct{ Result string }
		json.Unmarshal(a.Value, &p)
		var rounds, total int
		fmt.Sscanf(p.Result, "%d/%d/%d", &rounds, &total, &toTop)
		return total > 0 && rounds == total
	})
	waitFor(t, "the page to read every message posted to it", func() bool {
		return harness.Eval[int](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).foreign`, id)) >= toTop
	})
	if st := appStats(tab, id); st["stopped"] != nil {
		t.Fatalf("the sweeper, within its budget, was stopped: %v", st)
	}
	if tools := workerTools(tab, id); !slices.Equal(sorted(tools), []string{"attack", "finale", "ping", "progress"}) {
		t.Errorf("the worker holds the sweeper's tools %v; a forged register_tool was taken", tools)
	}
	if tools := workerTools(tab, "app_scoreboard"); len(tools) != 4 {
		t.Errorf("the scoreboard's tools are %v", tools)
	}
	if p := callTool(tab, id, "ping", "{}"); !p.OK {
		t.Errorf("the sweeper's own tool answered %+v", p)
	}
	// The teardown requests close the sweeper (an app may close itself), and nothing else.
	if f := callTool(tab, id, "finale", "{}"); !f.OK {
		t.Errorf("the finale answered %+v", f)
	}
	waitFor(t, "the sweeper to close itself", func() bool {
		return harness.Eval[bool](tab, cardOf(id)+` === null`)
	})
	if tools := workerTools(tab, "app_scoreboard"); len(tools) != 4 {
		t.Errorf("after the sweeper closed, the scoreboard's tools are %v", tools)
	}
	stillServes(t, tab)
}

// appStats is what the page counted of appID's frames (voicebox.miniApps.stats).
func appStats(tab *harness.Tab, appID string) map[string]any {
	return harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q)`, appID))
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// sweepExternal is an external app that sends the page every method the page serves an external
// app (external-apps.js), malformed: with params of every wrong type, a 64 KB string, no id, an
// id that is an object, and as a notification; in rounds under the budget.
const sweepExternal = `<!doctype html><script>
const host = 'HOST';
const METHODS = %s;
const big = 'x'.repeat(65536);
const messages = [];
for (const method of METHODS) {
  messages.push({jsonrpc: '2.0', protocol: 'voicebox-mini-app/1', id: 1, method, params: 'x'});
  messages.push({jsonrpc: '2.0', protocol: 'voicebox-mini-app/1', id: {}, method, params: {tools: 'x', text: 5, selection: big, error: {}, appInfo: 7, capabilities: []}});
  messages.push({jsonrpc: '2.0', protocol: 'voicebox-mini-app/1', method, params: [big]});
  messages.push({jsonrpc: '2.0', method, params: null});
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  for (let i = 0; i < messages.length; i += 40) {
    for (const m of messages.slice(i, i + 40)) parent.postMessage(m, host);
    await sleep(250);
  }
  document.title = 'swept ' + messages.length;
})();
</script>`

// TestEveryExternalAppMethodIsRefusedOrIgnored: an external app sends every method the page
// serves external apps, malformed. Nothing throws on the page, what is ignored is counted, the
// app's card stays a card of its own, and the page serves on.
func TestEveryExternalAppMethodIsRefusedOrIgnored(t *testing.T) {
	t.Parallel()
	app := newOrigin(t)
	reg, _ := json.Marshal(map[string]any{"sweep": map[string]any{"name": "Sweep", "url": app.URL + "/", "origin": app.URL}})
	relay := harness.StartRelay(t, "MINI_APPS="+string(reg))
	list, _ := json.Marshal(messageTypes(t, "external-apps.js message "))
	app.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Security-Policy", "frame-ancestors "+relay.URL)
		w.Header().Set("Cross-Origin-Embedder-Policy", "credentialless")
		w.Header().Set("Cross-Origin-Resource-Policy", "cross-origin")
		fmt.Fprint(w, strings.ReplaceAll(fmt.Sprintf(sweepExternal, list), "HOST", relay.URL))
	}))
	tab := pageWithScoreboard(t, relay.URL)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)
	harness.Eval[bool](tab, `(voicebox.externalApps.open('sweep'), true)`)
	// The app says in its title when it has posted every round (read from its frame's DOM, not
	// its scripts); a round the page is still reading is then read before the next call below.
	// An app stopped at its budget (by count or by bytes) is a named end too; its frame is gone.
	stoppedCard := `document.querySelector('.xa-card[data-app-id="sweep"] .app-stopped:not([hidden])') !== null`
	waitFor(t, "the external app to post every round, or be stopped", func() bool {
		if harness.Eval[bool](tab, stoppedCard) {
			return true
		}
		// The frame is made, then loaded, once the panel opens the app; until then there is nothing
		// to read.
		if !harness.Eval[bool](tab, fmt.Sprintf(`[...document.querySelectorAll('iframe')].some((f) => f.src === %q) && voicebox.externalApps.state('sweep')?.stats.loads > 0`, app.URL+"/")) {
			return false
		}
		return strings.HasPrefix(harness.EvalInFrame[string](tab, app.URL+"/", `document.title`), "swept")
	})
	if harness.Eval[bool](tab, stoppedCard) {
		t.Logf("the sweeping app was stopped: %s", harness.Eval[string](tab, `document.querySelector('.xa-card[data-app-id="sweep"] .app-stopped').textContent`))
	}
	harness.Eval[bool](tab, `new Promise((r) => setTimeout(() => r(true), 0))`)
	g := harness.Eval[struct {
		Total int
		ByWhy map[string]int
	}](tab, `voicebox.externalApps.state('sweep').stats.ignored`)
	if len(g.ByWhy) > 16 {
		t.Errorf("the ignored messages kept %d reasons", len(g.ByWhy))
	}
	stillServes(t, tab)
}
