package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The executor lease: one key in one bucket, so the fleet has one slot as a relay alone has.
const (
	executorBucket = "executor"
	leaseKey       = "slot"
	// offerKey holds what the holder's page offers the model (its mini-apps' tools, its
	// external apps), so every relay's catalogue offers the same tools.
	offerKey = "offer"
)

// offer is the value of offerKey: a hub.Offer under the lease it was made under.
type offer struct {
	Lease        string          `json:"lease"`
	Tools        json.RawMessage `json:"tools,omitempty"`
	ExternalApps json.RawMessage `json:"externalApps,omitempty"`
}

// heartbeatsPerTTL is how many heartbeats the holder sends within one lease TTL, so a few lost
// ones do not end a lease whose relay is alive.
const heartbeatsPerTTL = 4

// LeaseGoneGrace is how long a call routed under a lease that was replaced or released still
// waits for its answer: the executor's relay answers a call its executor dropped (page-closed)
// just as it releases the lease, and that answer wins if it comes within this bound. Past it
// the call is refused outcome-unknown.
const LeaseGoneGrace = time.Second

// deadlineHeader carries a routed call's remaining time, in milliseconds, to the executor's relay.
const deadlineHeader = "Voicebox-Deadline-Ms"

// MaxRoutedCalls bounds the calls routed from other relays that the holder's executor has in
// flight at once, and MaxRoutedBytes their frames together; one more is answered at once with
// too-many-calls (nothing ran), which the caller's relay gives its caller as the call's one
// answer. A relay alone has no bound of its own on calls in flight to its page; its callers are
// bounded where they come in (server.MaxConnsPerClient, 256 connections of one address without a
// credential; mcp.MaxCallsPerClient), so the fleet takes the first: a holder serves as many
// routed calls at once as one client may hold requests open on a relay. Whoever holds the fleet's
// NATS credentials can publish on the lease's subject, so a flood of calls costs the holder at
// most these (and a slow page makes the fleet's callers wait no longer than a relay alone would).
const (
	MaxRoutedCalls = 256
	MaxRoutedBytes = 8 << 20
)

// What the holder keeps of the lease subject's messages not yet looked at: each is only counted
// against MaxRoutedCalls when its turn comes, so the queue stays short; past it NATS's client
// drops what arrives (said once per sayEvery), and the call's relay answers its caller the kind's
// timeout rule at the call's deadline (it may or may not have run, as far as the caller can
// tell). The byte bound holds four of the largest frames.
const (
	execPendingMsgs  = 1024
	execPendingBytes = 4 * (wire.MaxFrameBytes + 4<<10)
)

// lease is the value of the executor lease.
type lease struct {
	ID       string `json:"id"`    // drawn per attachment: the request subject's last token
	Relay    string `json:"relay"` // the relay the executor is attached to
	Kind     string `json:"kind"`  // "page" or "machine"
	Pairing  string `json:"pairing,omitempty"`
	RootKind string `json:"rootKind,omitempty"`
	RootName string `json:"rootName,omitempty"`
	// Beat is the holder's heartbeat count; every renewal is a new revision that every relay's
	// watch hears, which is what keeps the lease alive in their eyes (their own clocks, so no
	// two relays' clocks need agree).
	Beat uint64 `json:"beat"`
}

func (l *lease) kind() channel.Kind {
	if l.Kind == "machine" {
		return channel.Machine
	}
	return channel.Page
}

// Local is this relay's own executor slot (internal/core/hub's *Hub): the router serves routed calls
// with it and displaces its executor when one elsewhere takes the slot.
type Local interface {
	AskLocal(ctx context.Context, call wire.Call) wire.Answer
	Displace(why string) bool
}

// Router is a relay's part in the fleet's one executor slot (a hub.Fleet). When this relay's hub
// attaches an executor, the router takes the lease (the newest executor wins, as on one relay:
// the relay that held it displaces its own, with the "replaced" frame the page shows as "another
// tab took over"), renews it by heartbeat, and answers calls on the lease's subject with the
// hub's executor. When another relay holds the lease, a call made here is sent to it by
// request/reply, and gets exactly one answer: the executor's; the single relay's refusals when
// nobody holds the slot (no-page, machine-unreachable) or nobody answers the subject; its
// timeout rule when the deadline passes; outcome-unknown when the holder's relay stops renewing
// its lease (it died) or loses it mid-call and the answer does not follow within
// LeaseGoneGrace; fleet-unavailable when NATS cannot be reached; too-many-calls, at once, when
// the holder has MaxRoutedCalls (or MaxRoutedBytes) of routed calls in flight.
//
// Leases expire after Config.LeaseTTL without a heartbeat, measured on each relay's own clock
// from the last renewal it heard; a call is given up as outcome-unknown only after a TTL of
// silence counted from its own start at the earliest.
type Router struct {
	f     *Fleet
	local Local
	ttl   time.Duration
	seq   atomic.Uint64 // the routed calls' ids

	mu       sync.Mutex
	cur      *lease        // the fleet's lease as last heard; nil when none
	curRev   uint64        // its revision: older entries, heard late, are ignored
	heard    time.Time     // when cur was last renewed, on this relay's clock
	changed  chan struct{} // closed and replaced whenever cur changes hands or is renewed
	lastKind channel.Kind

	// The newest slot the hub reported, not yet applied (its own lock: the hub never waits for
	// NATS).
	pendMu sync.Mutex
	want   *hub.Slot
	wake   chan struct{}

	// This relay's own lease, kept by the worker and the heartbeat.
	mineMu  sync.Mutex
	mine    *lease
	mineGen uint64
	mineRev uint64
	sub     *nats.Subscription

	// The routed calls in flight on this relay's executor, and their frames' bytes
	// (MaxRoutedCalls, MaxRoutedBytes).
	routedMu    sync.Mutex
	routedCalls int
	routedBytes int

	// What the holder's page offers, as heard (remote) and as this relay's page offers it (out,
	// written by the offer worker).
	offMu     sync.Mutex
	tellMu    sync.Mutex // orders what the listeners hear
	listeners []hub.OfferListener
	heardOff  *offer
	outOff    *hub.Offer
	outWake   chan struct{}

	stop     chan struct{}
	done     sync.WaitGroup
	unwatch  func()
	closeOne sync.Once
}

var _ hub.Fleet = (*Router)(nil)

// NewRouter starts the router of this relay, serving routed calls with local. Close it before
// the fleet.
func (f *Fleet) NewRouter(local Local) *Router {
	r := &Router{f: f, local: local, ttl: f.cfg.LeaseTTL, changed: make(chan struct{}), wake: make(chan struct{}, 1),
		outWake: make(chan struct{}, 1), stop: make(chan struct{})}
	r.unwatch, _ = f.watch(executorBucket, []string{leaseKey, offerKey}, r.heardEntry, false, false)
	r.done.Add(3)
	go r.work()
	go r.heartbeat()
	go r.publishOffers()
	return r
}

// AddOfferListener makes l hear what the page holding the fleet's slot on another relay
// offers, and the zero Offer when the slot moves; this relay's own page is heard by the hub's
// listeners.
func (r *Router) AddOfferListener(l hub.OfferListener) {
	r.offMu.Lock()
	defer r.offMu.Unlock()
	r.listeners = append(r.listeners, l)
}

// PageOffered implements hub.OfferListener: what this relay's page offers is written for the
// other relays (by a worker, so the hub never waits on NATS).
func (r *Router) PageOffered(o hub.Offer) {
	r.offMu.Lock()
	r.outOff = &o
	r.offMu.Unlock()
	select {
	case r.outWake <- struct{}{}:
	default:
	}
}

// publishOffers writes the newest offer of this relay's page while it holds the lease.
func (r *Router) publishOffers() {
	defer r.done.Done()
	for {
		select {
		case <-r.stop:
			return
		case <-r.outWake:
		}
		r.offMu.Lock()
		o := r.outOff // kept: a lease taken later publishes it again
		r.offMu.Unlock()
		if o == nil {
			continue
		}
		r.mineMu.Lock()
		mine := r.mine
		r.mineMu.Unlock()
		if mine == nil {
			continue
		}
		if ctx, cancel, kv, err := r.f.op(executorBucket); err == nil {
			// Encoded without escaping <, > and & (json.Marshal writes each as six bytes): the
			// page's declarations are bounded as it sent them (wire.MaxFrameBytes), and the
			// bucket's value bound must meet them at that size, not six times it.
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			enc.Encode(offer{Lease: mine.ID, Tools: o.Tools, ExternalApps: o.ExternalApps})
			kv.Put(ctx, offerKey, b.Bytes())
			cancel()
		}
	}
}

// heardEntry takes a watched entry of the executor bucket.
func (r *Router) heardEntry(e jetstream.KeyValueEntry) {
	if e == nil { // a new watch: its revisions are the ones to compare from now on
		r.mu.Lock()
		r.curRev = 0
		r.mu.Unlock()
		return
	}
	switch e.Key() {
	case leaseKey:
		r.heardLease(e)
	case offerKey:
		var o *offer
		if e.Operation() == jetstream.KeyValuePut {
			o = &offer{}
			if json.Unmarshal(e.Value(), o) != nil {
				o = nil
			}
		}
		r.offMu.Lock()
		r.heardOff = o
		r.offMu.Unlock()
		r.tellOffer()
	}
}

// tellOffer tells the listeners what the holder on another relay offers now: its offer when
// it was made under the live lease, else nothing.
func (r *Router) tellOffer() {
	r.tellMu.Lock() // one offer at a time, in order; not under offMu, which PageOffered takes
	defer r.tellMu.Unlock()
	r.mu.Lock()
	l := r.cur
	r.mu.Unlock()
	if l != nil && l.Relay == r.f.ID() {
		return // this relay's page: the hub's listeners heard it
	}
	r.offMu.Lock()
	var o hub.Offer
	if l != nil && r.heardOff != nil && r.heardOff.Lease == l.ID {
		o = hub.Offer{Tools: r.heardOff.Tools, ExternalApps: r.heardOff.ExternalApps}
	}
	listeners := r.listeners
	r.offMu.Unlock()
	for _, ln := range listeners {
		ln.PageOffered(o)
	}
}

// Close stops renewing and releases this relay's lease, and stops watching.
func (r *Router) Close() {
	r.closeOne.Do(func() {
		close(r.stop)
		r.done.Wait()
		r.release()
		r.unwatch()
	})
}

// heardLease takes a watched entry of the lease.
func (r *Router) heardLease(e jetstream.KeyValueEntry) {
	var l *lease
	if e.Operation() == jetstream.KeyValuePut {
		l = &lease{}
		if json.Unmarshal(e.Value(), l) != nil {
			l = nil
		}
	}
	if !r.see(l, e.Revision()) {
		return
	}
	if l != nil && l.Relay != r.f.ID() {
		r.mineMu.Lock()
		mine, rev := r.mine, r.mineRev
		r.mineMu.Unlock()
		if mine != nil && e.Revision() > rev {
			// Another relay's executor took the slot: ours steps down, as on one relay.
			r.local.Displace("a newer " + l.kind().String() + " connection, on another relay, holds the workspace root now")
		}
	}
}

// see makes l (nil: none) the fleet's lease as of revision rev, unless a later one was seen; it
// reports whether l was taken. Whoever holds the lease now hears of its offer.
func (r *Router) see(l *lease, rev uint64) bool {
	r.mu.Lock()
	if rev < r.curRev {
		r.mu.Unlock()
		return false
	}
	moved := (r.cur == nil) != (l == nil) || (l != nil && r.cur.ID != l.ID)
	r.cur, r.curRev = l, rev
	r.heard = time.Now()
	if l != nil {
		r.lastKind = l.kind()
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	if moved {
		r.tellOffer()
	}
	return true
}

// live returns the lease if it is alive: heard renewed within the TTL.
func (r *Router) live() (*lease, <-chan struct{}, time.Time) {
	l, changed, expires := r.current()
	if l == nil || time.Now().After(expires) {
		return nil, changed, time.Time{}
	}
	return l, changed, expires
}

// current returns the lease as last heard, alive or not, and when it expires unless renewed.
func (r *Router) current() (*lease, <-chan struct{}, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return nil, r.changed, time.Time{}
	}
	return r.cur, r.changed, r.heard.Add(r.ttl)
}

// Holding implements hub.Fleet.
func (r *Router) Holding() (hub.Holding, bool) {
	l, _, _ := r.live()
	if l == nil {
		return hub.Holding{}, false
	}
	return hub.Holding{Kind: l.RootKind, Name: l.RootName, Connected: true}, true
}

// SlotChanged implements hub.Fleet: the worker applies the newest slot to the lease.
func (r *Router) SlotChanged(s hub.Slot) {
	r.pendMu.Lock()
	r.want = &s
	r.pendMu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	if s.Held {
		r.mu.Lock()
		r.lastKind = s.Kind
		r.mu.Unlock()
	}
}

// work applies the hub's slot to this relay's lease, one change at a time, so the hub never
// waits on NATS.
func (r *Router) work() {
	defer r.done.Done()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.wake:
		case <-retry.C:
		}
		r.pendMu.Lock()
		s := r.want
		r.want = nil
		r.pendMu.Unlock()
		if s == nil {
			continue
		}
		if err := r.apply(*s); err != nil {
			// NATS is away: try again, and take whatever the hub reports meanwhile.
			r.pendMu.Lock()
			if r.want == nil {
				r.want = s
			}
			r.pendMu.Unlock()
			retry.Reset(reconnectWait)
		}
	}
}

// apply makes the lease say what the slot says.
func (r *Router) apply(s hub.Slot) error {
	r.mineMu.Lock()
	defer r.mineMu.Unlock()
	if !s.Held {
		r.releaseLocked()
		return nil
	}
	kind := "page"
	if s.Kind == channel.Machine {
		kind = "machine"
	}
	if r.mine != nil && r.mineGen == s.Gen {
		next := *r.mine
		next.RootKind, next.RootName, next.Beat = s.Root.Kind, s.Root.Name, next.Beat+1
		return r.renewLocked(&next)
	}
	// A new executor here: the new lease is written over whatever is there (the newest executor
	// wins, here as anywhere), so the slot is never seen empty in between; this relay's old
	// subject stops being answered once it is written.
	l := &lease{ID: randomHex(12), Relay: r.f.ID(), Kind: kind, Pairing: s.Pairing, RootKind: s.Root.Kind, RootName: s.Root.Name}
	sub, err := r.f.nc.Subscribe(r.f.subject("exec."+l.ID), r.serve)
	if err == nil {
		if err = sub.SetPendingLimits(execPendingMsgs, execPendingBytes); err != nil {
			sub.Unsubscribe()
		}
	}
	if err != nil {
		return r.f.unavailable(err)
	}
	ctx, cancel, kv, err := r.f.op(executorBucket)
	if err != nil {
		sub.Unsubscribe()
		return err
	}
	defer cancel()
	b, _ := json.Marshal(l)
	rev, err := kv.Put(ctx, leaseKey, b) // the newest executor wins, whoever held the slot
	if err != nil {
		sub.Unsubscribe()
		return r.f.unavailable(err)
	}
	r.dropLocked()
	r.mine, r.mineGen, r.mineRev, r.sub = l, s.Gen, rev, sub
	select { // what the page offered before the lease was written goes out under it
	case r.outWake <- struct{}{}:
	default:
	}
	return nil
}

// renewLocked writes next over this relay's lease if it still holds it; a lease another relay
// took displaces the local executor. The caller holds mineMu.
func (r *Router) renewLocked(next *lease) error {
	ctx, cancel, kv, err := r.f.op(executorBucket)
	if err != nil {
		return err
	}
	defer cancel()
	b, _ := json.Marshal(next)
	rev, err := kv.Update(ctx, leaseKey, b, r.mineRev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		cur, gerr := kv.Get(ctx, leaseKey)
		var other lease
		if gerr == nil && json.Unmarshal(cur.Value(), &other) == nil && other.ID == r.mine.ID {
			r.mineRev = cur.Revision() // our own write that we did not hear back; try again next beat
			return nil
		}
		if gerr != nil && !errors.Is(gerr, jetstream.ErrKeyNotFound) {
			return r.f.unavailable(gerr)
		}
		if errors.Is(gerr, jetstream.ErrKeyNotFound) {
			// Nobody holds it (it was released or purged): take it back.
			if rev, err = kv.Create(ctx, leaseKey, b); err == nil {
				r.mine, r.mineRev = next, rev
				return nil
			}
			return r.f.unavailable(err)
		}
		r.dropLocked()
		r.see(&other, cur.Revision()) // before the watch says so: calls made here go to it now
		go r.local.Displace("a newer " + other.kind().String() + " connection, on another relay, holds the workspace root now")
		return nil
	}
	if err != nil {
		return r.f.unavailable(err)
	}
	r.mine, r.mineRev = next, rev
	return nil
}

// heartbeat renews this relay's lease heartbeatsPerTTL times per TTL.
func (r *Router) heartbeat() {
	defer r.done.Done()
	t := time.NewTicker(r.ttl / heartbeatsPerTTL)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.mineMu.Lock()
		if r.mine != nil {
			next := *r.mine
			next.Beat++
			r.renewLocked(&next) // a failure is retried on the next beat
		}
		r.mineMu.Unlock()
	}
}

// release gives up this relay's lease, if it holds one.
func (r *Router) release() {
	r.mineMu.Lock()
	defer r.mineMu.Unlock()
	r.releaseLocked()
}

// releaseLocked deletes this relay's lease (only the revision it wrote: one another relay took
// since stays) and stops answering its subject. The caller holds mineMu.
func (r *Router) releaseLocked() {
	if r.mine == nil {
		return
	}
	if ctx, cancel, kv, err := r.f.op(executorBucket); err == nil {
		kv.Delete(ctx, leaseKey, jetstream.LastRevision(r.mineRev))
		cancel()
	}
	r.dropLocked()
}

// dropLocked forgets this relay's lease without touching the bucket. The caller holds mineMu.
func (r *Router) dropLocked() {
	if r.sub != nil {
		r.sub.Unsubscribe()
	}
	r.mine, r.sub, r.mineRev = nil, nil, 0
}

// serve answers one call routed to this relay's executor. Each call runs on its own goroutine,
// so a slow call holds up no other; past MaxRoutedCalls or MaxRoutedBytes in flight it is
// refused too-many-calls at once, unread.
func (r *Router) serve(m *nats.Msg) {
	size := len(m.Data)
	if !r.takeRouted(size) {
		if r.f.sayOnce("routed calls full") {
			r.f.log.Warn("fleet: routed calls past the executor's bound were refused too-many-calls (said once per 10 s)", "max", MaxRoutedCalls, "maxBytes", MaxRoutedBytes)
		}
		m.Respond(refusal.New(refusal.TooManyCalls, "the relay holding the workspace root has %d calls from other relays in flight (or %d MB of them), its bound; nothing ran: try again when one has answered", MaxRoutedCalls, MaxRoutedBytes>>20).JSON())
		return
	}
	go func() {
		defer r.giveRouted(size)
		call, err := wire.ParseCall(m.Data)
		if err != nil {
			// No callId to answer under: a refusal body, which no relay mistakes for an answer.
			rf, ok := refusal.As(err)
			if !ok {
				rf = refusal.New(refusal.MalformedCall, "the routed call could not be read")
			}
			m.Respond(rf.JSON())
			return
		}
		var a wire.Answer
		{
			ctx, cancel := context.WithTimeout(context.Background(), routedWait(m.Header.Get(deadlineHeader), r.f.defaultWait()))
			if d, _ := ctx.Deadline(); time.Until(d) > r.f.defaultWait() {
				// Longer than any call's own bound: its caller asked a wait (channel.WithWait),
				// and this relay's page is asked with it, as on the caller's relay alone.
				ctx = channel.WithWait(ctx, time.Until(d))
			}
			a = r.local.AskLocal(ctx, call)
			cancel()
		}
		b, err := a.MarshalJSON()
		if err != nil {
			b, _ = wire.Refuse(call.CallID, refusal.New(refusal.ExecThrew, "the executor's answer could not be encoded")).MarshalJSON()
		}
		if err := m.Respond(b); err != nil {
			r.f.log.Warn("fleet: a routed call's answer could not be sent back", "err", err)
		}
	}()
}

// routedWait is how long the holder waits for its page's answer to a routed call whose deadline
// header says header: what it says, at most channel.MaxWait (whoever publishes on the lease's
// subject can write any number there); def (channel.DefaultTimeout) when it says nothing
// readable.
func routedWait(header string, def time.Duration) time.Duration {
	ms, err := strconv.ParseInt(header, 10, 64)
	if err != nil || ms <= 0 {
		return def
	}
	return time.Duration(min(ms, channel.MaxWait.Milliseconds())) * time.Millisecond
}

// takeRouted counts a routed call of size bytes in flight, unless that would pass MaxRoutedCalls
// or MaxRoutedBytes.
func (r *Router) takeRouted(size int) bool {
	r.routedMu.Lock()
	defer r.routedMu.Unlock()
	if r.routedCalls >= MaxRoutedCalls || r.routedBytes+size > MaxRoutedBytes {
		return false
	}
	r.routedCalls++
	r.routedBytes += size
	return true
}

// giveRouted counts a routed call of size bytes answered.
func (r *Router) giveRouted(size int) {
	r.routedMu.Lock()
	defer r.routedMu.Unlock()
	r.routedCalls--
	r.routedBytes -= size
}

// Ask implements hub.Fleet.
func (r *Router) Ask(ctx context.Context, call wire.Call) wire.Answer {
	lost := r.f.lost() // before the check: a connection that drops after it is heard
	if !r.f.Connected() {
		return wire.Refuse(call.CallID, r.f.unavailable(nats.ErrDisconnected).(*refusal.Refusal))
	}
	// A lease not renewed lately is still tried: NATS says at once when nobody answers its
	// subject (no-page), and a holder whose renewals are only late (a busy relay) is reached. The
	// holder gets at least one TTL of silence from now before the call is given up as
	// outcome-unknown.
	l, changed, expires := r.current()
	if floor := time.Now().Add(r.ttl); expires.Before(floor) {
		expires = floor
	}
	if l == nil {
		r.mu.Lock()
		last := r.lastKind
		r.mu.Unlock()
		why := "no page holds the workspace root on any relay: open the Voicebox page and pick a folder"
		if last == channel.Machine {
			why = "the paired machine environment that holds the root is not connected to any relay"
		}
		return wire.Refuse(call.CallID, refusal.New(last.Unreachable(), "%s", why))
	}
	kind := l.kind()
	if l.Relay == r.f.ID() {
		return r.local.AskLocal(ctx, call)
	}
	// The call's own bound, or the longer wait its caller asked (an external app's call waits
	// for the person's approval), as on a relay alone; the deadline header carries it.
	timeout := r.f.defaultWait()
	if w, ok := channel.Wait(ctx); ok && w > timeout {
		timeout = w
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	// Call ids are unique per relay only ("relay-1" on every relay): a routed call travels under
	// one of its own, unique in the fleet, and its answer is given back under the caller's.
	routed := call
	routed.CallID = r.f.ID() + "/" + strconv.FormatUint(r.seq.Add(1), 10)
	frame, err := routed.MarshalJSON()
	if err != nil {
		return wire.Refuse(call.CallID, refusal.New(refusal.MalformedCall, "the call could not be encoded"))
	}
	msg := &nats.Msg{Subject: r.f.subject("exec." + l.ID), Data: frame, Header: nats.Header{}}
	msg.Header.Set(deadlineHeader, strconv.FormatInt(timeout.Milliseconds(), 10))
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type reply struct {
		m   *nats.Msg
		err error
	}
	got := make(chan reply, 1)
	go func() {
		m, err := r.f.nc.RequestMsgWithContext(rctx, msg)
		got <- reply{m, err}
	}()
	expiry := time.NewTimer(time.Until(expires))
	defer expiry.Stop()
	var grace <-chan time.Time
	for {
		select {
		case rp := <-got:
			a := r.answer(ctx, routed, kind, l, rp.m, rp.err)
			a.CallID = call.CallID
			return a
		case <-changed:
			nl, nchanged, nexp := r.current()
			changed = nchanged
			if nl != nil && nl.ID == l.ID {
				expiry.Reset(time.Until(nexp)) // renewed: the holder lives
				continue
			}
			if grace == nil {
				grace = time.After(LeaseGoneGrace)
			}
		case <-expiry.C:
			return wire.Refuse(call.CallID, refusal.New(refusal.OutcomeUnknown,
				"the relay holding the %s (%s) stopped answering before the call's answer came: the call may or may not have run, so look at the files (or the page's history) before trying again", kind, l.Relay))
		case <-grace:
			return wire.Refuse(call.CallID, refusal.New(refusal.OutcomeUnknown,
				"the %s moved away from relay %s before the call's answer came: the call may or may not have run, so look at the files (or the page's history) before trying again", kind, l.Relay))
		case <-lost:
			// The answer would come over the connection that dropped; NATS keeps nothing for
			// it, so it never will. Whether the call reached the holder is not known.
			select {
			case rp := <-got:
				if rp.err == nil {
					a := r.answer(ctx, routed, kind, l, rp.m, rp.err)
					a.CallID = call.CallID
					return a
				}
			default:
			}
			return wire.Refuse(call.CallID, refusal.New(refusal.OutcomeUnknown,
				"this relay lost its connection to the fleet (NATS) before the answer of the %s on relay %s came: the call may or may not have run, so look at the files (or the page's history) before trying again", kind, l.Relay))
		}
	}
}

// answer turns a request's outcome into the call's one answer.
func (r *Router) answer(ctx context.Context, call wire.Call, kind channel.Kind, l *lease, m *nats.Msg, err error) wire.Answer {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.Refuse(call.CallID, refusal.New(kind.Unreachable(), "the %s's relay (%s) no longer answers for it; nothing ran", kind, l.Relay))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return wire.Refuse(call.CallID, refusal.New(kind.Timeout(), "the %s on relay %s did not answer in time; the call may or may not have run", kind, l.Relay))
		}
		fallthrough
	case errors.Is(err, context.Canceled):
		return wire.Refuse(call.CallID, refusal.New(kind.Timeout(), "the caller stopped waiting for the %s on relay %s; the call may or may not have run", kind, l.Relay))
	case err != nil:
		return wire.Refuse(call.CallID, r.f.unavailable(err).(*refusal.Refusal))
	}
	a, perr := wire.ParseAnswer(m.Data)
	if perr != nil && busy(m.Data) {
		return wire.Refuse(call.CallID, refusal.New(refusal.TooManyCalls,
			"the relay holding the %s (%s) has as many calls from other relays in flight as it takes; nothing ran: try again when one has answered", kind, l.Relay))
	}
	if perr != nil || a.CallID != call.CallID {
		return wire.Refuse(call.CallID, refusal.New(refusal.MalformedAnswer, "the %s's relay sent back an answer that is not this call's", kind))
	}
	return a
}

// busy reports whether a routed call's reply is the holder's too-many-calls (serve), a refusal
// body with no callId, sent before the call was read.
func busy(reply []byte) bool {
	var r struct {
		Refused refusal.Rule `json:"refused"`
	}
	return len(reply) < 1<<10 && json.Unmarshal(reply, &r) == nil && r.Refused == refusal.TooManyCalls
}
