package assistant

import (
	"encoding/json"
	"log/slog"
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
)

// events fans the catalogue's events out to the page's streams.
type events struct {
	log *slog.Logger

	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	closed bool
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

// publish sends an event to every subscriber.
func (e *events) publish(kind string, v any) {
	f := frame(kind, v)
	e.mu.Lock()
	defer e.mu.Unlock()
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

// subscribe returns a channel of events, closed when the subscriber is dropped or the catalogue
// closes, or false when there are MaxSubscribers already.
func (e *events) subscribe() (chan []byte, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.subs) >= MaxSubscribers {
		return nil, false
	}
	ch := make(chan []byte, subscriberQueue)
	e.subs[ch] = struct{}{}
	return ch, true
}

// watched reports whether any subscriber (a page) listens now.
func (e *events) watched() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs) > 0
}

func (e *events) unsubscribe(ch chan []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.subs[ch]; ok {
		delete(e.subs, ch)
		close(ch)
	}
}

func (e *events) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for ch := range e.subs {
		delete(e.subs, ch)
		close(ch)
	}
}
