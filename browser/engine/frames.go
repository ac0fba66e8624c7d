package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/voicebox-go/voicebox/shared/miniapp"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// frames carries the registry's calls to the mini-app frames, which live on the page's main
// thread: a call goes out as a {"type":"miniapp.call"} message, and its answer comes back as the
// miniapps.result method. Each call is answered once; an answer for a call that has already been
// answered (it timed out, or its app closed) is dropped.
type frames struct {
	post func(msg []byte)

	mu      sync.Mutex
	next    uint64
	pending map[string]pendingCall
}

type pendingCall struct {
	appID string
	done  chan frameAnswer // buffered: settling never blocks
}

type frameAnswer struct {
	out json.RawMessage
	err error
}

func newFrames(post func([]byte)) *frames {
	return &frames{post: post, pending: map[string]pendingCall{}}
}

// app returns the miniapp.App that carries calls to appID's frame.
func (f *frames) app(appID string) miniapp.App { return frameApp{f, appID} }

type frameApp struct {
	f     *frames
	appID string
}

// CallTool posts the call to the page and waits for its answer or for ctx, whichever is first.
func (a frameApp) CallTool(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
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
