package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// fakeConn is one relay-side socket: the test pushes frames in and reads what the peer sent.
type fakeConn struct {
	in   chan string
	sent chan string
	mu   sync.Mutex
	info *closeInfo
	done chan struct{}
}

// newFakeConn is a socket on which the relay gives the page the slot at once, as it does when
// nobody else holds it.
func newFakeConn() *fakeConn {
	c := newStandbyConn()
	c.in <- `{"type":"holding"}`
	return c
}

// newStandbyConn is a socket on which the relay says nothing yet.
func newStandbyConn() *fakeConn {
	return &fakeConn{in: make(chan string, 16), sent: make(chan string, 16), done: make(chan struct{})}
}

func (c *fakeConn) Receive(ctx context.Context) ([]byte, error) {
	select {
	case f := <-c.in:
		return []byte(f), nil
	case <-c.done:
		select {
		case f := <-c.in:
			return []byte(f), nil
		default:
		}
		return nil, errSocketClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeConn) Send(frame []byte) error {
	if c.Closed() != nil {
		return errSocketClosed
	}
	c.sent <- string(frame)
	return nil
}

func (c *fakeConn) Close(code int, reason string) { c.closeWith(code, reason) }

func (c *fakeConn) closeWith(code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info == nil {
		c.info = &closeInfo{Code: code, Reason: reason}
		close(c.done)
	}
}

func (c *fakeConn) Closed() *closeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// dialer hands out the conns a test queues, or fails while none is queued.
type dialer struct {
	conns chan *fakeConn
	dials chan struct{}
}

func (d *dialer) dial(ctx context.Context, url string) (conn, error) {
	d.dials <- struct{}{}
	select {
	case c := <-d.conns:
		return c, nil
	default:
		return nil, errors.New("connection refused")
	}
}

type peerHarness struct {
	peer   *peer
	dialer *dialer
	states chan PeerState
	cancel context.CancelFunc
}

func startPeer(t *testing.T) *peerHarness {
	t.Helper()
	h := &peerHarness{dialer: &dialer{conns: make(chan *fakeConn, 4), dials: make(chan struct{}, 64)}, states: make(chan PeerState, 64)}
	h.peer = newPeer("ws://relay/channel", h.dialer.dial, func(st PeerState) { h.states <- st })
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	done := make(chan struct{})
	go func() { h.peer.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the peer did not stop when its context ended")
		}
	})
	return h
}

func (h *peerHarness) wantState(t *testing.T, want string) PeerState {
	t.Helper()
	for {
		select {
		case st := <-h.states:
			if st.State == want {
				return st
			}
			if want != "offline" && st.State == "offline" || st.State == "connecting" {
				continue
			}
			t.Fatalf("state %+v, want %s", st, want)
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s state", want)
		}
	}
}

func next(t *testing.T, c *fakeConn) string {
	t.Helper()
	select {
	case f := <-c.sent:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("the peer sent nothing")
		return ""
	}
}

func memoryDoor(t *testing.T) (*channel.Door, *fsroot.MemRoot) {
	mem := fsroot.NewMemory()
	mem.WriteFile(context.Background(), "hello.txt", []byte("hi there"))
	return channel.NewDoor(newExecutor(context.Background(), mem, nil, nil), executor.BuiltinAdmitted(), channel.DoorOptions{}), mem
}

const readCall = `{"v":1,"callId":"c1","tool":"read-file","descriptorId":"voicebox.builtin","args":{"path":"hello.txt"},"boundsEcho":{}}`

func TestPeerServesCallsOnceARootIsSet(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	c := newFakeConn()
	h.dialer.conns <- c
	door, _ := memoryDoor(t)
	h.peer.SetRoot(door, RootInfo{Kind: "opfs", Name: "Browser storage"})
	h.wantState(t, "connected")
	if got := next(t, c); got != `{"kind":"opfs","name":"Browser storage","type":"root"}` {
		t.Fatalf("first frame = %s, want the root frame", got)
	}
	c.in <- `{"type":"welcome"}` // control frames are never taken for calls
	c.in <- readCall
	var ans struct {
		CallID   string `json:"callId"`
		OK       bool   `json:"ok"`
		Observed struct {
			Content string `json:"content"`
		} `json:"observed"`
	}
	if err := json.Unmarshal([]byte(next(t, c)), &ans); err != nil || ans.CallID != "c1" || !ans.OK || ans.Observed.Content != "hi there" {
		t.Fatalf("answer = %+v (%v)", ans, err)
	}
	// A new root is announced on the open connection.
	h.peer.SetRoot(door, RootInfo{Kind: "handle", Name: "Projects"})
	if got := next(t, c); !strings.Contains(got, `"kind":"handle"`) {
		t.Fatalf("after a root change the peer sent %s", got)
	}
}

func TestPeerWaitsForTheUserAfterBeingReplaced(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	c := newFakeConn()
	h.dialer.conns <- c
	door, _ := memoryDoor(t)
	h.peer.SetRoot(door, RootInfo{Kind: "opfs"})
	h.wantState(t, "connected")
	next(t, c)
	c.in <- `{"type":"replaced","why":"a newer page took over"}`
	c.closeWith(closeReplaced, "replaced")
	if st := h.wantState(t, "replaced"); st.Why != "a newer page took over" {
		t.Fatalf("replaced state = %+v", st)
	}
	dials := len(h.dialer.dials)
	// No reconnection on its own, however long it waits for a change.
	h.peer.SetRoot(door, RootInfo{Kind: "opfs"})
	time.Sleep(50 * time.Millisecond)
	if len(h.dialer.dials) != dials {
		t.Fatal("a replaced peer reconnected without being asked")
	}
	c2 := newFakeConn()
	h.dialer.conns <- c2
	h.peer.Resume()
	h.wantState(t, "connected")
	next(t, c2)
}

// TestPeerWaitsInStandbyAndTakesOver: a page told "standby" shows replaced with the relay's words
// and keeps its socket; "holding" (the holder went away) makes it connected with no reconnection;
// Resume while it waits sends "take" on the same socket.
func TestPeerWaitsInStandbyAndTakesOver(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	c := newStandbyConn()
	h.dialer.conns <- c
	door, _ := memoryDoor(t)
	h.peer.SetRoot(door, RootInfo{Kind: "opfs"})
	next(t, c) // the root frame
	c.in <- `{"type":"standby","why":"another tab holds the workspace"}`
	if st := h.wantState(t, "replaced"); st.Why != "another tab holds the workspace" {
		t.Fatalf("standby state = %+v", st)
	}
	h.peer.Resume()
	if got := next(t, c); got != takeFrame {
		t.Fatalf("after Resume while waiting the peer sent %s, want the take frame", got)
	}
	dials := len(h.dialer.dials)
	c.in <- `{"type":"holding","why":"the tab that held the workspace went away"}`
	if st := h.wantState(t, "connected"); st.Why != "the tab that held the workspace went away" {
		t.Fatalf("holding state = %+v", st)
	}
	c.in <- readCall
	if got := next(t, c); !strings.Contains(got, `"callId":"c1"`) {
		t.Fatalf("the page holding the slot answered %s", got)
	}
	if len(h.dialer.dials) != dials {
		t.Fatal("the peer reconnected to take the slot over")
	}
}

func TestPeerStopsOnARefusal(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	c := newFakeConn()
	h.dialer.conns <- c
	door, _ := memoryDoor(t)
	h.peer.SetRoot(door, RootInfo{Kind: "opfs"})
	h.wantState(t, "connected")
	c.in <- `{"type":"refused","refused":"loopback-unauthenticated","why":"sign in first"}`
	c.closeWith(closePolicy, "")
	if st := h.wantState(t, "refused"); st.Why != "sign in first" {
		t.Fatalf("refused state = %+v", st)
	}
}

func TestPeerReconnectsWithBackoff(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	door, _ := memoryDoor(t)
	h.peer.SetRoot(door, RootInfo{Kind: "opfs"})
	first := h.wantState(t, "offline")
	second := h.wantState(t, "offline")
	if first.RetryMs <= 0 || second.RetryMs <= first.RetryMs*5/4 {
		t.Fatalf("retry delays %d ms then %d ms, want growing ones", first.RetryMs, second.RetryMs)
	}
	c := newFakeConn()
	h.dialer.conns <- c
	h.wantState(t, "connected")
	c.closeWith(1001, "relay restarting")
	if st := h.wantState(t, "offline"); st.Why != "relay restarting" {
		t.Fatalf("after the relay went away: %+v", st)
	}
}

func TestBackoffIsBounded(t *testing.T) {
	t.Parallel()
	for attempt := range 40 {
		if d := backoff(attempt); d < backoffMin*4/5 || d > backoffMax*6/5 {
			t.Fatalf("backoff(%d) = %v, outside [%v, %v]", attempt, d, backoffMin*4/5, backoffMax*6/5)
		}
	}
}

// TestPeerDoorFollowsTheAdmittedSet: the door verifies extension calls against the set the relay
// sent last on this connection, and a new connection starts with none.
func TestPeerDoorFollowsTheAdmittedSet(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	c := newFakeConn()
	h.dialer.conns <- c
	mem := fsroot.NewMemory()
	mem.WriteFile(context.Background(), "note.md", []byte("remember the milk"))
	door := channel.NewDoor(newExecutor(context.Background(), mem, nil, nil), h.peer.Admitted(), channel.DoorOptions{})
	h.peer.SetRoot(door, RootInfo{Kind: "opfs"})
	h.wantState(t, "connected")
	next(t, c) // the root frame
	ask := func(c *fakeConn, tool, bounds string) map[string]any {
		t.Helper()
		args := `{"path":"note.md"}`
		if tool == "write-file" {
			args = `{"path":"note.md","content":"overwritten"}`
		}
		c.in <- `{"v":1,"callId":"e1","tool":"` + tool + `","descriptorId":"notes-reader","args":` + args + `,"boundsEcho":` + bounds + `}`
		var a map[string]any
		json.Unmarshal([]byte(next(t, c)), &a)
		return a
	}
	if a := ask(c, "read-file", `{}`); a["refused"] != "unattributed-call" {
		t.Fatalf("before the relay admitted anything: %v", a)
	}
	c.in <- `{"type":"admitted","extensions":{"notes-reader":{"bounds":{},"primitives":["read-file"]}}}`
	if a := ask(c, "read-file", `{}`); a["ok"] != true || !strings.Contains(fmt.Sprint(a["observed"]), "remember the milk") {
		t.Fatalf("an admitted read: %v", a)
	}
	if a := ask(c, "read-file", `{"maxBytes":1}`); a["refused"] != "bounds-mismatch" {
		t.Fatalf("changed bounds: %v", a)
	}
	if a := ask(c, "write-file", `{}`); a["refused"] != "under-declared" {
		t.Fatalf("a primitive it was not admitted with: %v", a)
	}
	if b, _ := mem.ReadFile(context.Background(), "note.md"); string(b) != "remember the milk" {
		t.Fatalf("the refused write changed the file: %q", b)
	}
	c.in <- `{"type":"admitted","extensions":{}}`
	if a := ask(c, "read-file", `{}`); a["refused"] != "unattributed-call" {
		t.Fatalf("after a revocation: %v", a)
	}
	c.in <- `{"type":"admitted","extensions":{"notes-reader":{"bounds":{},"primitives":["read-file"]}}}`
	c.closeWith(1001, "relay restarting")
	h.wantState(t, "offline")
	c2 := newFakeConn()
	h.dialer.conns <- c2
	h.wantState(t, "connected")
	next(t, c2)
	if a := ask(c2, "read-file", `{}`); a["refused"] != "unattributed-call" {
		t.Fatalf("a new connection kept the old set: %v", a)
	}
}

func TestIsControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		frame string
		want  bool
	}{
		{readCall, false},
		{`{"type":"welcome"}`, true},
		{` {"type":"admitted","extensions":{}}`, true},
		{`{"v":1,"type":"admitted"}`, false},
		{`{"type":"admitted","v":1}`, false},
		{`{"v":null,"type":"admitted"}`, false},
		{`{"type":null}`, false},
		{`{"type":"x"} trailing`, true}, // a control frame that does not parse is ignored as one
		{`not json`, false},
		{`["type"]`, false},
	}
	for _, tt := range tests {
		if got := isControl([]byte(tt.frame)); got != tt.want {
			t.Errorf("isControl(%s) = %v, want %v", tt.frame, got, tt.want)
		}
	}
}

// TestPeerSlowCallsHoldUpNoOther: calls waiting on something slow (a mini-app, a person) take
// every waiting server and more, and a later call is still answered at once.
func TestPeerSlowCallsHoldUpNoOther(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	c := newFakeConn()
	h.dialer.conns <- c
	release := make(chan struct{})
	exec := channel.ExecutorFunc(func(ctx context.Context, call wire.Call) (json.RawMessage, error) {
		if strings.Contains(string(call.Args), "slow") {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return json.RawMessage(`{"path":"x"}`), nil
	})
	h.peer.SetRoot(channel.NewDoor(exec, executor.BuiltinAdmitted(), channel.DoorOptions{}), RootInfo{Kind: "opfs"})
	h.wantState(t, "connected")
	next(t, c) // the root frame
	frame := func(id, path string) string {
		return `{"v":1,"callId":"` + id + `","tool":"read-file","descriptorId":"voicebox.builtin","args":{"path":"` + path + `"},"boundsEcho":{}}`
	}
	for i := range callServers + 2 {
		c.in <- frame(fmt.Sprint("slow", i), "slow.txt")
	}
	c.in <- frame("fast", "fast.txt")
	if got := next(t, c); !strings.Contains(got, `"callId":"fast"`) {
		t.Fatalf("first answer %s, want the fast call's", got)
	}
	close(release)
	for range callServers + 2 {
		if got := next(t, c); !strings.Contains(got, `"callId":"slow`) {
			t.Fatalf("answer %s, want a slow call's", got)
		}
	}
}

// TestPeerRefusesABinaryFrameAsTheWireDoes: a frame that came as a binary message is read as the
// same bytes a text one is, so what only a binary message can carry (bytes that are not UTF-8,
// which the browser never lets through as text) meets the wire's own check: such a frame, whose
// callId cannot be trusted, gets no answer and is counted, as a text frame the wire cannot read
// gets none; the next call is answered.
func TestPeerRefusesABinaryFrameAsTheWireDoes(t *testing.T) {
	t.Parallel()
	h := startPeer(t)
	c := newFakeConn()
	h.dialer.conns <- c
	door, _ := memoryDoor(t)
	h.peer.SetRoot(door, RootInfo{Kind: "opfs", Name: "Browser storage"})
	h.wantState(t, "connected")
	next(t, c) // the root frame
	bad := strings.Replace(strings.Replace(readCall, `"c1"`, `"c2"`, 1), `hello.txt`, "hello\xff.txt", 1)
	if _, err := wire.ParseCall([]byte(bad)); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("the wire reads the test's frame with %v, want its UTF-8 refused", err)
	}
	c.in <- bad
	c.in <- `{"v":1,"callId":"c3"` // a text frame cut short: no answer either
	c.in <- readCall
	var ans struct {
		CallID string `json:"callId"`
		OK     bool   `json:"ok"`
	}
	if err := json.Unmarshal([]byte(next(t, c)), &ans); err != nil || ans.CallID != "c1" || !ans.OK {
		t.Fatalf("the first answer = %+v (%v), want c1's", ans, err)
	}
	// The peer serves calls on several goroutines, so c1 may be answered before the two frames
	// before it are read; each is counted once it is.
	deadline := time.Now().Add(10 * time.Second)
	for door.Unanswered() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := door.Unanswered(); n != 2 {
		t.Fatalf("the door counted %d frames without an answer, want 2", n)
	}
}
