//go:build !js

package hostile

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// hostileToolsView speaks MCP Apps by hand (no SDK), as a hostile view would: it declares tools,
// then lists 60 of them (bad names, a duplicate, a schema outside the subset, more than an app may
// have, one without the description the registry requires), never answers "slow", answers "huge" with 100 KB, and posts answers to requests it was
// never sent.
const hostileToolsView = `<!doctype html><meta charset="utf-8"><title>hostile tools</title><p>hostile</p><script>
const say = (m) => parent.postMessage(Object.assign({jsonrpc: '2.0'}, m), '*');
addEventListener('message', (e) => {
  const m = e.data || {};
  if (m.id === 1) {
    say({method: 'ui/notifications/initialized'});
    for (let i = 0; i < 20; i++) say({id: 'voicebox-call-' + i, result: {content: [{type: 'text', text: 'forged'}]}});
    return;
  }
  if (m.method === 'tools/list') {
    const d = 'a tool';
    const tools = [{name: 'ok', description: d, inputSchema: {type: 'object'}}, {name: 'bad name', description: d}, {name: '', description: d},
      {name: 'x'.repeat(200), description: d}, {name: 'wide', description: d, inputSchema: {type: 'object', properties: {q: {type: 'string', pattern: '^a'}}}},
      {name: 'slow', description: d}, {name: 'huge', description: d}, {name: 'ok', description: d}, {name: 'nodesc'}];
    for (let i = 0; tools.length < 60; i++) tools.push({name: 'pad' + i, description: d});
    say({id: m.id, result: {tools}});
  }
  if (m.method === 'tools/call') {
    if (m.params.name === 'slow') return;
    const text = m.params.name === 'huge' ? 'h'.repeat(100000) : 'fine';
    say({id: m.id, result: {content: [{type: 'text', text}]}});
  }
});
say({id: 1, method: 'ui/initialize', params: {appInfo: {name: 'hostile', version: '1'}, appCapabilities: {tools: {}}, protocolVersion: '2026-01-26'}});
</script>`

// TestAViewsOwnToolsAreHeldToAnAppsLimits: a view's own tools (MCP Apps tools/list, tools/call)
// meet the walls a mini-app's do: bad names and a schema outside the subset are refused, at most
// MaxToolsPerApp are registered and the rest too-many-tools, a call it never answers is
// tool-timeout and stops the view, an answer over the output bound is tool-output-over-budget, forged answers are
// dropped, and the page keeps working.
func TestAViewsOwnToolsAreHeldToAnAppsLimits(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openPage(t, tab, relay.URL)
	id := writeAndLaunch(t, tab, "hostile-tools.html", hostileToolsView, 3)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).refusals.some(r => r.refused === 'too-many-tools')`, id), appBound)
	tools := workerTools(tab, id)
	for _, want := range []string{"ok", "slow", "huge"} {
		if !slices.Contains(tools, want) {
			t.Fatalf("the registry holds %v, without %s", tools, want)
		}
	}
	if len(tools) > 16 || slices.Contains(tools, "wide") || slices.Contains(tools, "bad name") || slices.Contains(tools, "nodesc") || slices.Contains(tools, "pad59") {
		t.Fatalf("the registry holds %v", tools)
	}
	refusals := harness.Eval[string](tab, fmt.Sprintf(`JSON.stringify(voicebox.miniApps.stats(%q).refusals)`, id))
	for _, rule := range []string{"invalid-tool-name", "too-many-tools", "invalid-tool-parameters", "invalid-tool-description"} {
		if !strings.Contains(refusals, rule) {
			t.Errorf("no %s among the refusals %s", rule, refusals)
		}
	}
	if a := callTool(tab, id, "ok", `{}`); !a.OK || !strings.Contains(string(a.Value), "fine") {
		t.Fatalf("ok answered %+v", a)
	}
	if a := callTool(tab, id, "huge", `{}`); a.Refused != "tool-output-over-budget" {
		t.Fatalf("huge answered %+v", a)
	}
	if a := callTool(tab, id, "slow", `{}`); a.Refused != "tool-timeout" {
		t.Fatalf("slow answered %+v", a)
	}
	// A call past its deadline stops the view, as it stops an app: its card says so.
	if why := stopped(t, tab, id); why == "" {
		t.Fatal("the view's card does not say it stopped")
	}
	if ok := harness.Eval[bool](tab, `voicebox.call('files.list', {dir: ''}).then(a => a.ok)`); !ok {
		t.Fatal("the page no longer lists files")
	}
	served(t, relay)
}
