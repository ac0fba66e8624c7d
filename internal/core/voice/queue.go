package voice

import "sync"

// minQueueRing is the ring a frameQueue starts with at its first frame; it doubles as frames wait,
// up to outQueue.
const minQueueRing = 4

// keptQueueRing is the largest ring a frameQueue keeps once it is empty again; a larger one (a
// backlog that has drained) is let go.
const keptQueueRing = 16

// frameQueue holds the page's outgoing frames in order, at most outQueue of them, and has no
// writer goroutine: the caller that queues a frame while no one is writing writes it (deliver),
// and goes on with what others queued meanwhile. An idle session then holds neither a queue nor
// a goroutine's stack for its writes (BENCHMARKS.md, idle memory), and a frame is written
// without waking another goroutine. Its ring grows from nothing as frames wait, and is let go
// once a backlog has drained. Any number of goroutines push and deliver.
type frameQueue struct {
	mu      sync.Mutex
	ring    []outFrame
	head    int
	n       int
	writing bool       // a caller of deliver holds the writer's role
	closed  bool       // nothing is queued or written any more
	idle    *sync.Cond // on mu: the writer's role was given back

	space   chan struct{} // a frame was taken: a waiting pusher may look again
	stopped chan struct{} // closed with the queue
}

func newFrameQueue() *frameQueue {
	q := &frameQueue{space: make(chan struct{}, 1), stopped: make(chan struct{})}
	q.idle = sync.NewCond(&q.mu)
	return q
}

// tryPush queues f unless outQueue frames wait already or the queue is closed, and reports
// whether it did.
func (q *frameQueue) tryPush(f outFrame) bool {
	q.mu.Lock()
	if q.n == outQueue || q.closed {
		q.mu.Unlock()
		return false
	}
	if q.n == len(q.ring) {
		ring := make([]outFrame, max(minQueueRing, 2*len(q.ring)))
		for i := range q.n {
			ring[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = ring, 0
	}
	q.ring[(q.head+q.n)%len(q.ring)] = f
	q.n++
	room := q.n < outQueue
	q.mu.Unlock()
	if room {
		wake(q.space) // another waiting pusher may fit too: a take wakes one pusher at most
	}
	return true
}

// push queues f, waiting while the queue is full; false when stop or the queue closed first.
func (q *frameQueue) push(f outFrame, stop <-chan struct{}) bool {
	for !q.tryPush(f) {
		select {
		case <-q.space:
		case <-q.stopped:
			return false
		case <-stop:
			return false
		}
	}
	return true
}

func (q *frameQueue) takeLocked() (outFrame, bool) {
	if q.n == 0 {
		return outFrame{}, false
	}
	f := q.ring[q.head]
	q.ring[q.head] = outFrame{} // the frame's bytes are the writer's now
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	if q.n == 0 && len(q.ring) > keptQueueRing {
		q.ring, q.head = nil, 0
	}
	return f, true
}

// deliver writes the waiting frames in order with write, those queued by others while it writes
// included, unless another caller is writing them already (who then writes them): one caller
// writes at a time. When write reports that writing is over (false: the frame closed the
// socket, or the write failed), the queue closes: what waits is dropped, and nothing is queued
// or written any more.
func (q *frameQueue) deliver(write func(outFrame) bool) {
	q.mu.Lock()
	if q.writing || q.closed {
		q.mu.Unlock()
		return
	}
	q.writing = true
	for {
		f, ok := q.takeLocked()
		if !ok {
			break
		}
		q.mu.Unlock()
		wake(q.space)
		more := write(f)
		q.mu.Lock()
		if !more {
			q.closeLocked()
			break
		}
	}
	q.writing = false
	q.idle.Broadcast()
	q.mu.Unlock()
}

// close closes the queue once the caller writing, if any, has written what waits and given the
// role back; later frames are refused.
func (q *frameQueue) close() {
	q.mu.Lock()
	for q.writing {
		q.idle.Wait()
	}
	q.closeLocked()
	q.mu.Unlock()
}

func (q *frameQueue) closeLocked() {
	if q.closed {
		return
	}
	q.closed = true
	q.ring, q.head, q.n = nil, 0, 0
	close(q.stopped)
}

// wake signals c without waiting; a signal already pending is enough.
func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
