package engine

import "sync/atomic"

// maxIdleWorkers bounds the goroutines workers keeps waiting for a call: a burst of concurrent
// calls leaves at most this many behind it.
const maxIdleWorkers = 4

// workers runs the page's calls each on a goroutine of its own, taking one kept from an earlier
// call when one waits. In the page's wasm a fresh goroutine starts on a small stack and grew it
// again on every call to what a call needs (the JSON, the schema's validation, the crossings
// into JavaScript: copystack, about 15 us a call), besides making the goroutine; a kept one has
// its stack grown already (until a collection shrinks it).
type workers struct {
	jobs chan func() // unbuffered: a send succeeds only when a kept goroutine waits
	idle atomic.Int32
}

func newWorkers() *workers { return &workers{jobs: make(chan func())} }

// run runs f on a goroutine other than the caller's, never waiting for one to be free.
func (w *workers) run(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.loop(f)
	}
}

// loop runs f, then waits for the next call, unless maxIdleWorkers wait already.
func (w *workers) loop(f func()) {
	for {
		f()
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		f = <-w.jobs
		w.idle.Add(-1)
	}
}
