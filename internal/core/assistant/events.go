package assistant

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"

	"github.com/voicebox-go/voicebox/internal/core/outbound"
)

// The event stream's bounds.
const (
	// MaxSubscribers bounds the event streams open at once (tabs of the page); one more is
	// refused too-many-sockets.
	MaxSubscribers = 64
	// maxRecentTurns bounds the turn events (outcomes of the page's turns that waited for the
	// person, turnAtOnce) a newly opened stream is sent after its hello, newest last: as many as
	// can wait for the person at once.
	maxRecentTurns = MaxPendingApprovals
)

// A subscriber's stream is a stream of internal/core/outbound: events wait for it in its bounded queue,
// and one that falls behind (past the queue's bounds, or a write past outbound.WriteBound) is
// closed slow-reader; the page's EventSource reconnects, getting the state anew.

// turnFrame starts every turn event's frame.
var turnFrame = []byte("event: turn\n")

// events fans the catalogue's events out to the page's streams, and in a fleet to the other
// relays' (Fleet.PublishEvent).
type events struct {
	log *slog.Logger

	mu     sync.Mutex
	subs   map[*outbound.SSE]struct{}
	closed bool
	turns  [][]byte // the latest turn events, at most maxRecentTurns, oldest first
	fleet  Fleet

	// announceMu serializes telling the fleet whether this relay's stream is followed;
	// announced is what it was told last.
	announceMu sync.Mutex
	announced  bool
}

func newEvents(log *slog.Logger) *events {
	return &events{log: log, subs: map[*outbound.SSE]struct{}{}}
}

// frame encodes one server-sent event. <, > and & are written as they are (json.Marshal writes
// each as six bytes): the fleet holds a frame to fleet.MaxEventBytes, which must measure the
// event, not an escaped copy six times its size.
func frame(kind string, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	data := []byte(`{}`)
	if enc.Encode(v) == nil {
		data = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	b := make([]byte, 0, len(kind)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, kind...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// publish sends an event to every subscriber, here and on the fleet's other relays.
// With nobody to send it to (no stream here, no fleet), an event that is not kept is not
// encoded at all: a call's event carries its result, and an MCP client's reads with no page open
// would each pay to encode it for nobody.
func (e *events) publish(kind string, v any) { e.publishKept(kind, v, nil) }

// publishKept is publish, calling kept (when not nil) once a turn event is kept for the streams
// opened later and before any stream is sent it.
func (e *events) publishKept(kind string, v any, kept func()) {
	e.mu.Lock()
	idle := len(e.subs) == 0 && e.fleet == nil
	e.mu.Unlock()
	if idle && kind != "turn" { // turn events are kept for the streams opened later
		return
	}
	f := frame(kind, v)
	e.deliver(f, kept)
	e.mu.Lock()
	fl := e.fleet
	e.mu.Unlock()
	if fl != nil {
		fl.PublishEvent(f)
		e.announce() // delivering may have dropped the last subscriber
	}
}

// deliver sends an encoded event to this relay's subscribers, calling kept (when not nil) once
// a turn event is kept and before it is sent.
func (e *events) deliver(f []byte, kept func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if bytes.HasPrefix(f, turnFrame) {
		if len(e.turns) == maxRecentTurns {
			e.turns = slices.Delete(e.turns, 0, 1)
		}
		e.turns = append(e.turns, f)
	}
	if kept != nil {
		kept()
	}
	for s := range e.subs {
		if !s.Send(f) {
			delete(e.subs, s) // closed: its stream logs why
		}
	}
}

// turnIDs returns the turn ids of turn event frames (recentTurns), in their order.
func turnIDs(frames [][]byte) []string {
	ids := make([]string, 0, len(frames))
	for _, f := range frames {
		_, data, _ := bytes.Cut(f, []byte("\ndata: "))
		var t struct {
			TurnID string `json:"turnId"`
		}
		if json.Unmarshal(bytes.TrimSpace(data), &t) == nil && t.TurnID != "" {
			ids = append(ids, t.TurnID)
		}
	}
	return ids
}

// inFleet reports whether the events cross a fleet: turns another relay took may then end here.
func (e *events) inFleet() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fleet != nil
}

// liveRuns returns the fleet's live runs when its list is whole (Fleet.LiveRuns), else nil: a
// relay alone lists none (its hello's instance is the one run there is).
func (e *events) liveRuns() []string {
	e.mu.Lock()
	fl := e.fleet
	e.mu.Unlock()
	if fl == nil {
		return nil
	}
	if runs, known := fl.LiveRuns(); known {
		return runs
	}
	return nil
}

// recentTurns returns the latest turn events delivered, oldest first.
func (e *events) recentTurns() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.turns)
}

// subscribe sends every event from now on to s, ending it when the catalogue closes, or reports
// false when there are MaxSubscribers already.
func (e *events) subscribe(s *outbound.SSE) bool {
	e.mu.Lock()
	if e.closed || len(e.subs) >= MaxSubscribers {
		e.mu.Unlock()
		return false
	}
	e.subs[s] = struct{}{}
	e.mu.Unlock()
	e.announce()
	return true
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

func (e *events) unsubscribe(s *outbound.SSE) {
	e.mu.Lock()
	delete(e.subs, s)
	e.mu.Unlock()
	e.announce()
}

func (e *events) close() {
	e.mu.Lock()
	e.closed = true
	for s := range e.subs {
		delete(e.subs, s)
		s.End()
	}
	e.mu.Unlock()
	e.announce()
}
