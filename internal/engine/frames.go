package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// frames carries the registry's calls to the mini-app frames. An app whose bridge handed the
// worker a port (miniapps.port, once per document) is called over that port, whose other end the
// app's document holds: the call goes worker -> app and back, past neither the page's main thread
// (which only hears a short notice for display, {"type":"miniapp.call", ..., onPort: true},
// posted once the call ended) nor the bridge. The walls the bridge held for such a call are held
// here: the app's message budget (charged by app-port.js before Go reads a message; the first
// over it stops the app, see overBudget), the call's deadline (the caller's context; past it the
// page stops the app), the answer's shape, and one answer per call. Any other app (an MCP Apps
// view, or an app whose port has not arrived yet) is called through the main thread: a
// {"type":"miniapp.call"} message, answered by the miniapps.result method. Each call is answered
// once; whatever comes on a port that is not the answer to a call waiting on that very port (a
// second answer, one past the deadline, one to a call never made or made on another port, or
// anything not of an answer's shape) is refused by name and counted (PortStats).
type frames struct {
	post func(msg []byte)

	mu      sync.Mutex
	next    uint64
	pending map[string]pendingCall
	ports   map[string]*appPort // appID -> the port of its current document
	// viewTools are, per app, the tools its document serves as an MCP Apps view (its bridge asks
	// the view tools/call): the app's SDK, at the other end of the port, does not know them, so
	// their calls go through the page and its bridge.
	viewTools map[string]map[string]bool
}

type pendingCall struct {
	appID string
	via   *appPort         // the port the call went out on; nil through the main thread
	done  chan frameAnswer // buffered: settling never blocks
}

// AppPort is the worker's end of a MessageChannel whose other end is held by one document of an
// app (its bridge made the channel and handed the ends out, public/mini-app-bridge.js): Post
// sends the app a JSON message, callID naming a call whose answer the app owes from now (owe: a
// call, free of its message budget) or no longer (a cancel); Close ends the port (a message
// posted after it is lost, and none is received).
type AppPort interface {
	Post(msg []byte, callID string, owe bool) error
	Close()
	// Refused is what the port refused before Go read it (what is not an answer the app owes:
	// app-port.js names it there, so a flood costs a check and a count per message).
	Refused() PortRefusals
}

// PortRefusals is what a port refused: how many, by rule, and the first
// miniapp.MaxPortRefusalSamples of them.
type PortRefusals struct {
	Dropped int                  `json:"dropped"`
	Refused map[refusal.Rule]int `json:"refused"`
	Samples []PortRefusal        `json:"samples"`
}

// PortOpener takes the port object the page transferred with miniapps.port (params.port) and
// starts it: every message that arrives on it is charged to the app's message budget, then
// given to receive as JSON (nil when it could not be read as JSON), one at a time, never
// concurrently with another of the same port. The first message over the budget closes the
// port and is given to over instead (why, and what the app had spent in the window).
type PortOpener func(obj any, receive func(msg []byte), over func(why string, messages, bytes int)) (AppPort, error)

// appPort is a bound port and what came over it; its counters are guarded by frames.mu.
type appPort struct {
	appID string
	doc   uint64
	port  AppPort
	// sent counts calls posted on it, answered the answers taken, dropped the messages refused
	// (malformed, of no call waiting on this port, or after the port was replaced), by rule in
	// refused, the first MaxPortRefusalSamples of them in samples.
	sent, answered, dropped int
	refused                 map[refusal.Rule]int
	samples                 []PortRefusal
}

// PortRefusal is a message refused on an app's port: the rule and why.
type PortRefusal struct {
	Rule refusal.Rule `json:"rule"`
	Why  string       `json:"why"`
}

// refuse counts a message refused on ap; f.mu is held.
func (ap *appPort) refuse(rule refusal.Rule, why string) {
	ap.dropped++
	if ap.refused == nil {
		ap.refused = map[refusal.Rule]int{}
	}
	ap.refused[rule]++
	if len(ap.samples) < miniapp.MaxPortRefusalSamples {
		ap.samples = append(ap.samples, PortRefusal{rule, why})
	}
}

// PortStats is what miniapps.ports reports of an app's port.
type PortStats struct {
	AppID    string               `json:"appId"`
	Doc      uint64               `json:"doc"`
	Sent     int                  `json:"sent"`
	Answered int                  `json:"answered"`
	Dropped  int                  `json:"dropped"`
	Refused  map[refusal.Rule]int `json:"refused,omitempty"`
	Samples  []PortRefusal        `json:"samples,omitempty"`
}

type frameAnswer struct {
	out json.RawMessage
	err error
}

func newFrames(post func([]byte)) *frames {
	return &frames{post: post, pending: map[string]pendingCall{}, ports: map[string]*appPort{}}
}

// app returns the miniapp.App that carries calls to appID's frame.
func (f *frames) app(appID string) miniapp.App { return frameApp{f, appID} }

type frameApp struct {
	f     *frames
	appID string
}

// ReturnsWhenDone marks frameApp a miniapp.PromptApp: CallTool waits for its answer or ctx,
// whichever is first, so the registry calls it on the caller's goroutine.
func (frameApp) ReturnsWhenDone() {}

// CallTool posts the call on the app's port (or, with none, to the page) and waits for its
// answer or for ctx, whichever is first.
func (a frameApp) CallTool(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	if !a.f.isViewTool(a.appID, tool) {
		if out, err, ok := a.f.askPort(ctx, a.appID, tool, args); ok {
			return out, err
		}
	}
	return a.f.ask(ctx, a.appID, "miniapp.cancel", func(id string) ([]byte, bool) {
		return appendMiniAppCall(nil, id, a.appID, tool, args)
	})
}

// ask posts the message msg writes for a fresh call id (false: it could not be written, its
// arguments not being one JSON value) and waits for the call's answer or for ctx, whichever is
// first; when ctx wins, it posts {type: cancelType, callId, expired}, expired true when a
// deadline passed (the page then stops the app) rather than the caller going away.
func (f *frames) ask(ctx context.Context, appID, cancelType string, msg func(id string) ([]byte, bool)) (json.RawMessage, error) {
	f.mu.Lock()
	f.next++
	id := "mc-" + strconv.FormatUint(f.next, 10)
	p := pendingCall{appID: appID, done: make(chan frameAnswer, 1)}
	f.pending[id] = p
	f.mu.Unlock()
	b, ok := msg(id)
	if !ok {
		f.take(id)
		return nil, refusal.New(refusal.InternalError, "the call could not be encoded: its arguments are not one JSON value")
	}
	f.post(b)
	select {
	case ans := <-p.done:
		return ans.out, ans.err
	case <-ctx.Done():
		if f.take(id) {
			f.post(appendCancel(nil, cancelType, id, errors.Is(ctx.Err(), context.DeadlineExceeded)))
		}
		return nil, ctx.Err()
	}
}

// take removes a pending call and reports whether it was still waiting.
func (f *frames) take(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.pending[id]
	delete(f.pending, id)
	return ok
}

// settle answers the pending call id; it reports false when no call waits under that id.
func (f *frames) settle(id string, ans frameAnswer) bool {
	f.mu.Lock()
	p, ok := f.pending[id]
	delete(f.pending, id)
	f.mu.Unlock()
	if ok {
		p.done <- ans
	}
	return ok
}

// closeApp answers every call still waiting on appID with mini-app-closed, for an app whose
// frame closed or loaded a new document.
func (f *frames) closeApp(appID, why string) {
	f.mu.Lock()
	delete(f.viewTools, appID)
	var ids []string
	for id, p := range f.pending {
		if p.appID == appID {
			ids = append(ids, id)
		}
	}
	f.mu.Unlock()
	for _, id := range ids {
		f.settle(id, frameAnswer{err: refusal.New(refusal.MiniAppClosed, "%s", why)})
	}
}

// setViewTool records whether appID's tool name is served by its document as an MCP Apps view
// (registered from the view's tools/list by its bridge), which only the bridge can call.
func (f *frames) setViewTool(appID, name string, view bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !view {
		delete(f.viewTools[appID], name)
		return
	}
	if f.viewTools == nil {
		f.viewTools = map[string]map[string]bool{}
	}
	if f.viewTools[appID] == nil {
		f.viewTools[appID] = map[string]bool{}
	}
	f.viewTools[appID][name] = true
}

// isViewTool reports whether appID's tool name is one its view serves (see setViewTool).
func (f *frames) isViewTool(appID, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.viewTools[appID][name]
}

// newsKey is the context key of a call's *callNews.
type newsKey struct{}

// newsContext is ctx carrying news under newsKey: context.WithValue's own type would link its
// String method's printing into the page's wasm (8 KB) for this one value.
type newsContext struct {
	context.Context
	news *callNews
}

// Value is news for newsKey, else ctx's value.
func (c newsContext) Value(key any) any {
	if _, ok := key.(newsKey); ok {
		return c.news
	}
	return c.Context.Value(key)
}

// callNews holds the notices one call from the page makes (the worker's news of a call over an
// app's port, for display) until the call's answer is written: they go to the page inside that
// answer (answer.News), so a call from the page's own API wakes its main thread once, not once
// for the notice and again for the answer. A notice made after the answer was written (a call
// the caller stopped waiting for, still running) is posted on its own, as a call from the relay's
// always is: none is lost, none is sent twice.
type callNews struct {
	mu     sync.Mutex
	sealed bool
	msgs   []json.RawMessage
}

// add keeps msg for the answer; false once the answer was written (the caller then posts msg).
func (n *callNews) add(msg []byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sealed {
		return false
	}
	n.msgs = append(n.msgs, msg)
	return true
}

// seal ends what the answer carries and returns it.
func (n *callNews) seal() []json.RawMessage {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sealed = true
	return n.msgs
}

// notify gives the page msg: with the answer of the page's call that ctx belongs to while it is
// being made, else posted now.
func (f *frames) notify(ctx context.Context, msg []byte) {
	if n, ok := ctx.Value(newsKey{}).(*callNews); ok && n.add(msg) {
		return
	}
	f.post(msg)
}

// portCall is a call as it goes out on a port: the SDK's {type: "call_tool"} message.
type portCall struct {
	Type   string          `json:"type"`
	CallID string          `json:"callId"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
}

// portNotice is what the page hears of a call made over a port: for display only.
type portNotice struct {
	Type   string `json:"type"`
	CallID string `json:"callId"`
	AppID  string `json:"appId"`
	Tool   string `json:"tool"`
	OnPort bool   `json:"onPort"`
}

// expiredNotice tells the page that a call over appID's port (of document doc) passed its
// deadline: the page stops that document's app, as it stops one whose call through the main
// thread expired.
type expiredNotice struct {
	Type    string `json:"type"`
	CallID  string `json:"callId"`
	AppID   string `json:"appId"`
	Tool    string `json:"tool"`
	Doc     uint64 `json:"doc"`
	Expired bool   `json:"expired"`
}

// askPort calls tool on appID's port when it has one, and reports ok false when it has none.
// The call is registered as pending on the port under the same lock that finds the port, so a
// port replaced at any moment answers it mini-app-closed (see bind).
func (f *frames) askPort(ctx context.Context, appID, tool string, args json.RawMessage) (out json.RawMessage, err error, ok bool) {
	f.mu.Lock()
	ap := f.ports[appID]
	if ap == nil {
		f.mu.Unlock()
		return nil, nil, false
	}
	f.next++
	id := "mc-" + strconv.FormatUint(f.next, 10)
	p := pendingCall{appID: appID, via: ap, done: make(chan frameAnswer, 1)}
	f.pending[id] = p
	ap.sent++
	f.mu.Unlock()
	msg, ok := portCall{"call_tool", id, tool, args}.appendJSON(nil)
	if !ok {
		err = errors.New("its arguments are not one JSON value")
	} else {
		err = ap.port.Post(msg, id, true)
	}
	if err != nil {
		f.take(id)
		return nil, refusal.New(refusal.MiniAppClosed, "the call could not be sent to the mini-app: %v", err), true
	}
	notice := portNotice{"miniapp.call", id, appID, tool, true}.appendJSON(nil)
	select {
	case ans := <-p.done:
		// The page hears of the call once it is answered: its main thread wakes off the path (a
		// call from the page's own API takes it with its answer: one wake-up, not two).
		f.notify(ctx, notice)
		return ans.out, ans.err, true
	case <-ctx.Done():
		f.notify(ctx, notice)
		if f.take(id) {
			// The app is told (its SDK aborts the tool's signal), and owes no answer now.
			_ = ap.port.Post(appendPortCancel(nil, id), id, false)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				f.expired(id, ap, tool)
			}
		}
		return nil, ctx.Err(), true
	}
}

// expired tells the page that call id on ap passed its deadline (see expiredNotice).
func (f *frames) expired(id string, ap *appPort, tool string) {
	f.post(expiredNotice{"miniapp.cancel", id, ap.appID, tool, ap.doc, true}.appendJSON(nil))
}

// bind makes port (opened by open) the port of appID's document doc: the port of an earlier
// document is closed, and the calls waiting on it are answered mini-app-closed. A port for a
// document that is not newer than the one bound (the same document twice, or an older one) is
// refused mini-app-port-refused and closed.
func (f *frames) bind(appID string, doc uint64, open func(receive func([]byte), over func(string, int, int)) (AppPort, error)) *refusal.Refusal {
	f.mu.Lock()
	old := f.ports[appID]
	f.mu.Unlock()
	if doc == 0 || (old != nil && doc <= old.doc) {
		if port, err := open(func([]byte) {}, func(string, int, int) {}); err == nil {
			port.Close()
		}
		cur := uint64(0)
		if old != nil {
			cur = old.doc
		}
		return refusal.New(refusal.MiniAppPortRefused, "app %q already has the port of document %d; a port is taken once per document, for a newer one (%d is not)", clip(appID), cur, doc)
	}
	ap := &appPort{appID: appID, doc: doc}
	port, err := open(func(msg []byte) { f.fromPort(ap, msg) }, func(why string, messages, bytes int) { f.overBudget(ap, why, messages, bytes) })
	if err != nil {
		return refusal.New(refusal.MalformedCall, "params.port is not a port: %v", err)
	}
	ap.port = port
	f.mu.Lock()
	if cur := f.ports[appID]; cur != old {
		// Another port was bound meanwhile; the newer document keeps its port.
		if cur != nil && cur.doc >= doc {
			f.mu.Unlock()
			port.Close()
			return refusal.New(refusal.MiniAppPortRefused, "app %q already has the port of document %d", clip(appID), cur.doc)
		}
		old = cur
	}
	f.ports[appID] = ap
	stale := f.pendingOn(old)
	f.mu.Unlock()
	if old != nil {
		old.port.Close()
	}
	for _, id := range stale {
		f.settle(id, frameAnswer{err: refusal.New(refusal.MiniAppClosed, "the mini-app loaded a new document before it answered")})
	}
	return nil
}

// pendingOn lists the calls waiting on ap; f.mu is held.
func (f *frames) pendingOn(ap *appPort) []string {
	if ap == nil {
		return nil
	}
	var ids []string
	for id, p := range f.pending {
		if p.via == ap {
			ids = append(ids, id)
		}
	}
	return ids
}

// unbind closes appID's port when it is of document doc or an earlier one (a page that stopped
// or closed an app names the document it stopped, so a port bound since is kept); any doc when
// doc is nil. Calls waiting on it are the caller's to answer (closeApp), unless why is given:
// then they are answered mini-app-closed with it here (a reload, whose other calls go on).
func (f *frames) unbind(appID string, doc *uint64, why string) {
	f.mu.Lock()
	ap := f.ports[appID]
	if ap == nil || (doc != nil && ap.doc > *doc) {
		f.mu.Unlock()
		return
	}
	delete(f.ports, appID)
	var stale []string
	if why != "" {
		stale = f.pendingOn(ap)
	}
	f.mu.Unlock()
	ap.port.Close()
	for _, id := range stale {
		f.settle(id, frameAnswer{err: refusal.New(refusal.MiniAppClosed, "%s", why)})
	}
}

// overBudget stops the app whose port ap passed its message budget (app-port.js closed the port
// at the first message over it): the port is unbound, the calls waiting on it are answered
// mini-app-closed with the reason, and the page is told ({"type":"miniapp.over_budget"}), which
// stops that document's app as it stops one its bridge found over the budget.
func (f *frames) overBudget(ap *appPort, why string, messages, bytes int) {
	f.mu.Lock()
	if f.ports[ap.appID] == ap {
		delete(f.ports, ap.appID)
	}
	stale := f.pendingOn(ap)
	f.mu.Unlock()
	if ap.port != nil {
		ap.port.Close()
	}
	for _, id := range stale {
		f.settle(id, frameAnswer{err: refusal.New(refusal.MiniAppClosed, "the mini-app was stopped: %s: %s", refusal.MessageBudgetExceeded, why)})
	}
	f.post(overBudgetNotice{"miniapp.over_budget", ap.appID, ap.doc, why, messages, bytes}.appendJSON(nil))
}

// overBudgetNotice tells the page that appID's document doc passed its message budget on its
// port to the worker, with what it had spent in the window.
type overBudgetNotice struct {
	Type     string `json:"type"`
	AppID    string `json:"appId"`
	Doc      uint64 `json:"doc"`
	Why      string `json:"why"`
	Messages int    `json:"messages"`
	Bytes    int    `json:"bytes"`
}

// portAnswer is an app's answer to a call on its port, as its SDK writes it
// (public/mini-app-sdk.js): {type: "tool_result", callId, ok: true, result} with the tool's value
// as JSON text, or {type: "tool_result", callId, ok: false, error} with why the tool failed. The
// app names no refusal rule: a failure is exec-threw, whatever it says.
type portAnswer struct {
	Type   string  `json:"type"`
	CallID string  `json:"callId"`
	OK     *bool   `json:"ok"`
	Result *string `json:"result"`
	Error  *string `json:"error"`
}

// shaped reports whether m has an answer's shape: its type, a call id, and exactly one of a
// result (ok) or an error (not ok).
func (m *portAnswer) shaped() bool {
	return m.Type == "tool_result" && m.CallID != "" && m.OK != nil && *m.OK == (m.Result != nil) && *m.OK != (m.Error != nil)
}

// fromPort takes one message that arrived on ap (within the app's budget). Only an answer to a
// call waiting on this very port, while it is its app's current port, is taken; everything else
// is refused by name and counted: malformed-answer for a message not of an answer's shape,
// mini-app-unsolicited-answer for an answer to no call waiting there. The answer's output is
// bounded and checked as JSON by the registry (MaxOutputBytes), as any app's is.
func (f *frames) fromPort(ap *appPort, msg []byte) {
	var m portAnswer
	shaped := msg != nil && m.decode(msg) && m.shaped()
	f.mu.Lock()
	p, waiting := f.pending[m.CallID]
	switch {
	case !shaped:
		ap.refuse(refusal.MalformedAnswer, "what the app sent on its port is not an answer: {type: \"tool_result\", callId, ok: true, result} or {type: \"tool_result\", callId, ok: false, error}")
	case !waiting || p.via != ap:
		ap.refuse(refusal.MiniAppUnsolicitedAnswer, f.unsolicited(m.CallID))
	case f.ports[ap.appID] != ap:
		ap.refuse(refusal.MiniAppUnsolicitedAnswer, "the port is no longer the app's: its document was replaced or stopped")
	default:
		delete(f.pending, m.CallID)
		ap.answered++
	}
	taken := shaped && waiting && p.via == ap && f.ports[ap.appID] == ap
	f.mu.Unlock()
	if !taken {
		return
	}
	if *m.OK {
		p.done <- frameAnswer{out: json.RawMessage(*m.Result)}
		return
	}
	p.done <- frameAnswer{err: refusal.New(refusal.ExecThrew, "the tool failed: %s", clipWhy(*m.Error))}
}

// unsolicited says why an answer to callID is not taken: the call was made and is over, or was
// never made here; f.mu is held.
func (f *frames) unsolicited(callID string) string {
	if n, err := strconv.ParseUint(strings.TrimPrefix(callID, "mc-"), 10, 64); err == nil && strings.HasPrefix(callID, "mc-") && n > 0 && n <= f.next {
		return textf.Sprintf("call %s waits on this port no longer (or never did): it was answered already, passed its deadline, was cancelled, or went to another app", clip(callID))
	}
	return textf.Sprintf("no call %s was made", clip(callID))
}

// portStats reports appID's port, if it has one.
func (f *frames) portStats(appID string) (PortStats, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ap := f.ports[appID]
	if ap == nil {
		return PortStats{}, false
	}
	// The port's own refusals (before Go read a message) first, then Go's.
	early := ap.port.Refused()
	st := PortStats{AppID: appID, Doc: ap.doc, Sent: ap.sent, Answered: ap.answered, Dropped: early.Dropped + ap.dropped}
	st.Samples = append(slices.Clone(early.Samples), ap.samples...)
	if len(st.Samples) > miniapp.MaxPortRefusalSamples {
		st.Samples = st.Samples[:miniapp.MaxPortRefusalSamples]
	}
	if len(early.Refused)+len(ap.refused) > 0 {
		st.Refused = maps.Clone(early.Refused)
		if st.Refused == nil {
			st.Refused = map[refusal.Rule]int{}
		}
		for rule, n := range ap.refused {
			st.Refused[rule] += n
		}
	}
	return st, true
}

// clip shortens an id an app chose to a length fit for a refusal's sentence.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
