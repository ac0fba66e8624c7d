package outbound

import "testing"

// TestAnEndTakenWithTheLastItemsIsNotLost: the writer takes the queue's items after one wake;
// when the last items and End arrive under that same wake, take must say they are the last, or
// the writer waits for a wake that never comes and the response hangs until its client gives
// up (seen on /mcp under load: a 400 answered after 30 s).
func TestAnEndTakenWithTheLastItemsIsNotLost(t *testing.T) {
	q := newQueue()
	q.put(item{status: 400})
	<-q.wake // the writer wakes
	if items, _, last := q.take(); len(items) != 1 || last {
		t.Fatalf("first take: %d items, last %v; want 1, not last", len(items), last)
	}
	q.put(item{data: []byte("the refusal")}) // its wake is pending
	q.end()                                  // its wake merges with the put's
	<-q.wake                                 // the writer wakes once for both
	items, _, last := q.take()
	if len(items) != 1 {
		t.Fatalf("second take: %d items; want the body", len(items))
	}
	if !last {
		select {
		case <-q.wake:
		default:
			t.Fatal("the queue was ended, take said its items were not the last, and no wake is left: the writer would wait for ever")
		}
	}
}
