//go:build !js

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// TabBound bounds everything one tab does; a test that needs longer makes its own context.
const TabBound = 2 * time.Minute

// sharedBrowser is one Chromium the tests of a binary share, started on first use.
type sharedBrowser struct {
	rules   string // its host-resolver-rules
	jsFlags string // V8 flags it runs with beside $VOICEBOX_JS_FLAGS
	once    sync.Once
	ctx     context.Context
	stop    func()
	profile string
	err     error
}

// browser is the Chromium of NewTab; noAppHosts is the one of NewTabWithoutAppHosts; codeCache
// is the one of NewTabWithOwnProfile.
var (
	browser    = &sharedBrowser{rules: HostResolverRules}
	noAppHosts = &sharedBrowser{rules: NoAppHostsResolverRules}
	codeCache  = &sharedBrowser{rules: HostResolverRules, jsFlags: WasmCachingFlags}
)

// Main runs a package's tests and then stops the browsers they shared (Chromium, and Firefox when
// a test started it) and removes their profiles.
// A package that uses NewTab calls it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	for _, b := range []*sharedBrowser{browser, noAppHosts, codeCache} {
		if b.stop != nil {
			b.stop()
		}
		if b.profile != "" {
			removeAll(b.profile)
		}
	}
	firefox.stop()
	os.Exit(code)
}

// ChromiumPath is the browser binary: $VOICEBOX_CHROMIUM, else HeadlessShell.
func ChromiumPath() string {
	if p := os.Getenv("VOICEBOX_CHROMIUM"); p != "" {
		return p
	}
	return HeadlessShell
}

// HeadlessShell is the Chromium the tests run: Chromium's headless shell (Debian's
// chromium-headless-shell, the same release as its chromium package, real binary rather than the
// /usr/bin wrapper script). It is the same Blink, V8, network service and storage as the full
// browser, whose pages it runs as that does, without the browser's own user interface: no
// window, tab strip, toolbar or address bar. The full browser's headless mode draws all of those
// off screen for every tab a test opens (one window a tab), and so did its browser process most
// of its work: creating and closing each window and compositing its toolbar and tab strip
// (the tab's loading throbber redrew it at the frame rate while the page loaded). No page can see
// the browser's own user interface; what a page can see of its window is kept as it was
// (WindowWidth, WindowHeight, AcceptLanguages).
const HeadlessShell = "/usr/lib/chromium/chromium-headless-shell"

// SiteIsolation is the flag that gives every site a renderer process of its own, which the full
// browser does on every desktop and the headless shell does only when told: a mini-app's bridge
// on its own host (<app>.localhost) is then out of process, as people's browsers run it, and the
// hostile suite's walls that rest on it (a spinning app stalls no other) hold for the reason they
// hold there (TestMiniAppHostsRunOutOfProcess).
const SiteIsolation = "site-per-process"

// WindowWidth and WindowHeight are the size of a tab's viewport in CSS pixels: the one the full
// browser's headless mode gave a page (its 800 by 600 window less its toolbar and tab strip), so
// that a page laid out in the headless shell, whose window is all viewport, gets the room it got
// there. A test that needs another size sets it (Tab.Viewport).
const (
	WindowWidth  = 780
	WindowHeight = 437
)

// AcceptLanguages is the browser's language list (navigator.languages, Accept-Language): the full
// browser's default for an en-US locale, which the headless shell shortens to "en-US".
const AcceptLanguages = "en-US,en"

// HostResolverRules is the resolver rule every Chromium of the tests runs with (this one, and the
// wrapper tools/bin/chromium the browser-side go test starts): no name resolves but loopback's,
// so a closed network makes no lookups, and *.localhost resolves for the per-app hosts
// (<app>.localhost) mini-apps are served from.
const HostResolverRules = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost, EXCLUDE 127.0.0.1"

// NoAppHostsResolverRules is HostResolverRules without *.localhost: the per-app hosts do not
// resolve, as in a browser or behind a proxy or DNS that does not serve them.
const NoAppHostsResolverRules = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"

// DisabledFeatures are the Chromium features every Chromium of the tests runs without (its
// --disable-features, which replaces chromedp's default list, so that list's two come first).
// The full browser's headless mode (VOICEBOX_CHROMIUM naming /usr/lib/chromium/chromium) is the
// whole browser with its windows drawn off screen, and it gives every window the address bar's
// suggestion popup as WebUI pages (chrome://omnibox-popup.top-chrome, two a window) in a renderer
// of their own. A test opens a window a tab and never types in an address bar, yet that renderer
// took about a tenth of the end-to-end layer's CPU (65 of 689 CPU-seconds, docs/testing.md). The
// popup is the browser's own chrome, outside every page: no page can see whether it exists, so
// the product under test is unchanged. The headless shell (HeadlessShell) has no address bar.
const DisabledFeatures = "Translate,BlinkGenPropertyTrees," +
	"WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup"

// start starts b, with a fresh profile and the flags a closed, root-run machine needs.
func (browser *sharedBrowser) start() (context.Context, error) {
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "voicebox-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		browser.profile = dir
		mic, err := writeFakeMic(dir)
		if err != nil {
			browser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(ChromiumPath()),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.UserDataDir(dir),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("host-resolver-rules", browser.rules),
			chromedp.Flag("disable-features", DisabledFeatures),
			chromedp.Flag(SiteIsolation, true),
			chromedp.WindowSize(WindowWidth, WindowHeight),
			chromedp.Flag("accept-lang", AcceptLanguages),
			chromedp.Env("TMPDIR="+dir),
			// The microphone (see media.go); harmless for pages that never ask for it.
			chromedp.Flag("use-fake-device-for-media-stream", true),
			chromedp.Flag("use-fake-ui-for-media-stream", true),
			chromedp.Flag("use-file-for-fake-audio-capture", mic),
		)
		// $VOICEBOX_JS_FLAGS come last, so they can override the browser's own.
		if f := strings.TrimSpace(browser.jsFlags + " " + os.Getenv("VOICEBOX_JS_FLAGS")); f != "" {
			opts = append(opts, chromedp.Flag("js-flags", f))
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		browser.stop = func() { cancelCtx(); cancelAlloc() }
		// The browser lives as long as the context of its first run, so that run gets ctx itself.
		if err := chromedp.Do(ctx); err != nil {
			browser.err = fmt.Errorf("harness: start Chromium (%s): %w", ChromiumPath(), err)
			return
		}
		browser.ctx = ctx
	})
	return browser.ctx, browser.err
}

// Tab is one browser tab of a test. It records every console error, uncaught exception, log
// error and failed request; the test fails at its end if any was not allowed.
type Tab struct {
	// Ctx runs actions in the tab: chromedp.Run(tab.Ctx, ...).
	Ctx context.Context
	t   testing.TB

	problemLog
}

// NewTab opens a tab in the shared browser and closes it when the test ends.
func NewTab(t testing.TB) *Tab {
	t.Helper()
	return newTab(t, TabBound)
}

// NewTabFor opens a tab as NewTab does, whose whole life is bounded by bound instead of
// TabBound: for a benchmark that drives one page for longer (BenchmarkLiveVoiceLatency's busy
// page).
func NewTabFor(t testing.TB, bound time.Duration) *Tab {
	t.Helper()
	return newTab(t, bound)
}

// NewTabWithoutAppHosts opens a tab in a second shared browser, one where the per-app hosts
// (app-<hex>.localhost) do not resolve (NoAppHostsResolverRules), and closes it when the test
// ends. The browser starts on the first call.
func NewTabWithoutAppHosts(t testing.TB) *Tab {
	t.Helper()
	return newTabIn(t, noAppHosts, TabBound)
}

// WasmCachingFlags are the V8 flags of NewTabWithOwnProfile's browser: V8 hands a module's
// optimized code to Chromium's code cache at once whenever 100,000 bytes more of it are made,
// besides its default (1,000 bytes more, then two seconds with none made). In this headless
// shell that default's timer was not seen to fire (no cache entry within 30 s of a page's calls,
// nor with a 500 ms timeout; at once with --wasm-caching-timeout-ms=0), so without the flag a
// test would wait in vain. What is cached, and when Chromium uses it, is the same either way;
// a lower threshold would serialize the 5.6 MB module at every kilobyte of new code.
const WasmCachingFlags = "--wasm-caching-hard-threshold=100000"

// NewTabWithOwnProfile opens a tab in a third shared browser, one only the tests that look into
// its profile directory use (its code caches on disk: WasmCodeCacheEntries), and returns that
// directory. The browser runs with WasmCachingFlags and starts on the first call.
func NewTabWithOwnProfile(t testing.TB) (*Tab, string) {
	t.Helper()
	tab := newTabIn(t, codeCache, TabBound)
	return tab, codeCache.profile
}

// WasmCodeCacheEntries is how many WebAssembly modules' compiled code the profile directory dir
// holds: the entries of Chromium's code cache for wasm (Default/Code Cache/wasm, one file an
// entry beside its index).
func WasmCodeCacheEntries(t testing.TB, dir string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "Default", "Code Cache", "wasm", "*_0"))
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// NewIsolatedTab opens a tab of the shared browser in a browser context of its own (its own
// cookies and storage, as a private window has), and closes both when the test ends: for a test
// whose session cookie must not meet the other tests' on the same host (a cookie does not keep
// to its port).
func NewIsolatedTab(t testing.TB) *Tab {
	t.Helper()
	return newTabIn(t, browser, TabBound, chromedp.WithNewBrowserContext())
}

// newTab opens a tab whose whole life is bounded by bound.
func newTab(t testing.TB, bound time.Duration) *Tab {
	t.Helper()
	return newTabIn(t, browser, bound)
}

// newTabIn opens a tab of b whose whole life is bounded by bound.
func newTabIn(t testing.TB, b *sharedBrowser, bound time.Duration, opts ...chromedp.ContextOption) *Tab {
	t.Helper()
	bctx, err := b.start()
	if err != nil {
		t.Fatal(err)
	}
	tab := &Tab{t: t}
	ctx, cancelTimeout := context.WithTimeout(bctx, bound)
	ctx, cancelTab := chromedp.NewContext(ctx, append([]chromedp.ContextOption{chromedp.WithListener(tab.onEvent)}, opts...)...)
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelTimeout()
		t.Fatalf("harness: open a tab: %v", err)
	}
	tab.Ctx = ctx
	t.Cleanup(func() {
		cancelTab()
		cancelTimeout()
		for _, p := range tab.Problems() {
			t.Errorf("harness: the page reported: %s", p)
		}
	})
	return tab
}

// problemLog is what a tab of either browser records: every console error, uncaught exception
// and failed request not allowed by the test.
type problemLog struct {
	mu       sync.Mutex
	problems []string
	allowed  []*regexp.Regexp
}

// Allow lets problems whose text matches pattern pass, for a test that provokes them on purpose.
func (l *problemLog) Allow(pattern string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.allowed = append(l.allowed, regexp.MustCompile(pattern))
}

// Problems returns what the tab has recorded so far.
func (l *problemLog) Problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.problems...)
}

func (l *problemLog) record(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, re := range l.allowed {
		if re.MatchString(msg) {
			return
		}
	}
	l.problems = append(l.problems, msg)
}

func (tab *Tab) onEvent(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			tab.record("console.%s: %s", ev.Type, remoteText(ev.Args))
		}
	case *runtime.EventExceptionThrown:
		tab.record("uncaught exception: %s", exceptionText(ev.ExceptionDetails))
	case *log.EventEntryAdded:
		if ev.Entry != nil && ev.Entry.Level == log.EntryLevelError {
			tab.record("log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventLoadingFailed:
		if !ev.Canceled {
			tab.record("request failed: %s %s", ev.ErrorText, ev.BlockedReason)
		}
	case *network.EventResponseReceived:
		if ev.Response != nil && ev.Response.Status >= 400 {
			tab.record("request answered %d: %s", ev.Response.Status, ev.Response.URL)
		}
	}
}

func remoteText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		switch {
		case a == nil:
		case a.Description != "":
			parts = append(parts, a.Description)
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

// Navigate loads url in the tab.
func (tab *Tab) Navigate(url string) {
	tab.t.Helper()
	if err := chromedp.Do(tab.Ctx, chromedp.Navigate(url)); err != nil {
		tab.t.Fatalf("harness: navigate to %s: %v", url, err)
	}
}

// Eval evaluates expr in the tab, awaiting it if it is a promise, and decodes the result.
func Eval[T any](tab *Tab, expr string) T {
	tab.t.Helper()
	v, err := chromedp.Run(tab.Ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tab.t.Fatalf("harness: evaluate %q: %v", expr, err)
	}
	return v
}

// WaitFor polls expr in the tab until it is truthy or bound passes, and returns its value.
func WaitFor[T any](tab *Tab, expr string, bound time.Duration) T {
	tab.t.Helper()
	v, err := chromedp.Run(tab.Ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(bound), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		tab.t.Fatalf("harness: waiting %v for %q: %v\n%s", bound, expr, err, tab.scene())
	}
	return v
}

// sceneExpr names what a person would see when a wait failed: the focused element and the
// page's notices (role alert and status) that are shown (a hidden one, such as the relay-down
// banner's standing text, is no notice).
const sceneExpr = `(() => {
  const a = document.activeElement;
  const focus = a ? a.tagName.toLowerCase() + (a.id ? '#' + a.id : '') : 'none';
  const notes = [...document.querySelectorAll('[role=alert], [role=status]')]
    .filter((n) => n.checkVisibility())
    .map((n) => (n.textContent || '').trim()).filter(Boolean).slice(-5);
  return 'focus: ' + focus + '; notices: ' + JSON.stringify(notes);
})()`

// scene describes the page and the problems it logged, for a failed wait's message.
func (tab *Tab) scene() string {
	ctx, cancel := context.WithTimeout(tab.Ctx, 2*time.Second)
	defer cancel()
	seen, err := chromedp.Run(ctx, chromedp.Evaluate[string](sceneExpr))
	if err != nil {
		seen = "the page could not be read: " + err.Error()
	}
	return "harness: the page then: " + seen + "; its problems: " + strings.Join(tab.Problems(), " | ")
}

// removeAll removes a browser profile, retrying while Chromium's children finish writing.
func removeAll(dir string) {
	for range 50 {
		if err := os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Screenshot saves a PNG of the tab as NAME.png in $VOICEBOX_SCREENSHOTS, when that is set, so a
// person can look at what a test saw. Without it, it does nothing.
func (tab *Tab) Screenshot(name string) {
	dir := os.Getenv("VOICEBOX_SCREENSHOTS")
	if dir == "" {
		return
	}
	tab.t.Helper()
	png, err := chromedp.Run(tab.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tab.t.Errorf("harness: screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tab.t.Errorf("harness: screenshot %s: %v", name, err)
	}
}

// Quiet turns off the DevTools domains that copy every network event and log entry to the
// controller (Network, Log), so a tab that is measured pays nothing for being watched. The tab
// then no longer records failed requests or log errors; console errors and exceptions still
// count.
func (tab *Tab) Quiet() {
	tab.t.Helper()
	err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Disable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, log.Disable, cdp.Empty{})
		return err
	}))
	if err != nil {
		tab.t.Fatalf("harness: quiet the tab: %v", err)
	}
}

// Freeze puts the page (and its dedicated workers) in the frozen lifecycle state: it runs no
// task until the tab closes. A test uses it to hold a call in flight.
func (tab *Tab) Freeze() {
	tab.t.Helper()
	err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: page.SetWebLifecycleStateStateFrozen})
		return err
	}))
	if err != nil {
		tab.t.Fatalf("harness: freeze the tab: %v", err)
	}
}

// Close closes the tab now, as a person closing it would; the test's cleanup then has nothing
// left to close.
func (tab *Tab) Close() {
	tab.t.Helper()
	if err := chromedp.Cancel(tab.Ctx); err != nil {
		tab.t.Fatalf("harness: close the tab: %v", err)
	}
}

// maxFrameDepth bounds how many frame targets EvalInFrame walks up from a frame to its tab.
const maxFrameDepth = 8

// EvalInFrame evaluates expr in an isolated world of the first frame whose URL is url (for
// example "about:srcdoc", a mini-app's frame), awaiting a promise, and decodes the result. An
// isolated world shares the frame's DOM but none of its scripts' globals, so a test reads what the
// frame shows without trusting what its code says. Chromium runs sandboxed frames in their own
// process, so the frame is looked for in this tab's page and in its out-of-process frames. It fails
// the test when no such frame exists.
func EvalInFrame[T any](tab *Tab, url, expr string) T {
	tab.t.Helper()
	ctx := tab.Ctx
	infos, err := chromedp.Targets(tab.Ctx)
	if err != nil {
		tab.t.Fatalf("harness: list targets: %v", err)
	}
	// The browser is shared by the tests that run at once: only a frame of this tab's page (its
	// parent, or its parent's parent, is the tab) is this tab's, never another test's.
	parent := map[target.ID]target.ID{}
	for _, info := range infos {
		parent[info.TargetID] = info.ParentID
	}
	self := chromedp.FromContext(tab.Ctx).Target.TargetID
	ours := func(id target.ID) bool {
		for depth := 0; depth < maxFrameDepth && id != ""; depth++ {
			if id == self {
				return true
			}
			id = parent[id]
		}
		return false
	}
	for _, info := range infos {
		if info.Type == "iframe" && info.URL == url && ours(info.ParentID) {
			fctx, cancel := chromedp.NewContext(tab.Ctx, chromedp.WithTargetID(info.TargetID), chromedp.WithDetachOnCancel())
			defer cancel()
			ctx = fctx
			break
		}
	}
	var out T
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		tree, err := cdp.Call(ctx, t, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			return err
		}
		frame := findFrame(tree.FrameTree, url)
		if frame == nil {
			return fmt.Errorf("no frame has the URL %s", url)
		}
		world, err := cdp.Call(ctx, t, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame.ID, WorldName: "voicebox-test"})
		if err != nil {
			return err
		}
		yes := true
		res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{
			Expression: expr, ContextID: world.ExecutionContextID, ReturnByValue: &yes, AwaitPromise: &yes})
		if err != nil {
			return err
		}
		if res.ExceptionDetails != nil {
			return fmt.Errorf("the expression threw: %s", exceptionText(res.ExceptionDetails))
		}
		if res.Result == nil {
			return fmt.Errorf("the expression gave no result")
		}
		return json.Unmarshal(res.Result.Value, &out)
	}))
	if err != nil {
		tab.t.Fatalf("harness: evaluate %q in frame %s: %v", expr, url, err)
	}
	return out
}

func findFrame(tree *page.FrameTree, url string) *cdp.Frame {
	if tree == nil {
		return nil
	}
	if tree.Frame != nil && tree.Frame.URL == url {
		return tree.Frame
	}
	for _, c := range tree.ChildFrames {
		if f := findFrame(c, url); f != nil {
			return f
		}
	}
	return nil
}

// Viewport makes the tab's window width by height CSS pixels, as a narrow phone or a wide screen
// would show the page (device scale 1, no touch).
func (tab *Tab) Viewport(width, height int64) {
	tab.t.Helper()
	if err := chromedp.Do(tab.Ctx, chromedp.EmulateViewport(width, height)); err != nil {
		tab.t.Fatalf("harness: set the viewport to %dx%d: %v", width, height, err)
	}
}

// ScreenshotTo saves a PNG of what the tab's window shows now (not the whole page) as file, for
// pictures a person reads (docs/screens/); its parent folder must exist.
func (tab *Tab) ScreenshotTo(file string) {
	tab.t.Helper()
	png, err := chromedp.Run(tab.Ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tab.t.Fatalf("harness: screenshot %s: %v", file, err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		tab.t.Fatalf("harness: screenshot %s: %v", file, err)
	}
}
