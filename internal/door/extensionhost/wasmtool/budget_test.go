package wasmtool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// fakeClock is a run clock the test sets by hand.
func fakeClock(cpu bool, used time.Duration) runClock {
	return runClock{cpu: cpu, used: func() time.Duration { return used }, release: func() {}}
}

// watched runs the watchdog of a run measured by clock until it stops the run (bounded by a
// minute) and answers the refusal the runner gives for it.
func watched(t *testing.T, clock runClock, budget time.Duration) (cause error, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	u := &metered{clock: clock, start: time.Now(), done: make(chan struct{}), ended: make(chan struct{})}
	u.ctx, u.cancel = context.WithCancelCause(ctx)
	go u.watch(budget, budget*BackstopFactor)
	<-u.ended
	cause = context.Cause(u.ctx)
	err := (&Runner{limits: Limits{Timeout: budget}.withDefaults()}).failed(u, &boundedMemory{}, u.ctx.Err(), "running run")
	if refusal.RuleOf(err) != refusal.TimeExceeded {
		t.Fatalf("refused %v, want time-exceeded", err)
	}
	r, _ := refusal.As(err)
	return cause, r.Why
}

// TestTheWatchdogStopsARunByItsClockOrTheBackstop: a run whose clock has counted the budget is
// stopped naming the CPU time it used (or the wall clock where the clock is the wall clock); a run
// whose clock never reaches the budget, as a module starved of the CPU, is stopped at the
// wall-clock backstop naming the wait.
func TestTheWatchdogStopsARunByItsClockOrTheBackstop(t *testing.T) {
	t.Parallel()
	const budget = 20 * time.Millisecond
	cause, why := watched(t, fakeClock(true, 23*time.Millisecond), budget)
	if !errors.Is(cause, errOverBudget) || !strings.Contains(why, "used 23 ms of CPU while running run, past its budget of 20 ms") {
		t.Fatalf("a run over its CPU budget: cause %v, why %q", cause, why)
	}
	cause, why = watched(t, fakeClock(false, budget), budget)
	if !errors.Is(cause, errOverBudget) || !strings.Contains(why, "still running run after 20 ms") {
		t.Fatalf("a run over its wall-clock budget: cause %v, why %q", cause, why)
	}
	cause, why = watched(t, fakeClock(true, 3*time.Millisecond), budget)
	if !errors.Is(cause, errBackstop) || !strings.Contains(why, "used 3 of its 20 ms of CPU: it waited for the CPU") {
		t.Fatalf("a run starved of the CPU: cause %v, why %q", cause, why)
	}
}
