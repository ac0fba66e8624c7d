// Package sessiontest has a manual clock for tests of session expiry: time moves only when the
// test says so, and timers due by then fire, in order, inside Advance.
package sessiontest

import (
	"sort"
	"sync"
	"time"
)

// Clock is a session.Clock whose time moves only by Advance. The zero value is not usable; call
// NewClock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers map[int]*timer
}

type timer struct {
	at  time.Time
	seq int
	f   func()
}

// NewClock returns a clock that reads start until advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start, timers: map[int]*timer{}} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for d from now.
func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	id := c.seq
	c.timers[id] = &timer{at: c.now.Add(d), seq: id, f: f}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[id]
		delete(c.timers, id)
		return ok
	}
}

// Advance moves the clock d forward and runs every timer due by then, earliest first, on the
// caller's goroutine; it returns when they have run.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	for id, t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
			delete(c.timers, id)
		}
	}
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool {
		if !due[i].at.Equal(due[j].at) {
			return due[i].at.Before(due[j].at)
		}
		return due[i].seq < due[j].seq
	})
	for _, t := range due {
		t.f()
	}
}
