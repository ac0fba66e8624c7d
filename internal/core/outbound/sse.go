package outbound

import (
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ErrClosed is what a write to an SSE stream returns once the stream was closed (for its reader,
// or because the reader went away) or ended.
var ErrClosed = errors.New("outbound: the stream is closed")

// SSE is an http.ResponseWriter for an event stream that never makes its writer wait: WriteHeader,
// Write and Flush queue what they are given and return, and Serve, on the request's own
// goroutine or one the handler waits for, writes it to the response in order, each write and
// flush within WriteBound. It is safe for concurrent use by writers; Serve runs once.
//
// The handler must not return while Serve runs: call End, then wait for Serve to return.
type SSE struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	q       *queue
	onClose func(*refusal.Refusal)
	started bool // Serve wrote a status or a message: the response's header is sent

	// Set by ServeOnDemand: done is what Serve is given, writer is closed when a writer goroutine
	// it started returns, with its result in why; spawned says one was started.
	demand  bool
	done    <-chan struct{}
	spawn   sync.Once
	spawned atomic.Bool
	writer  chan struct{}
	why     *refusal.Refusal
}

// NewSSE returns the stream writing to w, the response to r, and bounds the send buffer of r's
// connection (SendBuffer). onClose, when set, is called once, on Serve's
// goroutine, when the stream is closed slow-reader, after the reader was told (when it could be).
func NewSSE(w http.ResponseWriter, r *http.Request, onClose func(*refusal.Refusal)) *SSE {
	server.SetSendBuffer(r, SendBuffer)
	return &SSE{w: w, rc: http.NewResponseController(w), q: newQueue(), onClose: onClose}
}

// Header returns the response's header, which may be changed until WriteHeader or Write is
// called.
func (s *SSE) Header() http.Header { return s.w.Header() }

// WriteHeader queues the response's status.
func (s *SSE) WriteHeader(status int) { s.put(item{status: status}) }

// Write queues a copy of p.
func (s *SSE) Write(p []byte) (int, error) {
	if !s.put(item{data: slices.Clone(p)}) {
		return 0, ErrClosed
	}
	return len(p), nil
}

// Flush queues a flush of what was written before it.
func (s *SSE) Flush() { s.put(item{flush: true}) }

// Send queues p and its flush, and reports false when the stream is closed (or ended). p is the
// stream's from then on: the caller does not change it.
func (s *SSE) Send(p []byte) bool { return s.put(item{data: p, flush: true}) }

// Lead queues p, and its flush, before everything queued so far: the first event of a stream
// subscribed to before that event was composed. p is the stream's from then on.
func (s *SSE) Lead(p []byte) bool {
	ok := s.q.lead(item{data: p, flush: true})
	if ok {
		s.startWriter()
	}
	return ok
}

// put queues it and, on a stream served on demand, starts its writer.
func (s *SSE) put(it item) bool {
	ok := s.q.put(it)
	if ok {
		s.startWriter()
	}
	return ok
}

// ServeOnDemand serves the stream without a goroutine of its own until one is needed: the first
// message queued other than by Last starts Serve(done, 0) on a goroutine of the stream's, and
// Finish then waits for it. A response that is one Last message alone (a relay's answer to one
// MCP call) starts none: Finish writes it on the caller's goroutine, within WriteBound as
// always, and a writer never waits for it, as with Serve. Call it before anything is written,
// and then Finish once, instead of Serve and End.
func (s *SSE) ServeOnDemand(done <-chan struct{}) {
	s.done, s.writer, s.demand = done, make(chan struct{}), true
}

func (s *SSE) startWriter() {
	if !s.demand {
		return
	}
	s.spawn.Do(func() {
		s.spawned.Store(true)
		go func() {
			defer close(s.writer)
			s.why = s.Serve(s.done, 0)
		}()
	})
}

// Finish ends a stream served on demand (End): it waits for the writer ServeOnDemand started,
// or, when none was, writes what is queued on the caller's goroutine. It returns what Serve
// returned.
func (s *SSE) Finish() *refusal.Refusal {
	s.End()
	s.spawn.Do(func() {}) // no writer starts from here on
	if s.spawned.Load() {
		<-s.writer
		return s.why
	}
	return s.Serve(s.done, 0)
}

// Last queues p as the stream's last message and ends the stream, as Send then End do, and
// reports false when the stream is closed (or ended). When p is all the response carries (nothing
// was written before it), the response is sent with its Content-Length instead of chunked, so the
// reader has the message and the stream's end in the same bytes: it need not wait for, nor be
// woken again by, a chunked stream's end (a relay's answer to one MCP call). p is the stream's
// from then on.
func (s *SSE) Last(p []byte) bool { return s.q.putLast(item{data: p, flush: true, last: true}) }

// End says nothing more will be written: Serve writes what is queued and returns.
func (s *SSE) End() { s.q.end() }

// Close closes the stream at once; what is queued is dropped.
func (s *SSE) Close() { s.q.fail(nil) }

// Reason returns why the stream was closed for its reader, nil if it was not.
func (s *SSE) Reason() *refusal.Refusal { return s.q.reason() }

// keepAliveComment is the comment written to an idle stream each keepAlive.
var keepAliveComment = []byte(": keep-alive\n\n")

// Serve writes the queued items until the stream ends (End), is closed, or done is closed, and
// returns the refusal it was closed with for its reader (slow-reader), nil otherwise. When
// keepAlive is positive, an idle stream is sent a comment that often.
func (s *SSE) Serve(done <-chan struct{}, keepAlive time.Duration) *refusal.Refusal {
	var tick <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		items, why, last := s.q.take()
		for _, it := range items {
			if err := s.write(it); err != nil {
				why = s.failed(err)
				last = true
				break
			}
		}
		if why != nil {
			s.farewell(why)
			if s.onClose != nil {
				s.onClose(why)
			}
			return why
		}
		if last {
			return nil
		}
		select {
		case <-s.q.wake:
		case <-tick:
			if err := s.write(item{data: keepAliveComment, flush: true}); err != nil {
				s.failed(err) // the queue is closed: the next take ends the stream
			}
		case <-done:
			s.q.fail(nil)
			return nil
		}
	}
}

// failed closes the queue after a write failed: slow-reader when the write ran out of time,
// gone otherwise (the reader closed the connection). It returns the refusal, nil for gone.
func (s *SSE) failed(err error) *refusal.Refusal {
	var why *refusal.Refusal
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		why = SlowReader("the reader took no bytes for " + WriteBound.String())
	}
	s.q.fail(why)
	return s.q.reason()
}

// write writes one item within WriteBound. A writer that cannot take a deadline (a test's
// recorder) is written to without one.
func (s *SSE) write(it item) error {
	if s.rc.SetWriteDeadline(time.Now().Add(WriteBound)) == nil {
		// The connection outlives the stream (kept alive for the next request): lift it.
		defer s.rc.SetWriteDeadline(time.Time{})
	}
	if it.status != 0 {
		s.started = true
		s.w.WriteHeader(it.status)
		return nil
	}
	if it.last && !s.started {
		// The whole body: its length is known, so no chunked end follows it.
		s.w.Header().Set("Content-Length", strconv.Itoa(len(it.data)))
	}
	s.started = true
	if len(it.data) > 0 {
		if _, err := s.w.Write(it.data); err != nil {
			return err
		}
	}
	if it.flush {
		if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	return nil
}

// farewell tells the reader why its stream ends, as an SSE comment, when it can still be
// written within WriteBound (a reader whose queue overflowed may still be reading).
func (s *SSE) farewell(why *refusal.Refusal) {
	s.write(item{data: []byte(": refused " + string(why.Rule) + ": " + why.Why + "\n\n"), flush: true})
}
