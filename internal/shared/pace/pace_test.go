package pace

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, c := range []struct {
		name    string
		b       Backoff
		attempt int
		want    time.Duration
	}{
		{"the first new try waits First", Backoff{First: 20 * ms, Max: 250 * ms}, 0, 20 * ms},
		{"each further one twice the last", Backoff{First: 20 * ms, Max: 250 * ms}, 3, 160 * ms},
		{"never more than Max", Backoff{First: 20 * ms, Max: 250 * ms}, 4, 250 * ms},
		{"a Max below First is First", Backoff{First: 2 * time.Minute, Max: time.Minute}, 3, 2 * time.Minute},
		{"no First, no pause", Backoff{Max: time.Second}, 5, 0},
		{"a count past any shift", Backoff{First: 250 * ms, Max: 10 * time.Second}, math.MaxInt, 10 * time.Second},
		{"a cap past any doubling", Backoff{First: time.Second, Max: math.MaxInt64}, 200, math.MaxInt64},
		{"a negative count is the first", Backoff{First: 5 * time.Second, Max: time.Minute}, -1, 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := c.b.Delay(c.attempt); got != c.want {
				t.Errorf("%+v.Delay(%d) = %v; want %v", c.b, c.attempt, got, c.want)
			}
		})
	}
}

// TestJitterSpreadsWithinItsBounds: with Jitter j every pause lies in [d-d*j, d+d*j], and the
// pauses differ (callers that failed together come back apart).
func TestJitterSpreadsWithinItsBounds(t *testing.T) {
	t.Parallel()
	b := Backoff{First: 250 * time.Millisecond, Max: 10 * time.Second, Jitter: 0.2}
	for attempt, d := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		seen := map[time.Duration]bool{}
		for range 200 {
			got := b.Delay(attempt)
			if got < d*4/5 || got > d*6/5 {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", attempt, got, d*4/5, d*6/5)
			}
			seen[got] = true
		}
		if len(seen) < 100 {
			t.Errorf("Delay(%d) gave %d distinct pauses in 200; want them spread", attempt, len(seen))
		}
	}
	for _, j := range []float64{-1, 0} {
		if got := (Backoff{First: time.Second, Max: time.Second, Jitter: j}).Delay(0); got != time.Second {
			t.Errorf("with Jitter %v, Delay(0) = %v; want exactly 1s", j, got)
		}
	}
	for range 200 {
		if got := (Backoff{First: time.Second, Max: time.Second, Jitter: 5}).Delay(0); got < 0 || got > 2*time.Second {
			t.Fatalf("with Jitter 5 (taken as 1), Delay(0) = %v, outside [0, 2s]", got)
		}
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep of 1 ms under a live context said its context ended")
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ended, time.Hour) {
		t.Error("Sleep under an ended context said it waited an hour")
	}
	ending, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if Sleep(ending, time.Hour) {
		t.Error("Sleep whose context ended while it waited said it waited an hour")
	}
}
