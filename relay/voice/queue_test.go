package voice

import (
	"strconv"
	"sync"
	"testing"
)

func frameOf(i int) outFrame { return outFrame{data: []byte(strconv.Itoa(i))} }

// popInOrder pops a frame and checks that it is frame *next, then counts it.
func popInOrder(t *testing.T, q *frameQueue, next *int) {
	t.Helper()
	f, ok := q.pop(nil)
	if !ok || string(f.data) != strconv.Itoa(*next) {
		t.Fatalf("pop = %q, %v; want frame %d", f.data, ok, *next)
	}
	*next++
}

// TestFrameQueue: frames come out in the order they went in, at most outQueue wait, audio past
// that is refused, a full queue holds pushers until a pop makes room, and stop ends every wait.
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
				f, _ := q.pop(nil)
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
			for range outQueue + waiting {
				if _, ok := q.pop(nil); !ok {
					t.Fatal("pop failed")
				}
			}
			pushed.Wait()
			if q.n != 0 {
				t.Fatalf("%d frames left", q.n)
			}
		}},
		{"stop ends a waiting push and a waiting pop", func(t *testing.T, q *frameQueue) {
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
			for q.n > 0 {
				q.pop(nil)
			}
			if _, ok := q.pop(stop); ok {
				t.Fatal("a pop from an empty queue succeeded after stop")
			}
		}},
		{"a drained backlog lets its ring go", func(t *testing.T, q *frameQueue) {
			for i := range 100 {
				q.tryPush(frameOf(i))
			}
			for range 100 {
				q.pop(nil)
			}
			if q.ring != nil {
				t.Fatalf("an empty queue keeps a ring of %d", len(q.ring))
			}
			q.tryPush(frameOf(0))
			q.pop(nil)
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
