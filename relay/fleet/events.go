package fleet

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/relay/assistant"
)

// DecisionWait bounds how long a decision on an approval this relay does not hold waits for the
// relay that holds it to say so; past it the decision finds nothing (404 not-found).
const DecisionWait = time.Second

// MaxEventBytes bounds an event frame taken from the fleet; a larger one is dropped.
const MaxEventBytes = 256 << 10

// relayHeader names the relay a fleet message came from, so a relay skips its own.
const relayHeader = "Voicebox-Relay"

// Catalogue is what the fleet's events reach on this relay (relay/assistant's *Catalogue).
type Catalogue interface {
	DeliverEvent(frame []byte)
	DecideLocal(id string, approve bool) bool
}

// Events carries a relay's event stream and approval decisions to the fleet's other relays (an
// assistant.Fleet): every event a catalogue publishes goes out on <prefix>.events, and every
// relay hands those of the others to its own /api/events streams; a decision on an approval this
// relay does not hold is asked of the others on <prefix>.approvals, and the relay holding it
// answers. While NATS is away events stay on their own relay (they are not queued).
type Events struct {
	f    *Fleet
	subs []*nats.Subscription

	mu       sync.Mutex
	watching *nats.Subscription // on <prefix>.watching while a page follows this relay's stream
	closed   bool
}

var _ assistant.Fleet = (*Events)(nil)

type decision struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
}

// NewEvents starts carrying c's events to and from the fleet. Close it before the fleet.
func (f *Fleet) NewEvents(c Catalogue) (*Events, error) {
	e := &Events{f: f}
	sub, err := f.nc.Subscribe(f.subject("events"), func(m *nats.Msg) {
		if m.Header.Get(relayHeader) == f.ID() {
			return
		}
		if !ValidEventFrame(m.Data) {
			f.log.Warn("fleet: a malformed event from the fleet was dropped", "bytes", len(m.Data))
			return
		}
		c.DeliverEvent(m.Data)
	})
	if err != nil {
		return nil, err
	}
	e.subs = append(e.subs, sub)
	sub, err = f.nc.Subscribe(f.subject("approvals"), func(m *nats.Msg) {
		var d decision
		if m.Header.Get(relayHeader) == f.ID() || json.Unmarshal(m.Data, &d) != nil {
			return
		}
		if c.DecideLocal(d.ID, d.Approve) {
			m.Respond([]byte(`{"ok":true}`))
		}
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	e.subs = append(e.subs, sub)
	return e, nil
}

// Close stops carrying events.
func (e *Events) Close() {
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

// Decide implements assistant.Fleet.
func (e *Events) Decide(id string, approve bool) bool {
	if !e.f.Connected() {
		return false
	}
	b, _ := json.Marshal(decision{ID: id, Approve: approve})
	m := &nats.Msg{Subject: e.f.subject("approvals"), Data: b, Header: nats.Header{}}
	m.Header.Set(relayHeader, e.f.ID())
	_, err := e.f.nc.RequestMsg(m, DecisionWait)
	return err == nil
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
