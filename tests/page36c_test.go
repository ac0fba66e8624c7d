//go:build !js

package tests

// The page as people use it, round 2 (issue 36): items 2, 5, 7, 9, 11 and 12, each a test that
// fails on the page before it was fixed.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestOneRelayShowsOneWorkspace (issue 36, item 2): the browser keeps a workspace's storage per
// origin, so the relay opened as http://localhost:PORT showed an empty workspace beside the one of
// http://127.0.0.1:PORT. The page opened under localhost lands on the printed address, path and
// query kept, and the page says whose storage it shows.
func TestOneRelayShowsOneWorkspace(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, "http://localhost:"+relay.Port()+"/?from=localhost")
	if got := harness.Eval[string](tab, `location.href`); got != relay.URL+"/?from=localhost" {
		t.Fatalf("the page opened at localhost stays at %s; want the printed %s/?from=localhost", got, relay.URL)
	}
	host := strings.TrimPrefix(relay.URL, "http://")
	if got := harness.Eval[string](tab, `document.querySelector('#root-kind option[value="opfs"]').textContent`); got != "Browser storage of "+host {
		t.Errorf("the workspace picker says %q; want it to say whose storage: Browser storage of %s", got, host)
	}
	if got := harness.Eval[string](tab, `document.querySelector('#start-where').textContent`); !strings.Contains(got, host) {
		t.Errorf("Start here says the workspace is %q, without the address whose storage it is", got)
	}
}

// openEveryPanel opens what a person can open in the page: Voice settings, the help and a long
// list of tools in the Assistant panel, a mini-app with its tool forms, and every Details.
const openEveryPanel = `(() => {
	const t = document.querySelector('#live-settings-toggle');
	if (t.getAttribute('aria-expanded') !== 'true') t.click();
	for (const d of document.querySelectorAll('details')) d.open = true;
	return !document.querySelector('#live-settings').hidden && document.querySelector('#live-model').options.length > 0;
})()`

// sideways says how the page scrolls sideways, or "" when it does not.
const sideways = `(() => {
	const w = document.scrollingElement.scrollWidth;
	if (w <= innerWidth) return '';
	const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 0.5 && !e.closest('[hidden]'))
		.slice(-4).map(e => (e.id || e.className || e.tagName) + ' ends at ' + Math.round(e.getBoundingClientRect().right));
	return 'the page is ' + w + ' px wide in a ' + innerWidth + ' px window: ' + wide.join(', ');
})()`

// TestNoSidewaysScrollAt360WithEveryPanelOpen (issue 36, item 7): with Voice settings open the
// Model select ran to 396 px, and the two-column help wrapped into a jumble, so at 390 and 360 px
// the page scrolled sideways. With every panel open, the page is no wider than the window, and
// the help is a list of commands, one to an item.
func TestNoSidewaysScrollAt360WithEveryPanelOpen(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for _, width := range []int64{360, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			tab := harness.NewTab(t)
			tab.Viewport(width, 800)
			openWorkspace(t, tab, relay.URL)
			typed(t, tab, "help")
			typed(t, tab, "list tools")
			typed(t, tab, "write notes.md: a line of notes that is long enough to wrap at least twice on a narrow phone screen")
			typed(t, tab, "diff notes.md: another line of notes that is long enough to wrap at least twice on a narrow phone screen")
			harness.Eval[bool](tab, `voicebox.miniApps.launch({name: 'app_calculator'}).then(() => true)`)
			harness.WaitFor[bool](tab, openEveryPanel, readyBound)
			if got := harness.Eval[string](tab, sideways); got != "" {
				tab.Screenshot(fmt.Sprintf("sideways-%d", width))
				t.Fatalf("at %d px with every panel open, %s", width, got)
			}
			if n := harness.Eval[int](tab, `document.querySelectorAll('#turns .help li code').length`); n < 10 {
				t.Errorf("the help lists %d commands as items; want each command its own item", n)
			}
		})
	}
}
