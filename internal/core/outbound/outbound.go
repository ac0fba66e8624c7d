// Package outbound is the one way the relay writes to a stream that outlives its request: the
// /mcp and /api/events event streams (SSE, here) and the /channel and /live WebSockets (Socket,
// here; the write deadline is internal/core/wsbound's).
//
// A writer never waits on a reader. Every stream has a bounded queue (QueueMessages,
// QueueBytes) that a writer puts a message into and returns; one goroutine per stream takes the
// messages out and writes each within WriteBound, on a connection whose kernel send buffer is
// SendBuffer. A reader that cannot keep up (its queue passes
// its bound, or one write does not finish within WriteBound) has its stream closed with the
// refusal slow-reader: logged by the caller, told to the reader where the protocol has a way (an
// SSE comment, a WebSocket close reason), and never waited on by the other streams. A stream that
// was closed for it drops what it held; the client connects again and reads the state anew.
package outbound

import (
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of every outgoing stream.
const (
	// WriteBound is how long one write to a stream (a message and its flush) may take; a reader
	// that takes no bytes for this long is closed slow-reader.
	WriteBound = 5 * time.Second
	// QueueMessages is how many messages may wait for one stream's reader; one more closes it
	// slow-reader.
	QueueMessages = 1024
	// QueueBytes is how many bytes may wait for one stream's reader; past it the stream is closed
	// slow-reader.
	QueueBytes = 4 << 20
	// SendBuffer is the kernel's send buffer of a stream's connection (SO_SNDBUF; Linux keeps
	// twice it). Left to itself the kernel takes on megabytes for a reader that stopped, and
	// the writes "succeed" until they fill; with it a stopped reader fills its socket within
	// a few hundred events and then meets WriteBound.
	SendBuffer = 64 << 10
)

// SlowReader is the refusal a stream closed for its reader is closed with.
func SlowReader(why string) *refusal.Refusal {
	return refusal.New(refusal.SlowReader, "%s; the relay closed the stream rather than wait (a reader must take every message within %v, and at most %d messages or %d bytes may wait for it). Connect again and read the stream", why, WriteBound, QueueMessages, QueueBytes)
}

// queue is one stream's bounded queue of messages. A zero queue is not usable: see newQueue.
type queue struct {
	mu    sync.Mutex
	items []item
	bytes int
	ended bool             // end was called: no more items, the rest is written
	gone  bool             // the reader went away (or the stream was closed): nothing more is written
	why   *refusal.Refusal // set when the stream was closed for its reader
	wake  chan struct{}    // has a value when items or state changed
}

// item is one thing to write: a response's status line (status != 0), or a message, flushed
// when flush is set; last marks the stream's last message (SSE.Last).
type item struct {
	status int
	data   []byte
	flush  bool
	last   bool
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// put queues it, or reports false when the stream is closed or ended. A put past the bounds
// closes the stream slow-reader (and reports false).
func (q *queue) put(it item) bool { return q.add(it, false) }

// putLast queues it as the last item and ends the queue, or reports false as put does.
func (q *queue) putLast(it item) bool { return q.add(it, true) }

func (q *queue) add(it item, last bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gone || q.ended {
		return false
	}
	if len(q.items) >= QueueMessages || q.bytes+len(it.data) > QueueBytes {
		q.why, q.gone = SlowReader("the reader fell behind: its queue passed its bound"), true
		q.items, q.bytes = nil, 0
		q.signal()
		return false
	}
	q.items = append(q.items, it)
	q.bytes += len(it.data)
	q.ended = q.ended || last
	q.signal()
	return true
}

// fail closes the stream, for its reader when why is set, unless it was closed already.
func (q *queue) fail(why *refusal.Refusal) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gone {
		return
	}
	q.why, q.gone = why, true
	q.items, q.bytes = nil, 0
	q.signal()
}

// lead queues it before every item queued so far.
func (q *queue) lead(it item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gone || q.ended {
		return false
	}
	q.items = append([]item{it}, q.items...)
	q.bytes += len(it.data)
	q.signal()
	return true
}

func (q *queue) end() {
	q.mu.Lock()
	q.ended = true
	q.mu.Unlock()
	q.signal()
}

// reason returns why the stream was closed, nil while it was not.
func (q *queue) reason() *refusal.Refusal {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.why
}

// take returns the items queued now and empties the queue; last is set once the stream was
// closed (why says why, nil when its reader went away), or ended: the items are then the last
// there will be. (Reporting an ended queue's last items as not last would lose the end: its
// wake may have been taken with theirs, and nothing would wake the writer again.)
func (q *queue) take() (items []item, why *refusal.Refusal, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gone {
		return nil, q.why, true
	}
	items, q.items, q.bytes = q.items, nil, 0
	return items, nil, q.ended
}
