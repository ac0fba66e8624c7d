//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The doors issue 21 opened, attacked: a sandboxed app's executeTool check (validate_args), the
// descriptions of the messages a bridge or the Apps panel ignored, a model context of the app's
// own that lies, and an external app that sends what the host cannot serve.

func TestMiniAppAbusesTheArgumentCheck(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	// The app asks the host to check arguments for a tool it does not have, for a tool of
	// another app, and with arguments far over the bound; then it posts markup to the bridge's
	// window to see whether the card renders it.
	id := writeAndLaunch(t, tab, "checker.html", `<!doctype html><script>
let finish;
const done = new Promise((r) => { finish = r; });
webMcp.registerTool({ name: 'results', description: 'what the attempts answered', execute: () => done });
(async () => {
  await document.modelContext.registerTool({ name: 'mine', description: 'd', inputSchema: { type: 'object', properties: { s: { type: 'string' } } }, execute: () => 1 });
  const [mine] = (await document.modelContext.getTools()).filter((x) => x.name === 'mine');
  const out = {};
  const attempt = async (name, input) => { try { await document.modelContext.executeTool(name === 'mine' ? mine : { ...mine, name }, input); return 'ran'; } catch (e) { return e.name + ':' + (e.refused || ''); } };
  out.other = await attempt('add_points', { team: 'home', points: 100 });
  out.huge = await attempt('mine', { s: 'x'.repeat(200000) });
  out.fine = await attempt('mine', { s: 'ok' });
  parent.postMessage({ type: '<img src=x onerror="document.title=1">' }, '*');
  finish(out);
})();
</script>`, 2)
	var out map[string]string
	if a := callTool(tab, id, "results", "{}"); !a.OK || json.Unmarshal(a.Value, &struct{ Result *map[string]string }{&out}) != nil {
		t.Fatalf("the app's results: %+v", a)
	}
	if out["other"] != "UnknownError:" {
		t.Errorf("executeTool of another app's tool answered %q, want UnknownError (it never reaches the host)", out["other"])
	}
	if !strings.HasPrefix(out["huge"], "DataError:") {
		t.Errorf("executeTool with 200 KB of arguments answered %q, want a DataError from the validator", out["huge"])
	}
	if out["fine"] != "ran" {
		t.Errorf("a fair executeTool answered %q", out["fine"])
	}
	if a := callTool(tab, "app_scoreboard", "get_scores", "{}"); !a.OK || strings.Contains(string(a.Value), "100") {
		t.Errorf("the scoreboard was reached: %+v", a)
	}
	shown := harness.WaitFor[string](tab, cardOf(id)+`?.querySelector('.app-ignored:not([hidden])')?.textContent`, appBound)
	if !strings.Contains(shown, `type "<img src=x onerror=`) {
		t.Errorf("the card says %q", shown)
	}
	if n := harness.Eval[int](tab, cardOf(id)+`.querySelectorAll('.app-ignored img').length`); n != 0 {
		t.Errorf("the card rendered the app's markup: %d images", n)
	}
	stillServes(t, tab)
}

func TestMiniAppWithALyingModelContext(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	// The app replaces document.modelContext with one whose getTools lists a hundred tools, some
	// malformed, one with a getter that throws, and whose executeTool answers what it likes.
	id := writeAndLaunch(t, tab, "liar.html", `<!doctype html><script>
const ctx = new EventTarget();
ctx.getTools = async () => {
  const list = [];
  for (let i = 0; i < 100; i++) list.push({ name: 'tool_' + i, description: 'd' + i, inputSchema: { type: 'object' }, window, origin: 'null' });
  list.push(null, 7, { name: 42 }, { name: 'bad name!', description: 'd' }, { name: 'no_desc' });
  list.push(Object.defineProperty({ name: 'throws', description: 'd' }, 'inputSchema', { get() { throw new Error('boom'); } }));
  return list;
};
ctx.executeTool = async () => { throw new Error('never'); };
Object.defineProperty(document, 'modelContext', { value: ctx, configurable: true });
</script>`, 16)
	tools := workerTools(tab, id)
	if len(tools) != 16 {
		t.Errorf("the worker holds %d tools of the liar, want the 16 an app may have", len(tools))
	}
	if a := callTool(tab, id, "tool_0", "{}"); a.OK || a.Refused != "exec-threw" {
		t.Errorf("a lying tool answered %+v, want exec-threw", a)
	}
	stillServes(t, tab)
}

// hostileExternal is one external app page that attacks the Apps panel with what the host
// cannot serve.
const hostileExternal = `<!doctype html><script>
const host = 'HOST';
// Forty markers nobody speaks, each a kilobyte long, then requests for methods the host does not
// have until the budget stops the app.
for (let i = 0; i < 40; i++) parent.postMessage({ jsonrpc: '2.0', protocol: i + 'x'.repeat(1000), id: i, method: 'm'.repeat(1000) }, host);
for (let i = 0; i < 1000; i++) parent.postMessage({ jsonrpc: '2.0', protocol: 'voicebox-mini-app/1', id: 1000 + i, method: 'ui/teleport' + i }, host);
</script>`

func TestExternalAppSendsWhatTheHostCannotServe(t *testing.T) {
	t.Parallel()
	app := newOrigin(t)
	reg, _ := json.Marshal(map[string]any{"noise": map[string]any{"name": "Noise", "url": app.URL + "/", "origin": app.URL}})
	relay := harness.StartRelay(t, "MINI_APPS="+string(reg))
	app.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Security-Policy", "frame-ancestors "+relay.URL)
		w.Header().Set("Cross-Origin-Embedder-Policy", "credentialless")
		w.Header().Set("Cross-Origin-Resource-Policy", "cross-origin")
		fmt.Fprint(w, strings.ReplaceAll(hostileExternal, "HOST", relay.URL))
	}))
	tab := pageWithScoreboard(t, relay.URL)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)
	harness.Eval[bool](tab, `(voicebox.externalApps.open('noise'), true)`)
	why := harness.WaitFor[string](tab, `document.querySelector('.xa-card[data-app-id="noise"] .app-stopped:not([hidden])')?.textContent`, appBound)
	if !strings.Contains(why, "message-budget-exceeded") {
		t.Errorf("the card says %q", why)
	}
	g := harness.Eval[struct {
		Total   int
		ByWhy   map[string]int
		Samples []struct{ Why, What string }
	}](tab, `voicebox.externalApps.state('noise').stats.ignored`)
	if g.Total == 0 || g.Total > 500 {
		t.Errorf("%d messages were counted as ignored; the budget (500) bounds them", g.Total)
	}
	if len(g.ByWhy) > 16 || len(g.Samples) > 5 {
		t.Errorf("the ignored messages kept %d reasons and %d samples", len(g.ByWhy), len(g.Samples))
	}
	for _, s := range g.Samples {
		if len(s.Why) > 400 || len(s.What) > 200 {
			t.Errorf("a sample is %d + %d characters: the app's strings are not clamped", len(s.Why), len(s.What))
		}
	}
	stillServes(t, tab)
}
