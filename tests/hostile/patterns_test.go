//go:build !js

package hostile

import (
	"github.com/voicebox-go/voicebox/tests/harness"
	"strings"
	"testing"
)

// Issue 34: document.modelContext takes the WebMCP draft's schema subset, with pattern. A pattern
// is the app's and the string the model's; a backtracking engine (the page's RegExp) matching
// ^(a+)+$ against a few thousand a's and a "!" takes longer than the universe has, and the worker
// that checks every call's arguments would stop with it. The host matches patterns with RE2
// (shared/toolschema, checkPattern), linear in the string, and refuses what RE2 does not take.

// TestACatastrophicPatternCannotHoldTheWorker: an app registers a tool whose pattern backtracks
// catastrophically (^(a+)+$) and one with a lookahead; a call with 5,000 a's and a "!" is refused
// invalid-argument-pattern, the tool never runs, a matching call runs, the lookahead tool is
// refused at registration invalid-tool-parameters, and the worker and the other app serve on.
func TestACatastrophicPatternCannotHoldTheWorker(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "patterns.html", `<!doctype html><title>Patterns</title><script>
let ran = 0;
document.modelContext.registerTool({ name: 'nested', description: 'a nested quantifier',
  inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } }, required: ['s'] },
  execute: ({ s }) => { ran++; return { ran, length: s.length }; } });
document.modelContext.registerTool({ name: 'lookahead', description: 'a lookahead',
  inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a+$' } } },
  execute: () => 'never' }).catch((err) => { window.lookahead = err.refused || String(err); });
</script>`, 1)

	bad := callTool(tab, id, "nested", `{"s": "`+strings.Repeat("a", 5000)+`!"}`)
	if bad.OK || bad.Refused != "invalid-argument-pattern" {
		t.Fatalf("a string the pattern does not match answered %+v", bad)
	}
	good := callTool(tab, id, "nested", `{"s": "aaaa"}`)
	if !good.OK || !strings.Contains(string(good.Value), `"ran":1`) {
		t.Fatalf("a matching string answered %+v (the tool must have run once, for it alone)", good)
	}
	for _, name := range workerTools(tab, id) {
		if name == "lookahead" {
			t.Fatalf("the host took a lookahead pattern")
		}
	}
	stillServes(t, tab)
}
