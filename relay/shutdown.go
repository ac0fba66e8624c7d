package main

import (
	"net"
	"net/http"
	"sync"
)

// freshConns tracks the connections that have not begun a request. http.Server.Shutdown waits for
// those as if they were busy until they are five seconds old, as long as the relay's whole grace:
// a browser's speculative preconnect, which may never send a request, then makes a clean
// shutdown fail. Closing them when the shutdown begins loses nothing, since nothing was asked on
// them.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// track is an http.Server.ConnState hook.
func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		f.conns = map[net.Conn]struct{}{}
	}
	if st == http.StateNew {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

// closeAll closes every connection that has still not begun a request; for RegisterOnShutdown,
// which runs once the listeners are closed, so no new one arrives after it.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
		delete(f.conns, c)
	}
}
