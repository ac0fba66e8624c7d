package server

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds on how long a request may take to arrive. Together with MaxConnsPerClient they keep
// a client that opens connections and never finishes a request from holding the relay's file
// descriptors and memory: each such connection ends within HeaderTimeout (an unfinished header)
// or BodyIdleTimeout (a stalled body), and one address holds at most MaxConnsPerClient at once.
// WebSockets and the event stream, once their request is read, are not bound by these: their
// routes keep their own bounds (socket limits, hello bounds, pings).
const (
	// HeaderTimeout bounds reading a request's header, from the first byte to the blank line.
	HeaderTimeout = 10 * time.Second
	// BodyIdleTimeout bounds the wait for each part of a request body: the first byte, and
	// every byte after a pause. A body that stalls longer is refused body-timeout (408) and its
	// connection closed.
	BodyIdleTimeout = 10 * time.Second
	// BodyTimeout bounds reading a whole request body, however steadily it trickles in.
	BodyTimeout = 30 * time.Second
	// IdleTimeout bounds how long a kept-alive connection waits for its next request.
	IdleTimeout = 60 * time.Second
)

// MaxConnsPerClient bounds the connections one client address holds open at once (an IPv6
// client's whole /64 counts as one address). A page with its event stream, its sockets, its
// mini-apps' own hosts and a few tabs holds a few dozen; the bound is far above that, and far
// below what exhausts the relay's file descriptors. The connection over it is answered 429
// too-many-connections (on plain HTTP; over TLS it is closed) and closed. On a loopback bind
// every local process shares 127.0.0.1 (or picks another 127.x address): this bounds what one
// address holds, not who may connect.
const MaxConnsPerClient = 256

// maxRefusing bounds the connections being told too-many-connections at once; past it an
// over-bound connection is closed without a word, so refusing costs nothing without bound.
const maxRefusing = 64

// refuseLinger bounds how long a refused connection is kept to deliver its 429.
const refuseLinger = time.Second

// floodConns is how many connections open at once make a flood: once that many have been open
// and half of them have closed, the relay hands the memory they took back to the system
// (debug.FreeOSMemory) floodSettle after the last of them closes, instead of at its next
// collection, which an idle relay may not reach for minutes.
const (
	floodConns  = 512
	floodSettle = time.Second
)

// ConnLimits configures LimitConns.
type ConnLimits struct {
	// PerClient bounds one client address's connections at once; zero means MaxConnsPerClient.
	PerClient int
	// Exempt, when set, names peers the bound does not apply to: trusted reverse proxies, which
	// carry every client's connections and bound them themselves.
	Exempt func(netip.Addr) bool
	// TLS says the listener's connections will speak TLS, so an over-bound one is closed without
	// a plain-HTTP answer.
	TLS bool
	// Log receives a line when an address first meets its bound; nil discards.
	Log *slog.Logger
}

// LimitConns returns ln with its accepted connections bounded per client address (see
// MaxConnsPerClient). Wrap the TCP listener, before TLS. Connections on a Unix socket pass.
func LimitConns(ln net.Listener, lim ConnLimits) net.Listener {
	if lim.PerClient <= 0 {
		lim.PerClient = MaxConnsPerClient
	}
	if lim.Log == nil {
		lim.Log = slog.New(slog.DiscardHandler)
	}
	return &limitListener{Listener: ln, lim: lim, open: map[netip.Prefix]int{}, refusing: make(chan struct{}, maxRefusing)}
}

type limitListener struct {
	net.Listener
	lim      ConnLimits
	refusing chan struct{} // a slot per refusal being delivered

	mu    sync.Mutex
	open  map[netip.Prefix]int
	total int         // connections open now, of every client
	peak  int         // the most open at once since memory was last handed back
	free  *time.Timer // hands memory back once a flood has ended; nil when none is due
}

// clientKey is the address a connection counts against: the peer's IPv4 address, or its IPv6
// /64. ok is false for a peer without an IP address (a Unix socket).
func clientKey(a net.Addr) (netip.Prefix, netip.Addr, bool) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return netip.Prefix{}, netip.Addr{}, false
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() && !ip.IsLoopback() {
		bits = 64
	} else if ip.Is6() {
		bits = 128
	}
	p, _ := ip.Prefix(bits)
	return p, ip, true
}

// Accept returns the next connection within its client's bound; connections over it are
// refused on the side and never returned.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, ip, ok := clientKey(c.RemoteAddr())
		exempt := !ok || (l.lim.Exempt != nil && l.lim.Exempt(ip))
		l.mu.Lock()
		n := l.open[key]
		if exempt || n < l.lim.PerClient {
			if !exempt {
				l.open[key] = n + 1
			}
			l.total++
			l.peak = max(l.peak, l.total)
		}
		l.mu.Unlock()
		if exempt || n < l.lim.PerClient {
			return &countedConn{Conn: c, release: func() { l.release(key, !exempt) }}, nil
		}
		l.refuse(c, key)
	}
}

func (l *limitListener) release(key netip.Prefix, counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if counted {
		if l.open[key]--; l.open[key] <= 0 {
			delete(l.open, key)
		}
	}
	l.total--
	if l.peak < floodConns || l.total > l.peak/2 {
		return
	}
	if l.free != nil {
		l.free.Reset(floodSettle) // still closing: wait for the last
		return
	}
	l.free = time.AfterFunc(floodSettle, func() {
		// Twice: net/http keeps each connection's buffers in sync.Pools, whose objects outlive
		// one collection (in the pool's victim cache) and go with the second.
		debug.FreeOSMemory()
		debug.FreeOSMemory()
		l.mu.Lock()
		l.peak, l.free = l.total, nil
		l.mu.Unlock()
	})
}

// tooManyConns is the answer an over-bound connection gets on plain HTTP.
var tooManyConns = func() []byte {
	body := refusal.New(refusal.TooManyConnections, "this address holds %d connections to the relay already; close some and try again", MaxConnsPerClient).JSON()
	body = append(body, '\n')
	head := "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return append([]byte(head), body...)
}()

// refuse answers c with a 429 (plain HTTP) and closes it, on its own goroutine and within
// refuseLinger; with maxRefusing refusals under way, it closes c at once.
func (l *limitListener) refuse(c net.Conn, key netip.Prefix) {
	if l.lim.TLS {
		c.Close()
		return
	}
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	l.lim.Log.Info("connection refused", "refused", refusal.TooManyConnections, "client", key.String())
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(refuseLinger))
		if _, err := c.Write(tooManyConns); err != nil {
			return
		}
		// Half-close and read what the client sent, so closing does not reset the connection
		// before the client has read the answer.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// countedConn releases its client's count once, when it is closed (by the server, or by a
// WebSocket handler that hijacked it).
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when the underlying one can (net/http uses it to end a
// response cleanly).
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("server: connection cannot half-close")
}

// ReadFrom lets the response writer use the underlying connection's sendfile.
func (c *countedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// ErrBodyTimeout is what a request body's Read returns once it has waited past BodyIdleTimeout
// for its next byte or past BodyTimeout in all; ReadJSON answers it 408 body-timeout.
var ErrBodyTimeout = errors.New("server: the request body did not arrive in time")

// boundBody puts read deadlines on r's body, when it has one: its next part must come within
// the idle bound and the whole within the total bound (both from Config, else the defaults).
// Once the body is read to its end the deadline is lifted, so a handler that takes long to
// answer (a call waiting on its executor, an approval) is not cut off by it.
func (s *Server) boundBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	idle, total := s.cfg.BodyIdleTimeout, s.cfg.BodyTimeout
	if idle <= 0 {
		idle = BodyIdleTimeout
	}
	if total <= 0 {
		total = BodyTimeout
	}
	rc := http.NewResponseController(w)
	b := &deadlineBody{ReadCloser: r.Body, rc: rc, idle: idle, end: time.Now().Add(total)}
	if !b.extend() {
		return // a writer that cannot set deadlines (a test's recorder)
	}
	r.Body = b
}

// deadlineBody is a request body under the idle and total read bounds.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time
	done bool
}

// extend moves the read deadline to the idle bound from now, or the total bound if sooner.
func (b *deadlineBody) extend() bool {
	d := time.Now().Add(b.idle)
	if d.After(b.end) {
		d = b.end
	}
	return b.rc.SetReadDeadline(d) == nil
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.done:
	case err == io.EOF:
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		var ne net.Error
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return n, ErrBodyTimeout
		}
	case n > 0:
		b.extend()
	}
	return n, err
}
