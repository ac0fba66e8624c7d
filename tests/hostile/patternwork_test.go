//go:build !js

package hostile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// Issue 38 item 4: the host matches the WebMCP draft's pattern with its own linear-time matcher
// (internal/shared/rematch) instead of Go's regexp. Linear is not small: a pattern's repetitions
// are written out, and matching costs up to one step per instruction per rune. RE2 takes a
// pattern of a few million instructions in 512 characters (forty-odd `.{0,1000}`), and a
// 64 KiB argument against it holds the worker for minutes. The matcher bounds both: the program
// at registration (rematch.MaxInstructions), the steps of one match at the call
// (rematch.MaxSteps).

// TestAPatternCannotAskForUnboundedWork: an app registers a tool whose pattern compiles past
// MaxInstructions (refused at registration invalid-tool-parameters, while RE2 takes it) and one
// whose pattern keeps 2,000 instructions live; a call with 20,000 letters is refused
// invalid-argument-pattern naming the step bound, the tool never runs, a short matching call
// runs, and the worker and the other app serve on.
func TestAPatternCannotAskForUnboundedWork(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := pageWithScoreboard(t, relay.URL)
	id := writeAndLaunch(t, tab, "patternwork.html", `<!doctype html><title>Pattern work</title><script>
let ran = 0;
document.modelContext.registerTool({ name: 'huge', description: 'a pattern of many repetitions',
  inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '`+strings.Repeat(`.{0,1000}`, 50)+`' } } },
  execute: () => 'never' }).catch(() => {});
document.modelContext.registerTool({ name: 'wide', description: 'a pattern that keeps many threads live',
  inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '[a-z]{0,1000}!' } }, required: ['s'] },
  execute: ({ s }) => { ran++; return { ran, length: s.length }; } });
</script>`, 1)

	long := callTool(tab, id, "wide", `{"s": "`+strings.Repeat("a", 20000)+`"}`)
	if long.OK || long.Refused != "invalid-argument-pattern" || !strings.Contains(long.Why, "steps") {
		t.Fatalf("a string past the step bound answered %+v, want invalid-argument-pattern naming the bound", long)
	}
	good := callTool(tab, id, "wide", `{"s": "`+strings.Repeat("b", 50)+`!"}`)
	if !good.OK || !strings.Contains(string(good.Value), `"ran":1`) {
		t.Fatalf("a matching string answered %+v (the tool must have run once, for it alone)", good)
	}
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).refusals.some(r => r.refused === 'invalid-tool-parameters' && String(r.why).includes('instructions'))`, id), appBound)
	for _, name := range workerTools(tab, id) {
		if name == "huge" {
			t.Fatalf("the host took a pattern past rematch.MaxInstructions")
		}
	}
	stillServes(t, tab)
}
