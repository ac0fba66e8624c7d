//go:build !js

package tests

import (
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
	"github.com/voicebox-go/voicebox/tests/sampleapp"
)

// A listener the test adds for the worker's mini-app calls hears them beside the page's own:
// the page still runs the call (a second listener used to replace the first, and the call then
// waited for an answer that never came).
func TestWorkerMessagesReachEveryListener(t *testing.T) {
	t.Parallel()
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
	want := []string{"assistant", "call", "confirmAction", "exporter", "externalApps", "history", "live", "mcpClients", "miniApps", "must", "notify", "on", "where", "workspace"}
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

// An external app that loads the guest library from its old address (/miniapp-guest.js, before
// the file was renamed mini-app-guest.js) still connects and offers its tools.
func TestTheGuestLibraryOldAddressStillWorks(t *testing.T) {
	t.Parallel()
	app := newOrigin(t)
	reg, _ := json.Marshal(map[string]any{"old": map[string]any{"name": "Old guest", "url": app.URL + "/", "origin": app.URL}})
	relay := harness.StartRelay(t, "MINI_APPS="+string(reg))
	app.serve(t, sampleapp.Handler(sampleapp.Options{Host: relay.URL, Guest: relay.URL + "/miniapp-guest.js"}))
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready'`, readyBound)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)
	harness.Eval[bool](tab, `(voicebox.externalApps.open('old'), true)`)
	tools := harness.WaitFor[int](tab, `(() => { const s = voicebox.externalApps.state('old'); return s && s.live && s.tools.length; })()`, externalBound)
	if tools == 0 {
		t.Fatal("the app connected but offers no tools")
	}
}
