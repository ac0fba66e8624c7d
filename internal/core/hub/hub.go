// Package hub is the relay's end of /channel: it decides who may become the executor, holds the
// one executor slot, and routes calls to whoever holds it.
//
// # Who may connect
//
// A WebSocket whose Origin is this relay's own loopback origin (http://127.0.0.1:PORT,
// http://localhost:PORT or http://[::1]:PORT, PORT being the port the request arrived on) is the
// page. It is admitted at once and sends no hello; when Options.PageSession is set (the loopback
// gate) it needs a valid session too, and without one it is refused like a bad hello, with
// loopback-unauthenticated. Browsers set Origin on every WebSocket upgrade and scripts cannot change it, so a page of
// another site can never pass for ours.
//
// Any other connection (another Origin, "null" from a sandboxed frame, or none at all) must send
// {"type":"hello","role":"environment","bearer":"vbx_..."} within Options.HelloBound (within
// ForeignHelloBound when it carries an Origin: a browser page is never an environment), and the
// bearer must be paired. Otherwise the relay writes {"type":"refused","refused":RULE,"why":...}
// and closes with 1008 (policy violation): RULE is executor-unauthenticated for a missing, late,
// malformed or oversized hello (over MaxControlBytes), bearer-refused for a bearer nobody paired
// or that was revoked. Such a socket is never put in the slot, so no call is ever sent to it.
//
// # Socket bounds
//
// The page's sockets, and machines' once their hello is accepted, take places of
// Options.Limiter (overall, per session, and without a session). Sockets still saying hello,
// which anyone able to reach the relay can open, wait in a pool of their own
// (Options.Hellos: overall, per client address, per Origin), so however many of them there are,
// the page is admitted. A machine that sends its bearer in the upgrade too (Authorization:
// Bearer vbx_..., as `relay env` does) takes a place of the Limiter at once, so a full pool does
// not keep it out either; it still says hello. One over a bound is refused too-many-sockets.
//
// # The slot
//
// One executor at a time. A machine takes the slot when it connects (its operator started `relay
// env` to have it); a page takes it only when the slot is empty or when its person asks (the
// page's {"type":"take"}, its "Use this tab"). A page that connects while another executor holds
// the slot waits: it is sent {"type":"standby","why":...} and keeps its socket, and is given no
// call. When the holder goes away (its tab closed or crashed, its machine stopped or revoked), the
// page that joined the waiting ones last takes the slot by itself, sent {"type":"holding","why":...}
// before any call (a page that takes the slot at once is sent {"type":"holding"} too). So a second
// tab never takes the workspace silently, and closing the tab that holds it never leaves the
// others refusing no-page.
//
// A page displaced by a newer executor (a page whose person asked, or a machine) joins the waiting
// pages, sent {"type":"standby","why":...}; a displaced machine is sent {"type":"replaced","why":...}
// and closed with CloseReplaced (4001). Either way the calls waiting on it settle with its kind's
// closed rule (page-closed, machine-closed). A paired machine whose pairing is revoked is sent a
// bearer-refused frame and closed with 1008 at once. The waiting pages are bounded by the socket
// bounds above (Options.Limiter), as every page socket is.
//
// In a fleet of relays (UseFleet, internal/door/fleet) the slot is the fleet's: an executor attached to
// any relay takes it from one attached to another (Displace), and a call made on a relay without
// the executor is routed to the one with it (Fleet.Ask).
//
// # Frames
//
// Every call the relay sends is a wire call envelope and every answer it reads a wire answer
// envelope (both carry "v"). Control frames are JSON objects with a "type" and no "v". The page
// sends {"type":"root","kind":"opfs"|"handle","name":...} after it connects and whenever its root
// changes, and {"type":"tools","tools":[...]} (its open mini-apps' tools, heard by every
// OfferListener) whenever they change. The relay sends the admitted set ({"type":"admitted",...}, see
// channel.AdmittedType) to an executor before it takes the slot, and again on every change
// (SetAdmitted), so the executor's door verifies extension calls against its own current copy.
// No frame may exceed wire.MaxFrameBytes.
//
// The relay writes calls and the admitted set as text WebSocket messages, or as binary ones to a
// socket whose upgrade asked for them (/channel?frames=binary, as the page's worker does: a
// binary message reaches its Go as bytes, with no JavaScript string made of it). Either way the
// bytes are the same JSON; control frames are text. An executor may send either kind; the relay
// reads both as the same bytes, so a page and a relay of different versions still understand
// each other.
package hub

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/outbound"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/core/wsbound"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// DefaultHelloBound is how long a connection that is not the page has to send its hello.
const DefaultHelloBound = 5 * time.Second

// ForeignHelloBound is the hello bound of a connection that carries an Origin other than the
// page's (a page of another site, a sandboxed frame): a browser page is never a machine
// environment, so it is refused sooner (Options.HelloBound when that is shorter).
const ForeignHelloBound = time.Second

// closeBound bounds the close handshake of a refused socket: a peer that stops sending in the
// middle of a frame cannot hold the relay's side open past it.
const closeBound = 5 * time.Second

// CloseReplaced is the close code of a connection displaced by a newer executor. A page that
// receives it does not reconnect: another tab or machine holds the root now.
const CloseReplaced websocket.StatusCode = 4001

// CloseTryAgain is the close code of a page whose session, or a machine whose pairing, cannot be
// checked now (1013, try again later): it reconnects by itself, where a refusal (1008) would make
// the page wait for its person and a machine stop for good.
const CloseTryAgain = websocket.StatusTryAgainLater

// FramesQuery and FramesBinary are the query parameter, and its value, with which a /channel
// upgrade asks for calls as binary messages.
const (
	FramesQuery  = "frames"
	FramesBinary = "binary"
)

// MaxControlBytes bounds a control frame; a larger frame is read as an answer envelope.
const MaxControlBytes = 4 << 10

// MaxRootNameBytes bounds the root name a page reports.
const MaxRootNameBytes = 256

// DefaultMaxSockets bounds the /channel sockets open at once.
const DefaultMaxSockets = session.DefaultMaxSockets

// DefaultMaxSessionSockets bounds the /channel sockets of one session at once.
const DefaultMaxSessionSockets = session.DefaultMaxSessionSockets

// writeTimeout bounds one frame written to a peer; a peer that does not read for this long is
// treated as gone.
const writeTimeout = 10 * time.Second

// DefaultRecheck is how often the pairing of the connected machine is checked again, so a
// `relay pair --revoke` run by another process closes its socket too.
const DefaultRecheck = 2 * time.Second

// Asker sends calls to whoever holds the workspace root: the one way a part of the relay asks
// the root. The Hub is one (in a fleet it asks the relay that holds the root).
type Asker interface {
	// Ask sends call to the holder and returns its one answer.
	Ask(ctx context.Context, call wire.Call) wire.Answer
	// NewCallID returns a fresh callId.
	NewCallID() string
}

// Holder is an Asker that also says who holds the root; the Hub is one.
type Holder interface {
	Asker
	// Holding says who holds the root now: Kind "" when nobody declared one.
	Holding() Holding
}

// Root kinds as GET /api/root reports them.
const (
	RootOPFS    = "opfs"
	RootHandle  = "handle"
	RootMachine = "machine"
)

// Pairings is the host's record of paired environments (hoststate.Dir implements it).
type Pairings interface {
	// Lookup returns the name paired with bearer.
	Lookup(bearer string) (name string, ok bool, err error)
	// Paired reports whether name is still paired.
	Paired(name string) (bool, error)
}

// Options configures a Hub. The zero value admits the page and no machine.
type Options struct {
	// HelloBound is how long a connection that is not the page has to send its hello; zero means
	// DefaultHelloBound.
	HelloBound time.Duration
	// callTimeout bounds each call to the page or machine, for this package's tests only (a
	// page's call timing out without waiting 30 s); zero, as every relay runs, means
	// channel.DefaultTimeout. It is unexported so that no product path can set it: a relay alone
	// and a fleet (internal/door/fleet's Router.Ask and its holder's serve) bound a call alike.
	callTimeout time.Duration
	// Pairings checks the bearers of hellos. Nil refuses every bearer.
	Pairings Pairings
	// Recheck is how often a connected machine's pairing is checked again; zero means
	// DefaultRecheck.
	Recheck time.Duration
	// PageSession, when set, must accept a page's upgrade request (the loopback gate's session
	// cookie) before the page is admitted. Nil admits any connection with our loopback Origin.
	PageSession func(r *http.Request) bool
	// PageSessionUnavailable, when set, says why a page's session cannot be checked now (a
	// fleet's shared sessions out of reach); such a page is closed with CloseTryAgain and the
	// rule as the reason, never refused, so it keeps reconnecting and gets in once the sessions
	// are back. Nil means sessions can always be checked.
	PageSessionUnavailable func(r *http.Request) error
	// PageOrigin, when set, decides whether an upgrade's Origin is the page's (the server's
	// PageOrigin: loopback or the configured public origin). Nil admits only our own loopback
	// origin.
	PageOrigin func(r *http.Request) bool
	// Limiter bounds the /channel sockets open at once, admitted or still saying hello, overall
	// and per session (SessionOf); one more is refused too-many-sockets and closed 1008. Nil
	// makes one from MaxSockets and MaxSessionSockets.
	Limiter *session.Limiter
	// MaxSockets and MaxSessionSockets are the bounds of the Limiter made when Limiter is nil;
	// zero means DefaultMaxSockets and DefaultMaxSessionSockets.
	MaxSockets, MaxSessionSockets int
	// MaxSessionlessSockets bounds, in that Limiter, the sockets without a session while
	// sessions exist (Sessions is set): machines that said hello. Zero means
	// session.DefaultMaxSessionlessSockets; without Sessions it is MaxSockets.
	MaxSessionlessSockets int
	// Hellos bounds the sockets that are not the page and have not said hello yet, overall, per
	// client address and per Origin, in a pool of their own: they never take a place of the page
	// or of a machine that said hello. Nil makes one with session.HelloBounds{} (the defaults).
	Hellos *session.HelloLimiter
	// SessionOf names the session an upgrade request belongs to ("" for none: a machine with
	// a bearer, or a relay without the gate); sockets without a session count only overall.
	SessionOf func(r *http.Request) string
	// Sessions, when set, is the store of the sessions SessionOf names: when a session ends
	// (expires or is revoked) its sockets are sent a refused frame with the reason
	// (session-expired, session-revoked) and closed 1008, and a page whose session ended
	// meanwhile is refused loopback-unauthenticated.
	Sessions *session.Store
	// Log receives connection events; never a secret. Nil discards.
	Log *slog.Logger
}

// Offer is what the page holding the slot offers the model, as its tools frame carries it.
type Offer struct {
	// Tools are its open mini-apps' function declarations, a JSON array; nil when no page
	// holds the slot.
	Tools json.RawMessage
	// ExternalApps is its report of its open external mini-apps (the frame's "externalApps"
	// member, see internal/door/externalapps.Model.SetReport); nil when none is open or no page holds
	// the slot.
	ExternalApps json.RawMessage
}

// OfferListener hears what the page holding the slot offers: the Offer of each tools frame it
// sends, and the zero Offer whenever the slot changes hands or empties. The parts that build
// the model's tool set (internal/core/assistant's Catalogue, internal/door/externalapps' Model) listen.
type OfferListener interface {
	// PageOffered is called one Offer at a time, in order; it must not block.
	PageOffered(Offer)
}

// OfferFunc is a function that is an OfferListener.
type OfferFunc func(Offer)

// PageOffered calls f(o).
func (f OfferFunc) PageOffered(o Offer) { f(o) }

// Slot is this hub's executor slot as a fleet sees it: held or empty, and by what.
type Slot struct {
	// Gen counts the executors attached to this hub: a new Gen is a new executor, the same Gen
	// with another Root is the one executor's root changing.
	Gen  uint64
	Held bool
	Kind channel.Kind
	// Pairing names a machine executor's pairing.
	Pairing string
	Root    Holding
}

// Fleet shares the executor slot with other relays (internal/door/fleet's Router). A hub given one with
// UseFleet routes a call it has no executor for to the relay whose executor holds the fleet's
// slot, reports the fleet's root when it has none of its own, and tells the fleet every change of
// its own slot. The fleet displaces this hub's executor (Displace) when one attached elsewhere
// takes the slot.
type Fleet interface {
	// Ask sends call to the executor another relay holds and returns its one answer, or the
	// refusal naming why there is none (the single relay's rules, fleet-unavailable,
	// outcome-unknown).
	Ask(ctx context.Context, call wire.Call) wire.Answer
	// Holding returns the fleet's root, held elsewhere; ok false when nobody holds it.
	Holding() (r Holding, ok bool)
	// SlotChanged hears every change of this hub's slot, in order; it must not block.
	SlotChanged(Slot)
}

// HoldingListener hears who holds the root (Holding) each time that changes: an executor takes the
// slot or leaves it, or the page holding it reports another root. The relay passes it on to the
// page's event stream, so the page says where the tools act.
type HoldingListener interface {
	// HoldingChanged is called one change at a time, in order, on the goroutine that made the
	// change; it must not block.
	HoldingChanged(Holding)
}

// HoldingFunc is a function that is a HoldingListener.
type HoldingFunc func(Holding)

// HoldingChanged calls f(r).
func (f HoldingFunc) HoldingChanged(r Holding) { f(r) }

// Holding is the declared root: what kind of executor holds (or last held) it, its name, and whether
// that executor is connected now. Kind is "" until a page reports its root.
type Holding struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Connected bool   `json:"connected"`
}

// Hub holds the executor slot. It is an http.Handler for /channel and safe for concurrent use.
type Hub struct {
	opts Options
	log  *slog.Logger
	seq  atomic.Uint64

	mu    sync.Mutex
	cur   *conn
	last  channel.Kind
	root  Holding
	all   map[*conn]struct{}
	close bool
	// waiting are the pages in standby, oldest first: the last one takes the slot when it empties.
	waiting []*conn

	gen   uint64 // executors attached so far (Slot.Gen)
	fleet Fleet  // nil for a relay alone

	toolsMu   sync.Mutex // orders the offers heard by listeners
	listeners []OfferListener
	slotMu    sync.Mutex // orders the slots the fleet hears

	rootMu        sync.Mutex // orders what the root listeners hear
	rootListeners []HoldingListener
	// admMu orders the admitted frames: a connection gets the current one before it takes the
	// slot, and SetAdmitted sends to whoever holds it, so no executor misses a change.
	admMu    sync.Mutex
	admitted []byte // the admitted control frame; nil until SetAdmitted
}

// SetAdmitted makes frame (a channel.MarshalAdmitted frame) the admitted set every executor gets
// when it connects, before any call, and sends it now to the executor that holds the root.
func (h *Hub) SetAdmitted(frame []byte) {
	h.admMu.Lock()
	defer h.admMu.Unlock()
	h.mu.Lock()
	h.admitted = frame
	c := h.cur
	h.mu.Unlock()
	if c != nil {
		if err := c.Send(frame); err != nil {
			h.log.Info("channel: the admitted set could not be sent", "kind", c.kind, "err", err)
		}
	}
}

// join puts c in the slot, sending it the admitted set first (and a page {"type":"holding"}, why
// saying how it came to hold it when that is news); or, for a page that did not ask to take the
// slot (take false) while another executor holds it, makes it wait among the standby pages. It
// reports false when the hub is closing or c is already gone.
func (h *Hub) join(c *conn, take bool, why string) bool {
	h.admMu.Lock()
	defer h.admMu.Unlock()
	h.mu.Lock()
	if h.close || c.gone.Load() {
		h.mu.Unlock()
		return false
	}
	if h.cur == c {
		h.mu.Unlock()
		return true
	}
	if c.kind == channel.Page && !take && h.cur != nil {
		h.addWaiting(c)
		wait := standbyWhy(h.cur)
		h.mu.Unlock()
		h.log.Info("channel: page waits while another executor holds the root", "holder", wait)
		c.control(controlFrame{Type: "standby", Why: wait})
		return true
	}
	frame := h.admitted
	h.removeWaiting(c)
	h.mu.Unlock()
	if frame != nil {
		if err := c.Send(frame); err != nil {
			return false
		}
	}
	if c.kind == channel.Page {
		c.control(controlFrame{Type: "holding", Why: why})
	}
	return h.attach(c)
}

// standbyWhy says to a waiting page who holds the slot (h.mu held) and how it gets it.
func standbyWhy(holder *conn) string {
	who := "another tab holds the workspace"
	if holder.kind == channel.Machine {
		who = "the machine “" + holder.pairing + "” holds the workspace"
	}
	return who + ": this tab takes it over by itself when that one goes away, or now when you press “Use this tab”"
}

// addWaiting makes c the newest standby page (h.mu held).
func (h *Hub) addWaiting(c *conn) {
	h.removeWaiting(c)
	h.waiting = append(h.waiting, c)
}

// removeWaiting takes c out of the standby pages, if it is one (h.mu held).
func (h *Hub) removeWaiting(c *conn) {
	for i, w := range h.waiting {
		if w == c {
			h.waiting = append(h.waiting[:i], h.waiting[i+1:]...)
			return
		}
	}
}

// promote gives the empty slot to the newest standby page still connected, if any: the holder
// went away (why says how), so the next open tab serves the calls without anyone asking.
func (h *Hub) promote(why string) {
	h.mu.Lock()
	var next *conn
	for i := len(h.waiting) - 1; i >= 0 && h.cur == nil; i-- {
		if !h.waiting[i].gone.Load() {
			next = h.waiting[i]
			break
		}
	}
	h.mu.Unlock()
	if next == nil {
		return
	}
	h.log.Info("channel: a waiting page takes the empty slot", "why", why)
	h.join(next, false, why)
}

// New returns a Hub with an empty slot; until an executor connects, calls are refused no-page.
func New(opts Options) *Hub {
	if opts.HelloBound <= 0 {
		opts.HelloBound = DefaultHelloBound
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	if opts.Limiter == nil {
		b := session.Bounds{Max: opts.MaxSockets, PerSession: opts.MaxSessionSockets}
		if opts.Sessions != nil {
			b.Sessionless = cmp.Or(opts.MaxSessionlessSockets, session.DefaultMaxSessionlessSockets)
		}
		opts.Limiter = session.NewLimiterWith(b)
	}
	if opts.Hellos == nil {
		opts.Hellos = session.NewHelloLimiter(session.HelloBounds{})
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{opts: opts, log: log, last: channel.Page, all: map[*conn]struct{}{}}
}

// AddHoldingListener makes l hear every change of who holds the root from now on.
func (h *Hub) AddHoldingListener(l HoldingListener) {
	h.rootMu.Lock()
	defer h.rootMu.Unlock()
	h.rootListeners = append(h.rootListeners, l)
}

// rootChanged tells the root listeners who holds the root now.
func (h *Hub) rootChanged() {
	h.rootMu.Lock()
	defer h.rootMu.Unlock()
	if len(h.rootListeners) == 0 {
		return
	}
	r := h.Holding()
	for _, l := range h.rootListeners {
		l.HoldingChanged(r)
	}
}

// AddOfferListener makes l hear every Offer from now on.
func (h *Hub) AddOfferListener(l OfferListener) {
	h.toolsMu.Lock()
	defer h.toolsMu.Unlock()
	h.listeners = append(h.listeners, l)
}

// Holding returns who holds the declared root: this hub's, or in a fleet the one another relay's executor
// holds when this hub has none.
func (h *Hub) Holding() Holding {
	h.mu.Lock()
	r := h.root
	r.Connected = h.cur != nil
	f := h.fleet
	h.mu.Unlock()
	if !r.Connected && f != nil {
		if fr, ok := f.Holding(); ok {
			return fr
		}
	}
	return r
}

// UseFleet makes h share its slot with a fleet of relays from now on; call it before serving.
func (h *Hub) UseFleet(f Fleet) {
	h.mu.Lock()
	h.fleet = f
	h.mu.Unlock()
	h.slotChanged()
}

// slotChanged tells the fleet what the slot is now.
func (h *Hub) slotChanged() {
	h.slotMu.Lock()
	defer h.slotMu.Unlock()
	h.mu.Lock()
	f := h.fleet
	s := Slot{Gen: h.gen, Held: h.cur != nil}
	if h.cur != nil {
		s.Kind, s.Pairing, s.Root = h.cur.kind, h.cur.pairing, h.root
		s.Root.Connected = true
	}
	h.mu.Unlock()
	if f != nil {
		f.SlotChanged(s)
	}
}

// Displace closes this hub's executor as a newer one elsewhere does (the "replaced" frame and
// CloseReplaced), settling its calls with its closed rule; for a fleet whose slot another relay's
// executor took. It reports whether there was one.
func (h *Hub) Displace(why string) bool {
	h.mu.Lock()
	c := h.cur
	h.cur = nil
	h.mu.Unlock()
	if c == nil {
		return false
	}
	h.log.Info("channel: executor replaced by one on another relay", "kind", c.kind.String())
	h.pageTools(nil, nil, nil)
	h.slotChanged()
	h.rootChanged()
	c.settle()
	go func() {
		c.control(controlFrame{Type: "replaced", Why: why})
		c.ws.Close(CloseReplaced, "replaced")
	}()
	return true
}

// NewCallID returns a callId no other call of this relay has used.
func (h *Hub) NewCallID() string { return "relay-" + strconv.FormatUint(h.seq.Add(1), 10) }

// Ask sends call to the executor that holds the root and returns its one answer: the executor's,
// or a refusal naming why there is none (no-page or machine-unreachable at once when the slot is
// empty, after the last executor's kind; the timeout and closed rules of channel.Broker).
//
// In a fleet (UseFleet), a call this hub has no executor for goes to the fleet's.
func (h *Hub) Ask(ctx context.Context, call wire.Call) wire.Answer {
	h.mu.Lock()
	c, f := h.cur, h.fleet
	h.mu.Unlock()
	if c == nil && f != nil {
		return f.Ask(ctx, call)
	}
	return h.AskLocal(ctx, call)
}

// AskLocal is Ask with this hub's own executor only: a fleet serves the calls routed to this
// relay with it.
func (h *Hub) AskLocal(ctx context.Context, call wire.Call) wire.Answer {
	h.mu.Lock()
	c, last := h.cur, h.last
	h.mu.Unlock()
	if c == nil {
		why := "no page holds the workspace root: open the Voicebox page and pick a folder"
		if last == channel.Machine {
			why = "the paired machine environment that holds the root is not connected"
		}
		return wire.Refuse(call.CallID, refusal.New(last.Unreachable(), "%s", why))
	}
	return c.broker.Ask(ctx, call)
}

// Disconnect closes the connection of the machine paired as name, if it is connected, with a
// bearer-refused frame and 1008. It reports whether there was one.
func (h *Hub) Disconnect(name string) bool {
	h.mu.Lock()
	c := h.cur
	if c == nil || c.kind != channel.Machine || c.pairing != name {
		h.mu.Unlock()
		return false
	}
	h.cur = nil
	h.mu.Unlock()
	h.log.Info("channel: revoked machine disconnected", "pairing", name)
	h.slotChanged()
	c.settle()
	go c.refuse(refusal.New(refusal.BearerRefused, "the pairing of this environment was revoked"))
	go h.promote("the machine “" + name + "” that held the workspace was revoked")
	return true
}

// Close closes every connection (1001, going away) and refuses new ones; for shutdown.
func (h *Hub) Close() {
	h.mu.Lock()
	h.close = true
	h.cur = nil
	conns := make([]*conn, 0, len(h.all))
	for c := range h.all {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	h.slotChanged()
	var wg sync.WaitGroup
	for _, c := range conns {
		c.settle()
		wg.Go(func() { c.ws.Close(websocket.StatusGoingAway, "relay shutting down") })
	}
	wg.Wait()
}

// conn is one accepted /channel socket.
type conn struct {
	hub     *Hub
	ws      *websocket.Conn
	out     *wsbound.Conn // ws's writes, each bounded by writeTimeout (internal/core/outbound's walls)
	slow    sync.Once     // logs slow-reader once
	kind    channel.Kind
	pairing string
	// frames is the message type of the calls and admitted sets written to it: binary when its
	// upgrade asked for that (FramesQuery), text otherwise.
	frames websocket.MessageType
	broker *channel.Broker
	gone   atomic.Bool
	// root, tools and external are what the page last reported (hub.mu guards them), kept while
	// it waits so it serves them the moment it takes the slot.
	root            Holding
	tools, external json.RawMessage
	done            chan struct{} // closed when the read loop ends
	ready           chan struct{} // closed once ws is set (or the upgrade failed, ws nil)
}

// Connected implements channel.Peer.
func (c *conn) Connected() bool { return !c.gone.Load() }

// Send implements channel.Peer. A peer that takes no bytes for writeTimeout is closed
// slow-reader; the calls waiting on it settle with its kind's closed rule.
func (c *conn) Send(frame []byte) error {
	err := c.out.Write(c.frames, frame)
	if err != nil && c.out.SlowReader() {
		c.slow.Do(func() {
			why := outbound.SlowReader("the executor took no bytes for " + writeTimeout.String())
			c.hub.log.Warn("channel: a socket was closed", "rule", why.Rule, "kind", c.kind, "why", why.Why)
		})
	}
	return err
}

// settle marks the connection gone and settles its waiting calls with its closed rule.
func (c *conn) settle() {
	if c.gone.Swap(true) {
		return
	}
	if c.broker != nil {
		c.broker.Abandon()
	}
}

// refuse writes a refused control frame and closes with 1008, within closeBound.
func (c *conn) refuse(r *refusal.Refusal) {
	c.control(controlFrame{Type: "refused", Refused: r.Rule, Why: r.Why})
	closed := make(chan struct{})
	go func() {
		c.ws.Close(websocket.StatusPolicyViolation, string(r.Rule))
		close(closed)
	}()
	t := time.NewTimer(closeBound)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		c.ws.CloseNow() // the peer stopped in the middle of a frame: end it without its word
	}
}

func (c *conn) control(f controlFrame) {
	b, _ := json.Marshal(f)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.ws.Write(ctx, websocket.MessageText, b)
}

// controlFrame is every control frame the relay writes.
type controlFrame struct {
	Type    string       `json:"type"`
	Refused refusal.Rule `json:"refused,omitempty"`
	Why     string       `json:"why,omitempty"`
}

// ServeHTTP accepts a /channel WebSocket and serves it until it closes.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := h.pageOrigin(r)
	sid := ""
	if h.opts.SessionOf != nil && page {
		sid = h.opts.SessionOf(r)
	}
	log := h.log.With("request_id", server.RequestID(r.Context()))
	if sid != "" {
		log = log.With("session", sid)
	}
	c := &conn{hub: h, frames: websocket.MessageText, done: make(chan struct{}), ready: make(chan struct{})}
	if r.URL.Query().Get(FramesQuery) == FramesBinary {
		c.frames = websocket.MessageBinary
	}
	defer close(c.done)
	var releases []func() // run in reverse when the socket ends
	defer func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}()
	// The socket counts from its upgrade request, so a peer that sees the upgrade succeed has
	// its place; the refusal, if any, is written once the socket is open. The page takes a place
	// of the Limiter at once; anyone else waits for its hello in the hello pool, and takes a
	// place of the Limiter only once its bearer is known.
	var release, releaseHello func()
	var rf *refusal.Refusal
	holder := false
	if page {
		release, rf = session.Sockets{Limiter: h.opts.Limiter, Store: h.opts.Sessions}.Admit(sid, func(why *refusal.Refusal) {
			log.Info("channel: session ended; closing its socket", "refused", why.Rule)
			h.detach(c)
			go func() { // the close handshake waits for the peer; the session's end does not
				<-c.ready
				if c.ws != nil {
					c.refuse(why)
				}
			}()
		})
	} else if holder = h.bearerHolder(r); holder {
		release, rf = h.opts.Limiter.Acquire("")
	} else {
		releaseHello, rf = h.opts.Hellos.Acquire(server.ClientAddr(r), r.Header.Get("Origin"))
		release = releaseHello
	}
	if release != nil {
		releases = append(releases, release)
	}
	server.SetSendBuffer(r, outbound.SendBuffer) // a peer that stops reading is found within it
	// Accept's own origin check would turn a foreign page away with a bare 403 before it could
	// be told why; every origin is let through to the checks below, which are stricter.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		close(c.ready)
		log.Info("channel: upgrade failed", "err", err)
		return
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	c.ws, c.out = ws, wsbound.New(ws, writeTimeout)
	close(c.ready)
	if rf != nil {
		log.Info("channel: socket refused", "refused", rf.Rule)
		c.refuse(rf)
		return
	}
	h.mu.Lock()
	if h.close {
		h.mu.Unlock()
		c.refuse(refusal.New(refusal.RelayShuttingDown, "the relay is shutting down; connect again once it is back"))
		return
	}
	h.all[c] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.all, c)
		h.mu.Unlock()
	}()

	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	if page {
		if h.opts.PageSessionUnavailable != nil {
			if err := h.opts.PageSessionUnavailable(r); err != nil {
				log.Info("channel: the page's session cannot be checked now; closed to try again", "err", err)
				ws.Close(CloseTryAgain, string(session.Unavailable(err).Rule))
				return
			}
		}
		if h.opts.PageSession != nil && !h.opts.PageSession(r) {
			if c.gone.Load() {
				return // the session ended while the socket opened: its hook says so
			}
			log.Info("channel: page without a session refused")
			c.refuse(refusal.New(refusal.LoopbackUnauthenticated, "this relay requires a session: open the bootstrap address it printed at start"))
			return
		}
		c.kind = channel.Page
	} else {
		bound := h.opts.HelloBound
		if r.Header.Get("Origin") != "" && bound > ForeignHelloBound {
			bound = ForeignHelloBound
		}
		name, rf := h.hello(ctx, ws, bound)
		if !holder {
			// It is no longer waiting: its place in the pool is free before it is told anything,
			// so a peer that reads its refusal finds the place given back.
			releaseHello()
		}
		if rf == nil && !holder { // a bearer holder took its place before the upgrade
			var unlimit func()
			if unlimit, rf = h.opts.Limiter.Acquire(""); rf == nil {
				releases = append(releases, unlimit)
			}
		}
		if rf != nil && rf.Rule == refusal.FleetUnavailable {
			// The pairings cannot be read now: not a refusal of this machine, which is told to
			// try again (it reconnects by itself) instead of to stop for good.
			log.Info("channel: a machine's hello cannot be checked now; closed to try again", "origin", r.Header.Get("Origin"))
			ws.Close(CloseTryAgain, string(rf.Rule))
			return
		}
		if rf != nil {
			log.Info("channel: connection refused", "refused", rf.Rule, "origin", r.Header.Get("Origin"))
			c.refuse(rf)
			return
		}
		c.kind, c.pairing = channel.Machine, name
	}
	c.broker = channel.New(c.kind, c, channel.Options{Timeout: h.opts.callTimeout, Log: h.log})
	if !h.join(c, false, "") {
		if c.gone.Load() {
			return // the session ended first: its hook is writing the refusal that says so
		}
		ws.Close(websocket.StatusGoingAway, "relay shutting down or connection gone")
		return
	}
	log.Info("channel: executor joined (holding the slot, or waiting for it)", "kind", c.kind.String(), "pairing", c.pairing)
	if c.kind == channel.Machine {
		go h.watchPairing(ctx, c)
	}
	err = c.readLoop(ctx)
	h.detach(c)
	log.Info("channel: executor gone", "kind", c.kind.String(), "status", websocket.CloseStatus(err).String())
	ws.CloseNow()
}

// bearerHolder reports whether r's upgrade carries a paired bearer (Authorization: Bearer
// vbx_..., as `relay env` sends besides its hello). Such a socket takes a place of the Limiter
// at once, never one in the hello pool that anyone can fill; it must still say hello.
func (h *Hub) bearerHolder(r *http.Request) bool {
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || bearer == "" || len(bearer) > MaxControlBytes || h.opts.Pairings == nil {
		return false
	}
	_, paired, err := h.opts.Pairings.Lookup(bearer)
	return err == nil && paired
}

// hello reads the first frame of a connection that is not the page, racing it against bound
// (a Read whose context expires would close the socket before the refusal is written). It reads
// at most MaxControlBytes and one more of it: a larger first frame is refused like any bad hello,
// with a refused frame and 1008, instead of closing 1009 at the frame bound with no rule.
func (h *Hub) hello(ctx context.Context, ws *websocket.Conn, bound time.Duration) (name string, r *refusal.Refusal) {
	type result struct {
		b   []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		_, rd, err := ws.Reader(ctx)
		if err != nil {
			got <- result{nil, err}
			return
		}
		b, err := io.ReadAll(io.LimitReader(rd, MaxControlBytes+1))
		got <- result{b, err}
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	var res result
	select {
	case res = <-got:
	case <-timer.C:
		return "", refusal.New(refusal.ExecutorUnauthenticated, "no hello within %v: an environment must first send {\"type\":\"hello\",\"role\":\"environment\",\"bearer\":...}", bound)
	}
	if res.err != nil {
		return "", refusal.New(refusal.ExecutorUnauthenticated, "the connection ended or broke before its hello")
	}
	if len(res.b) > MaxControlBytes {
		return "", refusal.New(refusal.ExecutorUnauthenticated, "the first frame is over the hello's bound of %d bytes: it must be {\"type\":\"hello\",\"role\":\"environment\",\"bearer\":\"vbx_...\"} and nothing else", MaxControlBytes)
	}
	bearer, ok := parseHello(res.b)
	if !ok {
		return "", refusal.New(refusal.ExecutorUnauthenticated, "the first frame must be {\"type\":\"hello\",\"role\":\"environment\",\"bearer\":\"vbx_...\"} and nothing else")
	}
	if h.opts.Pairings == nil {
		return "", refusal.New(refusal.BearerRefused, "this relay pairs no environments")
	}
	name, ok, err := h.opts.Pairings.Lookup(bearer)
	if err != nil {
		h.log.Error("channel: reading the pairings failed", "err", err)
		if rf, ok := refusal.As(err); ok {
			return "", rf // a fleet's pairings out of reach: fleet-unavailable
		}
		return "", refusal.New(refusal.BearerRefused, "the relay could not read its pairings; its log says why")
	}
	if !ok {
		return "", refusal.New(refusal.BearerRefused, "this bearer is not paired with this relay (never, or revoked): pair again with `relay pair NAME`")
	}
	return name, nil
}

// parseHello accepts exactly {"type":"hello","role":"environment","bearer":string}.
func parseHello(b []byte) (bearer string, ok bool) {
	if len(b) > MaxControlBytes {
		return "", false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || len(m) != 3 {
		return "", false
	}
	var typ, role string
	if json.Unmarshal(m["type"], &typ) != nil || json.Unmarshal(m["role"], &role) != nil || json.Unmarshal(m["bearer"], &bearer) != nil {
		return "", false
	}
	return bearer, typ == "hello" && role == "environment" && bearer != ""
}

// attach puts c in the slot and displaces whoever held it (a page among the waiting ones, a
// machine closed); false when the hub is closing or c is already gone. Only join calls it, with
// admMu held.
func (h *Hub) attach(c *conn) bool {
	h.mu.Lock()
	if h.close || c.gone.Load() { // shutting down, or c's session ended while it was admitted
		h.mu.Unlock()
		return false
	}
	old := h.cur
	h.cur, h.last = c, c.kind
	h.gen++
	if c.kind == channel.Machine {
		h.root = Holding{Kind: RootMachine, Name: c.pairing}
	} else {
		h.root = c.root // the root it reported while it waited, if any
	}
	tools, external := c.tools, c.external
	if old != nil && old.kind == channel.Page {
		h.addWaiting(old)
	}
	h.mu.Unlock()
	h.slotChanged()
	h.pageTools(nil, nil, nil)
	if tools != nil {
		h.pageTools(c, tools, external)
	}
	h.rootChanged()
	if old == nil {
		return true
	}
	h.log.Info("channel: executor replaced", "kind", old.kind.String(), "by", c.kind.String())
	if old.kind == channel.Page {
		// The page keeps its socket and waits, to take the slot back when this one goes away.
		old.broker.Abandon()
		who := "another tab"
		if c.kind == channel.Machine {
			who = "the machine “" + c.pairing + "”"
		}
		// Sent before join lets go of admMu, so a "holding" that gives the slot back (a promotion
		// when this holder goes away at once) always comes after it.
		old.control(controlFrame{Type: "standby", Why: who + " took over the workspace: this tab takes it back by itself when that one goes away, or now when you press “Use this tab”"})
		return true
	}
	old.settle()
	go func() {
		old.control(controlFrame{Type: "replaced", Why: "a newer " + c.kind.String() + " connection holds the workspace root now"})
		old.ws.Close(CloseReplaced, "replaced")
	}()
	return true
}

// detach empties the slot if c still holds it, and settles c's calls; the newest standby page
// then takes the slot.
func (h *Hub) detach(c *conn) {
	h.mu.Lock()
	held := h.cur == c
	if held {
		h.cur = nil
	}
	h.removeWaiting(c)
	h.mu.Unlock()
	c.settle()
	if held {
		h.slotChanged()
		h.pageTools(nil, nil, nil)
		h.rootChanged()
		what := "the tab"
		if c.kind == channel.Machine {
			what = "the machine “" + c.pairing + "”"
		}
		go h.promote(what + " that held the workspace went away")
	}
}

// toolsPrefix starts the page's tools frame, which may be larger than other control frames.
var toolsPrefix = []byte(`{"type":"tools",`)

// pageTools tells the listeners what the page offers: from c when it still holds the slot, or
// the zero Offer (c nil) when the slot changed.
func (h *Hub) pageTools(c *conn, tools, external json.RawMessage) {
	h.toolsMu.Lock()
	defer h.toolsMu.Unlock()
	if len(h.listeners) == 0 {
		return
	}
	if c != nil {
		h.mu.Lock()
		current := h.cur == c
		h.mu.Unlock()
		if !current || c.kind != channel.Page {
			return
		}
	}
	for _, l := range h.listeners {
		l.PageOffered(Offer{Tools: tools, ExternalApps: external})
	}
}

// toolsFrom reads the page's {"type":"tools","tools":[...]} frame.
func (h *Hub) toolsFrom(c *conn, b []byte) {
	var f struct {
		Type         string          `json:"type"`
		Tools        json.RawMessage `json:"tools"`
		ExternalApps json.RawMessage `json:"externalApps"`
	}
	if json.Unmarshal(b, &f) != nil || len(f.Tools) == 0 || f.Tools[0] != '[' {
		h.log.Info("channel: a malformed tools frame was ignored", "kind", c.kind)
		return
	}
	h.mu.Lock()
	c.tools, c.external = f.Tools, f.ExternalApps
	h.mu.Unlock()
	h.pageTools(c, f.Tools, f.ExternalApps)
}

// readLoop hands answers to the broker and control frames to the hub until the socket ends.
func (c *conn) readLoop(ctx context.Context) error {
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(b, toolsPrefix) {
			c.hub.toolsFrom(c, b)
			continue
		}
		if len(b) <= MaxControlBytes && bytes.Contains(b, []byte(`"type"`)) {
			var peek struct {
				V    json.RawMessage `json:"v"`
				Type *string         `json:"type"`
				Kind string          `json:"kind"`
				Name string          `json:"name"`
			}
			if json.Unmarshal(b, &peek) == nil && peek.V == nil && peek.Type != nil {
				c.hub.controlFrom(c, *peek.Type, peek.Kind, peek.Name)
				continue
			}
		}
		c.broker.Answer(b) // a frame that settles nothing is counted and logged by the broker
	}
}

// controlFrom takes a control frame from an executor: a page's root, or its asking to take the
// slot ("take", its person's "Use this tab").
func (h *Hub) controlFrom(c *conn, typ, kind, name string) {
	if typ == "take" && c.kind == channel.Page {
		h.log.Info("channel: a page asks to take the slot")
		h.join(c, true, "")
		return
	}
	if typ != "root" || c.kind != channel.Page || (kind != RootOPFS && kind != RootHandle) || len(name) > MaxRootNameBytes {
		h.log.Info("channel: control frame ignored", "type", typ, "kind", c.kind.String())
		return
	}
	h.mu.Lock()
	c.root = Holding{Kind: kind, Name: name}
	changed := h.cur == c && h.root != Holding{Kind: kind, Name: name}
	if h.cur == c {
		h.root = Holding{Kind: kind, Name: name}
	}
	h.mu.Unlock()
	if changed {
		h.slotChanged()
		h.rootChanged()
	}
}

// watchPairing closes c once its pairing is revoked, whoever revoked it.
func (h *Hub) watchPairing(ctx context.Context, c *conn) {
	t := time.NewTicker(h.opts.Recheck)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.gone.Load() {
			return
		}
		ok, err := h.opts.Pairings.Paired(c.pairing)
		if err == nil && !ok {
			h.Disconnect(c.pairing)
			return
		}
	}
}

func (h *Hub) pageOrigin(r *http.Request) bool {
	if h.opts.PageOrigin != nil {
		return h.opts.PageOrigin(r)
	}
	return server.OwnLoopbackOrigin(r)
}
