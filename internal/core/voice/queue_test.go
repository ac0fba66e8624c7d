package voice

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

func frameOf(i int) outFrame { return outFrame{data: []byte(strconv.Itoa(i))} }

// popInOrder pops a frame and checks that it is frame *next, then counts it.
func popInOrder(t *testing.T, q *frameQueue, next *int) {
	t.Helper()
	f, ok := q.take()
	if !ok || string(f.data) != strconv.Itoa(*next) {
		t.Fatalf("pop = %q, %v; want frame %d", f.data, ok, *next)
	}
	*next++
}

// TestFrameQueue: frames come out in the order they went in, at most outQueue wait, audio past
// that is refused, a full queue holds pushers until a take makes room, stop and close end a
// waiting push, and a write that ends the socket closes the queue.
func TestFrameQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, q *frameQueue)
	}{
		{"order across the ring's growth and wrap", func(t *testing.T, q *frameQueue) {
			// Two in, one out, so the ring grows while its head moves round.
			in, out := 0, 0
			for range 100 {
				q.tryPush(frameOf(in))
				q.tryPush(frameOf(in + 1))
				in += 2
				popInOrder(t, q, &out)
			}
			for q.n > 0 {
				popInOrder(t, q, &out)
			}
			if out != in {
				t.Fatalf("%d frames out of %d", out, in)
			}
		}},
		{"the bound refuses audio", func(t *testing.T, q *frameQueue) {
			for i := range outQueue {
				if !q.tryPush(frameOf(i)) {
					t.Fatalf("push %d refused under the bound", i)
				}
			}
			if q.tryPush(frameOf(outQueue)) {
				t.Fatal("a push past outQueue was queued")
			}
			for i := range outQueue {
				f, _ := q.take()
				if string(f.data) != strconv.Itoa(i) {
					t.Fatalf("frame %d is %s", i, f.data)
				}
			}
		}},
		{"full: every waiting pusher gets in as frames are taken", func(t *testing.T, q *frameQueue) {
			for i := range outQueue {
				q.tryPush(frameOf(i))
			}
			const waiting = 5
			var pushed sync.WaitGroup
			for i := range waiting {
				pushed.Go(func() {
					if !q.push(frameOf(outQueue+i), nil) {
						t.Error("push gave up")
					}
				})
			}
			for range outQueue {
				if _, ok := q.take(); !ok {
					t.Fatal("take failed")
				}
			}
			pushed.Wait() // each take made room for one of them
			for range waiting {
				if _, ok := q.take(); !ok {
					t.Fatal("a waiting pusher's frame is missing")
				}
			}
			if q.n != 0 {
				t.Fatalf("%d frames left", q.n)
			}
		}},
		{"stop ends a waiting push", func(t *testing.T, q *frameQueue) {
			stop := make(chan struct{})
			for i := range outQueue {
				q.tryPush(frameOf(i))
			}
			gave := make(chan bool)
			go func() { gave <- q.push(frameOf(-1), stop) }()
			close(stop)
			if <-gave {
				t.Fatal("a push into a full queue succeeded after stop")
			}
			if _, ok := q.take(); !ok {
				t.Fatal("the waiting frames went with the stop")
			}
		}},
		{"close ends a waiting push and refuses later frames", func(t *testing.T, q *frameQueue) {
			for i := range outQueue {
				q.tryPush(frameOf(i))
			}
			gave := make(chan bool)
			go func() { gave <- q.push(frameOf(-1), nil) }()
			q.close()
			if <-gave {
				t.Fatal("a push into a full queue succeeded after close")
			}
			if q.tryPush(frameOf(0)) {
				t.Fatal("a closed queue took a frame")
			}
			if _, ok := q.take(); ok {
				t.Fatal("a closed queue kept its frames")
			}
			q.deliver(func(outFrame) bool { t.Fatal("a closed queue wrote"); return true })
		}},
		{"a write that ends the socket closes the queue", func(t *testing.T, q *frameQueue) {
			for i := range 3 {
				q.tryPush(frameOf(i))
			}
			var wrote []string
			q.deliver(func(f outFrame) bool { wrote = append(wrote, string(f.data)); return len(wrote) < 2 })
			if len(wrote) != 2 || q.n != 0 || !q.closed {
				t.Fatalf("wrote %q, %d left, closed %v; want 2 written, none left, closed", wrote, q.n, q.closed)
			}
			if q.push(frameOf(9), nil) {
				t.Fatal("a push after the end succeeded")
			}
		}},
		{"a drained backlog lets its ring go", func(t *testing.T, q *frameQueue) {
			for i := range 100 {
				q.tryPush(frameOf(i))
			}
			for range 100 {
				q.take()
			}
			if q.ring != nil {
				t.Fatalf("an empty queue keeps a ring of %d", len(q.ring))
			}
			q.tryPush(frameOf(0))
			q.take()
			if len(q.ring) != minQueueRing {
				t.Fatalf("a small ring (%d) was not kept", len(q.ring))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFrameQueue())
		})
	}
}

// TestFrameQueueDeliverHammer: many goroutines queue and deliver at once, as the vendor's reader,
// the page's reader and tool calls do; every frame is written once, one write at a time, each
// goroutine's frames in the order it queued them, and none is left waiting. Run with -race.
func TestFrameQueueDeliverHammer(t *testing.T) {
	t.Parallel()
	const pushers, frames = 8, 2000
	q := newFrameQueue()
	var (
		writing atomic.Bool
		mu      sync.Mutex
		last    = make(map[int]int) // pusher -> its last frame written
		written int
	)
	write := func(f outFrame) bool {
		if !writing.CompareAndSwap(false, true) {
			t.Error("two writes at once")
		}
		var p, i int
		fmt.Sscanf(string(f.data), "%d/%d", &p, &i)
		mu.Lock()
		if prev, ok := last[p]; ok && i <= prev {
			t.Errorf("pusher %d: frame %d after %d", p, i, prev)
		}
		last[p] = i
		written++
		mu.Unlock()
		writing.Store(false)
		return true
	}
	var wg sync.WaitGroup
	for p := range pushers {
		wg.Go(func() {
			for i := range frames {
				f := outFrame{data: []byte(fmt.Sprintf("%d/%d", p, i))}
				if !q.push(f, nil) {
					t.Error("push gave up")
					return
				}
				q.deliver(write)
			}
		})
	}
	wg.Wait()
	q.close()
	if written != pushers*frames {
		t.Fatalf("%d frames written of %d", written, pushers*frames)
	}
}

// take takes the oldest frame without waiting, as deliver does for each frame it writes; false
// when none waits. The tests take frames one by one with it.
func (q *frameQueue) take() (outFrame, bool) {
	q.mu.Lock()
	f, ok := q.takeLocked()
	q.mu.Unlock()
	if ok {
		wake(q.space)
	}
	return f, ok
}
