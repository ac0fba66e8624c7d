//go:build !js

package hostile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// spinApp is a mini-app whose spin tool runs a 20 s busy loop. Just before the loop it takes back
// its tool "started", so a test sees the loop begin from outside the app.
const spinApp = `<!doctype html><title>Spinner</title><script>
webMcp.registerTool({name: 'ping', description: 'answers pong', execute: () => 'pong'});
webMcp.registerTool({name: 'started', description: 'taken back when the loop starts', execute: () => 0});
webMcp.registerTool({name: 'spin', description: 'a 20 s busy loop', execute: () => {
  webMcp.unregisterTool('started');
  const end = Date.now() + 20000;
  while (Date.now() < end) {}
  return 'spun';
}});
webMcp.ready();
</script>`

// TestSpinningMiniAppStallsNoOther is review item 4: a 20 s busy loop in one app's tool made
// another app's tools time out for the whole loop, because the sandboxed apps shared a renderer
// thread. Each app's bridge now has a host of its own (app-<16 hex>.localhost), a site of its
// own, so Chromium puts each app in its own process: the other app answers while the loop runs.
// The call that passes its deadline stops the spinning app, which starts again in a new process.
func TestSpinningMiniAppStallsNoOther(t *testing.T) {
	// Not parallel: a spinning app must stall no other, and other tests' work on the cores would blur what stalls it.
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "hostile/spin.html", spinApp, 3)

	// Each app's bridge is on a host of its own, none on the page's.
	hosts := harness.Eval[[]string](tab, `[...document.querySelectorAll('.app-card iframe.bridge')].map(f => new URL(f.src).host)`)
	if len(hosts) != 2 || hosts[0] == hosts[1] {
		t.Fatalf("the bridges' hosts are %v, want two of their own", hosts)
	}
	for _, h := range hosts {
		if !strings.HasPrefix(h, "app-") || !strings.HasSuffix(h, ".localhost:"+relay.Port()) {
			t.Fatalf("a bridge is on %s, want app-<16 hex>.localhost:%s", h, relay.Port())
		}
	}

	harness.Eval[bool](tab, fmt.Sprintf(`(window.spinning = voicebox.call('miniapps.call', {appId: %q, tool: 'spin', args: {}}).then(a => (window.spun = a)), true)`, id))
	harness.WaitFor[bool](tab, fmt.Sprintf(`!voicebox.miniApps.tools(%q).includes('started')`, id), appBound)

	// The loop runs; the scoreboard answers, and the spin call has not answered yet.
	if a := callTool(tab, "app_scoreboard", "add_points", `{"team": "home", "points": 2}`); !a.OK {
		t.Fatalf("while another app spins, the scoreboard answered %+v", a)
	}
	if spun := harness.Eval[any](tab, `window.spun ?? null`); spun != nil {
		t.Fatalf("the spin call answered before the scoreboard did: %v", spun)
	}

	// Its deadline passes: the call is refused, and the app is stopped.
	spun := harness.Eval[answer](tab, `window.spinning`)
	if spun.Refused != "tool-timeout" {
		t.Fatalf("the spin call answered %+v, want tool-timeout", spun)
	}
	why := stopped(t, tab, id)
	if !strings.Contains(why, "tool-timeout") || !strings.Contains(why, "spin") || !strings.Contains(why, "Start again") {
		t.Errorf("the stopped app's card says %q", why)
	}
	if tools := workerTools(tab, id); len(tools) != 0 {
		t.Errorf("the worker still offers the stopped app's tools %v", tools)
	}
	if n := harness.Eval[int](tab, cardOf(id)+`.querySelectorAll('iframe').length`); n != 0 {
		t.Errorf("the stopped app's card still holds %d frames", n)
	}
	stillServes(t, tab)

	// Started again, it runs on a new host (its old process may still be spinning) and answers.
	startAgain(t, tab, id, 3)
	again := harness.Eval[string](tab, fmt.Sprintf(`new URL(%s.querySelector('iframe.bridge').src).host`, cardOf(id)))
	for _, h := range hosts {
		if again == h {
			t.Fatalf("started again on the host it had, %s", again)
		}
	}
	if a := callTool(tab, id, "ping", "{}"); !a.OK || !strings.Contains(string(a.Value), "pong") {
		t.Errorf("started again, ping answered %+v", a)
	}
	stillServes(t, tab)
}
