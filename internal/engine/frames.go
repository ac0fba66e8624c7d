package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// frames carries the registry's calls to the mini-app frames. An app whose bridge handed the
// worker a port (miniapps.port, once per document) is called over that port: the call goes
// worker -> bridge -> app and back without the page's main thread, which only hears a short
// notice for display ({"type":"miniapp.call", ..., onPort: true}, posted once the call ended). Any
// other app (an MCP Apps view, or an app whose port has not arrived yet) is called through the
// main thread: a {"type":"miniapp.call"} message, answered by the miniapps.result method. Each
// call is answered once; an answer for a call that has already been answered (it timed out, or
// its app closed), that was never asked, or that comes on another app's port or an old port of
// the same app, is dropped and counted.
type frames struct {
	post func(msg []byte)

	mu      sync.Mutex
	next    uint64
	pending map[string]pendingCall
	ports   map[string]*appPort // appID -> the port of its current document
}

type pendingCall struct {
	appID string
	via   *appPort         // the port the call went out on; nil through the main thread
	done  chan frameAnswer // buffered: settling never blocks
}

// AppPort is the worker's end of a MessageChannel whose other end is held by one app's bridge
// (public/mini-app-bridge.js), for one document of the app: Post sends the bridge a JSON
// message, Close ends the port (a message posted after it is lost, and none is received).
type AppPort interface {
	Post(msg []byte) error
	Close()
}

// PortOpener takes the port object the page transferred with miniapps.port (params.port) and
// starts it: every message that arrives on it is given to receive as JSON (nil when it could
// not be read as JSON), one at a time, never concurrently with another of the same port.
type PortOpener func(obj any, receive func(msg []byte)) (AppPort, error)

// appPort is a bound port and what came over it; its counters are guarded by frames.mu.
type appPort struct {
	appID string
	doc   uint64
	port  AppPort
	// sent counts calls posted on it, answered the answers taken, dropped the messages dropped
	// (malformed, of no call waiting on this port, or after the port was replaced).
	sent, answered, dropped int
}

// PortStats is what miniapps.ports reports of an app's port.
type PortStats struct {
	AppID    string `json:"appId"`
	Doc      uint64 `json:"doc"`
	Sent     int    `json:"sent"`
	Answered int    `json:"answered"`
	Dropped  int    `json:"dropped"`
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

// CallTool posts the call on the app's port (or, with none, to the page) and waits for its
// answer or for ctx, whichever is first.
func (a frameApp) CallTool(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	if out, err, ok := a.f.askPort(ctx, a.appID, tool, args); ok {
		return out, err
	}
	return a.f.ask(ctx, a.appID, "miniapp.cancel", func(id string) any {
		return struct {
			Type   string          `json:"type"`
			CallID string          `json:"callId"`
			AppID  string          `json:"appId"`
			Tool   string          `json:"tool"`
			Args   json.RawMessage `json:"args"`
		}{"miniapp.call", id, a.appID, tool, args}
	})
}

// ask posts the message msg builds for a fresh call id and waits for the call's answer or for
// ctx, whichever is first; when ctx wins, it posts {type: cancelType, callId, expired}, expired
// true when a deadline passed (the page then stops the app) rather than the caller going away.
func (f *frames) ask(ctx context.Context, appID, cancelType string, msg func(id string) any) (json.RawMessage, error) {
	f.mu.Lock()
	f.next++
	id := "mc-" + strconv.FormatUint(f.next, 10)
	p := pendingCall{appID: appID, done: make(chan frameAnswer, 1)}
	f.pending[id] = p
	f.mu.Unlock()
	b, err := json.Marshal(msg(id))
	if err != nil {
		f.take(id)
		return nil, refusal.New(refusal.InternalError, "the call could not be encoded: %v", err)
	}
	f.post(b)
	select {
	case ans := <-p.done:
		return ans.out, ans.err
	case <-ctx.Done():
		if f.take(id) {
			cancel, _ := json.Marshal(map[string]any{"type": cancelType, "callId": id, "expired": errors.Is(ctx.Err(), context.DeadlineExceeded)})
			f.post(cancel)
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

// portCall is a call as it goes out on a port: the bridge's {type: "call_tool"} message.
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
// deadline, in the worker or in the bridge: the page stops that document's app, as it stops one
// whose call through the main thread expired.
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
	msg, encoded := portCall{"call_tool", id, tool, args}.appendJSON(nil)
	err = errUnencodable
	if encoded {
		err = ap.port.Post(msg)
	}
	if err != nil {
		f.take(id)
		return nil, refusal.New(refusal.MiniAppClosed, "the call could not be sent to the mini-app: %v", err), true
	}
	notice := portNotice{"miniapp.call", id, appID, tool, true}.appendJSON(nil)
	select {
	case ans := <-p.done:
		// The page hears of the call once it is answered: its main thread wakes off the path.
		f.post(notice)
		if r, ok := refusal.As(ans.err); ok && r.Rule == refusal.ToolTimeout {
			f.expired(id, ap, tool) // the bridge's own deadline passed: the page stops the app
		}
		return ans.out, ans.err, true
	case <-ctx.Done():
		f.post(notice)
		if f.take(id) {
			w := rawjson.NewObject(nil, true)
			w.String("callId", id)
			w.String("type", "cancel")
			cancel := w.Close()
			_ = ap.port.Post(cancel)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				f.expired(id, ap, tool)
			}
		}
		return nil, ctx.Err(), true
	}
}

// expired tells the page that call id on ap passed its deadline (see expiredNotice).
func (f *frames) expired(id string, ap *appPort, tool string) {
	b := expiredNotice{"miniapp.cancel", id, ap.appID, tool, ap.doc, true}.appendJSON(nil)
	f.post(b)
}

// bind makes port (opened by open) the port of appID's document doc: the port of an earlier
// document is closed, and the calls waiting on it are answered mini-app-closed. A port for a
// document that is not newer than the one bound (the same document twice, or an older one) is
// refused mini-app-port-refused and closed.
func (f *frames) bind(appID string, doc uint64, open func(receive func([]byte)) (AppPort, error)) *refusal.Refusal {
	f.mu.Lock()
	old := f.ports[appID]
	f.mu.Unlock()
	if doc == 0 || (old != nil && doc <= old.doc) {
		if port, err := open(func([]byte) {}); err == nil {
			port.Close()
		}
		cur := uint64(0)
		if old != nil {
			cur = old.doc
		}
		return refusal.New(refusal.MiniAppPortRefused, "app %q already has the port of document %d; a port is taken once per document, for a newer one (%d is not)", clip(appID), cur, doc)
	}
	ap := &appPort{appID: appID, doc: doc}
	port, err := open(func(msg []byte) { f.fromPort(ap, msg) })
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
// doc is nil. Calls waiting on it are the caller's to answer (closeApp).
func (f *frames) unbind(appID string, doc *uint64) {
	f.mu.Lock()
	ap := f.ports[appID]
	if ap == nil || (doc != nil && ap.doc > *doc) {
		f.mu.Unlock()
		return
	}
	delete(f.ports, appID)
	f.mu.Unlock()
	ap.port.Close()
}

// portAnswer is the bridge's answer to a call over a port: {type: "tool_result", callId} with
// exactly one of result (the tool's JSON, as text) or refused and why.
// appendJSON writes the call as json.Marshal does; false when args is not JSON.
func (c portCall) appendJSON(dst []byte) ([]byte, bool) {
	w := rawjson.NewObject(slices.Grow(dst, 64+len(c.CallID)+len(c.Name)+len(c.Args)), true)
	w.String("type", c.Type)
	w.String("callId", c.CallID)
	w.String("name", c.Name)
	if !w.Raw("args", c.Args) {
		return nil, false
	}
	return w.Close(), true
}

// errUnencodable is why a call whose arguments are not JSON is not sent.
var errUnencodable = errors.New("the arguments are not JSON")

// appendJSON writes the notice as json.Marshal does.
func (n portNotice) appendJSON(dst []byte) []byte {
	w := rawjson.NewObject(slices.Grow(dst, 80+len(n.CallID)+len(n.AppID)+len(n.Tool)), true)
	w.String("type", n.Type)
	w.String("callId", n.CallID)
	w.String("appId", n.AppID)
	w.String("tool", n.Tool)
	w.Bool("onPort", n.OnPort)
	return w.Close()
}

// appendJSON writes the notice as json.Marshal does.
func (n expiredNotice) appendJSON(dst []byte) []byte {
	w := rawjson.NewObject(slices.Grow(dst, 112+len(n.CallID)+len(n.AppID)+len(n.Tool)), true)
	w.String("type", n.Type)
	w.String("callId", n.CallID)
	w.String("appId", n.AppID)
	w.String("tool", n.Tool)
	w.Int("doc", int64(n.Doc))
	w.Bool("expired", n.Expired)
	return w.Close()
}

// decode reads msg as json.Unmarshal does into a portAnswer (TestPortAnswerDecodeAgreesWithJSON),
// reporting whether it would have succeeded.
func (m *portAnswer) decode(msg []byte) bool {
	if !rawjson.Valid(msg) {
		return false
	}
	obj, _, _ := rawjson.First(msg)
	if obj[0] != '{' {
		return string(obj) == "null"
	}
	typed := true
	rawjson.Members(obj, func(name string, v []byte) bool {
		if string(v) == "null" {
			if rawjson.FoldEqual(name, "result") {
				m.Result = nil
			}
			return true
		}
		var into *string
		var buf [16]byte
		switch string(rawjson.AppendFold(buf[:0], name)) {
		case "TYPE":
			into = &m.Type
		case "CALLID":
			into = &m.CallID
		case "RESULT":
			into = new(string)
			m.Result = into
		case "REFUSED":
			into = &m.Refused
		case "WHY":
			into = &m.Why
		default:
			return true
		}
		typed = setString(into, v)
		return typed
	})
	return typed
}

type portAnswer struct {
	Type    string  `json:"type"`
	CallID  string  `json:"callId"`
	Result  *string `json:"result"`
	Refused string  `json:"refused"`
	Why     string  `json:"why"`
}

// fromPort takes one message that arrived on ap. Only an answer to a call waiting on this very
// port, while it is its app's current port, is taken; everything else is dropped and counted.
// The answer's output is bounded and checked as JSON by the registry (MaxOutputBytes), as any
// app's is.
func (f *frames) fromPort(ap *appPort, msg []byte) {
	var m portAnswer
	valid := msg != nil && m.decode(msg) && m.Type == "tool_result" && m.CallID != "" && (m.Result == nil) != (m.Refused == "")
	f.mu.Lock()
	p, ok := f.pending[m.CallID]
	ok = ok && valid && p.via == ap && f.ports[ap.appID] == ap
	if ok {
		delete(f.pending, m.CallID)
		ap.answered++
	} else {
		ap.dropped++
	}
	f.mu.Unlock()
	if !ok {
		return
	}
	if m.Result != nil {
		p.done <- frameAnswer{out: json.RawMessage(*m.Result)}
		return
	}
	p.done <- frameAnswer{err: refusal.New(refusal.Rule(m.Refused), "%s", clipWhy(m.Why))}
}

// portStats reports appID's port, if it has one.
func (f *frames) portStats(appID string) (PortStats, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ap := f.ports[appID]
	if ap == nil {
		return PortStats{}, false
	}
	return PortStats{AppID: appID, Doc: ap.doc, Sent: ap.sent, Answered: ap.answered, Dropped: ap.dropped}, true
}

// clip shortens an id an app chose to a length fit for a refusal's sentence.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
