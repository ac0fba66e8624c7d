package server

import (
	"net"
	"syscall"
)

// ReleaseOnClose returns ln with a Close that takes the socket out of listening before it closes
// ln's descriptor, so that once Close returns a new listener may bind the address at once.
//
// Closing a descriptor ends the socket only when no other descriptor refers to it, and a process
// forked from this one holds a copy of every descriptor from its fork to its exec, close-on-exec
// or not. A relay stopped while another goroutine of its process starts a program (a test binary
// running many relays, say) would otherwise keep listening in that child for as long as the exec
// takes, and a relay started again on the same address then meets "address already in use".
// shutdown(2) acts on the socket itself, whatever descriptors refer to it: a socket bound but no
// longer listening does not keep SO_REUSEADDR's bind, which Go's listeners use, from the address.
func ReleaseOnClose(ln net.Listener) net.Listener {
	if tcp, ok := ln.(*net.TCPListener); ok {
		return releasing{tcp}
	}
	return ln
}

// releasing is a TCP listener whose Close shuts the socket down first.
type releasing struct{ *net.TCPListener }

// Close implements net.Listener.
func (l releasing) Close() error {
	if rc, err := l.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RD) })
	}
	return l.TCPListener.Close()
}
