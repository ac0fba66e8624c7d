package voice

import "sync"

// minQueueRing is the ring a frameQueue starts with at its first frame; it doubles as frames wait,
// up to outQueue.
const minQueueRing = 4

// keptQueueRing is the largest ring a frameQueue keeps once it is empty again; a larger one (a
// backlog that has drained) is let go.
const keptQueueRing = 16

// frameQueue holds the page's outgoing frames in order, at most outQueue of them. Its ring grows
// from nothing as frames wait, so a session that has sent nothing holds no queue: a buffered
// channel of outQueue frames held 16 KiB for every session, idle or not (BENCHMARKS.md, idle
// memory). One goroutine pops; any number push.
type frameQueue struct {
	mu   sync.Mutex
	ring []outFrame
	head int
	n    int

	ready chan struct{} // a frame was queued: the popper may look again
	space chan struct{} // a frame was taken: a waiting pusher may look again
}

func newFrameQueue() *frameQueue {
	return &frameQueue{ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// tryPush queues f unless outQueue frames wait already, and reports whether it did.
func (q *frameQueue) tryPush(f outFrame) bool {
	q.mu.Lock()
	if q.n == outQueue {
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
	wake(q.ready)
	if room {
		wake(q.space) // another waiting pusher may fit too: a pop wakes one pusher at most
	}
	return true
}

// push queues f, waiting while the queue is full; false when stop closed first.
func (q *frameQueue) push(f outFrame, stop <-chan struct{}) bool {
	for !q.tryPush(f) {
		select {
		case <-q.space:
		case <-stop:
			return false
		}
	}
	return true
}

// pop takes the oldest frame, waiting for one; false when stop closed first.
func (q *frameQueue) pop(stop <-chan struct{}) (outFrame, bool) {
	for {
		q.mu.Lock()
		if q.n > 0 {
			f := q.ring[q.head]
			q.ring[q.head] = outFrame{} // the frame's bytes are the writer's now
			q.head = (q.head + 1) % len(q.ring)
			q.n--
			if q.n == 0 && len(q.ring) > keptQueueRing {
				q.ring, q.head = nil, 0
			}
			q.mu.Unlock()
			wake(q.space)
			return f, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-stop:
			return outFrame{}, false
		}
	}
}

// wake signals c without waiting; a signal already pending is enough.
func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
