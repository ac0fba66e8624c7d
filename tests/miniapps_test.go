//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"voicebox/shared/miniapp"
	"voicebox/tests/harness"
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
	tab.Screenshot("mini-app-scoreboard")
}
