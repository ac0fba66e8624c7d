//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// The page's cases (review items 3 and 4) drive the real page in Chromium: a hostile mini-app is
// written to the workspace, opened, and made to attack; the page must stop it, say why, keep
// serving everything else, and start it again when asked.

const (
	// pageBound bounds the page's start: the worker, the engine and the first listing.
	pageBound = 30 * time.Second
	// appBound bounds an app's start, up to its tools registered, and its stop once provoked.
	appBound = 15 * time.Second
)

// openPage opens the relay's page in tab with the default workspace (browser storage) listed.
func openPage(t testing.TB, tab *harness.Tab, url string) {
	t.Helper()
	tab.Navigate(url)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready' &&
		!document.querySelector('#new-file').disabled &&
		document.querySelector('#file-list').children.length > 0`, pageBound)
}

// launch opens target ({name: ...} or {path: ...}) as a mini-app and waits for its tools.
func launch(t testing.TB, tab *harness.Tab, target string, tools int) string {
	t.Helper()
	id := harness.Eval[string](tab, fmt.Sprintf(`voicebox.miniApps.launch(%s).then(a => a.appId)`, target))
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length >= %d`, id, tools), appBound)
	return id
}

// writeAndLaunch writes html to path in the workspace and opens it as a mini-app.
func writeAndLaunch(t testing.TB, tab *harness.Tab, path, html string, tools int) string {
	t.Helper()
	content, _ := json.Marshal(html)
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: %q, content: %s}).then(() => true)`, path, content))
	return launch(t, tab, fmt.Sprintf(`{path: %q}`, path), tools)
}

// answer is the worker's answer to a call, as the page's API gives it.
type answer struct {
	OK      bool            `json:"ok"`
	Value   json.RawMessage `json:"value"`
	Refused string          `json:"refused"`
	Why     string          `json:"why"`
}

// callTool calls an app's tool through the page's API (the worker validates it, the page
// carries it to the frame) and returns the worker's answer.
func callTool(tab *harness.Tab, appID, tool, args string) answer {
	return harness.Eval[answer](tab, fmt.Sprintf(`voicebox.call('miniapps.call', {appId: %q, tool: %q, args: %s})`, appID, tool, args))
}

// stopped waits until appID's card shows that it was stopped and returns what it says.
func stopped(t testing.TB, tab *harness.Tab, appID string) string {
	t.Helper()
	return harness.WaitFor[string](tab, cardOf(appID)+`?.querySelector('.app-stopped:not([hidden])')?.textContent`, appBound)
}

// cardOf is an expression for appID's card on the page.
func cardOf(appID string) string {
	return fmt.Sprintf(`document.querySelector('.app-card[data-app-id="%s"]')`, appID)
}

// workerTools returns the names of appID's tools the worker's registry holds.
func workerTools(tab *harness.Tab, appID string) []string {
	return harness.Eval[[]string](tab, fmt.Sprintf(`voicebox.call('miniapps.tools', {appId: %q}).then(a => a.value.tools.map(t => t.name))`, appID))
}

// startAgain presses the stopped app's Start again and waits for its tools.
func startAgain(t testing.TB, tab *harness.Tab, appID string, tools int) {
	t.Helper()
	harness.Eval[bool](tab, cardOf(appID)+`.querySelector('.app-stopped button').click() || true`)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length >= %d && !voicebox.miniApps.stats(%[1]q).stopped`, appID, tools), appBound)
}

// pageWithScoreboard opens the relay's page at url in a new tab with the sample Scoreboard
// running: the app stillServes asks after an attack.
func pageWithScoreboard(t testing.TB, url string) *harness.Tab {
	t.Helper()
	tab := harness.NewTab(t)
	openPage(t, tab, url)
	launch(t, tab, `{name: 'Scoreboard'}`, 4)
	return tab
}

// stillServes checks the next legitimate requests: the worker lists files, and the scoreboard
// (opened before the attack) answers its tools.
func stillServes(t testing.TB, tab *harness.Tab) {
	t.Helper()
	if ok := harness.Eval[bool](tab, `voicebox.call('files.list', {dir: ''}).then(a => a.ok)`); !ok {
		t.Fatal("the worker no longer lists files")
	}
	if a := callTool(tab, "app_scoreboard", "get_scores", "{}"); !a.OK {
		t.Fatalf("the scoreboard no longer answers: %+v", a)
	}
}
