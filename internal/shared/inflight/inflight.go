// Package inflight counts work in progress that a shutdown lets finish, for a bounded time,
// before it closes what the work writes to: the turns whose outcome is still to be published,
// the MCP calls still being answered.
package inflight

import (
	"sync"
	"time"
)

// Count is a number of pieces of work in progress. Unlike a sync.WaitGroup, work may begin while
// another goroutine waits, and a wait is bounded. The zero Count is idle.
type Count struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed when n falls to zero
}

// Add counts one more piece of work; Done must follow it.
func (c *Count) Add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.none = make(chan struct{})
	}
	c.n++
}

// Done counts one piece of work ended.
func (c *Count) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		close(c.none)
	}
}

// Len is how many pieces of work are in progress now.
func (c *Count) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Wait reports whether no work is in progress, waiting up to bound for that.
func (c *Count) Wait(bound time.Duration) bool {
	c.mu.Lock()
	none, idle := c.none, c.n == 0
	c.mu.Unlock()
	if idle {
		return true
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-none:
		return true
	case <-t.C:
		return false
	}
}
