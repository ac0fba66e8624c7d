package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The page stops an app whose call passed a deadline, and only then: the cancel the worker posts
// says which it was.
func TestFramesCancelSaysWhetherADeadlinePassed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		expired bool
	}{
		{"the deadline passed", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now())
		}, true},
		{"the caller went away", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			posted := make(chan map[string]any, 2)
			f := newFrames(func(b []byte) {
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Errorf("posted %s: %v", b, err)
				}
				posted <- m
			})
			ctx, cancel := tt.ctx()
			defer cancel()
			if _, err := f.app("app_x").CallTool(ctx, "spin", json.RawMessage(`{}`)); err == nil {
				t.Fatal("a call whose context ended answered")
			}
			call, cancelMsg := <-posted, <-posted
			if call["type"] != "miniapp.call" || cancelMsg["type"] != "miniapp.cancel" || cancelMsg["callId"] != call["callId"] {
				t.Fatalf("posted %v then %v", call, cancelMsg)
			}
			if cancelMsg["expired"] != tt.expired {
				t.Fatalf("expired = %v, want %v", cancelMsg["expired"], tt.expired)
			}
		})
	}
}

// fakePort is an AppPort whose other end is the test: what the worker posts is kept, and the test
// answers with receive.
type fakePort struct {
	mu      sync.Mutex
	posted  []map[string]any
	closed  bool
	receive func([]byte)
	over    func(string, int, int)
	sent    chan map[string]any
}

func (p *fakePort) Post(msg []byte, _ string, _ bool) error {
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		return err
	}
	p.mu.Lock()
	p.posted = append(p.posted, m)
	p.mu.Unlock()
	p.sent <- m
	return nil
}

func (p *fakePort) Refused() PortRefusals { return PortRefusals{} }

func (p *fakePort) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
}

func (p *fakePort) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// bindFake binds a fakePort for appID's document doc.
func bindFake(t *testing.T, f *frames, appID string, doc uint64) (*fakePort, error) {
	t.Helper()
	p := &fakePort{sent: make(chan map[string]any, 16)}
	if r := f.bind(appID, doc, func(receive func([]byte), over func(string, int, int)) (AppPort, error) {
		p.receive, p.over = receive, over
		return p, nil
	}); r != nil {
		return p, r
	}
	return p, nil
}

// pagePosts collects what the frames post to the page.
func pagePosts() (func([]byte), chan map[string]any) {
	ch := make(chan map[string]any, 16)
	return func(b []byte) {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		ch <- m
	}, ch
}

// A call to an app with a port goes out on the port, never to the page (which hears a notice
// only), and takes only its own answer: one that names no waiting call, another app's call, a
// call already answered, or that is malformed is refused by name and counted.
func TestFramesPortTakesOnlyItsOwnAnswers(t *testing.T) {
	t.Parallel()
	post, page := pagePosts()
	f := newFrames(post)
	x, err := bindFake(t, f, "app_x", 1)
	if err != nil {
		t.Fatal(err)
	}
	y, err := bindFake(t, f, "app_y", 2)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		out json.RawMessage
		err error
	}
	call := func(appID string) chan got {
		ch := make(chan got, 1)
		go func() {
			out, err := f.app(appID).CallTool(context.Background(), "echo", json.RawMessage(`{"s":1}`))
			ch <- got{out, err}
		}()
		return ch
	}
	xDone, yDone := call("app_x"), call("app_y")
	xCall, yCall := <-x.sent, <-y.sent
	if xCall["type"] != "call_tool" || xCall["name"] != "echo" || yCall["type"] != "call_tool" {
		t.Fatalf("the ports carried %v and %v", xCall, yCall)
	}
	xID, yID := xCall["callId"].(string), yCall["callId"].(string)
	for _, forged := range []string{
		`{"type":"tool_result","callId":"mc-999","ok":true,"result":"1"}`,               // no such call
		`{"type":"tool_result","callId":"` + yID + `","ok":true,"result":"\"forged\""}`, // another app's call
		`{"type":"tool_result","callId":"` + xID + `","ok":true,"result":"1","error":"x"}`,
		`{"type":"tool_result","callId":"` + xID + `","ok":true}`,
		`{"type":"tool_result","callId":"` + xID + `","result":"1"}`,
		`{"type":"register_tool","callId":"` + xID + `","ok":true,"result":"1"}`,
		`["tool_result"]`,
		``,
	} {
		x.receive([]byte(forged))
	}
	x.receive(nil) // what JSON.stringify could not take
	x.receive([]byte(`{"type":"tool_result","callId":"` + xID + `","ok":true,"result":"\"first\""}`))
	x.receive([]byte(`{"type":"tool_result","callId":"` + xID + `","ok":true,"result":"\"second\""}`))
	if g := <-xDone; g.err != nil || string(g.out) != `"first"` {
		t.Fatalf("app_x's call answered %s, %v; want its first answer", g.out, g.err)
	}
	y.receive([]byte(`{"type":"tool_result","callId":"` + yID + `","ok":false,"error":"it failed"}`))
	if g := <-yDone; g.err == nil || g.err.Error() == "" {
		t.Fatalf("app_y's call answered %s, want its own refusal", g.out)
	} else if r, ok := refusal.As(g.err); !ok || r.Rule != refusal.ExecThrew {
		t.Fatalf("app_y's call answered %v", g.err)
	}
	for range 2 { // once each call ended
		if n := <-page; n["type"] != "miniapp.call" || n["onPort"] != true || n["args"] != nil {
			t.Fatalf("the page was told %v, want a notice without the arguments", n)
		}
	}
	st, _ := f.portStats("app_x")
	if st.Sent != 1 || st.Answered != 1 || st.Dropped != 10 {
		t.Fatalf("app_x's port: %+v, want 1 sent, 1 answered, 10 dropped", st)
	}
	// By name: seven not of an answer's shape; the call never made, another port's and the
	// second answer unsolicited.
	if st.Refused[refusal.MalformedAnswer] != 7 || st.Refused[refusal.MiniAppUnsolicitedAnswer] != 3 || len(st.Samples) != miniapp.MaxPortRefusalSamples {
		t.Fatalf("app_x's port refused %v, samples %v", st.Refused, st.Samples)
	}
	if s := st.Samples[0]; s.Rule != refusal.MiniAppUnsolicitedAnswer || !strings.Contains(s.Why, "no call mc-999 was made") {
		t.Fatalf("the first refusal says %+v", s)
	}
	select {
	case m := <-page:
		t.Fatalf("the page was told %v", m)
	default:
	}
}

// A port is taken once per document, for a newer one; a newer one closes the old port and answers
// the calls waiting on it mini-app-closed; a close names the document it closes, so a newer port
// survives a late close of an older one.
func TestFramesBindsOnePortPerDocument(t *testing.T) {
	t.Parallel()
	post, _ := pagePosts()
	f := newFrames(post)
	first, err := bindFake(t, f, "app_x", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []uint64{5, 4, 0} {
		again, err := bindFake(t, f, "app_x", doc)
		if r, ok := refusal.As(err); !ok || r.Rule != refusal.MiniAppPortRefused {
			t.Fatalf("a port for document %d after 5 answered %v", doc, err)
		}
		if !again.isClosed() {
			t.Fatalf("the refused port of document %d was left open", doc)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.app("app_x").CallTool(context.Background(), "slow", json.RawMessage(`{}`))
		done <- err
	}()
	<-first.sent
	second, err := bindFake(t, f, "app_x", 6)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; !isRule(err, refusal.MiniAppClosed) {
		t.Fatalf("the call waiting on the old port answered %v", err)
	}
	if !first.isClosed() {
		t.Fatal("the old port was left open")
	}
	five := uint64(5)
	f.unbind("app_x", &five, "") // a late close of document 5
	if second.isClosed() {
		t.Fatal("closing document 5 closed the port of document 6")
	}
	six := uint64(6)
	f.unbind("app_x", &six, "")
	if !second.isClosed() {
		t.Fatal("closing document 6 left its port open")
	}
	if _, ok := f.portStats("app_x"); ok {
		t.Fatal("a closed app still has a port")
	}
}

// A call over a port whose deadline passes is cancelled on the port and the page is told which
// app and document, to stop it; a caller going away cancels the call only. The app cannot name
// the rule it fails with: whatever it says, a failure is exec-threw, and the page is told nothing
// but the notice.
func TestFramesPortDeadlines(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		answer   string // what the bridge answers, if anything
		rule     refusal.Rule
		expired  bool
		canceled bool
	}{
		{"the worker's deadline passed", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, "", "", true, true},
		{"the caller went away", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, "", "", false, true},
		{"the app says it timed out", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, `"ok":false,"error":"tool-timeout"`, refusal.ExecThrew, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			post, page := pagePosts()
			f := newFrames(post)
			p, err := bindFake(t, f, "app_x", 3)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := tt.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := f.app("app_x").CallTool(ctx, "spin", json.RawMessage(`{}`))
				done <- err
			}()
			call := <-p.sent
			if tt.answer != "" {
				p.receive([]byte(`{"type":"tool_result","callId":"` + call["callId"].(string) + `",` + tt.answer + `}`))
			}
			err = <-done
			if n := <-page; n["type"] != "miniapp.call" || n["onPort"] != true {
				t.Fatalf("the page was told %v, want the call's notice", n)
			}
			if tt.rule != "" && !isRule(err, tt.rule) {
				t.Fatalf("the call answered %v, want %s", err, tt.rule)
			}
			if tt.canceled {
				if c := <-p.sent; c["type"] != "cancel_call" || c["callId"] != call["callId"] {
					t.Fatalf("the port carried %v, want the call's cancel", c)
				}
			}
			if tt.expired {
				n := <-page
				if n["type"] != "miniapp.cancel" || n["expired"] != true || n["appId"] != "app_x" || n["doc"] != 3.0 || n["tool"] != "spin" {
					t.Fatalf("the page was told %v", n)
				}
			}
			select {
			case m := <-page:
				t.Fatalf("the page was also told %v", m)
			case m := <-p.sent:
				t.Fatalf("the port also carried %v", m)
			default:
			}
		})
	}
}

func isRule(err error, rule refusal.Rule) bool {
	r, ok := refusal.As(err)
	return ok && r.Rule == rule
}

// An app over its message budget on its port (app-port.js reports the first message over it) is
// stopped: the call waiting on the port is answered mini-app-closed with the reason, the port is
// unbound and closed, and the page is told which app and document, to stop it.
func TestFramesPortOverBudgetStopsTheApp(t *testing.T) {
	t.Parallel()
	post, page := pagePosts()
	f := newFrames(post)
	p, err := bindFake(t, f, "app_x", 4)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.app("app_x").CallTool(context.Background(), "holds", json.RawMessage(`{}`))
		done <- err
	}()
	<-p.sent
	p.over("it sent more than 500 messages within 1000 ms", 501, 9000)
	err = <-done
	if r, ok := refusal.As(err); !ok || r.Rule != refusal.MiniAppClosed || !strings.Contains(r.Why, "message-budget-exceeded: it sent more than 500 messages") {
		t.Fatalf("the held call answered %v", err)
	}
	if !p.isClosed() {
		t.Fatal("the port over budget was left open")
	}
	if _, ok := f.portStats("app_x"); ok {
		t.Fatal("the port over budget is still bound")
	}
	seen := map[string]map[string]any{}
	for range 2 {
		n := <-page
		seen[n["type"].(string)] = n
	}
	if n := seen["miniapp.over_budget"]; n == nil || n["appId"] != "app_x" || n["doc"] != 4.0 || n["messages"] != 501.0 || n["bytes"] != 9000.0 {
		t.Fatalf("the page was told %v", seen)
	}
}

// A call from the page's own API (miniapps.call) takes the worker's notice of it inside its
// answer (news), so the page's main thread is woken once for it; a call from the relay, which
// the page does not answer, still posts its notice apart; and a notice made after the answer was
// written is posted, never lost.
func TestPageCallTakesItsNoticeWithItsAnswer(t *testing.T) {
	t.Parallel()
	a, _ := memoryAPI(t)
	var mu sync.Mutex
	var posted []string
	a.post = func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		posted = append(posted, string(b))
	}
	takePosted := func() []string {
		mu.Lock()
		defer mu.Unlock()
		p := posted
		posted = nil
		return p
	}
	a.openApp("app_scoreboard")
	mustDo(t, a, "miniapps.register", `{"appId":"app_scoreboard","tool":{"name":"add_points","description":"Add points","parameters":{"type":"object","properties":{"team":{"type":"string"}},"required":["team"]}}}`, nil)
	if r := a.apps.frames.bind("app_scoreboard", 1, func(receive func([]byte), _ func(string, int, int)) (AppPort, error) {
		return &echoPort{receive: receive}, nil
	}); r != nil {
		t.Fatal(r)
	}
	takePosted() // the tools frame and such, from the registration

	ans, _ := a.call(context.Background(), 7, request{Method: "miniapps.call", Params: json.RawMessage(`{"appId":"app_scoreboard","tool":"add_points","args":{"team":"home"}}`)})
	if !ans.OK || len(ans.News) != 1 {
		t.Fatalf("the page's call answered %+v, want its result and one notice in its news", ans)
	}
	var n map[string]any
	if err := json.Unmarshal(ans.News[0], &n); err != nil || n["type"] != "miniapp.call" || n["onPort"] != true || n["appId"] != "app_scoreboard" || n["tool"] != "add_points" {
		t.Fatalf("the answer's news: %s (%v)", ans.News[0], err)
	}
	var wire map[string]any
	if err := json.Unmarshal(encode(ans), &wire); err != nil || len(wire["news"].([]any)) != 1 || wire["ok"] != true {
		t.Fatalf("the answer as the page reads it: %s (%v)", encode(ans), err)
	}
	if p := takePosted(); len(p) != 0 {
		t.Fatalf("the page's call also posted %q; its notice belongs in its answer", p)
	}

	// From the relay: no answer to the page, so the notice is posted.
	if _, err := a.apps.registry.Dispatch(context.Background(), miniapp.ModelName("app_scoreboard", "add_points"), json.RawMessage(`{"team":"away"}`)); err != nil {
		t.Fatal(err)
	}
	if p := takePosted(); len(p) != 1 || !strings.Contains(p[0], `"onPort":true`) {
		t.Fatalf("the relay's call posted %q, want its notice", p)
	}

	// Once the answer is written, a notice still to come is posted on its own.
	news := &callNews{}
	if got := news.seal(); len(got) != 0 {
		t.Fatalf("an empty call's news: %q", got)
	}
	ctx := newsContext{context.Background(), news}
	if _, err := a.apps.frames.app("app_scoreboard").CallTool(ctx, "add_points", json.RawMessage(`{"team":"home"}`)); err != nil {
		t.Fatal(err)
	}
	if p := takePosted(); len(p) != 1 || !strings.Contains(p[0], `"onPort":true`) {
		t.Fatalf("a notice after the answer posted %q, want it posted once", p)
	}
}

// A call from the page's API to an app that never answers is answered tool-timeout at the
// registry's deadline (miniapp.ToolTimeout): miniapps.call has no deadline of the worker's
// besides that one (boundedByItself), and still gets its one answer.
func TestPageCallToASilentAppTimesOut(t *testing.T) {
	t.Parallel()
	a, _ := memoryAPI(t)
	notices := make(chan string, 16)
	a.post = func(b []byte) {
		if strings.Contains(string(b), `"onPort":true`) {
			notices <- string(b)
		}
	}
	a.openApp("app_silent")
	mustDo(t, a, "miniapps.register", `{"appId":"app_silent","tool":{"name":"wait","description":"Never answers","parameters":{"type":"object","properties":{}}}}`, nil)
	if _, err := bindFake(t, a.apps.frames, "app_silent", 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ans, _ := a.call(context.Background(), 9, request{Method: "miniapps.call", Params: json.RawMessage(`{"appId":"app_silent","tool":"wait","args":{}}`)})
	if ans.OK || ans.Refused != refusal.ToolTimeout {
		t.Fatalf("a call the app never answers was answered %+v, want tool-timeout", ans)
	}
	if took := time.Since(start); took < miniapp.ToolTimeout || took > callBound/2 {
		t.Fatalf("it was answered after %v, want the tool's deadline of %v", took, miniapp.ToolTimeout)
	}
	// The notice of the call: in its answer, or posted apart when the call's own wait saw the
	// deadline after the answer was written; once either way.
	switch len(ans.News) {
	case 1:
	case 0:
		select {
		case <-notices:
		case <-time.After(miniapp.ToolTimeout):
			t.Fatal("the page never heard of the call")
		}
	default:
		t.Fatalf("its answer carried %d notices", len(ans.News))
	}
	select {
	case n := <-notices:
		t.Fatalf("the page heard of the call twice: %s", n)
	default:
	}
}
