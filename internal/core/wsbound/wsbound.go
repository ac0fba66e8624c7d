// Package wsbound bounds the writes to a coder/websocket connection with one timer per
// connection instead of a context per write.
//
// coder/websocket ties a write to its context with context.AfterFunc, and a context with a
// deadline holds a timer of its own: five allocations and a timer started and stopped on every
// frame of a live session. A Conn arms one timer while writes are under way and closes the
// connection (CloseNow) when none of them has finished within the bound, which is what
// coder/websocket does when a write's context expires. It is the WebSocket half of
// internal/core/outbound: a peer closed by the bound is a slow reader (SlowReader says so, for the log;
// a peer that reads nothing cannot be sent a close frame).
package wsbound

import (
	"context"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Conn writes messages to a WebSocket connection, each one bounded. It is safe for concurrent
// use; writes are ordered as coder/websocket orders them.
type Conn struct {
	ws    *websocket.Conn
	bound time.Duration
	timer *time.Timer

	mu       sync.Mutex
	pending  int       // writes under way
	deadline time.Time // when the oldest unfinished progress expires
	expired  bool      // the bound closed the connection
}

// New returns a Conn writing to ws; a write that cannot finish within bound of the last finished
// one (or of its own start, when none is under way) closes ws.
func New(ws *websocket.Conn, bound time.Duration) *Conn {
	c := &Conn{ws: ws, bound: bound}
	c.timer = time.AfterFunc(bound, c.expire)
	c.timer.Stop()
	return c
}

// Write writes one message of type typ. It fails when the connection is closed, or is closed
// meanwhile, by the bound among other reasons. The bytes are the caller's again once it returns.
func (c *Conn) Write(typ websocket.MessageType, p []byte) error {
	c.mu.Lock()
	if c.pending == 0 {
		c.arm()
	}
	c.pending++
	c.mu.Unlock()
	// Background: coder/websocket starts no AfterFunc for a context that cannot end.
	err := c.ws.Write(context.Background(), typ, p)
	c.mu.Lock()
	c.pending--
	if c.pending == 0 {
		c.timer.Stop()
	} else {
		c.arm() // progress: the writes still waiting have the whole bound again
	}
	c.mu.Unlock()
	return err
}

// arm starts the bound from now; c.mu is held.
func (c *Conn) arm() {
	c.deadline = time.Now().Add(c.bound)
	c.timer.Reset(c.bound)
}

// expire closes the connection when writes have been under way past the deadline; a timer that
// fired as a write finished (and another began) finds the deadline moved and does nothing.
func (c *Conn) expire() {
	c.mu.Lock()
	stuck := c.pending > 0 && !time.Now().Before(c.deadline)
	c.expired = c.expired || stuck
	c.mu.Unlock()
	if stuck {
		c.ws.CloseNow()
	}
}

// SlowReader reports whether the bound closed the connection: its peer took no bytes of a write
// for the bound (refusal slow-reader).
func (c *Conn) SlowReader() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expired
}
