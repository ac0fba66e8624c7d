//go:build !js

package harness

import (
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTheBrowserDrawsNoAddressBarPopup: the shared Chromium runs without the address bar's
// suggestion popup (DisabledFeatures), whose WebUI pages took a renderer of their own for every
// window a test opened. A tab is opened and navigated, as every test's is, and then no target of
// the browser is such a popup; the tab itself is there, so the listing is not empty for another
// reason.
func TestTheBrowserDrawsNoAddressBarPopup(t *testing.T) {
	tab := NewTab(t)
	tab.Navigate("data:text/html,<title>plain</title>")
	infos, err := chromedp.Targets(tab.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	self := chromedp.FromContext(tab.Ctx).Target.TargetID
	sawSelf := false
	for _, info := range infos {
		if info.TargetID == self {
			sawSelf = true
		}
		if strings.HasPrefix(info.URL, "chrome://omnibox-popup") {
			t.Errorf("the browser drew the address bar's popup: %s target %s", info.Type, info.URL)
		}
	}
	if !sawSelf {
		t.Fatalf("the test's own tab is not among the browser's %d targets", len(infos))
	}
}

// TestTheBrowserDrawsNoWindowAroundThePage: the tests' Chromium is its headless shell
// (HeadlessShell), which draws no user interface of its own around a page, and the page still
// sees the window it saw in the full browser's headless mode: a viewport of WindowWidth by
// WindowHeight and the language list AcceptLanguages. The full browser drew a window with a
// toolbar and a tab strip for every tab, whose height the page sees as outerHeight less
// innerHeight.
func TestTheBrowserDrawsNoWindowAroundThePage(t *testing.T) {
	tab := NewTab(t)
	tab.Navigate("data:text/html,<title>plain</title>")
	seen := Eval[map[string]any](tab, `({inner: [innerWidth, innerHeight], outer: [outerWidth, outerHeight],
		languages: navigator.languages.join(','), visible: document.visibilityState})`)
	want := []any{float64(WindowWidth), float64(WindowHeight)}
	if !reflect.DeepEqual(seen["inner"], want) {
		t.Errorf("the page's viewport is %v, want %v", seen["inner"], want)
	}
	if !reflect.DeepEqual(seen["outer"], seen["inner"]) {
		t.Errorf("the page's window is %v around a viewport of %v: the browser drew its own user interface around it", seen["outer"], seen["inner"])
	}
	if seen["languages"] != AcceptLanguages {
		t.Errorf("the page's languages are %q, want %q", seen["languages"], AcceptLanguages)
	}
	if seen["visible"] != "visible" {
		t.Errorf("the page is %v, want visible", seen["visible"])
	}
}
