package wasmtool

import (
	"context"
	"errors"
	"time"
)

// BackstopFactor bounds a run's wall clock at this many times its budget (Limits.Timeout) unless
// Limits.Backstop says otherwise: 30 s by default. The budget counts the CPU time the module used
// (on Linux), so a module that a busy machine starves of the CPU would otherwise hold its wasm slot
// and its caller without end.
const BackstopFactor = 6

// minWatch is the least time the watchdog sleeps between two readings of the run's clock.
const minWatch = time.Millisecond

// Why a watchdog stopped a run (context.Cause of the run's context).
var (
	errOverBudget = errors.New("the module used its time budget")
	errBackstop   = errors.New("the module waited for the CPU past the wall-clock backstop")
	errMemory     = errors.New("the module grew its memory past the bound")
)

// runClock measures one run's use of its budget.
type runClock struct {
	// cpu says the clock counts the CPU time of the thread running the module, not the wall clock.
	cpu bool
	// used is the time counted since the run started; any goroutine may call it until release.
	used func() time.Duration
	// release ends the measure; it is called on the goroutine that started it.
	release func()
}

// wallClock measures a run on the wall clock.
func wallClock() runClock {
	start := time.Now()
	return runClock{used: func() time.Duration { return time.Since(start) }, release: func() {}}
}

// metered is one instantiation and call of a module under its budget: it runs on the goroutine that
// started it (wazero runs a module's code on the calling goroutine), and a watchdog goroutine
// cancels ctx once the clock has counted the budget, or once the wall clock has passed the
// backstop.
type metered struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	clock  runClock
	start  time.Time
	done   chan struct{} // closed by end: the watchdog stops
	ended  chan struct{} // closed by the watchdog once it stopped
}

// startMetered starts the clock and the watchdog of a run with budget and backstop, within parent.
func startMetered(parent context.Context, budget, backstop time.Duration) *metered {
	ctx, cancel := context.WithCancelCause(parent)
	u := &metered{ctx: ctx, cancel: cancel, clock: startClock(), start: time.Now(), done: make(chan struct{}), ended: make(chan struct{})}
	go u.watch(budget, backstop)
	return u
}

// watch cancels the run once its clock counts budget or the wall clock passes backstop. A
// thread's CPU time never runs ahead of the wall clock, so sleeping for what is left of the budget
// never lets the run overshoot it by more than one sleep's lateness.
func (u *metered) watch(budget, backstop time.Duration) {
	defer close(u.ended)
	for {
		left, wait := budget-u.clock.used(), backstop-time.Since(u.start)
		switch {
		case left <= 0:
			u.cancel(errOverBudget)
			return
		case wait <= 0:
			u.cancel(errBackstop)
			return
		}
		t := time.NewTimer(max(min(left, wait), minWatch))
		select {
		case <-u.done:
			t.Stop()
			return
		case <-u.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// end stops the watchdog, then the clock (a thread's clock is read only while the run holds it).
func (u *metered) end() {
	close(u.done)
	<-u.ended
	u.clock.release()
	u.cancel(nil)
}
