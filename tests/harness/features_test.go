//go:build !js

package harness

import (
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
