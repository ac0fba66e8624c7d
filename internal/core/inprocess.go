package core

import (
	"context"
	"crypto/subtle"
	"net"
	"sync"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hub"
)

// An executor in this process (a door serving a folder of the machine, VOICEBOX_WORKSPACE)
// reaches the core as a paired machine environment does, through /channel with a bearer and a
// hello, so it meets the same hub, the same admitted set and the same walls. Two things differ:
// it dials the core through memory (DialInProcess) instead of the network, so no address, TLS
// or certificate stands between them, and its pairing (PairInProcess) is kept in memory for the
// life of the process, never written to the pairings or shared with a fleet.

// DialInProcess connects to the core's HTTP server through memory; it is a net.Dialer's
// DialContext (the network and address are ignored). It waits until Serve serves, or ctx ends.
func (c *Core) DialInProcess(ctx context.Context, _, _ string) (net.Conn, error) {
	return c.inproc.dial(ctx)
}

// PairInProcess pairs an executor of this process as name and returns its bearer, which only
// this process knows: the hub takes it as it takes a paired bearer, and `relay pair --list`
// never lists it. The name is what GET /api/root reports while it holds the root; it should be
// one hoststate.ValidName refuses (a space, a colon), so no pairing made with `relay pair` has it.
func (c *Core) PairInProcess(name string) (bearer string) {
	return c.local.pair(name)
}

// localPairings are the hub's pairings: the in-process ones, then the host's.
type localPairings struct {
	hub.Pairings
	mu     sync.Mutex
	byHash map[string]string // hoststate.HashBearer of the bearer -> name
}

func (p *localPairings) pair(name string) string {
	bearer := hoststate.NewBearer()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byHash == nil {
		p.byHash = map[string]string{}
	}
	p.byHash[hoststate.HashBearer(bearer)] = name
	return bearer
}

// Lookup implements hub.Pairings.
func (p *localPairings) Lookup(bearer string) (string, bool, error) {
	h := hoststate.HashBearer(bearer)
	p.mu.Lock()
	for k, name := range p.byHash {
		if subtle.ConstantTimeCompare([]byte(k), []byte(h)) == 1 {
			p.mu.Unlock()
			return name, true, nil
		}
	}
	p.mu.Unlock()
	return p.Pairings.Lookup(bearer)
}

// Paired implements hub.Pairings: an in-process pairing lasts as long as the process.
func (p *localPairings) Paired(name string) (bool, error) {
	p.mu.Lock()
	for _, n := range p.byHash {
		if n == name {
			p.mu.Unlock()
			return true, nil
		}
	}
	p.mu.Unlock()
	return p.Pairings.Paired(name)
}

// memListener is a net.Listener whose connections are made in this process (net.Pipe).
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) dial(ctx context.Context) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
		server.Close()
		client.Close()
		return nil, ctx.Err()
	}
	server.Close()
	client.Close()
	return nil, net.ErrClosed
}

// Accept implements net.Listener.
func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *memListener) Addr() net.Addr { return memAddr{} }

// memAddr is the address of the in-process listener and its connections.
type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "in-process" }
