//go:build !js

package hostile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestAnAppsOwnRefusalReportsAreBoundedAndMarkedAsItsOwn: the SDK tells the page of a
// registration it refused itself (the original's spelling goes on past a bad tool), through the
// bridge's register_refused. An app that takes its SDK's port posts 100 of them by hand, with
// 4 KB strings, forged rule ids and the names of another app's tools, and one whose fields are
// not strings (an object whose toString is not a function). The wall: the page keeps at most 64
// in the app's diagnostics, each clipped (name 128, rule 64, sentence 512 characters) and marked
// as the app's own word (by "sdk"), never as the host's; the one that is not strings is dropped;
// the other app's diagnostics are untouched. The app's own tool, the worker and the other app still answer.
func TestAnAppsOwnRefusalReportsAreBoundedAndMarkedAsItsOwn(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	tab.Allow(`was refused`)
	id := writeAndLaunch(t, tab, "hostile/reports.html", `<!doctype html><title>Reports</title><script>
window.addEventListener('message', (e) => {
  if (!e.data || e.data.type !== 'mini_app_port' || !e.ports || !e.ports[0]) return;
  const port = e.ports[0];
  for (let i = 0; i < 100; i++) {
    port.postMessage({type: 'register_refused', name: 'get_scores' + 'x'.repeat(4096), refused: 'host-' + 'y'.repeat(4096), why: 'the host says ' + 'z'.repeat(4096)});
  }
  port.postMessage({type: 'register_refused', name: {toString: 1}, refused: ['a'], why: null});
  port.postMessage({type: 'register_refused', name: 'sentinel', refused: 'last', why: 'the last report'});
});
webMcp.registerTool({name: 'still', description: 'Still here', execute: () => 'still'});
webMcp.ready();
</script>`, 1)
	stats := harness.WaitFor[map[string]any](tab, fmt.Sprintf(`(() => { const s = voicebox.miniApps.stats(%q);
		return s.refusals.length > 0 && s.refusals[s.refusals.length - 1].name === 'sentinel' && s; })()`, id), appBound)
	refusals, _ := stats["refusals"].([]any)
	if len(refusals) != 64 {
		t.Errorf("the app's diagnostics keep %d reports, want the latest 64", len(refusals))
	}
	for _, x := range refusals {
		r := x.(map[string]any)
		name, rule, why := fmt.Sprint(r["name"]), fmt.Sprint(r["refused"]), fmt.Sprint(r["why"])
		if r["by"] != "sdk" || name == "" || len(name) > 128 || len(rule) > 64 || len(why) > 512 {
			t.Fatalf("a forged report was kept as %v (by %v, %d/%d/%d characters)", r["name"], r["by"], len(name), len(rule), len(why))
		}
	}
	if stats["stopped"] != nil {
		t.Errorf("the reports stopped the app: %v", stats["stopped"])
	}
	shown := harness.Eval[int](tab, cardOf(id)+`.querySelectorAll('.tool-refusals li').length`)
	if shown != 64 {
		t.Errorf("the card lists %d refused tools, want 64", shown)
	}
	if n := harness.Eval[int](tab, `voicebox.miniApps.stats('app_scoreboard').refusals.length`); n != 0 {
		t.Errorf("the scoreboard's diagnostics hold %d reports of another app", n)
	}
	if a := callTool(tab, id, "still", "{}"); !a.OK || !strings.Contains(string(a.Value), "still") {
		t.Errorf("the app's own tool answered %+v", a)
	}
	stillServes(t, tab)
}
