//go:build !js

package chaos

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// heldCalls is how many calls to a mini-app are in flight on its port when its document goes.
const heldCalls = 4

// appBound bounds a mini-app's start, up to its tools registered.
const appBound = 15 * time.Second

// holdingApp holds every call of hold, reloads its own document on reload_me, navigates its frame
// to a blank page (no SDK, so no handshake and no new port) on leave, answers ping.
const holdingApp = `<!doctype html><title>Holding</title><script>
webMcp.registerTool({name: 'hold', description: 'never answers', execute: () => new Promise(() => {})});
webMcp.registerTool({name: 'reload_me', description: 'reloads its document, unanswered', execute: () => { setTimeout(() => location.reload(), 10); return new Promise(() => {}); }});
webMcp.registerTool({name: 'leave', description: 'navigates its frame to a page that never says it is ready', execute: () => { setTimeout(() => { location.href = 'about:blank'; }, 10); return new Promise(() => {}); }});
webMcp.registerTool({name: 'ping', description: 'pong', execute: () => 'pong'});
</script>`

// portAnswer is the worker's answer to a page call, as the page's API gives it.
type portAnswer struct {
	OK      bool            `json:"ok"`
	Value   json.RawMessage `json:"value"`
	Refused string          `json:"refused"`
}

// TestCallsOnAnAppsPortEndOnceWhenItsDocumentGoes: calls to a mini-app travel on a port its
// document holds to the worker (the bridge off the path). With heldCalls of them in flight, the
// document goes: it reloads itself, it navigates to a page that never says it is ready (so no
// newer port replaces its port), or the person closes the app. Each call ends with exactly one
// answer, mini-app-closed, well before the call's deadline (not tool-timeout: nothing waits for a
// document that is gone), the app is not stopped by it, the worker's old port is closed as its
// document goes (not only when a newer one replaces it), and the next
// document's port serves the next call from a clean count.
func TestCallsOnAnAppsPortEndOnceWhenItsDocumentGoes(t *testing.T) {
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready' && !document.querySelector('#new-file').disabled`, patience)
	content, _ := json.Marshal(holdingApp)
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: 'chaos/holding.html', content: %s}).then(() => true)`, content))
	var id string
	launch := func() string {
		id := harness.Eval[string](tab, `voicebox.miniApps.launch({path: 'chaos/holding.html'}).then(a => a.appId)`)
		harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length === 4`, id), appBound)
		return id
	}
	closeApp := func() {
		harness.Eval[bool](tab, fmt.Sprintf(`([...document.querySelector('.app-card[data-app-id="%s"]').querySelectorAll('button')].find(b => b.textContent === 'Close').click(), true)`, id))
	}
	id = launch()
	ends := []struct {
		name    string
		end     func()
		restart bool // the app is started again after (its document does not come back by itself)
	}{
		{"the app reloads itself", func() {
			harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.call('miniapps.call', {appId: %q, tool: 'reload_me', args: {}}).then(a => window.reloadAnswer = a), true)`, id))
		}, false},
		{"the app navigates away", func() {
			harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.call('miniapps.call', {appId: %q, tool: 'leave', args: {}}).then(a => window.reloadAnswer = a), true)`, id))
		}, true},
		{"the person closes the app", closeApp, true},
	}
	for round := range chaosRounds {
		for _, e := range ends {
			before := harness.Eval[int](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports[0].doc)`, id))
			harness.Eval[bool](tab, fmt.Sprintf(`(window.held = Array.from({length: %d}, () => voicebox.call('miniapps.call', {appId: %q, tool: 'hold', args: {}})), true)`, heldCalls, id))
			harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports[0].sent >= %d)`, id, heldCalls), patience)
			t0 := time.Now()
			e.end()
			answers := harness.WaitFor[[]portAnswer](tab, `Promise.all(window.held)`, patience)
			took := time.Since(t0)
			for i, a := range answers {
				if a.OK || a.Refused != "mini-app-closed" {
					t.Errorf("round %d, %s: held call %d answered %+v, want mini-app-closed", round, e.name, i, a)
				}
			}
			if took >= 5*time.Second {
				t.Errorf("round %d, %s: the held calls took %v to end: they waited for the deadline", round, e.name, took)
			}
			if e.name != "the person closes the app" {
				if a := harness.WaitFor[portAnswer](tab, `window.reloadAnswer`, patience); a.OK || a.Refused != "mini-app-closed" {
					t.Errorf("round %d, %s: the call that made it answered %+v", round, e.name, a)
				}
				harness.Eval[bool](tab, `(delete window.reloadAnswer, true)`)
			}
			if e.restart {
				if e.name == "the app navigates away" {
					// The document that went took its port with it: none is left bound to the
					// worker while no newer document says it is ready.
					if n := harness.Eval[int](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports.length)`, id)); n != 0 {
						t.Errorf("round %d: after the app navigated away the worker still holds %d ports for it", round, n)
					}
					closeApp()
				}
				id = launch()
			} else {
				harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports.length === 1 && a.value.ports[0].doc > %d)`, id, before), patience)
				harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length === 4`, id), appBound)
			}
			if a := harness.Eval[portAnswer](tab, fmt.Sprintf(`voicebox.call('miniapps.call', {appId: %q, tool: 'ping', args: {}})`, id)); !a.OK || string(a.Value) != `{"result":"pong"}` {
				t.Fatalf("round %d, after %s: ping answered %+v", round, e.name, a)
			}
			st := harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.call('miniapps.ports', {appId: %q}).then(a => a.value.ports[0])`, id))
			if st["sent"] != 1.0 || st["answered"] != 1.0 || st["dropped"] != 0.0 {
				t.Errorf("round %d, after %s: the new port %v, want one call answered and nothing else", round, e.name, st)
			}
			if s := harness.Eval[any](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).stopped`, id)); s != nil {
				t.Errorf("round %d, after %s: the app was stopped: %v", round, e.name, s)
			}
		}
	}
}
