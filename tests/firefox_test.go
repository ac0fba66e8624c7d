//go:build !js

package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// firefoxLacks is what the page may say Firefox lacks, as the start of its sentence
// (public/platform.js): Firefox has no folder picker (showDirectoryPicker), so a workspace there
// lives in browser storage. Anything else the page says is missing is a gap the smoke reports.
var firefoxLacks = []string{"This browser has no folder picker (showDirectoryPicker), so “Choose a folder…” is not offered"}

// TestFirefoxOpensTheWorkspaceWritesBrowserStorageAndRunsAMiniApp is the end-to-end smoke in
// Firefox ESR (issue 36's thirteenth problem: the page was tried in Chromium only). The page
// becomes ready on the same signal the Chromium tests wait for; what it says Firefox lacks is
// only the folder picker; a typed command writes a file in browser storage (OPFS) and the file
// is read back both through the assistant and straight from OPFS; a mini-app on its per-app host
// registers its tools and answers a tool call sent through POST /api/turn.
func TestFirefoxOpensTheWorkspaceWritesBrowserStorageAndRunsAMiniApp(t *testing.T) {
	harness.StartFirefox(t) // before t.Parallel(), while the binary's other browser tests wait
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewFirefoxTab(t)
	tab.Navigate(relay.URL)

	// Ready, with a workspace open in browser storage.
	status := harness.FirefoxWaitFor[string](tab, `(`+workspaceReady+`) && document.querySelector('#status').textContent`, readyBound)
	if want := "ready · build " + relayBuild(t, relay) + " · Browser storage"; status != want {
		t.Fatalf("the status says %q, want %q", status, want)
	}
	if kind := harness.FirefoxEval[string](tab, `document.querySelector('#root-kind').value`); kind != "opfs" {
		t.Fatalf("the workspace opened in %q, want browser storage (opfs)", kind)
	}
	// What the page says Firefox lacks, item by item.
	missing := harness.FirefoxEval[[]string](tab, `document.querySelector('#platform').hidden ? [] :
		[...document.querySelectorAll('#platform-list li')].map(li => li.textContent)`)
	for _, item := range missing {
		known := false
		for _, lack := range firefoxLacks {
			known = known || strings.HasPrefix(item, lack)
		}
		if !known {
			t.Errorf("in Firefox the page says this is missing: %q", item)
		}
	}
	harness.FirefoxWaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)

	// A typed command writes a file in browser storage; the assistant reads it back, and so does
	// OPFS itself.
	const content = "Firefox was here — ✓"
	state, result := firefoxTyped(t, tab, "write firefox.txt: "+content)
	if state != "ok" || !strings.Contains(result, `"created": true`) {
		t.Fatalf("write answered %s %s", state, result)
	}
	if state, result := firefoxTyped(t, tab, "read firefox.txt"); state != "ok" || !strings.Contains(result, content) {
		t.Fatalf("read answered %s %s", state, result)
	}
	stored := harness.FirefoxEval[string](tab, `(async () => {
		const ws = await (await navigator.storage.getDirectory()).getDirectoryHandle('workspace');
		return (await (await ws.getFileHandle(args[0])).getFile()).text();
	})()`, "firefox.txt")
	if stored != content {
		t.Fatalf("browser storage holds %q, want %q", stored, content)
	}

	// A mini-app on its per-app host registers its tools and answers a call the relay sends it
	// for POST /api/turn.
	harness.FirefoxWaitFor[bool](tab, `document.querySelectorAll('#app-tray li[data-kind="app"]').length >= 3`, appBound)
	harness.FirefoxEval[bool](tab, `(voicebox.miniApps.launch({name: 'Scoreboard'}), true)`)
	harness.FirefoxWaitFor[bool](tab, `voicebox.miniApps.tools('app_scoreboard').length >= 4`, appBound)
	if note := harness.FirefoxEval[string](tab, `(() => { const n = document.querySelector('.app-card[data-app-id="app_scoreboard"] .app-host-note'); return n && !n.hidden ? n.textContent : ''; })()`); note != "" {
		t.Fatalf("the app did not start on its own host; its card says %q", note)
	}
	host := harness.FirefoxEval[string](tab, `new URL(document.querySelector('.app-card[data-app-id="app_scoreboard"] iframe.bridge').src).host`)
	if want := regexp.MustCompile(`^app-[0-9a-f]{16}\.localhost:` + regexp.QuoteMeta(relay.URL[strings.LastIndex(relay.URL, ":")+1:]) + `$`); !want.MatchString(host) {
		t.Fatalf("the app's frame is on %q, not a per-app host (%s)", host, want)
	}
	answer := postTurn(t, relay, `{"action": {"verb": "mini_app_tool", "name": "add_points", "args": {"team": "home", "points": 3}}}`)
	if !strings.Contains(answer, `"ok":true`) || !strings.Contains(answer, `"score":3`) {
		t.Fatalf("the mini-app's tool through /api/turn answered %s", answer)
	}
	// The call reached this tab's app: the page's own call finds the points it added.
	var board struct{ Home struct{ Score int } }
	raw := harness.FirefoxEval[json.RawMessage](tab, `voicebox.miniApps.call('app_scoreboard', 'add_points', {team: 'home', points: 1})`)
	if err := json.Unmarshal(raw, &board); err != nil || board.Home.Score != 4 {
		t.Fatalf("after the relay's call, the page's add_points answered %s", raw)
	}
	if !harness.FirefoxEval[bool](tab, `document.querySelector('#relay-down').hidden`) {
		t.Fatal("the page says the relay is not answering")
	}
}

// firefoxTyped types command into the assistant's box in tab as a person would, and waits for
// the turn to settle; it returns the turn's state and its result as shown (as typed does).
func firefoxTyped(t *testing.T, tab *harness.FirefoxTab, command string) (state, result string) {
	t.Helper()
	before := harness.FirefoxEval[int](tab, `document.querySelectorAll('#turns li').length`)
	harness.FirefoxEval[bool](tab, `(() => {
		document.querySelector('#command').value = args[0];
		document.querySelector('#command-form button[type="submit"]').click();
		return true;
	})()`, command)
	got := harness.FirefoxWaitFor[[]string](tab, `(() => {
		const li = document.querySelector('#turns li');
		if (document.querySelectorAll('#turns li').length <= args[0] || !li || li.dataset.state === 'pending') return null;
		const r = li.querySelector('.result');
		const j = li.querySelector('.result-json');
		return [li.dataset.state, (r ? r.textContent : '') + '\n' + (j ? j.textContent : '')];
	})()`, turnBound, before)
	return got[0], got[1]
}

// postTurn posts body to the relay's POST /api/turn and returns the answer's body, compacted.
func postTurn(t *testing.T, relay *harness.Relay, body string) string {
	t.Helper()
	resp, err := http.Post(relay.URL+"/api/turn", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST /api/turn: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatalf("POST /api/turn answered %d %s", resp.StatusCode, raw)
	}
	return compact.String()
}
