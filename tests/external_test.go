//go:build !js

package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/tests/harness"
	"github.com/voicebox-go/voicebox/tests/sampleapp"
)

// externalBound is how long an external app may take to connect, answer or change, on a loaded
// machine; it is a hang guard, never a timing check.
const externalBound = 30 * time.Second

const ordersSecret = "orders-app-secret-at-least-thirty-two-bytes"

// origin is a loopback listener that will serve an app: another port is another origin.
type origin struct {
	ln  net.Listener
	URL string // http://127.0.0.1:PORT
}

func newOrigin(t testing.TB) *origin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &origin{ln: ln, URL: "http://" + ln.Addr().String()}
}

func (o *origin) serve(t testing.TB, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(o.ln)
	t.Cleanup(func() { srv.Close() })
}

// externalSetup starts the relay with a registry of the sample app and its fixtures on one
// origin, plus a third origin the page may frame, serves them, and opens the page.
type externalSetup struct {
	relay       *harness.Relay
	tab         *harness.Tab
	app, third  *origin
	registryRaw string
}

func startExternal(t testing.TB, env ...string) *externalSetup {
	t.Helper()
	app, third := newOrigin(t), newOrigin(t)
	entry := func(name, url string) map[string]any {
		return map[string]any{"name": name, "url": url, "origin": app.URL}
	}
	orders := entry("Order Book", app.URL+"/")
	orders["description"] = "The team's order book: the open orders, their customers and their status."
	orders["icon"] = "cart"
	orders["capabilities"] = []string{"auth"}
	orders["audience"] = "orders-app"
	orders["secret"] = ordersSecret
	token := entry("Token", app.URL+"/fixtures/token.html")
	token["capabilities"] = []string{"auth"}
	token["audience"] = "token-app"
	token["secret"] = "the-token-fixture-has-a-secret-of-its-own"
	reg := map[string]any{
		"token":    token,
		"orders":   orders,
		"deferred": entry("Deferred", app.URL+"/fixtures/deferred.html?auto=1"),
		"flood":    entry("Flood", app.URL+"/fixtures/flood.html"),
		"many":     entry("Many", app.URL+"/fixtures/many.html"),
		"long":     entry("Long", app.URL+"/fixtures/long.html"),
		"nest":     entry("Nest", app.URL+"/fixtures/nest.html?third="+third.URL),
		"foreign":  entry("Foreign", app.URL+"/fixtures/foreign.html"),
		"noauth":   entry("No auth", app.URL+"/fixtures/token.html?no-auth"),
		"native":   entry("Native", app.URL+"/fixtures/native.html"),
		"third":    map[string]any{"name": "Third", "url": third.URL + "/fixtures/plain.html", "origin": third.URL},
	}
	raw, _ := json.Marshal(reg)
	relay := harness.StartRelay(t, append([]string{"MINI_APPS=" + string(raw)}, env...)...)
	app.serve(t, sampleapp.Handler(sampleapp.Options{Host: relay.URL, Secret: ordersSecret, Audience: "orders-app", Issuer: relay.URL, Fixtures: true}))
	third.serve(t, sampleapp.Handler(sampleapp.Options{Host: relay.URL, Fixtures: true, Ancestors: []string{app.URL}}))
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready' &&
		document.querySelector('#channel').dataset.state === 'connected'`, externalBound)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)
	return &externalSetup{relay: relay, tab: tab, app: app, third: third, registryRaw: string(raw)}
}

// appState is what voicebox.externalApps.state says about an open app.
type appState struct {
	Live       bool
	DocumentID *string
	Tools      []struct {
		Name, ModelName, Description string
		ReadOnly                     bool
	}
	Selection json.RawMessage
	Stats     struct {
		Loads, Handshakes, Repeats, Kept, ToolsLists int
		Resets                                       []string
		ToolsChangedHonoured, ToolsChangedIgnored    int
		DroppedTools                                 []struct{ Name, Why string }
		Dropped                                      struct {
			Origin, Protocol int
			LastOrigin       string
		}
		Stopped   *struct{ Rule, Why string }
		OpenChats int
		Errors    []string
		Approvals struct{ Approved, Denied, TimedOut int }
	}
}

func (s *externalSetup) state(t *testing.T, id string) appState {
	t.Helper()
	return harness.Eval[appState](s.tab, fmt.Sprintf(`voicebox.externalApps.state(%q)`, id))
}

func (s *externalSetup) waitState(t *testing.T, id, cond string) appState {
	t.Helper()
	expr := fmt.Sprintf(`(() => { const s = voicebox.externalApps.state(%q); return !!s && !!(%s); })()`, id, cond)
	deadline := time.Now().Add(externalBound)
	for !harness.Eval[bool](s.tab, expr) {
		if time.Now().After(deadline) {
			t.Fatalf("the app %s never came to %s; its state: %s", id, cond,
				harness.Eval[string](s.tab, fmt.Sprintf(`JSON.stringify(voicebox.externalApps.state(%q))`, id)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s.state(t, id)
}

func toolNames(st appState) []string {
	var out []string
	for _, t := range st.Tools {
		out = append(out, t.Name)
	}
	return out
}

// inFrame polls expr in the app's frame (found by its URL, unique to this test's origin) until it
// gives a non-empty string, and returns it.
func inFrame(t *testing.T, tab *harness.Tab, url, expr string) string {
	t.Helper()
	deadline := time.Now().Add(externalBound)
	for {
		if got := harness.EvalInFrame[string](tab, url, expr); got != "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the frame %s never gave a value for %s", url, expr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type callAnswer struct {
	OK    bool
	Value struct {
		Text    string
		IsError bool
	}
	Refused, Why string
}

func TestExternalAppOrderBook(t *testing.T) {
	t.Parallel()
	s := startExternal(t)
	tab, frame := s.tab, s.app.URL+"/"

	// The handshake: the guest initializes while its page loads, and the identify after the
	// load finds the same document, so the handshake is kept (the plain-script order).
	harness.Eval[bool](tab, `(voicebox.externalApps.open('orders'), true)`)
	st := s.waitState(t, "orders", `s.live && s.tools.length === 2 && s.stats.kept === 1`)
	if st.Stats.Handshakes != 1 || len(st.Stats.Resets) != 0 || st.Stats.Loads != 1 {
		t.Fatalf("after opening: %+v", st.Stats)
	}
	if got := harness.Eval[string](tab, `document.querySelector('.xa-card[data-app-id="orders"] iframe').getAttribute('allow')`); got != "" {
		t.Fatalf("the frame's allow attribute is %q", got)
	}
	if st.Tools[0].Name != "list_orders" || !st.Tools[0].ReadOnly || st.Tools[1].Name != "set_order_status" || st.Tools[1].ReadOnly ||
		st.Tools[1].ModelName != externalapp.ModelName("orders", "set_order_status") {
		t.Fatalf("tools %+v", st.Tools)
	}
	if got := inFrame(t, tab, frame, `document.getElementById('status').textContent.startsWith('connected') ? document.getElementById('status').textContent : ''`); !strings.Contains(got, "connected to Voicebox · theme ") {
		t.Fatalf("the app says %q", got)
	}
	// The app asked for identity; its own server checked the token it was given.
	if got := inFrame(t, tab, frame, `document.getElementById('identity').textContent`); got != "signed in through Voicebox as local (audience orders-app, checked by this app's server)" {
		t.Fatalf("the app's identity line: %q", got)
	}
	checkTokens(t, s)

	// A fresh token on request (ui/request-auth-token), another jti; an app the operator did not
	// grant auth gets none, and is told why. Errors an app reports reach the panel.
	harness.Eval[bool](tab, `(voicebox.externalApps.open('token'), voicebox.externalApps.open('noauth'), true)`)
	tokenPage := s.app.URL + "/fixtures/token.html"
	s.waitState(t, "token", `s.stats.errors.length === 1`)
	s.waitState(t, "noauth", `s.stats.errors.length === 1`)
	read := func(page string) (string, string) {
		first := inFrame(t, tab, page, `document.getElementById('first').textContent`)
		return first, inFrame(t, tab, page, `document.getElementById('second').textContent`)
	}
	first, second := read(tokenPage)
	if !strings.HasPrefix(first, "jti ") || !strings.HasPrefix(second, "jti ") || first == second {
		t.Fatalf("the token app's tokens: %q, %q", first, second)
	}
	if first, second := read(tokenPage + "?no-auth"); first != "authError external-app-no-auth" || second != "refused external-app-no-auth" {
		t.Fatalf("the app without auth: %q, %q", first, second)
	}
	if st := s.state(t, "token"); st.Stats.Errors[0] != "the sample could not load its exchange rates" {
		t.Fatalf("the reported error: %q", st.Stats.Errors)
	}

	// What the model is told: the page reported the app through its worker to the relay, which
	// names it from the registry and fences the app's own tool descriptions.
	var told struct {
		Tools       []string
		Instruction string
		View        string
	}
	deadline := time.Now().Add(externalBound)
	for {
		told = modelView(t, s, true)
		if len(told.Tools) == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Join(told.Tools, ",") != "app_x_orders__list_orders,app_x_orders__set_order_status,get_app_context" ||
		!strings.Contains(told.Instruction, "## Order Book (app \"orders\")\nThe team's order book: the open orders, their customers and their status.\n<app-provided-tool-list>\n") ||
		!strings.Contains(told.Instruction, "- app_x_orders__set_order_status (asks first): Change the status of one order.\n") ||
		!strings.Contains(told.View, "title: Order Book\nsummary: 3 orders: 2 open, 1 closed\n") {
		t.Fatalf("the model is told %+v", told)
	}

	// The context, as the model's get_app_context reads it over /channel, and the note made of it.
	ans := s.relay.Call(t, externalapp.ContextTool, map[string]any{"app": "orders"})
	var view externalapp.View
	if !ans.OK || json.Unmarshal(ans.Observed, &view) != nil || view.Title != "Order Book" || view.Summary != "3 orders: 2 open, 1 closed" || !strings.Contains(string(view.Data), `"A-1003"`) {
		t.Fatalf("get_app_context answered %s", ans.Raw)
	}
	note := externalapp.ViewNote([]externalapp.View{view})
	if !strings.Contains(note, "title: Order Book\nsummary: 3 orders: 2 open, 1 closed\n") || strings.Contains(note, "A-1003") {
		t.Fatalf("the current view note:\n%s", note)
	}

	// A read-only tool runs at once, called the way the model calls it.
	ans = s.relay.Call(t, "app_x_orders__list_orders", map[string]any{"status": "open"})
	var out struct{ Text string }
	if !ans.OK || json.Unmarshal(ans.Observed, &out) != nil || !strings.Contains(out.Text, "A-1001") || strings.Contains(out.Text, "A-1003") {
		t.Fatalf("list_orders answered %s", ans.Raw)
	}
	if n := harness.Eval[int](tab, `document.querySelectorAll('.xa-approval').length`); n != 0 {
		t.Fatalf("a read-only tool asked for approval (%d prompts)", n)
	}

	// A write tool from the model waits for the person: approved, it runs.
	answers := make(chan harness.Answer, 1)
	go func() {
		answers <- s.relay.Call(t, "app_x_orders__set_order_status", map[string]any{"id": "A-1001", "status": "shipped"})
	}()
	prompt := harness.WaitFor[string](tab, `(document.querySelector('.xa-card[data-app-id="orders"] .xa-approval[data-tool="set_order_status"]') || {}).textContent`, externalBound)
	if !strings.Contains(prompt, "The assistant wants to run set_order_status in Order Book") || !strings.Contains(prompt, `"A-1001"`) {
		t.Fatalf("the approval prompt says %q", prompt)
	}
	if got := inFrame(t, tab, frame, `document.querySelector('tr[data-id="A-1001"] td[data-status]').textContent`); got != "open" {
		t.Fatalf("the order changed before approval: %q", got)
	}
	// One deadline for every approval (60 s, the assistant's too), counted down.
	if left := harness.Eval[int](tab, `parseInt(document.querySelector('.xa-approval[data-tool="set_order_status"] .xa-deadline').textContent)`); left <= 15 || left > 60 {
		t.Fatalf("the app's approval shows %d s left, want the one deadline of 60 s", left)
	}
	checkAccessibility(t, tab, "an external app asking for approval")
	harness.Eval[bool](tab, `(document.querySelector('.xa-approval[data-tool="set_order_status"] .xa-approve').click(), true)`)
	var approved harness.Answer
	select {
	case approved = <-answers:
	case <-time.After(externalBound):
		t.Fatal("the approved call never answered")
	}
	if !approved.OK || string(approved.Observed) != `{"text":"Order A-1001 is now shipped.","approval":"approved"}` {
		t.Fatalf("the approved call answered %s", approved.Raw)
	}
	if got := inFrame(t, tab, frame, `document.querySelector('tr[data-id="A-1001"] td[data-status]').textContent`); got != "shipped" {
		t.Fatalf("after approval the app shows %q", got)
	}

	// Called by hand from the tool's form (made from its schema, as a sandboxed app's is),
	// denied: the form says so and nothing changes.
	harness.Eval[bool](tab, `(() => {
		const d = document.querySelector('.xa-card[data-app-id="orders"] details[data-tool="set_order_status"]');
		d.open = true;
		d.querySelector('input[name="id"]').value = 'A-1002';
		d.querySelector('select[name="status"]').value = '"cancelled"';
		d.querySelector('button[type="submit"]').click();
		return true;
	})()`)
	prompt = harness.WaitFor[string](tab, `(document.querySelector('.xa-approval[data-tool="set_order_status"]') || {}).textContent`, externalBound)
	if !strings.Contains(prompt, "You asked to run set_order_status") {
		t.Fatalf("the hand call's prompt says %q", prompt)
	}
	harness.Eval[bool](tab, `(document.querySelector('.xa-approval[data-tool="set_order_status"] .xa-deny').click(), true)`)
	shown := harness.WaitFor[string](tab, `(() => { const o = document.querySelector('details[data-tool="set_order_status"] .tool-result'); return o.dataset.state && o.textContent; })()`, externalBound)
	if !strings.Contains(shown, "the person denied running set_order_status") || !strings.HasSuffix(shown, "approval-denied") {
		t.Fatalf("the form shows %q", shown)
	}

	// Nobody answers: the call times out and the caller is told so.
	harness.Eval[bool](tab, `(voicebox.externalApps.configure({approvalMs: 300}), true)`)
	timedOut := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('orders', 'set_order_status', {id: 'A-1002', status: 'shipped'}, 'model')`)
	harness.Eval[bool](tab, `(voicebox.externalApps.configure({approvalMs: 15000}), true)`)
	if timedOut.OK || timedOut.Refused != "approval-timed-out" {
		t.Fatalf("an unanswered approval: %+v", timedOut)
	}
	if got := inFrame(t, tab, frame, `document.querySelector('tr[data-id="A-1002"] td[data-status]').textContent`); got != "open" {
		t.Fatalf("after a denial and a timeout the app shows %q for A-1002", got)
	}
	st = s.state(t, "orders")
	if a := st.Stats.Approvals; a.Approved != 1 || a.Denied != 1 || a.TimedOut != 1 {
		t.Fatalf("approvals %+v", a)
	}

	// A selection and "ask about it": the app seeds the composer, and nothing is sent. What the
	// person typed into a tool's form meanwhile stays there (drawing the selection once drew the
	// whole card again).
	const typedField = `document.querySelector('.xa-card[data-app-id="orders"] form input')`
	harness.Eval[bool](tab, `(`+typedField+`.value = 'typed by hand', true)`)
	harness.EvalInFrame[bool](tab, frame, `(document.querySelector('tr[data-id="A-1003"]').click(), true)`)
	s.waitState(t, "orders", `s.selection && s.selection.order && s.selection.order.id === 'A-1003'`)
	harness.WaitFor[bool](tab, `document.querySelector('.xa-card[data-app-id="orders"] .xa-selection').textContent.includes('A-1003')`, externalBound)
	if got := harness.Eval[string](tab, typedField+`.value`); got != "typed by hand" {
		t.Fatalf("after the app's selection changed, the tool form's field holds %q", got)
	}
	harness.EvalInFrame[bool](tab, frame, `(document.getElementById('ask').click(), true)`)
	if got := harness.WaitFor[string](tab, `voicebox.externalApps.composer()`, externalBound); got != "What should happen next with order A-1003?" {
		t.Fatalf("the composer holds %q", got)
	}
	if got := harness.Eval[string](tab, `document.getElementById('command').value`); got != "What should happen next with order A-1003?" {
		t.Fatalf("the assistant's command box holds %q", got)
	}
	if n := harness.Eval[int](tab, `document.querySelectorAll('#turns > *').length`); n != 0 {
		t.Fatalf("the app's suggestion was sent by itself: %d turns", n)
	}

	// relay check-app: the sample app sends every embedding header; without one, it is named.
	relayBin := filepath.Join(harness.RepoRoot(), "bin", "relay")
	outb, err := exec.Command(relayBin, "check-app", frame, "--host", s.relay.URL).CombinedOutput()
	if err != nil || !strings.Contains(string(outb), "every embedding header is there") {
		t.Fatalf("check-app of the sample app: %v\n%s", err, outb)
	}
	bare := newOrigin(t)
	bare.serve(t, sampleapp.Handler(sampleapp.Options{Host: s.relay.URL, Omit: "Cross-Origin-Embedder-Policy"}))
	outb, err = exec.Command(relayBin, "check-app", bare.URL+"/", "--host", s.relay.URL).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(outb), "MISSING Cross-Origin-Embedder-Policy") {
		t.Fatalf("check-app of an app without COEP: %v\n%s", err, outb)
	}

	// The app navigates to a page without the guest library: the identify after the load meets
	// silence, the handshake resets, and calls are refused at once rather than timing out.
	harness.EvalInFrame[bool](tab, frame, `(location.href = '/fixtures/plain.html', true)`)
	st = s.waitState(t, "orders", `!s.live && s.stats.loads === 2`)
	if last := st.Stats.Resets[len(st.Stats.Resets)-1]; !strings.Contains(last, "did not answer ui/identify") {
		t.Fatalf("resets %q", st.Stats.Resets)
	}
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('orders', 'list_orders', {})`); a.Refused != "external-app-not-ready" {
		t.Fatalf("a call after the navigation: %+v", a)
	}
	if ans := s.relay.Call(t, externalapp.ContextTool, map[string]any{"app": "orders"}); ans.Refused != "context-unavailable" {
		t.Fatalf("get_app_context after the navigation: %s", ans.Raw)
	}
	// The model is no longer offered the tools of an app that is not connected.
	for deadline := time.Now().Add(externalBound); ; time.Sleep(50 * time.Millisecond) {
		told := modelView(t, s, false)
		if !slices.Contains(told.Tools, "app_x_orders__list_orders") && !strings.Contains(told.Instruction, "Order Book") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the navigation the model is still told %+v", told)
		}
	}

	// Reload puts the app back, with a new handshake.
	harness.Eval[bool](tab, `(document.querySelector('.xa-card[data-app-id="orders"] .tools button').click(), true)`)
	st = s.waitState(t, "orders", `s.live && s.tools.length === 2`)
	if st.Stats.Handshakes != 2 {
		t.Fatalf("after reload: %+v", st.Stats)
	}
	tab.Screenshot("external-app-orders")
}

// modelView asks the relay what the model is told about the open apps (GET /mini-apps/model).
func modelView(t *testing.T, s *externalSetup, view bool) (told struct {
	Tools       []string
	Instruction string
	View        string
}) {
	t.Helper()
	url := s.relay.URL + "/mini-apps/model"
	if view {
		url += "?view=1"
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&told); err != nil {
		t.Fatal(err)
	}
	return told
}

// checkTokens mints tokens the way the page does and verifies them with the library: the
// registered audience, the relay as issuer, an expiry, and the app's own secret.
func checkTokens(t *testing.T, s *externalSetup) {
	t.Helper()
	mint := func(app string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, s.relay.URL+"/mini-apps/"+app+"/token", strings.NewReader("{}"))
		req.Header.Set("Origin", s.relay.URL)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var v map[string]any
		json.Unmarshal(raw, &v)
		return resp.StatusCode, v
	}
	status, v := mint("orders")
	token, _ := v["token"].(string)
	if status != 200 || token == "" {
		t.Fatalf("minting for orders: %d %v", status, v)
	}
	parse := func(secret, audience string) (*jwt.RegisteredClaims, error) {
		c := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(token, c, func(*jwt.Token) (any, error) { return []byte(secret), nil },
			jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(audience), jwt.WithIssuer(s.relay.URL), jwt.WithExpirationRequired())
		return c, err
	}
	c, err := parse(ordersSecret, "orders-app")
	if err != nil {
		t.Fatalf("the token does not verify: %v", err)
	}
	if left := time.Until(c.ExpiresAt.Time); left <= 0 || left > 10*time.Minute {
		t.Fatalf("the token expires in %v", left)
	}
	if _, err := parse("another-apps-secret-that-is-long-enough", "orders-app"); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		t.Fatalf("verified with another secret: %v", err)
	}
	if _, err := parse(ordersSecret, "someone-else"); !errors.Is(err, jwt.ErrTokenInvalidAudience) {
		t.Fatalf("verified for another audience: %v", err)
	}
	if status, v := mint("long"); status != 403 || v["refused"] != "external-app-no-auth" {
		t.Fatalf("a token for an app without the auth capability: %d %v", status, v)
	}
	// The page's listing never carries the secret.
	resp, err := http.Get(s.relay.URL + "/mini-apps")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(raw), ordersSecret) || !strings.Contains(string(raw), `"origin":"`+s.app.URL+`"`) {
		t.Fatalf("GET /mini-apps: %s", raw)
	}
}

func TestExternalAppLimitsForgeriesAndNavigation(t *testing.T) {
	t.Parallel()
	s := startExternal(t)
	tab := s.tab

	// 21 tools-changed notifications: 20 are honoured (each a tools/list), the 21st is not.
	harness.Eval[bool](tab, `(voicebox.externalApps.open('flood'), true)`)
	st := s.waitState(t, "flood", `s.stats.toolsChangedHonoured + s.stats.toolsChangedIgnored === 21 && s.stats.toolsLists === 21`)
	if st.Stats.ToolsChangedHonoured != 20 || st.Stats.ToolsChangedIgnored != 1 || len(st.Tools) < 20 {
		t.Fatalf("flood: %d honoured, %d ignored, %d lists, %d tools", st.Stats.ToolsChangedHonoured, st.Stats.ToolsChangedIgnored, st.Stats.ToolsLists, len(st.Tools))
	}
	if got := inFrame(t, tab, s.app.URL+"/fixtures/flood.html", `document.getElementById('done').textContent`); got != "registered 21" {
		t.Fatalf("the flood app says %q", got)
	}

	// 70 tools at once: the first 64 are kept, the rest dropped, each logged.
	harness.Eval[bool](tab, `(voicebox.externalApps.open('many'), true)`)
	st = s.waitState(t, "many", `s.live && s.tools.length > 0`)
	if len(st.Tools) != 64 || st.Tools[63].Name != "tool_64" || len(st.Stats.DroppedTools) != 6 || st.Stats.DroppedTools[0].Name != "tool_65" {
		t.Fatalf("many: %d tools kept, dropped %+v", len(st.Tools), st.Stats.DroppedTools)
	}

	// Over-long and broken descriptors: the long one keeps its tool, cut to 300 characters; the
	// broken ones are dropped alone and logged; an oversized context payload is withheld.
	harness.Eval[bool](tab, `(voicebox.externalApps.open('long'), true)`)
	st = s.waitState(t, "long", `s.live && s.tools.length === 3 && s.stats.droppedTools.length === 2`)
	long := strings.Repeat("x", 60) + "long"
	if names := strings.Join(toolNames(st), ","); names != "described_at_length,short,"+long {
		t.Fatalf("long kept %s; dropped %+v", names, st.Stats.DroppedTools)
	}
	if d := []rune(st.Tools[0].Description); len(d) != 300 || d[299] != '…' {
		t.Fatalf("the 386-character description became %d characters", len(d))
	}
	if st.Stats.DroppedTools[0].Name != "bad name!" || st.Stats.DroppedTools[1].Name != "listy" {
		t.Fatalf("dropped %+v", st.Stats.DroppedTools)
	}
	// The page and the relay's Go agree on the model name of a tool whose name must be cut.
	if got, want := st.Tools[2].ModelName, externalapp.ModelName("long", long); got != want {
		t.Fatalf("the page names %s, Go names %s", got, want)
	}
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('long', 'described_at_length', {n: 4})`); !a.OK || a.Value.Text != "got 4" {
		t.Fatalf("the clamped tool: %+v", a)
	}
	ctx := harness.Eval[struct {
		OK    bool
		Value struct {
			Title     string
			Selection map[string]any
			Data      struct {
				Withheld bool
				Note     string
			}
		}
	}](tab, `voicebox.externalApps.context('long')`)
	if !ctx.OK || len([]rune(ctx.Value.Title)) != 200 || ctx.Value.Selection["text"] != "row 7" ||
		!ctx.Value.Data.Withheld || !strings.Contains(ctx.Value.Data.Note, "20000-character bound") {
		t.Fatalf("the long context: %+v", ctx)
	}

	// Forgeries from frames nested in an app, one of its own origin and one of a third: both
	// reach the page's window and are dropped for their source; nothing they claim happens.
	harness.Eval[bool](tab, `(voicebox.externalApps.open('nest'), true)`)
	s.waitState(t, "nest", `s.live && s.tools.length === 1`)
	// They are counted by origin, never read.
	harness.WaitFor[bool](tab, `voicebox.externalApps.strays().total >= 88`, externalBound)
	strays := harness.Eval[struct {
		Total    int
		ByOrigin map[string]int
	}](tab, `voicebox.externalApps.strays()`)
	if strays.ByOrigin[s.app.URL] != 44 || strays.ByOrigin[s.third.URL] != 44 {
		t.Fatalf("strays by origin: %+v", strays)
	}
	st = s.state(t, "nest")
	if st.Stats.Handshakes != 1 || strings.Join(toolNames(st), ",") != "ping" || st.Selection != nil && string(st.Selection) != "null" || st.Stats.OpenChats != 0 {
		t.Fatalf("after the forgeries: %+v tools %v selection %s", st.Stats, toolNames(st), st.Selection)
	}
	if got := harness.Eval[string](tab, `voicebox.externalApps.composer()`); got != "" {
		t.Fatalf("a forged open-chat seeded the composer: %q", got)
	}
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('nest', 'ping', {})`); !a.OK || a.Value.Text != "pong" {
		t.Fatalf("nest after the forgeries: %+v", a)
	}

	// The app's own frame goes to a third origin and forges from there: the source is right, the
	// origin is not, so every message is dropped; the page's identify never reaches it.
	harness.EvalInFrame[bool](tab, s.app.URL+"/fixtures/nest.html?third="+s.third.URL, fmt.Sprintf(`(location.href = %q, true)`, s.third.URL+"/fixtures/forge.html"))
	st = s.waitState(t, "nest", `!s.live && s.stats.dropped.origin >= 44`)
	if st.Stats.Dropped.LastOrigin != s.third.URL || st.Stats.Stopped != nil {
		t.Fatalf("dropped %+v, stopped %+v", st.Stats.Dropped, st.Stats.Stopped)
	}
	if st.Stats.Handshakes != 1 || len(st.Tools) != 0 || st.Stats.OpenChats != 0 {
		t.Fatalf("after the third origin's forgeries: %+v", st.Stats)
	}

	// document.modelContext: a foreign one is left alone (the guest uses a detached registry); a
	// native-looking one is used unmodified, read back with getTools(), its toolchange forwarded;
	// the guest's own shim (the orders app) carries the Symbol.for brand.
	harness.Eval[bool](tab, `(voicebox.externalApps.open('foreign'), voicebox.externalApps.open('native'), true)`)
	s.waitState(t, "foreign", `s.live && s.tools.length === 1`)
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('foreign', 'which', {})`); a.Value.Text != "detached; left alone: true; branded: true" {
		t.Fatalf("foreign: %+v", a)
	}
	st = s.waitState(t, "native", `s.live && s.tools.length === 2`)
	if names := strings.Join(toolNames(st), ","); names != "early,which" {
		t.Fatalf("native tools %s", names)
	}
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('native', 'which', {})`); a.Value.Text != "native; unmodified: true; branded: false" {
		t.Fatalf("native: %+v", a)
	}

	// Load, initialize, load: a guest that connects after its load event (as a framework does).
	harness.Eval[bool](tab, `(voicebox.externalApps.open('deferred'), true)`)
	st = s.waitState(t, "deferred", `s.live && s.tools.length === 1`)
	if st.Stats.Handshakes != 1 || st.Stats.Kept != 0 {
		t.Fatalf("deferred at first: %+v", st.Stats)
	}
	first := *st.DocumentID
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('deferred', 'where', {})`); a.Value.Text != "?auto=1" {
		t.Fatalf("where: %+v", a)
	}
	// It navigates; the new document's guest answers identify with its own id before any
	// handshake of its own, so the old handshake is not kept over it.
	harness.EvalInFrame[bool](tab, s.app.URL+"/fixtures/deferred.html?auto=1", `(location.href = 'deferred.html?n=2', true)`)
	st = s.waitState(t, "deferred", `!s.live && s.stats.loads === 2 && s.stats.identifies === 2`)
	if last := st.Stats.Resets[len(st.Stats.Resets)-1]; !strings.Contains(last, "has not begun a handshake") || st.Stats.Kept != 0 {
		t.Fatalf("resets %q, kept %d", st.Stats.Resets, st.Stats.Kept)
	}
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('deferred', 'where', {})`); a.Refused != "external-app-not-ready" {
		t.Fatalf("a call between the load and the handshake: %+v", a)
	}
	second := s.app.URL + "/fixtures/deferred.html?n=2"
	harness.EvalInFrame[bool](tab, second, `(document.getElementById('connect').click(), true)`)
	st = s.waitState(t, "deferred", `s.live && s.tools.length === 1`)
	if st.Stats.Handshakes != 2 || *st.DocumentID == first {
		t.Fatalf("after the second handshake: %+v (document %s, first %s)", st.Stats, *st.DocumentID, first)
	}
	if a := harness.Eval[callAnswer](tab, `voicebox.externalApps.callTool('deferred', 'where', {})`); a.Value.Text != "?n=2" {
		t.Fatalf("where after navigating: %+v", a)
	}
	// A repeat initialize from the same document is answered without tearing anything down.
	harness.EvalInFrame[bool](tab, second, `(document.getElementById('connect').click(), true)`)
	st = s.waitState(t, "deferred", `s.stats.repeats === 1`)
	if st.Stats.Handshakes != 2 || !st.Live || len(st.Tools) != 1 {
		t.Fatalf("after a repeat initialize: %+v", st.Stats)
	}
}

// TestExternalAppAnsweringFastIsNotStopped: each request the page sends earns its one answer free
// of the message budget, so an app asked more than the budget's worth of calls at once, and
// answering each, keeps running (it was stopped message-budget-exceeded at the 501st answer).
func TestExternalAppAnsweringFastIsNotStopped(t *testing.T) {
	t.Parallel()
	s := startExternal(t)
	harness.Eval[bool](s.tab, `(voicebox.externalApps.open('orders'), true)`)
	s.waitState(t, "orders", `s.live && s.tools.length === 2`)
	calls := 2 * miniapp.MessageBudget
	answered := harness.Eval[int](s.tab, fmt.Sprintf(`Promise.all(Array.from({length: %d}, () =>
		voicebox.externalApps.callTool('orders', 'list_orders', {status: 'open'}))).then((all) => all.filter((a) => a.ok).length)`, calls))
	if answered != calls {
		t.Fatalf("%d of %d calls answered", answered, calls)
	}
	if !harness.Eval[bool](s.tab, `voicebox.externalApps.state('orders').live`) {
		t.Fatalf("the app was stopped: %s", harness.Eval[string](s.tab, `JSON.stringify(voicebox.externalApps.state('orders').stopped || null)`))
	}
}
