package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/pace"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
)

// The page's connection to the relay's /channel, where it is the executor of its root.
//
// Frames: the page asks for them as binary messages (/channel?frames=binary); a relay that does
// not know that sends text, which the socket reads as the same bytes. The relay sends wire call
// envelopes (objects with "v") and control frames (objects with "type"): {"type":"admitted",...}
// with the admitted set before any call and after every change (channel.AdmittedType; the door
// verifies extension calls against it), {"type":"refused",...} before it closes 1008,
// {"type":"replaced",...} before it closes 4001 because a newer executor took the slot
// (on another relay of a fleet), {"type":"holding",...} when this page holds the slot (before any
// call) and {"type":"standby","why":...} when another executor holds it and this page waits, its
// socket open, to take it over when that one goes away (internal/core/hub). The page sends answer
// envelopes, {"type":"root","kind","name"} after connecting and whenever its root changes,
// {"type":"tools","tools":[...]} (its open mini-apps' function declarations) after the root frame
// and whenever they change, and {"type":"take"} when its person asks to use this tab.

// Close codes the relay uses.
const (
	closePolicy   = 1008 // refused: the page is not admitted
	closeReplaced = 4001 // a newer executor took the slot
)

// The reconnection backoff: it doubles from backoffMin to backoffMax, with jitter.
const (
	backoffMin = 250 * time.Millisecond
	backoffMax = 10 * time.Second
)

// reconnecting paces the reconnections, each pause spread a fifth either way, so that the pages a
// relay's restart dropped do not all come back at once.
var reconnecting = pace.Backoff{First: backoffMin, Max: backoffMax, Jitter: 0.2}

// conn is what the peer needs of a socket; the js build dials the browser's WebSocket.
type conn interface {
	// Receive returns the next frame the relay sent, text or binary, as its bytes.
	Receive(ctx context.Context) ([]byte, error)
	Send(frame []byte) error
	Close(code int, reason string)
	Closed() *closeInfo
}

// errSocketClosed is what Receive returns once a socket has closed and been drained.
var errSocketClosed = errors.New("socket closed")

// closeInfo is how a socket ended.
type closeInfo struct {
	Code   int
	Reason string
}

// PeerState is what the page shows of the connection.
type PeerState struct {
	// State is connecting, connected (this page holds the slot), offline, replaced (another
	// executor holds it: this page waits to take it over, or, displaced on another relay of a
	// fleet, waits for Resume) or refused.
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// RetryMs is when the next attempt starts, for offline.
	RetryMs int64 `json:"retryMs,omitempty"`
}

// appendJSON writes the state as the page hears it, {type: "channel", state, why, retryMs}, as
// json.Marshal writes that map: names sorted, nothing omitted (TestPeerStateAgreesWithJSON).
func (st PeerState) appendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.Int("retryMs", st.RetryMs)
	w.String("state", st.State)
	w.String("type", "channel")
	w.String("why", st.Why)
	return w.Close()
}

// peer keeps the page connected as the executor of its root, reconnecting with backoff. After a
// refusal or a replacement it waits for Resume: retrying could not help (refused), or would take
// the slot back from the tab the user just opened (replaced).
type peer struct {
	url    string
	dial   func(ctx context.Context, url string) (conn, error)
	notify func(PeerState)

	admitted *channel.LiveAdmitted // the door's copy of the admitted set, from the relay

	mu     sync.Mutex
	door   *channel.Door
	root   []byte // the root frame
	tools  []byte // the tools frame: the open mini-apps' tools
	conn   conn
	change chan struct{} // a root was set, or Resume was asked for
	resume bool
	take   bool // the person asked to use this tab: say "take" on this or the next connection
}

func newPeer(url string, dial func(context.Context, string) (conn, error), notify func(PeerState)) *peer {
	return &peer{url: url, dial: dial, notify: notify, change: make(chan struct{}, 1),
		admitted: channel.NewLiveAdmitted(executor.BuiltinAdmitted())}
}

// Admitted returns the admitted set a door made for this peer verifies calls against: the
// built-in descriptor, and the extensions the relay last said are admitted.
func (p *peer) Admitted() *channel.LiveAdmitted { return p.admitted }

// SetRoot makes door the executor of calls, for the root described by info. The relay learns of
// the change at once when connected.
func (p *peer) SetRoot(door *channel.Door, info RootInfo) {
	w := rawjson.NewObject(nil, true) // as json.Marshal writes the map: names sorted
	w.String("kind", info.Kind)
	w.String("name", info.Name)
	w.String("type", "root")
	frame := w.Close()
	p.mu.Lock()
	p.door, p.root = door, frame
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		c.Send(frame)
	}
	p.poke()
}

// SetTools records the frame that tells the relay the open mini-apps' tools, and sends it when
// connected; every new connection sends it after the root frame.
func (p *peer) SetTools(frame []byte) {
	p.mu.Lock()
	p.tools = frame
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		c.Send(frame)
	}
}

// takeFrame asks the relay for the slot even though another executor holds it.
const takeFrame = `{"type":"take"}`

// Resume asks a peer that stopped (refused or replaced) to connect again, and one that waits
// while another executor holds the slot to take it: the person pressed "Use this tab".
func (p *peer) Resume() {
	p.mu.Lock()
	p.resume, p.take = true, true
	c := p.conn
	if c != nil {
		p.take = false
	}
	p.mu.Unlock()
	if c != nil {
		c.Send([]byte(takeFrame))
	}
	p.poke()
}

func (p *peer) poke() {
	select {
	case p.change <- struct{}{}:
	default:
	}
}

// Run connects and serves until ctx ends.
func (p *peer) Run(ctx context.Context) {
	attempt := 0
	for ctx.Err() == nil {
		p.mu.Lock()
		ready := p.door != nil
		p.mu.Unlock()
		if !ready {
			if !p.wait(ctx, 0) {
				return
			}
			continue
		}
		p.notify(PeerState{State: "connecting"})
		c, err := p.dial(ctx, p.url)
		if err != nil {
			delay := backoff(attempt)
			attempt++
			p.notify(PeerState{State: "offline", Why: err.Error(), RetryMs: delay.Milliseconds()})
			if !p.wait(ctx, delay) {
				return
			}
			continue
		}
		attempt = 0
		state := p.serve(ctx, c)
		p.notify(state)
		if state.State == "offline" {
			delay := backoff(attempt)
			attempt++
			if !p.wait(ctx, delay) {
				return
			}
			continue
		}
		// Refused or replaced: wait until the user asks again.
		p.mu.Lock()
		p.resume = false
		p.mu.Unlock()
		for {
			if !p.wait(ctx, 0) {
				return
			}
			p.mu.Lock()
			again := p.resume
			p.mu.Unlock()
			if again {
				break
			}
		}
	}
}

// wait sleeps for d (forever when d is 0) or until a change; false when ctx ended.
func (p *peer) wait(ctx context.Context, d time.Duration) bool {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-p.change:
		return true
	case <-timer:
		return true
	}
}

// backoff is the pause before the reconnection that follows attempt failed ones.
func backoff(attempt int) time.Duration { return reconnecting.Delay(attempt) }

// serve answers calls on c until it closes, and says how it ended.
func (p *peer) serve(ctx context.Context, c conn) PeerState {
	p.admitted.Replace(nil) // the relay sends its set before any call
	p.mu.Lock()
	p.conn = c
	root, tools, take := p.root, p.tools, p.take
	p.take = false
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.conn = nil
		p.mu.Unlock()
	}()
	if err := c.Send(root); err != nil {
		return PeerState{State: "offline", Why: "the connection closed at once"}
	}
	if tools != nil {
		c.Send(tools)
	}
	if take {
		c.Send([]byte(takeFrame))
	}
	// Connected once the relay says this page holds the slot ("holding"), not before: a page
	// that joins while another tab holds it is told "standby" instead, and never shows itself
	// holding the workspace in between.

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	calls := make(chan call)
	for range callServers {
		go serveCalls(ctx, c, calls)
	}
	var control controlFrame
	for {
		frame, err := c.Receive(ctx)
		if err != nil {
			break
		}
		if isControl(frame) {
			if channel.ControlType(frame) == channel.AdmittedType {
				set, _ := channel.ParseAdmitted(frame) // a malformed set admits nothing
				p.admitted.Replace(set)
				continue
			}
			control.decode(frame)
			switch control.Type {
			case "holding":
				p.notify(PeerState{State: "connected", Why: control.Why})
			case "standby":
				p.notify(PeerState{State: "replaced", Why: firstOf(control.Why, "another tab or machine holds the workspace")})
			}
			continue
		}
		p.mu.Lock()
		door := p.door
		p.mu.Unlock()
		job := call{door, frame}
		select {
		case calls <- job: // a waiting server takes it
		default:
			go job.serve(ctx, c)
		}
	}
	info := c.Closed()
	if info == nil {
		c.Close(1000, "the page stopped")
		return PeerState{State: "offline", Why: "stopped"}
	}
	switch {
	case info.Code == closeReplaced || control.Type == "replaced":
		return PeerState{State: "replaced", Why: firstOf(control.Why, info.Reason, "another tab or machine is now the executor")}
	case info.Code == closePolicy || control.Type == "refused":
		return PeerState{State: "refused", Why: firstOf(control.Why, info.Reason, "the relay refused this page")}
	}
	return PeerState{State: "offline", Why: firstOf(info.Reason, "the relay closed the connection")}
}

// callServers is how many goroutines of a connection wait for calls between them. A call runs on
// one of them, whose stack has already grown to what a call needs, rather than on a new goroutine
// that grows its stack again (copying it each time it doubles: a tenth of a call's time in the
// worker when measured). When all are busy, a call gets a goroutine of its own, so a slow call
// (a mini-app waiting for a person) never holds up another.
const callServers = 4

// call is one call frame for door.
type call struct {
	door  *channel.Door
	frame []byte
}

func (j call) serve(ctx context.Context, c conn) {
	if answer := j.door.Serve(ctx, j.frame); answer != nil {
		c.Send(answer)
	}
}

// serveCalls serves the calls handed to it until ctx ends.
func serveCalls(ctx context.Context, c conn, calls <-chan call) {
	for {
		select {
		case j := <-calls:
			j.serve(ctx, c)
		case <-ctx.Done():
			return
		}
	}
}

// isControl reports whether a frame is a control frame (an object with "type") rather than a
// call envelope. A frame that is neither goes to the door, which refuses or drops it. A frame that
// starts as the relay writes every call, with "v", is no control frame whatever follows, so the
// common case costs no decoding.
func isControl(frame []byte) bool {
	if bytes.HasPrefix(frame, []byte(`{"v":`)) {
		return false
	}
	var probe controlProbe
	return probe.decode(frame) && probe.Type != nil && probe.V == nil
}

// controlProbe is what isControl reads of a frame.
type controlProbe struct {
	Type *string         `json:"type"`
	V    json.RawMessage `json:"v"`
}

func (p *controlProbe) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "type", Into: &p.Type}, {Name: "v", Into: &p.V}}
}

// decode reads the first JSON value of frame into p as a json.Decoder does (what follows it is
// not read), and reports whether that succeeds: members of the wrong type refused, members p
// does not know passed over (TestControlFramesAgreeWithJSON).
func (p *controlProbe) decode(frame []byte) bool {
	v, _, ok := rawjson.First(frame)
	if !ok {
		return false
	}
	if v[0] != '{' {
		return string(v) == "null" // a json.Decoder takes null into a struct, changing nothing
	}
	err := strictjson.DecodeStruct(v, p)
	return err == nil || strictjson.KindOf(err) == strictjson.UnknownField
}

// controlFrame is a control frame from the relay: {type, why}.
type controlFrame struct {
	Type string `json:"type"`
	Why  string `json:"why"`
}

// decode reads frame into c as json.Unmarshal does, whose error the peer never looked at: nothing
// unless frame is exactly one JSON value; of an object, each member named (case folded) type or
// why that is a string, the last one given winning; a member of another type, or null, leaves the
// field as it was (TestControlFramesAgreeWithJSON).
func (c *controlFrame) decode(frame []byte) {
	rawjson.Members(frame, func(name string, v []byte) bool {
		var into *string
		switch {
		case rawjson.FoldEqual(name, "type"):
			into = &c.Type
		case rawjson.FoldEqual(name, "why"):
			into = &c.Why
		default:
			return true
		}
		if s, ok := rawjson.Unquote(v); ok {
			*into = s
		}
		return true
	})
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
