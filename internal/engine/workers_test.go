package engine

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// goroutineID is the running goroutine's number, from its stack's first line.
func goroutineID() string {
	buf := make([]byte, 64)
	line, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), " [")
	return line
}

// TestWorkersKeepTheirGoroutines: calls one after another run on one goroutine kept between
// them (its stack grown once), never the caller's; calls at once each get one; and once a burst
// is over at most maxIdleWorkers goroutines wait for the next.
func TestWorkersKeepTheirGoroutines(t *testing.T) {
	w := newWorkers()
	ran := make(chan string)
	mine := goroutineID()
	var ids []string
	for range 5 {
		w.run(func() { ran <- goroutineID() })
		ids = append(ids, <-ran)
		for w.idle.Load() == 0 { // the goroutine reaches its wait after it handed its id over
			runtime.Gosched()
		}
	}
	for _, id := range ids {
		if id != ids[0] || id == mine {
			t.Fatalf("calls one after another ran on %v (the caller is %s), want one goroutine kept", ids, mine)
		}
	}

	const burst = 3 * maxIdleWorkers
	var started, release sync.WaitGroup
	started.Add(burst)
	release.Add(1)
	for range burst {
		w.run(func() { started.Done(); release.Wait() })
	}
	started.Wait() // every call of the burst ran at once: none waited for another to end
	before := runtime.NumGoroutine()
	release.Done()
	// The burst's goroutines beyond maxIdleWorkers end; the rest wait.
	for end := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before-burst+maxIdleWorkers || w.idle.Load() != maxIdleWorkers; {
		if time.Now().After(end) {
			t.Fatalf("after the burst %d goroutines wait and %d run (%d before it ended), want %d waiting and the rest ended",
				w.idle.Load(), runtime.NumGoroutine(), before, maxIdleWorkers)
		}
		runtime.Gosched()
	}
}
