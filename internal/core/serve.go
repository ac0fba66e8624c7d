package core

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/server"
)

// ShutdownGrace bounds how long a graceful shutdown waits for requests in flight.
const ShutdownGrace = 5 * time.Second

// ControlSocketFile is the Unix socket, in the host state directory, on which a serving relay
// also answers its API. `relay sessions` and `relay ticket` reach the running relay through it:
// no address to know, no certificate to trust, and only the state directory's owner can open it
// (the directory is 0700, the socket 0600). The commands still send the host token.
const ControlSocketFile = ".relay.sock"

// Serve serves the page and the API on the Listener (and on the control socket, and ACME's
// challenges) until ctx ends, then shuts down gracefully: /api/ready turns 503 at once, every
// /channel and /live socket is closed, and requests in flight get ShutdownGrace to finish. It
// prints the address and the sign-in banner on the Console first. It returns nil after a clean
// shutdown, and closes the listeners either way: once it returns, a new listener may bind the
// address at once, even while a process forked from this one still holds a copy of the listener's
// descriptor (server.ReleaseOnClose).
func (c *Core) Serve(ctx context.Context) error {
	defer c.closeGate()
	defer c.Hub.Close()
	ln := server.LimitConns(server.ReleaseOnClose(c.cfg.Listener), server.ConnLimits{Exempt: trustedPeer(c.cfg.TrustedProxies), TLS: c.tls != nil, Log: c.Log})
	if c.tls != nil {
		ln = tls.NewListener(ln, c.tls)
	}
	extra := []net.Listener{c.inproc} // executors of this process (DialInProcess)
	if cl, err := listenControl(c.State.Path()); err != nil {
		c.Log.Warn("no control socket: `relay sessions` and `relay ticket` cannot reach this relay", "err", err)
	} else {
		extra = append(extra, cl)
	}
	if c.cfg.Challenges != nil {
		challenges := server.ReleaseOnClose(c.cfg.Challenges)
		if c.acme != nil {
			// Only short GETs come here, so a whole-request bound (ReadTimeout) is safe.
			go (&http.Server{Handler: c.acme, ReadHeaderTimeout: server.HeaderTimeout, ReadTimeout: server.BodyTimeout, IdleTimeout: server.IdleTimeout,
				ErrorLog: slog.NewLogLogger(c.Log.Handler(), slog.LevelWarn)}).Serve(server.LimitConns(challenges, server.ConnLimits{Exempt: trustedPeer(c.cfg.TrustedProxies), Log: c.Log}))
		}
		defer challenges.Close()
	}
	defer func() {
		ln.Close()
		for _, l := range extra {
			l.Close()
		}
	}()

	fresh := &freshConns{}
	hs := &http.Server{
		Handler:           c.Server,
		ReadHeaderTimeout: server.HeaderTimeout,
		IdleTimeout:       server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(c.Log.Handler(), slog.LevelWarn),
		ConnContext:       server.ConnContext, // each connection is judged at its requests' headers
		ConnState: func(c net.Conn, st http.ConnState) {
			fresh.track(c, st)
			server.ConnState(c, st)
		},
	}
	hs.RegisterOnShutdown(fresh.closeAll)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	for _, l := range extra {
		go hs.Serve(l)
	}
	fmt.Fprintf(c.Console, "voicebox on %s://%s\n", c.scheme, ln.Addr())
	c.banner()
	select {
	case err := <-done:
		c.Log.Error("server stopped", "err", err)
		return fmt.Errorf("the server stopped: %w", err)
	case <-ctx.Done():
	}
	c.stopping.Store(true)
	c.settleWaits()
	c.closeDoors()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		c.Log.Warn("shutdown did not finish in time", "err", err)
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := c.Server.Drain(shutdownCtx); err != nil {
		c.Log.Warn("sockets still open when the shutdown's grace ended", "err", err)
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// banner tells the host how to sign in (or warns that there is no gate) and where certificates
// come from.
func (c *Core) banner() {
	if c.Gate != nil {
		if ticket, err := c.Gate.NewTicket(); err != nil {
			fmt.Fprintf(c.Warnings, "loopback gate on, but no sign-in address could be made (%v): use `relay ticket` once the sessions can be reached\n", err)
		} else {
			fmt.Fprintf(c.Console, "loopback gate on: open %s/?%s=%s once to start a session (single use; `relay ticket` makes another)\n", c.base, server.BootstrapParam, ticket)
		}
	} else {
		fmt.Fprintf(c.Warnings, "loopback gate off: any process on this machine, of any user, can use the page and the API (set VOICEBOX_LOOPBACK_AUTH=1 to require a session)\n")
	}
	if c.cfg.ACME.Host != "" {
		fmt.Fprintf(c.Console, "certificates for %s come from the ACME CA on first use, cached in %s\n", c.cfg.ACME.Host, filepath.Join(c.State.Path(), ACMECacheDir))
	}
}

// listenControl listens on the state directory's control socket. A socket left by a relay that
// died is replaced; one that another running relay answers on is left alone, with an error.
func listenControl(dir string) (net.Listener, error) {
	p := filepath.Join(dir, ControlSocketFile)
	if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("another relay serving this state directory answers on %s; `relay sessions` and `relay ticket` will reach that one", p)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the stale control socket: %w", err)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

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

// trustedPeer reports whether a peer is one of the trusted proxies, which carry every client's
// connections and so are exempt from the per-address connection cap.
func trustedPeer(trusted []netip.Prefix) func(netip.Addr) bool {
	return func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
}
