//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestMCPAppsViewListsItsOwnTools: a view written here with the pinned ext-apps SDK that answers
// tools/list and tools/call itself (onlisttools, oncalltool), opened as a mini-app: its tools
// join the page's registry like an app's (scoped to it for the model, their schemas checked by
// the same subset), a call with good arguments reaches it and answers, a call with bad ones is
// refused by the registry before it reaches the view, and its isError is a refusal.
func TestMCPAppsViewListsItsOwnTools(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	content, _ := json.Marshal(extAppsPage(t, "guests/mcp-apps-tools.html"))
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: 'tools-view.html', content: %s}).then(() => true)`, content))
	id := harness.Eval[string](tab, `voicebox.miniApps.launch({path: 'tools-view.html'}).then(r => r.appId)`)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length === 2`, id), readyBound)
	checkResults(t, appResults(t, tab), 1)
	if tools := harness.Eval[[]string](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q)`, id)); !slices.Contains(tools, "count") || !slices.Contains(tools, "fail") {
		t.Fatalf("the registry lists %v", tools)
	}

	ans := relay.Call(t, miniapp.ModelName(id, "count"), map[string]any{"n": 2})
	if !ans.OK || !strings.Contains(string(ans.Observed), `"total":2`) {
		t.Fatalf("count through the relay answered %s", ans.Raw)
	}
	for _, c := range []struct{ args, rule string }{
		{`{}`, "missing-argument"},
		{`{"n": "two"}`, "invalid-argument-type"},
		{`{"n": 11}`, "invalid-argument-range"},
	} {
		if got := refusedRule(tab, id, "count", c.args); got != c.rule {
			t.Errorf("count with %s answered %q, want %s", c.args, got, c.rule)
		}
	}
	if got := refusedRule(tab, id, "fail", `{}`); got != "exec-threw" {
		t.Errorf("fail answered %q, want exec-threw", got)
	}
	// Two calls reached the view (count, fail): the refused ones never did.
	if n := harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('calls').textContent`); n != "2" {
		t.Fatalf("the view was asked %s calls, want 2", n)
	}
	if got := refusedRule(tab, id, "count", `{"n": 3}`); got != "ok" {
		t.Fatalf("count again answered %q", got)
	}
}
