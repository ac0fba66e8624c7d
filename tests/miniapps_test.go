//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

const appBound = 15 * time.Second

// launchApp opens a mini-app through the page's API and waits until its tools are registered.
func launchApp(t *testing.T, tab *harness.Tab, target string, tools int) string {
	t.Helper()
	id := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.launch(%s).then(a => a.appId)`, target))
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length >= %d`, id, tools), appBound)
	return id
}

func TestSampleScoreboardIsDrivenByItsTools(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)

	// The samples are on the shelf, listed as apps in the tray.
	harness.WaitFor[bool](tab, `document.querySelectorAll('#app-tray li[data-kind="app"]').length >= 3`, appBound)
	id := launchApp(t, tab, `{name: 'Scoreboard'}`, 4)
	if id != "app_scoreboard" {
		t.Fatalf("the scoreboard opened as %q", id)
	}
	got := harness.Eval[map[string]any](tab, `voicebox.miniApps.call('app_scoreboard', 'add_points', {team: 'home', points: 3})`)
	if home := got["home"].(map[string]any); home["score"] != 3.0 {
		t.Fatalf("add_points answered %v", got)
	}
	if h := harness.EvalInFrame[float64](tab, "about:srcdoc", `innerHeight`); h < 200 {
		t.Fatalf("the app's frame is %v px high; it should fill its card", h)
	}
	if dom := harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('home-score').textContent`); dom != "3" {
		t.Fatalf("the app shows %q points for home after the call", dom)
	}

	// The same tool, called by the relay over /channel under its model-facing name.
	name := miniapp.ModelName("app_scoreboard", "add_points")
	ans := relay.Call(t, name, map[string]any{"team": "away", "points": 2})
	if !ans.OK {
		t.Fatalf("the relay's call was refused: %s", ans.Raw)
	}
	var state struct{ Away struct{ Score int } }
	if err := json.Unmarshal(ans.Observed, &state); err != nil || state.Away.Score != 2 {
		t.Fatalf("the relay's call observed %s", ans.Observed)
	}
	if dom := harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('away-score').textContent`); dom != "2" {
		t.Fatalf("the app shows %q points for away after the relay's call", dom)
	}

	// A call with bad arguments is refused in the worker and never reaches the app.
	bad := relay.Call(t, name, map[string]any{"team": "visitors", "points": 1})
	if bad.OK || bad.Refused != "invalid-argument-enum" {
		t.Fatalf("a call with an unknown team answered %s", bad.Raw)
	}

	// A person tries a tool by hand with the form made from its schema.
	harness.Eval[bool](tab, `(() => {
		const form = document.querySelector('.app-card[data-app-id="app_scoreboard"] details[data-tool="add_points"] form');
		form.closest('details').open = true;
		form.querySelector('[name="team"]').value = '"home"';
		form.querySelector('[name="points"]').value = '4';
		form.querySelector('button[type="submit"]').click();
		return true;
	})()`)
	shown := harness.WaitFor[string](tab, `(() => { const out = document.querySelector('.app-card[data-app-id="app_scoreboard"] details[data-tool="add_points"] .tool-result'); return out.dataset.state && out.textContent; })()`, appBound)
	var byHand struct{ Home struct{ Score int } }
	if err := json.Unmarshal([]byte(shown), &byHand); err != nil || byHand.Home.Score != 7 {
		t.Fatalf("the form's call shows %q", shown)
	}
	tab.Screenshot("mini-app-scoreboard")
}

func TestAnyHTMLFileOpensAsAMiniApp(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	page := `<!doctype html><title>Greeter</title><p id="out"></p><script>
webMcp.registerTool({name: 'greet', description: 'Greet someone', parameters: {type: 'object', properties: {who: {type: 'string'}}, required: ['who']},
  execute: ({who}) => (document.getElementById('out').textContent = 'Hello, ' + who)});
</script>`
	content, _ := json.Marshal(page)
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: 'greeter.html', content: %s}).then(() => voicebox.miniApps.refreshTray()).then(() => true)`, content))
	// The workspace page is listed as a page, not an app.
	harness.WaitFor[bool](tab, `document.querySelector('#app-tray li[data-app-id="page_greeter"][data-kind="page"]') !== null`, appBound)
	tab.Navigate(relay.URL)
	openWorkspace(t, tab, relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="greeter.html"] .open') !== null`, appBound)
	harness.Eval[bool](tab, `(document.querySelector('#file-list li[data-path="greeter.html"] .open').click(), true)`)
	harness.WaitFor[bool](tab, `!document.querySelector('#open-app').disabled`, appBound)
	harness.Eval[bool](tab, `(document.querySelector('#open-app').click(), true)`)
	harness.WaitFor[bool](tab, `voicebox.miniApps.tools('page_greeter').length === 1`, appBound)
	if got := harness.Eval[string](tab, `voicebox.miniApps.call('page_greeter', 'greet', {who: 'Ada'})`); got != "Hello, Ada" {
		t.Fatalf("greet answered %q", got)
	}
	if dom := harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('out').textContent`); dom != "Hello, Ada" {
		t.Fatalf("the page shows %q", dom)
	}
}

// A mini-app's calls, from the page's API and from the relay, go worker -> app over the port its
// bridge made for its document (one end the app's, one the worker's): the bridge posts the page
// nothing for them, and the page hears each only as the worker's notice: inside the answer of a
// call from the page's own API (one message from the worker per call), apart for the relay's. A
// reload gives the new document a new port (numbered higher), and calls go over that one.
func TestMiniAppCallsGoOverTheWorkersPort(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	// What the engine's worker posts the page's main thread: notices on their own, and notices
	// inside an answer.
	onNewDocument(t, tab, `(() => {
		const W = window.Worker;
		window.fromWorker = {apart: 0, inAnswers: 0, answers: 0};
		window.Worker = class extends W {
			constructor(url, ...rest) {
				super(url, ...rest);
				if (String(url) !== '/worker.js') return;
				this.addEventListener('message', (e) => {
					let m = e.data;
					try { if (typeof m === 'string') m = JSON.parse(m); } catch { return; }
					if (m && m.type === 'miniapp.call') fromWorker.apart++;
					if (m && m.type === 'result') { fromWorker.answers++; fromWorker.inAnswers += Array.isArray(m.news) ? m.news.length : 0; }
				});
			}
		};
	})()`)
	openWorkspace(t, tab, relay.URL)
	id := launchApp(t, tab, `{name: 'Scoreboard'}`, 4)
	// What reaches the page's main thread: messages from the app's bridge, and the worker's
	// notices of calls.
	harness.Eval[bool](tab, `(() => {
		window.heard = {bridge: 0, notices: 0, routed: 0};
		const bridge = document.querySelector('.app-card[data-app-id="app_scoreboard"] iframe').contentWindow;
		addEventListener('message', (e) => { if (e.source === bridge) heard.bridge++; });
		voicebox.on('miniapp.call', (m) => { if (m.onPort) heard.notices++; else heard.routed++; });
		return true;
	})()`)
	first := harness.Eval[[]map[string]any](tab, `voicebox.call('miniapps.ports', {}).then(a => a.value.ports)`)
	if len(first) != 1 || first[0]["appId"] != id {
		t.Fatalf("the worker's ports: %v", first)
	}
	const calls = 20
	before := harness.Eval[map[string]float64](tab, `({...fromWorker})`)
	for range calls {
		if got := harness.Eval[map[string]any](tab, `voicebox.miniApps.call('app_scoreboard', 'add_points', {team: 'home', points: 1})`); got["home"] == nil {
			t.Fatalf("add_points answered %v", got)
		}
	}
	after := harness.Eval[map[string]float64](tab, `({...fromWorker})`)
	if apart, in, answers := after["apart"]-before["apart"], after["inAnswers"]-before["inAnswers"], after["answers"]-before["answers"]; apart != 0 || in != calls || answers != calls {
		t.Fatalf("for %d calls from the page the worker posted %v notices apart and %v inside %v answers; want each notice inside its call's answer", calls, apart, in, answers)
	}
	if a := relay.Call(t, miniapp.ModelName(id, "get_scores"), map[string]any{}); !a.OK || !strings.Contains(string(a.Observed), `"score":20`) {
		t.Fatalf("the relay's call answered %s", a.Raw)
	}
	heard := harness.WaitFor[map[string]float64](tab, fmt.Sprintf(`heard.notices >= %d && heard`, calls+1), appBound)
	if apart := harness.Eval[float64](tab, `fromWorker.apart`) - after["apart"]; apart != 1 {
		t.Fatalf("the relay's call was told the page in %v notices apart, want 1", apart)
	}
	if heard["bridge"] != 0 || heard["routed"] != 0 || heard["notices"] != calls+1 {
		t.Fatalf("the page's main thread heard %v for %d calls, want only the %[2]d notices", heard, calls+1)
	}
	p := harness.Eval[[]map[string]any](tab, `voicebox.call('miniapps.ports', {}).then(a => a.value.ports)`)[0]
	if p["doc"] != first[0]["doc"] || p["sent"] != float64(calls+1) || p["answered"] != float64(calls+1) || p["dropped"] != 0.0 {
		t.Fatalf("the port after %d calls: %v", calls+1, p)
	}
	if st := harness.Eval[map[string]any](tab, `voicebox.miniApps.stats('app_scoreboard')`); st["onPort"] != float64(calls+1) {
		t.Fatalf("the page counted %v calls over the port", st["onPort"])
	}

	// Reloaded, the app's new document has a new port.
	harness.Eval[bool](tab, `(document.querySelector('.app-card[data-app-id="app_scoreboard"] .panel-head button[aria-label^="Reload"]').click(), true)`)
	harness.WaitFor[bool](tab, `(async () => { const a = await voicebox.call('miniapps.ports', {}); const p = a.value.ports[0]; return !!p && p.doc > `+fmt.Sprint(first[0]["doc"])+` && voicebox.miniApps.tools('app_scoreboard').length === 4; })()`, appBound)
	if got := harness.Eval[map[string]any](tab, `voicebox.miniApps.call('app_scoreboard', 'get_scores', {})`); got["home"] == nil {
		t.Fatalf("after the reload get_scores answered %v", got)
	}
	if p := harness.Eval[[]map[string]any](tab, `voicebox.call('miniapps.ports', {}).then(a => a.value.ports)`)[0]; p["sent"] != 1.0 || p["answered"] != 1.0 {
		t.Fatalf("the new document's port: %v", p)
	}
}
