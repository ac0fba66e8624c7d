//go:build !js

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// docsScreenshots, when its variable is set, makes the layout test save the guide's pictures
// of the page (docs/screens/) as well.
const docsScreenshots = "VOICEBOX_DOCS_SCREENSHOTS"

// layoutProblems lists what breaks the layout now: horizontal scrolling of the page, and the
// header's controls that are not wholly on screen.
const layoutProblems = `(() => {
	const problems = [];
	const width = document.documentElement.clientWidth;
	if (document.documentElement.scrollWidth > width) problems.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px wide in a ' + width + ' px window');
	for (const e of document.querySelectorAll('header button, header select, header .status, header .where, header h1')) {
		if (e.closest('[hidden]')) continue;
		const r = e.getBoundingClientRect();
		if (r.width === 0 || r.left < 0 || r.right > width + 0.5) problems.push((e.id || e.tagName) + ' is at ' + Math.round(r.left) + '..' + Math.round(r.right));
	}
	for (const e of document.querySelectorAll('main button, main input, main select, main textarea')) {
		if (e.closest('[hidden]') || e.closest('details:not([open])')) continue;
		const r = e.getBoundingClientRect();
		if (r.width > 0 && (r.left < 0 || r.right > width + 0.5)) problems.push((e.id || e.getAttribute('aria-label') || e.textContent || e.tagName).trim().slice(0, 40) + ' runs off the side (' + Math.round(r.left) + '..' + Math.round(r.right) + ')');
	}
	return problems;
})()`

// TestLayoutFitsFrom360 is the page at 360, 768 and 1280 px wide with files, a turn and an open
// mini-app in it: nothing scrolls sideways and every control of the header (and of the panels)
// is on screen. The widths run at once, each with a relay and a tab of its own (a second tab of
// one relay would wait for the first to let go of the workspace).
func TestLayoutFitsFrom360(t *testing.T) {
	t.Parallel()
	for _, width := range []int64{360, 768, 1280} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			t.Parallel()
			relay := harness.StartRelay(t)
			tab := harness.NewTab(t)
			tab.Viewport(width, 860)
			openWorkspace(t, tab, relay.URL)
			harness.Eval[bool](tab, `voicebox.must('files.write', {path: 'a-file-with-a-rather-long-name-that-does-not-break-the-layout.txt', content: 'hello'}).then(() => true)`)
			harness.Eval[bool](tab, `voicebox.must('files.write', {path: 'notes.md', content: '# Notes\n\nBuy milk.\n'}).then(() => true)`)
			harness.Eval[bool](tab, `(document.querySelector('#refresh').click(), true)`)
			typed(t, tab, "list files")
			harness.Eval[bool](tab, `voicebox.miniApps.launch({name: 'app_calculator'}).then(() => true)`)
			harness.WaitFor[bool](tab, `document.querySelectorAll('#file-list li[data-path]').length === 2`, readyBound)
			if problems := harness.Eval[[]string](tab, layoutProblems); len(problems) > 0 {
				t.Fatalf("at %d px:\n%s", width, strings.Join(problems, "\n"))
			}
			tab.Screenshot(fmt.Sprintf("layout-%d", width))
			if os.Getenv(docsScreenshots) != "" && width != 768 {
				dir := filepath.Join(harness.RepoRoot(), "docs", "screens")
				os.MkdirAll(dir, 0o755)
				harness.Eval[bool](tab, `(scrollTo(0, 0), true)`)
				tab.ScreenshotTo(filepath.Join(dir, fmt.Sprintf("page-%d.png", width)))
			}
		})
	}
}
