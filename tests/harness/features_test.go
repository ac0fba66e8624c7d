//go:build !js

package harness

import (
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

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

// outOfProcessBound bounds how long a frame of another site may take to show as a target of its
// own.
const outOfProcessBound = 20 * time.Second

// TestMiniAppHostsRunOutOfProcess: a frame from a per-app host (<app>.localhost) in a page of
// 127.0.0.1 runs in a renderer process of its own (it is a target of the browser, an
// out-of-process frame), as the full browser runs every site: the headless shell does so only
// with SiteIsolation, and without it the hostile suite would test mini-apps sharing the page's
// process.
func TestMiniAppHostsRunOutOfProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	frame := "http://app-probe.localhost:" + port + "/frame"
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/frame" {
			w.Write([]byte("<!doctype html><p>the app's frame</p>"))
			return
		}
		w.Write([]byte(`<!doctype html><iframe src="` + frame + `"></iframe>`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	tab := NewTab(t)
	tab.Navigate("http://127.0.0.1:" + port + "/")
	WaitFor[bool](tab, `document.querySelector('iframe') !== null`, outOfProcessBound)
	self := chromedp.FromContext(tab.Ctx).Target.TargetID
	var seen []string
	for deadline := time.Now().Add(outOfProcessBound); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		infos, err := chromedp.Targets(tab.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen = seen[:0]
		for _, info := range infos {
			if info.Type == "iframe" && info.URL == frame && info.ParentID == self {
				return
			}
			seen = append(seen, string(info.Type)+" "+info.URL)
		}
	}
	t.Fatalf("the frame %s never became a target of its own (an out-of-process frame) within %v; the browser's targets: %v", frame, outOfProcessBound, seen)
}

// TestAFailedWaitNamesOnlyTheShownNotices: the scene a failed wait prints names the notices a
// person sees (role status and alert) and not those the page keeps hidden until needed.
func TestAFailedWaitNamesOnlyTheShownNotices(t *testing.T) {
	tab := NewTab(t)
	tab.Navigate(`data:text/html,<p role="status">shown</p><div role="alert" hidden>kept hidden</div><p role="status" style="display:none">not drawn</p>`)
	scene := tab.scene()
	if !strings.Contains(scene, `"shown"`) || strings.Contains(scene, "kept hidden") || strings.Contains(scene, "not drawn") {
		t.Fatalf("the scene is %q; want the shown notice alone", scene)
	}
}
