package assistant

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
)

// The event stream's bounds.
const (
	// MaxSubscribers bounds the event streams open at once (tabs of the page); one more is
	// refused too-many-sockets.
	MaxSubscribers = 64
	// subscriberQueue is how many events wait for a slow subscriber; past it the subscriber is
	// dropped (its stream ends and the page's EventSource reconnects, getting the state anew).
	subscriberQueue = 256
	// maxRecentTurns bounds the turn events (outcomes of the page's turns that waited for the
	// person, turnAtOnce) a newly opened stream is sent after its hello, newest last: as many as
	// can wait for the person at once.
	maxRecentTurns = MaxPendingApprovals
)

// turnFrame starts every turn event's frame.
var turnFrame = []byte("event: turn\n")

// events fans the catalogue's events out to the page's streams, and in a fleet to the other
// relays' (Fleet.PublishEvent).
type events struct {
	log *slog.Logger

	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	closed bool
	turns  [][]byte // the latest turn events, at most maxRecentTurns, oldest first
	fleet  Fleet

	// announceMu serializes telling the fleet whether this relay's stream is followed;
	// announced is what it was told last.
	announceMu sync.Mutex
	announced  bool
}

func newEvents(log *slog.Logger) *events {
	return &events{log: log, subs: map[chan []byte]struct{}{}}
}

// frame encodes one server-sent event.
func frame(kind string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{}`)
	}
	b := make([]byte, 0, len(kind)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, kind...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// publish sends an event to every subscriber, here and on the fleet's other relays.
func (e *events) publish(kind string, v any) {
	f := frame(kind, v)
	e.deliver(f)
	e.mu.Lock()
	fl := e.fleet
	e.mu.Unlock()
	if fl != nil {
		fl.PublishEvent(f)
		e.announce() // delivering may have dropped the last subscriber
	}
}

// deliver sends an encoded event to this relay's subscribers.
func (e *events) deliver(f []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if bytes.HasPrefix(f, turnFrame) {
		if len(e.turns) == maxRecentTurns {
			e.turns = slices.Delete(e.turns, 0, 1)
		}
		e.turns = append(e.turns, f)
	}
	for ch := range e.subs {
		select {
		case ch <- f:
		default:
			delete(e.subs, ch)
			close(ch)
			e.log.Warn("assistant: an event stream fell behind and was dropped")
		}
	}
}

// recentTurns returns the latest turn events delivered, oldest first.
func (e *events) recentTurns() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.turns)
}

// subscribe returns a channel of events, closed when the subscriber is dropped or the catalogue
// closes, or false when there are MaxSubscribers already.
func (e *events) subscribe() (chan []byte, bool) {
	e.mu.Lock()
	if e.closed || len(e.subs) >= MaxSubscribers {
		e.mu.Unlock()
		return nil, false
	}
	ch := make(chan []byte, subscriberQueue)
	e.subs[ch] = struct{}{}
	e.mu.Unlock()
	e.announce()
	return ch, true
}

// watched reports whether any subscriber (a page) listens now, on this relay or, in a fleet, on
// another (Fleet.Watched).
func (e *events) watched() bool {
	e.mu.Lock()
	here, fl := len(e.subs) > 0, e.fleet
	e.mu.Unlock()
	return here || fl != nil && fl.Watched()
}

// announce tells the fleet whether this relay's stream has a subscriber now, when that changed
// since it last told it. It is called after every change, outside e.mu, so the fleet hears the
// latest state last.
func (e *events) announce() {
	e.announceMu.Lock()
	defer e.announceMu.Unlock()
	e.mu.Lock()
	on, fl := len(e.subs) > 0 && !e.closed, e.fleet
	e.mu.Unlock()
	if fl == nil || on == e.announced {
		return
	}
	e.announced = on
	fl.Watching(on)
}

func (e *events) unsubscribe(ch chan []byte) {
	e.mu.Lock()
	if _, ok := e.subs[ch]; ok {
		delete(e.subs, ch)
		close(ch)
	}
	e.mu.Unlock()
	e.announce()
}

func (e *events) close() {
	e.mu.Lock()
	e.closed = true
	for ch := range e.subs {
		delete(e.subs, ch)
		close(ch)
	}
	e.mu.Unlock()
	e.announce()
}
