// Package pace paces a loop that asks again after a failure: the pause before each new try
// doubles from a first pause up to a cap, spread by a jitter where many callers may have failed
// at once (a relay's restart drops every page). It is the one rule for how long to wait; what a
// loop retries on, how it is bounded (a context, a number of tries, none) and what else may end
// its wait stay the loop's own.
//
// Its users: the page's reconnection (internal/engine), the paired machine's
// (internal/machine), a remote MCP server's session made again (mcphost) and the fleet's
// operations while NATS has no leader (fleet's steadily). It builds for js/wasm.
package pace

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a pacing: the pause after the first failure is First, each further one twice the
// last, never more than Max.
type Backoff struct {
	// First is the pause before the first new try (Delay(0)); zero or less means none.
	First time.Duration
	// Max caps the pause; a Max below First is First (a pause never shrinks).
	Max time.Duration
	// Jitter spreads each pause evenly over [d-d*Jitter, d+d*Jitter], so callers that failed
	// together do not come back together; 0 means none, 1 at most.
	Jitter float64
}

// Delay is the pause before the new try that follows failed tries: 0 for the first new try, 1
// for the second, and so on. Any attempt count is safe (no overflow past the cap).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.First
	if d <= 0 {
		return 0
	}
	limit := max(b.Max, d)
	for i := 0; i < attempt && d < limit; i++ {
		if d > limit/2 {
			d = limit // and 2*d, past it, might not fit
		} else {
			d *= 2
		}
	}
	if j := min(time.Duration(float64(d)*min(max(b.Jitter, 0), 1)), math.MaxInt64-d); j > 0 {
		d = d - j + time.Duration(rand.Int64N(int64(2*j)+1))
	}
	return d
}

// Sleep waits d, or until ctx ends; it reports whether it waited all of d (false: ctx ended).
func Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
