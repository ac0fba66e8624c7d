//go:build !js

package tests

import (
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// A listener the test adds for the worker's mini-app calls hears them beside the page's own:
// the page still runs the call (a second listener used to replace the first, and the call then
// waited for an answer that never came).
func TestWorkerMessagesReachEveryListener(t *testing.T) {
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	harness.WaitFor[bool](tab, `document.querySelectorAll('#app-tray li[data-kind="app"]').length >= 3`, appBound)
	id := launchApp(t, tab, `{name: 'Scoreboard'}`, 4)

	harness.Eval[bool](tab, `(() => {
		window.heard = [];
		window.stopHearing = voicebox.on('miniapp.call', (msg) => heard.push(msg.tool));
		return true;
	})()`)
	got := harness.Eval[map[string]any](tab, `voicebox.miniApps.call('`+id+`', 'add_points', {team: 'home', points: 3})`)
	if home, _ := got["home"].(map[string]any); home == nil || home["score"] != 3.0 {
		t.Fatalf("with a second listener, add_points answered %v", got)
	}
	if heard := harness.Eval[[]string](tab, `heard`); len(heard) != 1 || heard[0] != "add_points" {
		t.Fatalf("the test's listener heard %v", heard)
	}

	// What on returns stops that listener, and only it.
	harness.Eval[bool](tab, `(stopHearing(), true)`)
	got = harness.Eval[map[string]any](tab, `voicebox.miniApps.call('`+id+`', 'add_points', {team: 'home', points: 1})`)
	if home, _ := got["home"].(map[string]any); home == nil || home["score"] != 4.0 {
		t.Fatalf("after the test's listener stopped, add_points answered %v", got)
	}
	if heard := harness.Eval[[]string](tab, `heard`); len(heard) != 1 {
		t.Fatalf("a stopped listener still hears: %v", heard)
	}
}

// The page's modules load as modules, and window.voicebox is the one handle they leave on window.
func TestThePageIsModulesWithOneHandle(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `!!window.voicebox`, readyBound)
	classic := harness.Eval[[]string](tab, `[...document.scripts].filter(s => s.type !== 'module').map(s => s.src)`)
	if len(classic) != 0 {
		t.Fatalf("the page loads classic scripts: %v", classic)
	}
	keys := harness.Eval[[]string](tab, `Object.keys(voicebox).sort()`)
	want := []string{"assistant", "call", "confirmAction", "externalApps", "live", "miniApps", "must", "notify", "on"}
	if len(keys) != len(want) {
		t.Fatalf("window.voicebox has %v, want %v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("window.voicebox has %v, want %v", keys, want)
		}
	}
	if harness.Eval[bool](tab, `Object.isFrozen(voicebox) && Object.getOwnPropertyDescriptor(window, 'voicebox').writable === false`) != true {
		t.Fatal("window.voicebox can be replaced or changed")
	}
}
