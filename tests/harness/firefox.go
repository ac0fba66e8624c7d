//go:build !js

package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// FirefoxStartBound bounds Firefox's start, from its launch to the WebDriver BiDi address it
// prints; a cold start on a loaded two-core machine takes a few seconds.
const FirefoxStartBound = time.Minute

// FirefoxCommandBound bounds one WebDriver BiDi command that is not itself a wait: a navigation
// to a loaded page, one evaluation.
const FirefoxCommandBound = 30 * time.Second

// firefoxCloseBound bounds Firefox's own shutdown after browser.close before it is killed.
const firefoxCloseBound = 10 * time.Second

// firefoxPollInterval is how often FirefoxWaitFor evaluates its condition again.
const firefoxPollInterval = 20 * time.Millisecond

// FirefoxPath is the Firefox binary: $VOICEBOX_FIREFOX, else Debian's firefox-esr (the binary
// itself, which /usr/bin/firefox-esr links to).
func FirefoxPath() string {
	if p := os.Getenv("VOICEBOX_FIREFOX"); p != "" {
		return p
	}
	return "/usr/lib/firefox-esr/firefox-esr"
}

// firefoxPrefs is the user.js of every Firefox profile the tests make. Firefox has no resolver
// rule like Chromium's; its equivalent here: every name resolves to 127.0.0.1 without a lookup
// (network.dns.forceResolve; no DNS over HTTPS, no prefetch), and every request but loopback's
// goes to a proxy on the discard port of 127.0.0.1, where nothing answers. Loopback (localhost,
// 127.0.0.1 and the per-app hosts, <app>.localhost) goes direct. Browser storage (OPFS) is on;
// first-run pages, telemetry, updates and the background services that call home are off (the
// remote settings server only with MOZ_REMOTE_SETTINGS_DEVTOOLS set, as launch does). Checked
// under strace for a whole smoke: no lookup, and no connection but the relay's.
var firefoxPrefs = map[string]any{
	"network.proxy.type":                                1,
	"network.proxy.http":                                "127.0.0.1",
	"network.proxy.http_port":                           9,
	"network.proxy.ssl":                                 "127.0.0.1",
	"network.proxy.ssl_port":                            9,
	"network.proxy.socks":                               "127.0.0.1",
	"network.proxy.socks_port":                          9,
	"network.proxy.socks_remote_dns":                    true,
	"network.proxy.no_proxies_on":                       "localhost, 127.0.0.1, .localhost",
	"network.proxy.allow_hijacking_localhost":           false,
	"network.trr.mode":                                  5,
	"network.dns.forceResolve":                          "127.0.0.1",
	"network.dns.disablePrefetch":                       true,
	"network.prefetch-next":                             false,
	"network.predictor.enabled":                         false,
	"network.http.speculative-parallel-limit":           0,
	"network.captive-portal-service.enabled":            false,
	"network.connectivity-service.enabled":              false,
	"captivedetect.canonicalURL":                        "",
	"dom.fs.enabled":                                    true,
	"browser.shell.checkDefaultBrowser":                 false,
	"browser.startup.page":                              0,
	"browser.startup.homepage":                          "about:blank",
	"browser.startup.homepage_override.mstone":          "ignore",
	"startup.homepage_welcome_url":                      "",
	"startup.homepage_welcome_url.additional":           "",
	"browser.aboutwelcome.enabled":                      false,
	"trailhead.firstrun.didSeeAboutWelcome":             true,
	"browser.newtabpage.enabled":                        false,
	"browser.newtabpage.activity-stream.feeds.topsites": false,
	"browser.topsites.contile.enabled":                  false,
	"browser.discovery.enabled":                         false,
	"browser.safebrowsing.malware.enabled":              false,
	"browser.safebrowsing.phishing.enabled":             false,
	"browser.safebrowsing.downloads.enabled":            false,
	"browser.safebrowsing.blockedURIs.enabled":          false,
	"browser.safebrowsing.provider.mozilla.updateURL":   "",
	"browser.search.update":                             false,
	"browser.region.network.url":                        "",
	"browser.region.update.enabled":                     false,
	"geo.provider.network.url":                          "",
	"services.settings.server":                          "http://127.0.0.1:9/",
	"app.update.auto":                                   false,
	"app.update.enabled":                                false,
	"app.normandy.enabled":                              false,
	"app.shield.optoutstudies.enabled":                  false,
	"extensions.update.enabled":                         false,
	"extensions.getAddons.cache.enabled":                false,
	"extensions.systemAddon.update.enabled":             false,
	"media.gmp-manager.url":                             "",
	"media.gmp-gmpopenh264.enabled":                     false,
	"datareporting.policy.dataSubmissionEnabled":        false,
	"datareporting.healthreport.uploadEnabled":          false,
	"toolkit.telemetry.enabled":                         false,
	"toolkit.telemetry.unified":                         false,
	"toolkit.telemetry.archive.enabled":                 false,
	"toolkit.telemetry.server":                          "",
	"browser.ping-centre.telemetry":                     false,
	"browser.crashReports.unsubmittedCheck.enabled":     false,
	"toolkit.startup.max_resumed_crashes":               -1,
	"browser.sessionstore.resume_from_crash":            false,
}

// userJS writes prefs as a user.js, one user_pref line each, in a stable order.
func userJS(prefs map[string]any) ([]byte, error) {
	names := make([]string, 0, len(prefs))
	for name := range prefs {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		v, err := json.Marshal(prefs[name])
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "user_pref(%q, %s);\n", name, v)
	}
	return []byte(b.String()), nil
}

// bidiListening is the line Firefox prints on stderr once its WebDriver BiDi server listens.
var bidiListening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

// sharedFirefox is the one Firefox the tests of a binary share, started on first use and driven
// over WebDriver BiDi (the W3C protocol Firefox speaks natively).
type sharedFirefox struct {
	once    sync.Once
	err     error
	cmd     *exec.Cmd
	exited  chan struct{}
	profile string
	conn    *websocket.Conn
	stderr  *tailBuffer

	mu      sync.Mutex
	nextID  int
	pending map[int]chan bidiMessage
	tabs    map[string]*FirefoxTab // by browsing context
	closed  error                  // why the connection ended, once it has
}

var firefox = &sharedFirefox{}

// bidiMessage is one message from Firefox: a command's answer (type success or error, with
// its id) or an event.
type bidiMessage struct {
	Type    string          `json:"type"`
	ID      *int            `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// start launches Firefox with a fresh profile, connects to its BiDi server and opens a session.
func (ff *sharedFirefox) start() error {
	ff.once.Do(func() { ff.err = ff.launch() })
	return ff.err
}

func (ff *sharedFirefox) launch() error {
	bin := FirefoxPath()
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("harness: no Firefox at %s (./build.sh installs Debian's firefox-esr for the end-to-end layer; or set VOICEBOX_FIREFOX to the browser binary): %w", bin, err)
	}
	dir, err := os.MkdirTemp("", "voicebox-firefox-")
	if err != nil {
		return err
	}
	ff.profile = dir
	profile := filepath.Join(dir, "profile")
	if err := os.Mkdir(profile, 0o700); err != nil {
		return err
	}
	prefs, err := userJS(firefoxPrefs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), prefs, 0o600); err != nil {
		return err
	}
	cmd := exec.Command(bin, "--headless", "--no-remote", "--remote-debugging-port=0", "--profile", profile, "about:blank")
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir, "MOZ_CRASHREPORTER_DISABLE=1", "MOZ_CRASHREPORTER_SHUTDOWN=1", "MOZ_REMOTE_SETTINGS_DEVTOOLS=1")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	DieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("harness: start Firefox (%s): %w", bin, err)
	}
	ff.cmd = cmd
	ff.exited = make(chan struct{})
	ff.stderr = &tailBuffer{max: 8 << 10}
	address := make(chan string, 1)
	go func() {
		// Firefox's stderr is read to its end, or Firefox would block on a full pipe.
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			ff.stderr.add(lines.Text())
			if m := bidiListening.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case address <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
		close(ff.exited)
	}()
	var url string
	select {
	case url = <-address:
	case <-ff.exited:
		return fmt.Errorf("harness: Firefox (%s) ended before it listened for WebDriver BiDi; its stderr: %s", bin, ff.stderr)
	case <-time.After(FirefoxStartBound):
		return fmt.Errorf("harness: Firefox (%s) did not listen for WebDriver BiDi within %v; its stderr: %s", bin, FirefoxStartBound, ff.stderr)
	}
	// Each step has a bound of its own (FirefoxCommandBound is one command's): on a loaded
	// machine a cold Firefox's session.new took most of one shared bound, and the subscription
	// after it had what was left.
	step := func(do func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(context.Background(), FirefoxCommandBound)
		defer cancel()
		return do(ctx)
	}
	var conn *websocket.Conn
	if err := step(func(ctx context.Context) (err error) {
		conn, _, err = websocket.Dial(ctx, strings.TrimSuffix(url, "/")+"/session", nil)
		return err
	}); err != nil {
		return fmt.Errorf("harness: connect to Firefox's WebDriver BiDi at %s: %w", url, err)
	}
	conn.SetReadLimit(64 << 20)
	ff.conn = conn
	ff.pending = map[int]chan bidiMessage{}
	ff.tabs = map[string]*FirefoxTab{}
	go ff.read()
	if err := step(func(ctx context.Context) error {
		_, err := ff.command(ctx, "session.new", map[string]any{"capabilities": map[string]any{}})
		return err
	}); err != nil {
		return fmt.Errorf("harness: open a WebDriver BiDi session: %w", err)
	}
	if err := step(func(ctx context.Context) error {
		_, err := ff.command(ctx, "session.subscribe", map[string]any{"events": []string{"log.entryAdded"}})
		return err
	}); err != nil {
		return fmt.Errorf("harness: subscribe to Firefox's log: %w", err)
	}
	return nil
}

// read hands each answer to the command waiting for it and each log entry to its tab, until
// the connection ends.
func (ff *sharedFirefox) read() {
	for {
		_, data, err := ff.conn.Read(context.Background())
		if err != nil {
			ff.mu.Lock()
			ff.closed = err
			for id, ch := range ff.pending {
				close(ch)
				delete(ff.pending, id)
			}
			ff.mu.Unlock()
			return
		}
		var msg bidiMessage
		if json.Unmarshal(data, &msg) != nil {
			continue
		}
		if msg.Type == "event" {
			ff.event(msg)
			continue
		}
		if msg.ID == nil {
			continue
		}
		ff.mu.Lock()
		ch := ff.pending[*msg.ID]
		delete(ff.pending, *msg.ID)
		ff.mu.Unlock()
		if ch != nil {
			ch <- msg
		}
	}
}

// event records a log entry of level error as a problem of the tab it came from.
func (ff *sharedFirefox) event(msg bidiMessage) {
	if msg.Method != "log.entryAdded" {
		return
	}
	var entry struct {
		Level  string `json:"level"`
		Text   string `json:"text"`
		Type   string `json:"type"`
		Source struct {
			Context string `json:"context"`
		} `json:"source"`
	}
	if json.Unmarshal(msg.Params, &entry) != nil || entry.Level != "error" {
		return
	}
	ff.mu.Lock()
	tab := ff.tabs[entry.Source.Context]
	ff.mu.Unlock()
	if tab != nil {
		tab.record("%s error: %s", entry.Type, entry.Text)
	}
}

// command sends one BiDi command and waits for its answer within ctx.
func (ff *sharedFirefox) command(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan bidiMessage, 1)
	ff.mu.Lock()
	if ff.closed != nil {
		ff.mu.Unlock()
		return nil, fmt.Errorf("%s: the connection to Firefox ended: %w", method, ff.closed)
	}
	ff.nextID++
	id := ff.nextID
	ff.pending[id] = ch
	ff.mu.Unlock()
	forget := func() {
		ff.mu.Lock()
		delete(ff.pending, id)
		ff.mu.Unlock()
	}
	data, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		forget()
		return nil, err
	}
	if err := ff.conn.Write(ctx, websocket.MessageText, data); err != nil {
		forget()
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case msg, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the connection to Firefox ended", method)
		}
		if msg.Type == "error" {
			return nil, fmt.Errorf("%s: %s: %s", method, msg.Error, msg.Message)
		}
		return msg.Result, nil
	case <-ctx.Done():
		forget()
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}

// stop closes Firefox (browser.close, then a kill by its PID if it has not ended within
// firefoxCloseBound) and removes its profile.
func (ff *sharedFirefox) stop() {
	if ff.cmd == nil {
		return
	}
	if ff.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), firefoxCloseBound)
		ff.command(ctx, "browser.close", map[string]any{})
		cancel()
	}
	select {
	case <-ff.exited:
	case <-time.After(firefoxCloseBound):
		ff.cmd.Process.Kill()
		<-ff.exited
	}
	if ff.conn != nil {
		ff.conn.CloseNow()
	}
	removeAll(ff.profile)
}

// FirefoxTab is one Firefox tab of a test (a WebDriver BiDi browsing context). Like Tab, it
// records every console error and uncaught exception, and the test fails at its end if any was
// not allowed.
type FirefoxTab struct {
	t       testing.TB
	context string
	// ctx bounds the tab's whole life; each command has its own bound within it.
	ctx context.Context

	problemLog
}

// StartFirefox starts the Firefox the test binary shares now (NewFirefoxTab would on its first
// call), or fails the test. Firefox's start is CPU-heavy: about 1.3 CPU-seconds until it listens
// for WebDriver BiDi and 4 more until session.new answers, for WebDriver BiDi answers it only once
// the browser's startup idle tasks have run (the add-on manager, the browser window, session
// restore: Firefox's own profile of a start). Started in the middle of a binary's parallel
// browser tests (eight Chromium pages on two cores), those 5 CPU-seconds took longer than a
// command's bound. A test calls it before t.Parallel(): Go runs every test's part before
// t.Parallel() one after another before any parallel part, so Firefox starts while the binary's
// other browser tests wait.
func StartFirefox(t testing.TB) {
	t.Helper()
	if err := firefox.start(); err != nil {
		t.Fatal(err)
	}
}

// NewFirefoxTab opens a tab in the Firefox the test binary shares (started on the first call)
// and closes it when the test ends. It fails the test when Firefox is missing or does not start.
func NewFirefoxTab(t testing.TB) *FirefoxTab {
	t.Helper()
	if err := firefox.start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), TabBound)
	res, err := firefox.command(ctx, "browsingContext.create", map[string]any{"type": "tab"})
	var created struct {
		Context string `json:"context"`
	}
	if err == nil {
		err = json.Unmarshal(res, &created)
	}
	if err != nil {
		cancel()
		t.Fatalf("harness: open a Firefox tab: %v", err)
	}
	tab := &FirefoxTab{t: t, context: created.Context, ctx: ctx}
	firefox.mu.Lock()
	firefox.tabs[tab.context] = tab
	firefox.mu.Unlock()
	t.Cleanup(func() {
		closeCtx, closeCancel := context.WithTimeout(context.Background(), FirefoxCommandBound)
		if _, err := firefox.command(closeCtx, "browsingContext.close", map[string]any{"context": tab.context}); err != nil {
			t.Errorf("harness: close the Firefox tab: %v", err)
		}
		closeCancel()
		cancel()
		firefox.mu.Lock()
		delete(firefox.tabs, tab.context)
		firefox.mu.Unlock()
		for _, p := range tab.Problems() {
			t.Errorf("harness: the page in Firefox reported: %s", p)
		}
	})
	return tab
}

// Navigate loads url in the tab and waits until its document has loaded.
func (tab *FirefoxTab) Navigate(url string) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, FirefoxCommandBound)
	defer cancel()
	if _, err := firefox.command(ctx, "browsingContext.navigate", map[string]any{"context": tab.context, "url": url, "wait": "complete"}); err != nil {
		tab.t.Fatalf("harness: Firefox: navigate to %s: %v", url, err)
	}
}

// errNotYet is what evaluate answers for a falsy value when asked to (a wait's condition).
var errNotYet = errors.New("not yet")

// evaluate runs expr in the tab's page as the body of a function called with args (JSON
// values, named args[0], args[1], ... in expr), awaits it if it is a promise, and returns its
// JSON. With truthy set, a falsy value answers errNotYet.
func (tab *FirefoxTab) evaluate(ctx context.Context, expr string, truthy bool, args ...any) (json.RawMessage, error) {
	encoded, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	// The value crosses as JSON text in a string: BiDi's own serialization of objects (typed
	// pairs) would need decoding of its own, and a string is one value of one type.
	fn := `async (argsJSON) => { const args = JSON.parse(argsJSON); const v = await (` + expr + `); ` +
		`if (` + fmt.Sprint(truthy) + ` && !v) return null; return JSON.stringify(v === undefined ? null : v); }`
	res, err := firefox.command(ctx, "script.callFunction", map[string]any{
		"functionDeclaration": fn,
		"awaitPromise":        true,
		"target":              map[string]any{"context": tab.context},
		"arguments":           []any{map[string]any{"type": "string", "value": string(encoded)}},
		"resultOwnership":     "none",
	})
	if err != nil {
		return nil, err
	}
	return decodeCallResult(res, truthy)
}

// decodeCallResult reads script.callFunction's result: the JSON text the function returned,
// errNotYet for null when truthy is asked, or the exception it threw.
func decodeCallResult(res json.RawMessage, truthy bool) (json.RawMessage, error) {
	var out struct {
		Type   string `json:"type"`
		Result struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, err
	}
	if out.Type == "exception" {
		return nil, fmt.Errorf("the expression threw: %s", out.ExceptionDetails.Text)
	}
	switch out.Result.Type {
	case "string":
		var text string
		if err := json.Unmarshal(out.Result.Value, &text); err != nil {
			return nil, err
		}
		return json.RawMessage(text), nil
	case "null":
		if truthy {
			return nil, errNotYet
		}
		return json.RawMessage("null"), nil
	}
	return nil, fmt.Errorf("the expression gave a %s, not JSON text", out.Result.Type)
}

// FirefoxEval evaluates expr in tab's page (args as in evaluate: args[0], ...), awaiting it if
// it is a promise, and decodes the result.
func FirefoxEval[T any](tab *FirefoxTab, expr string, args ...any) T {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, FirefoxCommandBound)
	defer cancel()
	var v T
	raw, err := tab.evaluate(ctx, expr, false, args...)
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		tab.t.Fatalf("harness: Firefox: evaluate %q: %v", expr, err)
	}
	return v
}

// FirefoxWaitFor evaluates expr in tab's page every firefoxPollInterval until it is truthy or
// bound passes, and returns its value decoded. An expression that throws is evaluated again, as
// chromedp's Poll does (the page may not have defined what it reads yet).
func FirefoxWaitFor[T any](tab *FirefoxTab, expr string, bound time.Duration, args ...any) T {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, bound)
	defer cancel()
	last := errNotYet
	for {
		raw, err := tab.evaluate(ctx, expr, true, args...)
		if err == nil {
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				tab.t.Fatalf("harness: Firefox: decode %q: %v", expr, err)
			}
			return v
		}
		if ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			tab.t.Fatalf("harness: Firefox: waiting %v for %q: %v\n%s", bound, expr, last, tab.scene())
		case <-time.After(firefoxPollInterval):
		}
	}
}

// scene describes the page and the problems it logged, for a failed wait's message.
func (tab *FirefoxTab) scene() string {
	ctx, cancel := context.WithTimeout(tab.ctx, 2*time.Second)
	defer cancel()
	seen := "the page could not be read"
	if raw, err := tab.evaluate(ctx, sceneExpr, false); err == nil {
		json.Unmarshal(raw, &seen)
	} else {
		seen += ": " + err.Error()
	}
	return "harness: the page then: " + seen + "; its problems: " + strings.Join(tab.Problems(), " | ")
}

// tailBuffer keeps the last max bytes of the lines it is given, for an error message.
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	text string
}

func (b *tailBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.text += line + "\n"
	if len(b.text) > b.max {
		b.text = b.text[len(b.text)-b.max:]
	}
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.text
}
