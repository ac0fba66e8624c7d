//go:build !js

package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestAnOriginalAppKeepsItsToolsPastABadOne: an app written for the original's SDK registers,
// through window.webMcp and window.voicebox, tools the page refuses (no description, a name out
// of shape, a name taken) between good ones. registerTool throws only where the original's SDK
// did (a name that is not a string, no execute); every other refusal is recorded (webMcp.refusals,
// the app's diagnostics on its card) and the script goes on, so the later tools register and run.
// document.modelContext keeps the draft's stricter registerTool, which rejects.
func TestAnOriginalAppKeepsItsToolsPastABadOne(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	tab.Allow(`was refused`)
	openWorkspace(t, tab, relay.URL)
	id := writeApp(t, tab, "original-style.html", `<!doctype html><title>Original style</title><script>
const threw = {};
webMcp.registerTool({name: 'first', description: 'The first tool', execute: () => 'first'});
webMcp.registerTool({name: 'undescribed', execute: () => 1});
webMcp.registerTool({name: 'out of shape!', description: 'a space and a bang', execute: () => 1});
const again = webMcp.registerTool({name: 'first', description: 'The first tool again', execute: () => 'again'});
again.unregister(); // of a refused registration: the first tool stays
try { webMcp.registerTool({name: 7, description: 'a number for a name', execute: () => 1}); } catch (e) { threw.number = e instanceof TypeError; }
try { window.voicebox.registerTool({name: 'lazy', description: 'no execute'}); } catch (e) { threw.execute = e instanceof TypeError; }
const draft = document.modelContext.registerTool({name: 'strict', execute: () => 1}).then(() => false, (e) => e instanceof TypeError);
window.voicebox.registerTool({name: 'last', description: 'The last tool',
  execute: async () => ({threw: {...threw, draft: await draft}, again: await again.result, refusals: webMcp.refusals.map((r) => r.name + ' ' + r.refused)})});
webMcp.ready();
</script>`, 2)
	tools := harness.Eval[[]string](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q)`, id))
	if strings.Join(tools, " ") != "first last" {
		t.Fatalf("the app has the tools %v, want first and last", tools)
	}
	got := callApp(tab, id, "last", "{}")
	res, _ := got["value"].(map[string]any)["result"].(map[string]any)
	threw, _ := res["threw"].(map[string]any)
	if threw["number"] != true || threw["execute"] != true || threw["draft"] != true || len(threw) != 3 {
		t.Errorf("registerTool threw %v; want only for a number name, no execute, and document.modelContext", threw)
	}
	if again, _ := res["again"].(map[string]any); again["ok"] != false || again["refused"] != "invalid-tool-name" {
		t.Errorf("the refused registration's result is %v", res["again"])
	}
	want := []string{"undescribed invalid-tool-description", "out of shape! invalid-tool-name", "first invalid-tool-name"}
	if fmt.Sprint(res["refusals"]) != fmt.Sprint(want) {
		t.Errorf("webMcp.refusals names %v, want %v", res["refusals"], want)
	}
	if a := callApp(tab, id, "first", "{}"); a["ok"] != true || a["value"].(map[string]any)["result"] != "first" {
		t.Errorf("the first tool answered %v (a taken name must not replace it)", a)
	}
	// The page's diagnostics of the app say the same, and so does its card.
	refusals := harness.WaitFor[[]map[string]any](tab, fmt.Sprintf(`(() => { const s = voicebox.miniApps.stats(%q); return s.refusals.length >= 3 && s.refusals; })()`, id), appBound)
	var names []string
	for _, r := range refusals {
		names = append(names, fmt.Sprint(r["name"], " ", r["refused"], " ", r["by"]))
	}
	if strings.Join(names, ", ") != "undescribed invalid-tool-description sdk, out of shape! invalid-tool-name sdk, first invalid-tool-name sdk" {
		t.Errorf("the app's diagnostics hold %v", names)
	}
	card := fmt.Sprintf(`document.querySelector('.app-card[data-app-id="%s"]')`, id)
	shown := harness.WaitFor[string](tab, card+`?.querySelector('.tool-refusals')?.textContent`, appBound)
	for _, w := range []string{"3 tools were refused", "undescribed", "invalid-tool-description", "out of shape!"} {
		if !strings.Contains(shown, w) {
			t.Errorf("the card says %q, without %q", shown, w)
		}
	}
}
