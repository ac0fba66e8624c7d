package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// DecisionWait bounds how long a decision on an approval this relay does not hold, and did not
// hear asked for, waits on the shared subject for the relay that holds it to say so (the others
// stay silent); past it the decision finds nothing (404 not-found). A decision on an approval
// this relay heard asked for goes to the asking relay's own subject, which always answers.
const DecisionWait = time.Second

// MaxEventBytes bounds an event frame taken from the fleet; a larger one is dropped.
const MaxEventBytes = 256 << 10

// relayHeader names the relay a fleet message came from, so a relay skips its own.
const relayHeader = "Voicebox-Relay"

// instanceHeader names, on a presence message, the run of the relay that says it (its catalogue's
// instance, random per process): a relay restarted under the same id is another run.
const instanceHeader = "Voicebox-Instance"

// maxInstanceBytes bounds a run's name heard on <prefix>.presence; a longer one is not recorded.
const maxInstanceBytes = 64

// LeaveCheckWait bounds each wait of a relay that heard another relay's run say it leaves, for
// that run and then that relay to answer whether they still live (aliveRun, aliveRelay). One
// that has left subscribes there no more, so NATS answers at once that nobody does; this bound
// matters only when something subscribed there does not answer, and then the leave is not
// believed (the run is forgotten once silent for a lease TTL, as without it).
const LeaveCheckWait = time.Second

// LeaveConfirmWait is how long after nobody answered for a run (or a relay) a relay asks again
// before it believes the leave: longer than a relay takes to reach NATS again once NATS is back
// (reconnectWait and its jitter), so a relay that is only coming back answers the second ask.
const LeaveConfirmWait = time.Second

// aliveRun and aliveRelay are the subjects (after <prefix>.) on which a relay answers, while it
// serves, that its run (aliveRun and the instance) and the relay (aliveRelay and its id) live.
const (
	aliveRun   = "alive.run."
	aliveRelay = "alive.relay."
)

// alivePendingMsgs and alivePendingBytes bound what a relay holds of the asks on aliveRun and
// aliveRelay not yet answered; past either, NATS's client drops what arrives.
const (
	alivePendingMsgs  = 256
	alivePendingBytes = 64 << 10
)

// What a relay holds of each other subscription's messages not yet handled (bytes of their
// data); past either bound NATS's client drops what arrives rather than holding up to its
// default 64 MB a subscription, and the relay says so once a subject per sayEvery (asyncError).
// Whoever holds the fleet's NATS credentials can publish there, so a flood costs a relay these
// at most. What a dropped message means on each subject is in docs/scaling.md; in short, a
// drop on <prefix>.events or <prefix>.presence makes the relay believe no silence until it has
// heard a lease TTL whole again (heardSince), and a decision that gets no answer is told
// outcome-unknown, never not-found.
const (
	// <prefix>.events: every relay's events for its pages (an event is at most MaxEventBytes).
	// A run's turn can publish thousands of small events at once (its steps, then its outcome
	// and its leave: TestALeaveIsHeardAfterTheRunsLastEvents sends 2,000), and a drop there
	// costs pages events and the fleet a lease TTL of believing no silence, so the count is
	// generous; the byte bound is what holds a flood of large ones.
	eventsPendingMsgs  = 16384
	eventsPendingBytes = 4 << 20
	// <prefix>.presence: heartbeats, which carry nothing but their headers.
	presencePendingMsgs  = 1024
	presencePendingBytes = 64 << 10
	// <prefix>.approvals and <prefix>.approvals.<id>: decisions ({id, approve}, under 200 bytes).
	decisionPendingMsgs  = 256
	decisionPendingBytes = 64 << 10
)

// runsEvent is the event that tells this relay's pages the fleet's live runs, when the list
// becomes known or changes (Events.LiveRuns).
const runsEvent = "runs"

// EventSink is what the fleet's events reach on this relay (internal/core/assistant's *Tools).
type EventSink interface {
	DeliverEvent(frame []byte)
	DecideLocal(id string, approve bool) bool
	// Instance names this run of the relay: the one its page's turns name (the 202's instance).
	Instance() string
}

// Events carries a relay's event stream and approval decisions to the fleet's other relays (an
// assistant.Fleet): every event a catalogue publishes goes out on <prefix>.events, and every
// relay hands those of the others to its own /api/events streams; a decision on an approval this
// relay does not hold is asked of the others on <prefix>.approvals, and the relay holding it
// answers. While NATS is away events stay on their own relay (they are not queued).
//
// Each relay also says it is alive on <prefix>.presence (heartbeatsPerTTL times per lease TTL)
// and keeps the approvals the others asked for (their "approval" events, until settled): when
// the relay that asked for one stops being heard for a lease TTL (it died, or lost NATS), every
// relay that still hears the fleet ends it on its own event streams with one "approval-settled"
// event, outcome RequesterGone, and a decision posted for it afterwards is refused
// approval-requester-gone instead of finding nothing.
//
// Each presence message names the run that says it (instanceHeader), so every relay knows the
// fleet's live runs (LiveRuns): its own and those heard within a lease TTL. Its pages are told
// them in the event stream's hello and, when they become known or change, in a "runs" event; a
// page's turn pending approval whose run is not among them is lost (its relay died, or lost NATS
// and with it the approvals it asked for), and the page says so at once (public/turns.js).
type Events struct {
	f    *Fleet
	c    EventSink
	subs []*nats.Subscription

	mu       sync.Mutex
	watching *nats.Subscription // on <prefix>.watching while a page follows this relay's stream
	closed   bool

	peerMu sync.Mutex
	heard  map[string]time.Time      // when each other relay was last heard, on this clock
	left   map[string]bool           // the relays that said they leave, until heard again
	asked  map[string]remoteApproval // the other relays' approvals still waiting, by id
	gone   map[string]time.Time      // approvals ended RequesterGone, until their deadline
	runs   map[string]*peerRun       // the other relays' runs, by instance
	ended  map[string]time.Time      // the runs whose leave was believed, until a lease TTL later
	full   time.Time                 // when a run was last not recorded, runs being full
	began  time.Time                 // when this Events started hearing presence

	tellMu sync.Mutex // serializes tellRuns, so the pages are told the runs in order
	told   string     // the live runs last told to the pages, comma-separated; "" for none

	alive []*nats.Subscription // on aliveRun and aliveRelay: this run and this relay live

	dropMu   sync.Mutex
	dropSubs []*nats.Subscription // on <prefix>.events and <prefix>.presence
	dropSeen []int                // what each of dropSubs had dropped when last looked at
	deafAt   time.Time            // when a drop on one of them was last seen

	stop chan struct{}
	done chan struct{}
}

// peerRun is another relay's run heard on <prefix>.presence.
type peerRun struct {
	at       time.Time // when it was last heard
	checking bool      // a leave naming it is being checked (Events.checkLeave)
}

// RequesterGone is the outcome, in the "approval-settled" event, of an approval whose requesting
// relay stopped being heard by the fleet.
const RequesterGone = "requester-gone"

// MaxRemoteApprovals bounds the other relays' approvals a relay keeps track of, and apart from
// them the ones it remembers as ended RequesterGone: past it, the oldest deadline is forgotten
// first, so a flood of approval events from the fleet cannot grow a relay's memory.
const MaxRemoteApprovals = 1024

// leavingMessage is what a relay that closes says, so the others end its approvals and forget
// its run at once instead of after a lease TTL of silence. It is said on <prefix>.events, after
// every event the run published there: a relay hears one subject's messages from one publisher
// in the order they were published (nats.go hands each subscription's messages to its own
// goroutine, in order), so the leave is heard after the run's last turn outcome, never before
// it. It is said on <prefix>.presence too, for relays of an older version; there it is ignored.
//
// Nothing on the fleet's subjects is signed (NATS credentials are the fleet's trust boundary),
// so a leave is believed only of a run recorded here, and only once nobody answers for that run
// (aliveRun), and it ends the approvals of the relay that says it only once nobody answers for
// that relay either (aliveRelay; checkLeave): a relay stops answering for itself and its run
// before it says it leaves, and a live one answers, so a leave forged by another NATS client
// ends no live run and no live relay's approvals.
const leavingMessage = "leaving"

// remoteApproval is an approval another relay asked for.
type remoteApproval struct {
	relay    string
	deadline time.Time
}

var _ assistant.Fleet = (*Events)(nil)

type decision struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
}

// NewEvents starts carrying c's events to and from the fleet. Close it before the fleet.
func (f *Fleet) NewEvents(c EventSink) (*Events, error) {
	e := &Events{f: f, c: c, heard: map[string]time.Time{}, left: map[string]bool{}, asked: map[string]remoteApproval{}, gone: map[string]time.Time{},
		runs: map[string]*peerRun{}, ended: map[string]time.Time{}, began: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	sub, err := f.nc.Subscribe(f.subject("events"), func(m *nats.Msg) {
		from := m.Header.Get(relayHeader)
		if from == f.ID() {
			return
		}
		if string(m.Data) == leavingMessage {
			e.leaveHeard(from, m.Header.Get(instanceHeader))
			return
		}
		if !ValidEventFrame(m.Data) {
			if f.sayOnce("malformed event") {
				f.log.Warn("fleet: a malformed event from the fleet was dropped (said once per 10 s)", "bytes", len(m.Data))
			}
			return
		}
		e.track(from, m.Data)
		c.DeliverEvent(m.Data)
	})
	if err == nil {
		err = sub.SetPendingLimits(eventsPendingMsgs, eventsPendingBytes)
	}
	if err != nil {
		close(e.done)
		if sub != nil {
			sub.Unsubscribe()
		}
		return nil, err
	}
	e.subs = append(e.subs, sub)
	e.dropSubs = append(e.dropSubs, sub)
	sub, err = f.nc.Subscribe(f.subject("presence"), func(m *nats.Msg) {
		from := m.Header.Get(relayHeader)
		if from == f.ID() || !validName(from, maxRelayIDBytes) || string(m.Data) == leavingMessage {
			return // a leave is heard on <prefix>.events, after the run's last events
		}
		e.peerMu.Lock()
		e.heardLocked(from, false)
		e.runHeardLocked(m.Header.Get(instanceHeader))
		e.peerMu.Unlock()
	})
	if err := e.bounded(sub, err, presencePendingMsgs, presencePendingBytes); err != nil {
		return nil, err
	}
	e.dropSubs = append(e.dropSubs, sub)
	e.dropSeen = make([]int, len(e.dropSubs))
	sub, err = f.nc.Subscribe(f.subject("approvals"), func(m *nats.Msg) {
		var d decision
		if m.Header.Get(relayHeader) == f.ID() || json.Unmarshal(m.Data, &d) != nil {
			return
		}
		if c.DecideLocal(d.ID, d.Approve) {
			m.Respond([]byte(`{"ok":true}`))
		}
	})
	if err := e.bounded(sub, err, decisionPendingMsgs, decisionPendingBytes); err != nil {
		return nil, err
	}
	// A decision addressed to this relay, on an approval the sender knows it asked for: always
	// answered, held or not, so the sender never takes a slow answer for none.
	sub, err = f.nc.Subscribe(f.subject("approvals."+f.ID()), func(m *nats.Msg) {
		var d decision
		if json.Unmarshal(m.Data, &d) != nil {
			return
		}
		b, _ := json.Marshal(decisionReply{OK: c.DecideLocal(d.ID, d.Approve)})
		m.Respond(b)
	})
	if err := e.bounded(sub, err, decisionPendingMsgs, decisionPendingBytes); err != nil {
		return nil, err
	}
	// Whether this run and this relay still live: asked by a relay that heard a leave naming
	// them (checkLeave). A run with no valid name is recorded by nobody, so never asked.
	alive := []string{aliveRelay + f.ID()}
	if validName(c.Instance(), maxInstanceBytes) {
		alive = append(alive, aliveRun+c.Instance())
	}
	for _, s := range alive {
		sub, err := f.nc.Subscribe(f.subject(s), func(m *nats.Msg) { m.Respond(nil) })
		if err == nil {
			// An ask carries nothing, and is answered at once: what waits beyond a small queue
			// is a flood, dropped by the client as it arrives rather than held (by default a
			// subscription holds up to 64 MB). A genuine ask dropped meanwhile goes unanswered,
			// so the leave it checks is not believed (LeaveCheckWait), never believed wrongly.
			err = sub.SetPendingLimits(alivePendingMsgs, alivePendingBytes)
		}
		if err != nil {
			close(e.done)
			e.Close()
			return nil, err
		}
		e.alive = append(e.alive, sub)
	}
	// The subscriptions are live at the server when NewEvents returns (the client writes them
	// in the background): a relay that joins after this one returned is heard from its first
	// beat, not a quarter of a lease TTL later. Away from NATS, the client subscribes again on
	// its return.
	f.nc.FlushTimeout(OpTimeout)
	go e.beat()
	return e, nil
}

// bounded keeps sub, just subscribed (err is the subscription's), holding at most msgs messages
// and bytes of their data not yet handled. On an error it ends what NewEvents started.
func (e *Events) bounded(sub *nats.Subscription, err error, msgs, bytes int) error {
	if err == nil {
		if err = sub.SetPendingLimits(msgs, bytes); err != nil {
			sub.Unsubscribe()
		}
	}
	if err != nil {
		close(e.done)
		e.Close()
		return err
	}
	e.subs = append(e.subs, sub)
	return nil
}

// heardSince is when this relay last began to hear the fleet whole: its last (re)connection to
// NATS, or the last time it saw that <prefix>.events or <prefix>.presence dropped messages past
// their bounds (a flood), whichever is later. A relay is believed silent only when not heard
// for a lease TTL since then: a heartbeat, an event or a leave may have been among the dropped.
func (e *Events) heardSince() time.Time {
	since := e.f.joinedAt()
	e.dropMu.Lock()
	defer e.dropMu.Unlock()
	for i, sub := range e.dropSubs {
		if n, err := sub.Dropped(); err == nil && n != e.dropSeen[i] {
			e.dropSeen[i], e.deafAt = n, time.Now()
		}
	}
	if e.deafAt.After(since) {
		since = e.deafAt
	}
	return since
}

// leaveHeard takes the leave of relay from's run instance, heard on <prefix>.events after every
// event the run published there: a run recorded here is checked (checkLeave), once at a time; a
// leave naming no such run is not believed (silence ends what it names, a lease TTL on).
func (e *Events) leaveHeard(from, instance string) {
	e.peerMu.Lock()
	defer e.peerMu.Unlock()
	r, ok := e.runs[instance]
	if !ok || r.checking || !validName(from, maxRelayIDBytes) {
		return
	}
	r.checking = true
	go e.checkLeave(from, instance)
}

// checkLeave asks whether the run instance still lives, after a leave naming it was heard from
// relay from, and believes the leave when nobody answers for it (twice, LeaveConfirmWait apart:
// nobodyAnswers): the run is forgotten then
// (and not taken back for a heartbeat it sent before leaving). The approvals of relay from end
// at once only when nobody answers for that relay either (a relay restarted under the same id
// lives on). When the run answers, the leave was forged and nothing changes; with no answer
// within LeaveCheckWait, nothing changes either, and silence ends the run a lease TTL on.
func (e *Events) checkLeave(from, instance string) {
	err := e.nobodyAnswers(aliveRun + instance)
	runGone := errors.Is(err, nats.ErrNoResponders)
	relayGone := false
	if runGone {
		relayGone = errors.Is(e.nobodyAnswers(aliveRelay+from), nats.ErrNoResponders)
	}
	e.peerMu.Lock()
	if r, ok := e.runs[instance]; ok {
		r.checking = false
	}
	if runGone {
		delete(e.runs, instance)
		if len(e.ended) >= maxHeardRuns {
			dropOldest(e.ended, func(t time.Time) time.Time { return t })
		}
		e.ended[instance] = time.Now()
	}
	if relayGone {
		e.heardLocked(from, true)
	}
	e.peerMu.Unlock()
	switch {
	case runGone:
		e.endSilent()
		e.tellRuns()
	case err == nil:
		if e.f.sayOnce("live " + instance) {
			e.f.log.Warn("fleet: a leave of a live run was not believed: the run still answers", "relay", from, "instance", instance)
		}
	default:
		if e.f.sayOnce("unknown " + instance) {
			e.f.log.Warn("fleet: a leave was not believed: nothing said whether the run still lives", "relay", from, "instance", instance, "err", err)
		}
	}
}

// nobodyAnswers asks whether anyone answers on subject (after <prefix>.), and returns
// nats.ErrNoResponders only when nobody does twice, LeaveConfirmWait apart, with this relay
// connected to NATS throughout: after NATS restarts every relay comes back on its own, so for a
// moment nobody answers for a run that lives (its relay is not back yet), and a leave forged
// then would otherwise be believed. Otherwise it returns what the asks did (nil: someone
// answered).
func (e *Events) nobodyAnswers(subject string) error {
	joined := e.f.joinedAt()
	_, err := e.f.nc.Request(e.f.subject(subject), nil, LeaveCheckWait)
	if !errors.Is(err, nats.ErrNoResponders) {
		return err
	}
	select {
	case <-e.stop:
		return errLeaveUnchecked
	case <-time.After(LeaveConfirmWait):
	}
	_, err = e.f.nc.Request(e.f.subject(subject), nil, LeaveCheckWait)
	if errors.Is(err, nats.ErrNoResponders) && !e.f.joinedAt().Equal(joined) {
		return errLeaveUnchecked // this relay came back to NATS meanwhile: the others may not have
	}
	return err
}

// errLeaveUnchecked says a leave could not be checked (this relay closing, or NATS coming back).
var errLeaveUnchecked = errors.New("fleet: the leave could not be checked")

// decisionReply is what the relay a decision was addressed to answers: whether it held the
// approval.
type decisionReply struct {
	OK bool `json:"ok"`
}

// beat says this relay is alive heartbeatsPerTTL times per lease TTL and each time NATS
// (re)connects, and ends the approvals of the relays that fell silent.
func (e *Events) beat() {
	defer close(e.done)
	t := time.NewTicker(e.f.cfg.LeaseTTL / heartbeatsPerTTL)
	defer t.Stop()
	for {
		back := e.f.reconnected()
		e.say("")
		e.endSilent()
		e.tellRuns()
		select {
		case <-e.stop:
			return
		case <-t.C:
		case <-back: // heard at once on (re)connecting, before any turn this run takes is listed elsewhere
		}
	}
}

// say publishes this relay's presence (or leavingMessage) when NATS is connected.
func (e *Events) say(what string) {
	if !e.f.Connected() {
		return
	}
	m := &nats.Msg{Subject: e.f.subject("presence"), Data: []byte(what), Header: nats.Header{}}
	m.Header.Set(relayHeader, e.f.ID())
	m.Header.Set(instanceHeader, e.c.Instance())
	e.f.nc.PublishMsg(m) // a lost beat is made up by the next
}

// leave says on <prefix>.events, after every event this run published there, that it leaves.
func (e *Events) leave() {
	if !e.f.Connected() {
		return
	}
	m := &nats.Msg{Subject: e.f.subject("events"), Data: []byte(leavingMessage), Header: nats.Header{}}
	m.Header.Set(relayHeader, e.f.ID())
	m.Header.Set(instanceHeader, e.c.Instance())
	e.f.nc.PublishMsg(m) // a lost leave is made up by silence, a lease TTL on
}

// track keeps what an event from relay from says of its approvals: asked for, or settled.
func (e *Events) track(from string, frame []byte) {
	if !validName(from, maxRelayIDBytes) {
		return // not a relay's name: it could not be asked on its own subject
	}
	name, data := eventParts(frame)
	if name != "approval" && name != "approval-settled" {
		e.peerMu.Lock()
		e.heardLocked(from, false)
		e.peerMu.Unlock()
		return
	}
	var ap struct {
		ID       string    `json:"id"`
		Deadline time.Time `json:"deadline"`
	}
	if json.Unmarshal(data, &ap) != nil || ap.ID == "" {
		return
	}
	now := time.Now()
	e.peerMu.Lock()
	defer e.peerMu.Unlock()
	e.heardLocked(from, false)
	// An approval is the relay's that said it asked first (ids are random: nobody else can know
	// one before it is published), and only that relay settles it; a later claim on the same id
	// from another name is not believed, so it cannot be made to end as its requester's going.
	had, known := e.asked[ap.ID]
	if known && had.relay != from {
		return
	}
	if name == "approval-settled" {
		delete(e.asked, ap.ID)
		return
	}
	if known {
		return
	}
	// No approval waits longer than approval.Timeout: a later deadline is not believed.
	deadline := ap.Deadline
	if latest := now.Add(approval.Timeout); deadline.IsZero() || deadline.After(latest) {
		deadline = latest
	}
	if len(e.asked) >= MaxRemoteApprovals {
		dropOldest(e.asked, func(a remoteApproval) time.Time { return a.deadline })
	}
	e.asked[ap.ID] = remoteApproval{relay: from, deadline: deadline}
}

// heardLocked records that relay from was heard now, saying it leaves or not. A relay is heard
// only while something of it waits here or it spoke within two lease TTLs (endSilent forgets the
// others), so relay names made up on the fleet's subjects cannot grow this. The caller holds
// peerMu.
func (e *Events) heardLocked(from string, leaving bool) {
	if from == "" {
		return
	}
	e.heard[from] = time.Now()
	if leaving {
		e.left[from] = true
	} else {
		delete(e.left, from)
	}
}

// maxHeardRuns bounds the other relays' runs a relay records: one more than it may list, so a
// fleet past approval.MaxLiveRuns is seen to be, and names made up on <prefix>.presence cannot
// grow a relay's memory.
const maxHeardRuns = approval.MaxLiveRuns

// runHeardLocked records that the run instance was heard now. A run whose leave was believed
// within a lease TTL is not recorded again (a heartbeat it sent before leaving may be heard after
// the leave). The caller holds peerMu.
func (e *Events) runHeardLocked(instance string) {
	if !validName(instance, maxInstanceBytes) || instance == e.c.Instance() {
		return
	}
	now := time.Now()
	if at, ended := e.ended[instance]; ended {
		if now.Sub(at) < e.f.cfg.LeaseTTL {
			return
		}
		delete(e.ended, instance)
	}
	r, known := e.runs[instance]
	if !known {
		e.forgetSilentRunsLocked(now)
		if len(e.runs) >= maxHeardRuns {
			e.full = now // the list is not whole until this one could have been recorded
			return
		}
		r = &peerRun{}
		e.runs[instance] = r
	}
	r.at = now
}

// forgetSilentRunsLocked forgets the runs not heard for a lease TTL. The caller holds peerMu.
func (e *Events) forgetSilentRunsLocked(now time.Time) {
	for k, r := range e.runs {
		if now.Sub(r.at) >= e.f.cfg.LeaseTTL {
			delete(e.runs, k)
		}
	}
}

// LiveRuns implements assistant.Fleet: the fleet's live runs (this relay's and those heard on
// <prefix>.presence within a lease TTL), sorted, and known true when that list is whole. It is
// not while NATS is away, within a lease TTL of joining or reconnecting or of a flood's drops
// (heardSince: a live relay may not have been heard yet), nor with more than
// approval.MaxLiveRuns runs heard within a lease TTL.
func (e *Events) LiveRuns() (runs []string, known bool) {
	if !e.f.Connected() {
		return nil, false
	}
	since := e.heardSince()
	now := time.Now()
	ttl := e.f.cfg.LeaseTTL
	e.peerMu.Lock()
	defer e.peerMu.Unlock()
	if e.began.After(since) {
		since = e.began
	}
	if now.Sub(since) < ttl || now.Sub(e.full) < ttl {
		return nil, false
	}
	e.forgetSilentRunsLocked(now)
	runs = append(make([]string, 0, len(e.runs)+1), e.c.Instance())
	for k := range e.runs {
		runs = append(runs, k)
	}
	if len(runs) > approval.MaxLiveRuns {
		return nil, false
	}
	slices.Sort(runs)
	return runs, true
}

// tellRuns tells this relay's event streams the fleet's live runs, in a runs event, when they
// became known or changed since last told.
// While the list is not known nothing is told (a page waits as it would without it), and once it
// is again it is told anew, for the streams opened meanwhile, whose hello had none.
func (e *Events) tellRuns() {
	e.tellMu.Lock()
	defer e.tellMu.Unlock()
	runs, known := e.LiveRuns()
	list := ""
	if known {
		list = strings.Join(runs, ",")
	}
	changed := list != e.told
	e.told = list
	if !known || !changed {
		return
	}
	data, _ := json.Marshal(map[string][]string{"runs": runs})
	e.c.DeliverEvent(append(append([]byte("event: "+runsEvent+"\ndata: "), data...), "\n\n"...))
}

// endSilent ends, on this relay's event streams, every approval whose relay has not been heard
// for a lease TTL while this relay was connected to NATS: one approval-settled event each,
// outcome RequesterGone.
func (e *Events) endSilent() {
	if !e.f.Connected() {
		return
	}
	joined := e.heardSince() // the others are given a lease TTL from each reconnection (or flood) to be heard
	now := time.Now()
	var ended []string
	e.peerMu.Lock()
	for id, a := range e.asked {
		if !now.Before(a.deadline) {
			delete(e.asked, id) // its own relay settles it, or nobody can any more
			continue
		}
		last := e.heard[a.relay]
		if last.Before(joined) { // not heard since NATS came back: silent since then
			last = joined
		}
		if !e.left[a.relay] && now.Sub(last) < e.f.cfg.LeaseTTL {
			continue
		}
		delete(e.asked, id)
		for k, until := range e.gone {
			if !now.Before(until) {
				delete(e.gone, k)
			}
		}
		if len(e.gone) >= MaxRemoteApprovals {
			dropOldest(e.gone, func(t time.Time) time.Time { return t })
		}
		e.gone[id] = a.deadline
		ended = append(ended, id)
	}
	for k, t := range e.heard { // what is silent this long has nothing left waiting here
		if now.Sub(t) > 2*e.f.cfg.LeaseTTL {
			delete(e.heard, k)
			delete(e.left, k)
		}
	}
	e.peerMu.Unlock()
	for _, id := range ended {
		e.f.log.Warn("fleet: an approval ended: the relay that asked for it is no longer heard", "id", id)
		data, _ := json.Marshal(map[string]string{"id": id, "outcome": RequesterGone})
		e.c.DeliverEvent(append(append([]byte("event: approval-settled\ndata: "), data...), "\n\n"...))
	}
}

// dropOldest removes the entry of m whose time (by at) is earliest.
func dropOldest[V any](m map[string]V, at func(V) time.Time) {
	first, oldest := "", time.Time{}
	for k, v := range m {
		if t := at(v); first == "" || t.Before(oldest) {
			first, oldest = k, t
		}
	}
	delete(m, first)
}

// eventParts returns the name and the data of a frame ValidEventFrame accepted.
func eventParts(frame []byte) (name string, data []byte) {
	rest, _ := bytes.CutPrefix(frame, []byte("event: "))
	n, rest, _ := bytes.Cut(rest, []byte("\n"))
	data, _ = bytes.CutPrefix(rest, []byte("data: "))
	return string(n), bytes.TrimSuffix(data, []byte("\n\n"))
}

// Close stops carrying events, and tells the others this relay leaves (so they end the
// approvals it asked for, and forget its run, at once): it stops answering that it and its run
// live first, so a relay that checks the leave finds nobody.
func (e *Events) Close() {
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
	<-e.done
	for _, s := range e.alive {
		s.Unsubscribe()
	}
	e.leave()
	e.say(leavingMessage) // for relays of an older version
	// NATS has the leave, and every event before it, before the connection closes: a socket
	// closed with messages from NATS still unread is reset, and what this relay wrote last
	// could be lost with it (the others would then hear its run end only by silence).
	if e.f.Connected() {
		if err := e.f.nc.FlushTimeout(OpTimeout); err != nil {
			e.f.log.Warn("fleet: NATS may not have this relay's last events and its leave", "err", err)
		}
	}
	for _, s := range e.subs {
		s.Unsubscribe()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	if e.watching != nil {
		e.watching.Unsubscribe()
		e.watching = nil
	}
}

// WatchedWait bounds how long a relay waits to hear whether a page follows another relay's
// event stream. Nobody subscribed is known at once (NATS answers no responders); this bound
// matters only when a relay that subscribed cannot answer.
const WatchedWait = time.Second

// Watching implements assistant.Fleet: while a page follows this relay's stream, the relay
// answers on <prefix>.watching. NATS keeps the subscription across reconnects.
func (e *Events) Watching(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
	case on && e.watching == nil:
		sub, err := e.f.nc.Subscribe(e.f.subject("watching"), func(m *nats.Msg) { m.Respond(nil) })
		if err == nil {
			// An ask carries nothing, as on the alive subjects: a flood past a small queue is
			// dropped (a genuine ask dropped reads as nobody watching: no-page, said at once).
			if err = sub.SetPendingLimits(alivePendingMsgs, alivePendingBytes); err != nil {
				sub.Unsubscribe()
			}
		}
		if err != nil {
			e.f.log.Warn("fleet: the other relays cannot hear that a page follows this relay's events", "err", err)
			return
		}
		// Flushed, so once this relay's page has its stream, every relay that asks hears it.
		// With NATS away there is nothing to flush to (and a flush would wait out its bound):
		// NATS registers the subscription when the connection is back.
		if e.f.Connected() {
			if err := e.f.nc.FlushTimeout(OpTimeout); err != nil {
				e.f.log.Warn("fleet: the other relays may not hear yet that a page follows this relay's events", "err", err)
			}
		}
		e.watching = sub
	case !on && e.watching != nil:
		e.watching.Unsubscribe()
		e.watching = nil
	}
}

// Watched implements assistant.Fleet: whether any relay answers on <prefix>.watching. With
// NATS away it is false: nobody can be asked.
func (e *Events) Watched() bool {
	if !e.f.Connected() {
		return false
	}
	_, err := e.f.nc.Request(e.f.subject("watching"), nil, WatchedWait)
	return err == nil
}

// PublishEvent implements assistant.Fleet.
func (e *Events) PublishEvent(frame []byte) {
	if !e.f.Connected() {
		return
	}
	m := &nats.Msg{Subject: e.f.subject("events"), Data: frame, Header: nats.Header{}}
	m.Header.Set(relayHeader, e.f.ID())
	if err := e.f.nc.PublishMsg(m); err != nil {
		e.f.log.Info("fleet: an event stayed on this relay", "err", err)
	}
}

// Decide implements assistant.Fleet: an approval this relay ended because its requester went
// away is refused approval-requester-gone.
func (e *Events) Decide(id string, approve bool) (bool, error) {
	e.peerMu.Lock()
	_, gone := e.gone[id]
	e.peerMu.Unlock()
	if gone {
		return false, refusal.New(refusal.ApprovalRequesterGone, "the relay that asked for approval %q is no longer heard by the fleet (it stopped or lost its connection), so nothing was done and no decision can reach it; ask again if it is still wanted", id)
	}
	if !e.f.Connected() {
		return false, nil
	}
	b, _ := json.Marshal(decision{ID: id, Approve: approve})
	e.peerMu.Lock()
	asked, known := e.asked[id]
	e.peerMu.Unlock()
	if known {
		// The relay that asked is known (its approval event said so): it is asked, and it
		// answers whether it held the request; no answer at all within OpTimeout is none.
		m := &nats.Msg{Subject: e.f.subject("approvals." + asked.relay), Data: b, Header: nats.Header{}}
		m.Header.Set(relayHeader, e.f.ID())
		reply, err := e.f.nc.RequestMsg(m, OpTimeout)
		var r decisionReply
		if err == nil && json.Unmarshal(reply.Data, &r) == nil {
			return r.OK, nil
		}
		if !errors.Is(err, nats.ErrNoResponders) {
			// It subscribes there, and always answers: its answer, or the decision, was lost
			// (a flood past its bounds, NATS in trouble). Whether the decision took is not
			// known, and saying "not found" would tell the person the request is gone.
			return false, refusal.New(refusal.OutcomeUnknown, "the decision on approval %q was sent to the relay that asked for it (%s), which did not answer within %v: it may or may not have been taken; if the request is still shown, decide again", id, asked.relay, OpTimeout)
		}
		// Nobody subscribes to that relay's subject: it is gone (a relay of an older version
		// is asked on the shared subject below).
	}
	m := &nats.Msg{Subject: e.f.subject("approvals"), Data: b, Header: nats.Header{}}
	m.Header.Set(relayHeader, e.f.ID())
	_, err := e.f.nc.RequestMsg(m, DecisionWait)
	return err == nil, nil
}

// ValidEventFrame reports whether b is one server-sent event as a catalogue writes it, and
// nothing else: "event: NAME\ndata: JSON\n\n" with a kebab-case NAME, one line of valid JSON,
// at most MaxEventBytes. Anything else from the fleet is dropped before it reaches a page's
// stream, so a message on the events subject cannot forge a second event, a retry directive or
// a comment in the page's EventSource.
func ValidEventFrame(b []byte) bool {
	if len(b) > MaxEventBytes {
		return false
	}
	rest, ok := bytes.CutPrefix(b, []byte("event: "))
	if !ok {
		return false
	}
	name, rest, ok := bytes.Cut(rest, []byte("\n"))
	if !ok || !kebab(name) {
		return false
	}
	data, ok := bytes.CutPrefix(rest, []byte("data: "))
	if !ok {
		return false
	}
	data, ok = bytes.CutSuffix(data, []byte("\n\n"))
	return ok && !bytes.ContainsAny(data, "\r\n") && json.Valid(data)
}

func kebab(b []byte) bool {
	if len(b) == 0 || len(b) > 64 || b[0] == '-' || b[len(b)-1] == '-' {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
