//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// axePath is axe-core as ./build.sh installs it (pinned in tools/web/package.json).
var axePath = filepath.Join(harness.RepoRoot(), ".cache", "web", "node_modules", "axe-core", "axe.min.js")

// axeViolation is one rule axe-core found broken, with the elements that break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// checkAccessibility runs axe-core over the whole page as it is now (the page's own document;
// the mini-apps' sandboxed frames are their authors') and fails the test on any serious or
// critical violation, naming state, what broke and where.
func checkAccessibility(t *testing.T, tab *harness.Tab, state string) {
	t.Helper()
	if !harness.Eval[bool](tab, `typeof axe === 'object'`) {
		src, err := os.ReadFile(axePath)
		if err != nil {
			t.Fatalf("axe-core is not installed (%v): ./build.sh test installs it into .cache/web", err)
		}
		harness.Eval[bool](tab, string(src)+"\n;true")
	}
	raw := harness.Eval[json.RawMessage](tab, `axe.run(document, {iframes: false, resultTypes: ['violations']}).then((r) => r.violations)`)
	var found []axeViolation
	if err := json.Unmarshal(raw, &found); err != nil {
		t.Fatalf("axe-core answered %s: %v", raw, err)
	}
	var bad []string
	for _, v := range found {
		if v.Impact != "serious" && v.Impact != "critical" {
			continue
		}
		for _, n := range v.Nodes {
			bad = append(bad, fmt.Sprintf("%s (%s, %s) at %v: %s", v.ID, v.Impact, v.Help, n.Target, strings.ReplaceAll(n.Summary, "\n", " ")))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: %d serious or critical accessibility violations:\n%s", state, len(bad), strings.Join(bad, "\n"))
	}
}

// TestEveryPanelPassesAxe runs axe-core over every panel in its main states: the first screen,
// a page at work (files, an open and edited file, commands and their results, a refusal, open
// mini-apps with their tool forms, the history with a conflict shown, an approval waiting, a
// proposal waiting, the voice settings open), its dialogs, and the same at 360 px.
func TestEveryPanelPassesAxe(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "OPENAI_API_KEY=", "GEMINI_API_KEY=")
	tab := harness.NewTab(t)
	tab.Viewport(1280, 900)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected' && voicebox.live.state() === 'no-key'`, channelBound)
	checkAccessibility(t, tab, "the first screen")

	// A page at work.
	put(t, tab, "notes.md", "# Notes\n\nBuy milk.\n")
	typed(t, tab, "write a.txt: v1")
	typed(t, tab, "list files")
	typed(t, tab, "read missing.txt")
	harness.Eval[bool](tab, `(async () => {
		const ws = await (await navigator.storage.getDirectory()).getDirectoryHandle('workspace');
		const w = await (await ws.getFileHandle('a.txt')).createWritable();
		await w.write('changed elsewhere');
		await w.close();
		return true;
	})()`)
	pressEnabled(t, tab, "#undo")
	harness.WaitFor[bool](tab, `!document.querySelector('#history-conflict').hidden`, useBound)
	press(t, tab, `#file-list li[data-path="notes.md"] .open`)
	harness.WaitFor[bool](tab, `document.querySelector('#editor').value.startsWith('# Notes')`, useBound)
	harness.Eval[bool](tab, `(() => { const ed = document.querySelector('#editor'); ed.value += 'Eggs.\n'; ed.dispatchEvent(new Event('input')); return true; })()`)
	harness.Eval[bool](tab, `voicebox.miniApps.launch({name: 'app_scoreboard'}).then(() => true)`)
	harness.Eval[bool](tab, `voicebox.miniApps.launch({path: 'notes.md'}).catch(() => true).then(() => true)`)
	harness.WaitFor[bool](tab, `voicebox.miniApps.tools('app_scoreboard').length > 0`, useBound)
	harness.Eval[bool](tab, `(document.querySelectorAll('details').forEach((d) => { d.open = true; }), true)`)
	if m := postAPI(t, relay.URL, "/api/extensions/sideload", "", `{"id":"notes-reader","name":"Notes reader","capabilities":["read"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file","params":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}`); m["ok"] != true {
		t.Fatalf("sideload: %v", m)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#ext-pending li[data-id="notes-reader"]') !== null`, useBound)
	click(t, tab, "#live-settings-toggle")
	typedAsync(t, tab, "delete notes.md")
	pendingApproval(t, tab)
	checkAccessibility(t, tab, "a page at work")

	// The dialogs.
	pressEnabled(t, tab, "#close-file")
	choice(t, tab)
	checkAccessibility(t, tab, "the unsaved-changes dialog")
	choose(t, tab, "")
	click(t, tab, "#new-folder")
	harness.WaitFor[bool](tab, `document.querySelector('#name-dialog').open`, useBound)
	checkAccessibility(t, tab, "the name dialog")
	harness.Eval[bool](tab, `(document.querySelector('#name-dialog').close(''), true)`)

	// A phone's width.
	tab.Viewport(360, 740)
	checkAccessibility(t, tab, "a page at work, 360 px wide")
	clickApproval(t, tab, "deny")
}
