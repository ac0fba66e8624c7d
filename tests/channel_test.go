//go:build !js

package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// channelBound bounds how long the page may take to connect to /channel once its root is open.
const channelBound = 20 * time.Second

// openExecutor loads the page and waits until it is the relay's executor over browser storage.
func openExecutor(t *testing.T, relay *harness.Relay) *harness.Tab {
	t.Helper()
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	return tab
}

func TestRelayCallsRunOnThePagesOPFS(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)

	var root struct {
		OK        bool   `json:"ok"`
		Kind      string `json:"kind"`
		Connected bool   `json:"connected"`
	}
	// The page shows the channel connected once its hello is answered; the relay learns the
	// page's root from the frame that follows, so /api/root is read until it has it.
	for deadline := time.Now().Add(channelBound); ; time.Sleep(20 * time.Millisecond) {
		getJSON(t, relay.URL+"/api/root", &root)
		if root.OK && root.Kind == "opfs" && root.Connected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/root = %+v, want a connected opfs root", root)
		}
	}

	content := "written by the relay, read back through the page ✓"
	if a := relay.Call(t, "write-file", map[string]string{"path": "from-relay/note.txt", "content": content}); !a.OK {
		t.Fatalf("write-file answered %s", a.Raw)
	}
	a := relay.Call(t, "read-file", map[string]string{"path": "from-relay/note.txt"})
	var read struct {
		Content string `json:"content"`
		Size    int    `json:"size"`
	}
	if !a.OK || json.Unmarshal(a.Observed, &read) != nil || read.Content != content || read.Size != len(content) {
		t.Fatalf("read-file answered %s", a.Raw)
	}
	// The bytes are in the page's OPFS: the page's own file browser reads them.
	type view struct {
		OK    bool `json:"ok"`
		Value struct {
			Text string `json:"text"`
		} `json:"value"`
	}
	if v := harness.Eval[view](tab, `voicebox.call('files.read', {path: 'from-relay/note.txt'})`); !v.OK || v.Value.Text != content {
		t.Fatalf("the page reads %+v", v)
	}
	// The page applies the rules too.
	if a := relay.Call(t, "read-file", map[string]string{"path": "../../etc/passwd"}); a.OK || a.Refused != "outside-root" {
		t.Fatalf("an escaping read answered %s", a.Raw)
	}
}

func TestRelayCallsWithoutAPageAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	start := time.Now()
	a := relay.Call(t, "read-file", map[string]string{"path": "a.txt"})
	if a.OK || a.Refused != "no-page" || a.Why == "" {
		t.Fatalf("with no page the call answered %s", a.Raw)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the no-page refusal took %v; it must not wait for a timeout", d)
	}
}

// freezeAttempts is how many calls a test sends to a page it froze before it says the page was
// not frozen; closeAttempts is how many pages it closes mid-call before it says a call was never
// in flight at the close.
const (
	freezeAttempts = 5
	closeAttempts  = 3
)

// TestAPageClosedMidCallSettlesItPageClosed: a call in flight when its page closes is answered
// page-closed by the relay. Freezing reaches the page's worker a moment after the page, and on a
// loaded machine a call can be answered after the test took it for in flight; an answer from the
// worker (anything but page-closed) means the call was not in flight at the close, so the test
// tries again with a new page, and fails when that happens closeAttempts times.
func TestAPageClosedMidCallSettlesItPageClosed(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for attempt := 1; ; attempt++ {
		a, inFlight := closeMidCall(t, relay)
		if inFlight && !a.OK && a.Refused == "page-closed" {
			return
		}
		if attempt == closeAttempts {
			if !inFlight {
				t.Fatalf("a frozen page answered %d calls in a row, the last %s (%d pages)", freezeAttempts, a.Raw, attempt)
			}
			t.Fatalf("the call in flight settled as %s, want page-closed (%d pages closed mid-call)", a.Raw, attempt)
		}
	}
}

// closeMidCall opens an executor page, freezes it, sends calls until one stays in flight, closes
// the page and returns that call's answer; inFlight is false when the page answered
// freezeAttempts calls in a row (the freeze had not reached its worker), with the last answer.
func closeMidCall(t *testing.T, relay *harness.Relay) (a harness.Answer, inFlight bool) {
	t.Helper()
	tab := openExecutor(t, relay)
	tab.Freeze() // the worker can no longer answer: the next call stays in flight
	var answered chan harness.Answer
	for attempt := 1; ; attempt++ {
		ch := make(chan harness.Answer, 1)
		go func() { ch <- relay.Call(t, "read-file", map[string]string{"path": "a.txt"}) }()
		answered = ch
		select {
		case a := <-answered:
			if attempt == freezeAttempts {
				tab.Close()
				return a, false
			}
			continue
		case <-time.After(300 * time.Millisecond): // the call reached the frozen worker
		}
		break
	}
	tab.Close()
	select {
	case a := <-answered:
		return a, true
	case <-time.After(20 * time.Second):
		t.Fatal("closing the page left the call unsettled")
		return harness.Answer{}, true
	}
}

// hijacker serves a page from a foreign origin (another port) that opens the relay's /channel
// from its own script and from a sandboxed iframe (Origin: null), optionally sends a forged
// hello, and reports every frame and the close.
func hijacker(t *testing.T, relayURL string) *httptest.Server {
	wsURL := "ws" + strings.TrimPrefix(relayURL, "http") + "/channel"
	probe := fmt.Sprintf(`
function probe(hello) {
  return new Promise((resolve) => {
    const got = {frames: [], code: 0};
    const ws = new WebSocket(%q);
    ws.onopen = () => { if (hello) ws.send(JSON.stringify(hello)); };
    ws.onmessage = (e) => got.frames.push(e.data);
    ws.onclose = (e) => { got.code = e.code; resolve(got); };
  });
}`, wsURL)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/probe.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, probe)
		default:
			io.WriteString(w, `<!doctype html><link rel="icon" href="data:,"><title>elsewhere</title><script src="/probe.js"></script>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

type hijackResult struct {
	Frames []string `json:"frames"`
	Code   int      `json:"code"`
}

func wantRefusedWithNoCall(t *testing.T, what string, got hijackResult, rule string) {
	t.Helper()
	if got.Code != 1008 {
		t.Errorf("%s: closed %d, want 1008", what, got.Code)
	}
	if len(got.Frames) != 1 || !strings.Contains(got.Frames[0], `"refused":"`+rule+`"`) {
		t.Errorf("%s: frames %q, want one %s refusal and no call", what, got.Frames, rule)
	}
}

func TestForeignOriginsCannotBecomeTheExecutor(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_HELLO_BOUND_MS=500")
	evil := hijacker(t, relay.URL)
	tab := harness.NewTab(t)
	tab.Navigate(evil.URL)
	// A call issued while the hijackers hold their sockets must find no executor.
	calls := make(chan harness.Answer, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		calls <- relay.Call(t, "read-file", map[string]string{"path": "a.txt"})
	}()

	silent := harness.Eval[hijackResult](tab, `probe(null)`)
	wantRefusedWithNoCall(t, "a foreign page with no hello", silent, "executor-unauthenticated")
	forged := harness.Eval[hijackResult](tab, `probe({type: 'hello', role: 'environment', bearer: 'vbx_guessed'})`)
	wantRefusedWithNoCall(t, "a foreign page with a forged bearer", forged, "bearer-refused")
	posing := harness.Eval[hijackResult](tab, `probe({type: 'root', kind: 'opfs', name: 'Browser storage'})`)
	wantRefusedWithNoCall(t, "a foreign page posing as the page", posing, "executor-unauthenticated")

	// The same from a sandboxed iframe, whose Origin is "null".
	sandboxed := harness.Eval[hijackResult](tab, `new Promise((resolve) => {
		const f = document.createElement('iframe');
		f.sandbox = 'allow-scripts';
		f.srcdoc = '<script src="' + location.origin + '/probe.js"></scr' + 'ipt><script>probe(null).then(r => parent.postMessage(r, "*"))</scr' + 'ipt>';
		window.addEventListener('message', (e) => resolve(e.data), {once: true});
		document.body.appendChild(f);
	})`)
	wantRefusedWithNoCall(t, "a sandboxed iframe (Origin: null)", sandboxed, "executor-unauthenticated")

	if a := <-calls; a.OK || a.Refused != "no-page" {
		t.Fatalf("while only hijackers were connected a call answered %s, want no-page", a.Raw)
	}
}

// TestNoTabIsOrphaned is issue 36's third problem: a second tab took the workspace silently, and
// once it closed the first kept "Tools act on: another tab" and every command was refused no-page
// until someone pressed "Use this tab". Now a second tab waits (and says so, with the way to take
// over), takes over only when its person asks, and a waiting tab takes over by itself, saying so,
// when the tab holding the workspace closes: the next /api/turn is served with no click.
func TestNoTabIsOrphaned(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	first := openExecutor(t, relay)
	second := harness.NewTab(t)
	openWorkspace(t, second, relay.URL)
	harness.WaitFor[bool](second, `document.querySelector('#channel').dataset.state === 'replaced' &&
		!document.querySelector('#channel-resume').hidden &&
		document.querySelector('#where').dataset.where === 'other-tab'`, channelBound)
	if note := harness.WaitFor[string](second, `!document.querySelector('#files-note').hidden && document.querySelector('#files-note').textContent`, channelBound); !strings.Contains(note, "Another tab holds the workspace") {
		t.Fatalf("the waiting tab's Files panel says %q", note)
	}
	if !harness.Eval[bool](first, `document.querySelector('#channel').dataset.state === 'connected'`) {
		t.Fatal("opening a second tab took the workspace from the first without asking")
	}
	turn(t, relay, "write orphan.txt: from the first tab")

	// The second tab's person asks: it takes over, and the first waits.
	harness.Eval[bool](second, `(document.querySelector('#channel-resume').click(), true)`)
	harness.WaitFor[bool](second, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	harness.WaitFor[bool](first, `document.querySelector('#channel').dataset.state === 'replaced' && !document.querySelector('#channel-resume').hidden`, channelBound)

	// The holder closes: the first tab takes over by itself and says so.
	second.Close()
	harness.WaitFor[bool](first, `document.querySelector('#channel').dataset.state === 'connected' &&
		document.querySelector('#where').dataset.where === 'this-tab' && document.querySelector('#files-note').hidden`, channelBound)
	if notice := harness.WaitFor[string](first, `!document.querySelector('#notice').hidden && document.querySelector('#notice').textContent`, channelBound); !strings.Contains(notice, "went away") || !strings.Contains(notice, "this tab holds it now") {
		t.Fatalf("the takeover was announced as %q", notice)
	}
	if got := turn(t, relay, "read orphan.txt"); !strings.Contains(got, "from the first tab") {
		t.Fatalf("after the holder closed, read orphan.txt answered %s", got)
	}
}

// turn posts a typed command to /api/turn and returns its answer, failing unless it is ok.
func turn(t *testing.T, relay *harness.Relay, transcript string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"transcript": transcript})
	resp, err := http.Post(relay.URL+"/api/turn", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var answer struct{ OK bool }
	if json.Unmarshal(raw, &answer) != nil || !answer.OK {
		t.Fatalf("the turn %q answered %d %s", transcript, resp.StatusCode, raw)
	}
	return string(raw)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
}

// TestThePageReconnectsWhenTheRelayRestarts stops the relay under a connected page and starts a
// new one on the same port and state: the page's worker reconnects by itself and serves calls.
func TestThePageReconnectsWhenTheRelayRestarts(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "PORT="+harness.RestartablePort(t))
	tab := openExecutor(t, relay)
	// The failed attempts while the relay is down are expected, allowed before it stops (the
	// first may come before the page says it is offline): the channel's, and the page's asking
	// whether the relay is back.
	tab.Allow(`WebSocket connection to .*/channel' failed`)
	tab.Allow(`ERR_CONNECTION_REFUSED`)
	relay.Stop(t)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'offline'`, channelBound)

	again := harness.StartRelay(t, "PORT="+relay.Port(), "VOICEBOX_STATE_DIR="+relay.StateDir)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	if a := again.Call(t, "write-file", map[string]string{"path": "after-restart.txt", "content": "still here"}); !a.OK {
		t.Fatalf("after the restart a call answered %s", a.Raw)
	}
}

// TestTheLoopbackGateLetsThePageInWithItsTicket turns the gate on: the page is refused without a
// session, the printed one-time URL lets the browser in, and the page then becomes the executor
// (its worker's /channel carries the session cookie).
func TestTheLoopbackGateLetsThePageInWithItsTicket(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_LOOPBACK_AUTH=1")
	line := relay.NextLine(t, 5*time.Second)
	i := strings.Index(line, relay.URL+"/?bootstrap=")
	if i < 0 {
		t.Fatalf("the relay printed %q, want the one-time URL", line)
	}
	ticket := strings.Fields(line[i:])[0]

	if resp, err := http.Get(relay.URL + "/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a session / answered %v %v, want 401", resp.StatusCode, err)
	}
	// Its session cookie, on 127.0.0.1 whatever the port, stays in a browser context of its own.
	tab := harness.NewIsolatedTab(t)
	tab.Navigate(ticket)
	if got := harness.Eval[string](tab, `location.href`); got != relay.URL+"/" {
		t.Fatalf("after the ticket the page is at %s, want %s/", got, relay.URL)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	if a := relay.Call(t, "now", map[string]string{}); !a.OK {
		t.Fatalf("through the gated page a call answered %s", a.Raw)
	}

	// The ticket was single use: a second visit gets no session (no 303 with a cookie).
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(ticket)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Fatalf("a second use of the ticket answered %d with cookies %v, want 401 and none", resp.StatusCode, resp.Cookies())
	}
}
