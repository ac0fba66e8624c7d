package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds on how long a request may take to arrive. Together with MaxConnsPerClient and
// ConnBound they keep a client that opens connections and never finishes a request from holding
// the relay's file descriptors and memory: each such connection ends within HeaderTimeout (an
// unfinished header) or BodyIdleTimeout (a stalled body), one address holds at most
// MaxConnsPerClient at once without a credential, and all of them together stay below the
// process's descriptor limit.
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

// MaxConnsPerClient bounds the connections one client address holds open at once without having
// shown a credential (an IPv6 client's whole /64 counts as one address). A page with its event
// stream, its sockets, its mini-apps' own hosts and a few tabs holds a few dozen; the bound is
// far above that, and far below what exhausts the relay's file descriptors. A connection past it
// is let in on probation and judged at its first request's header: one that shows a credential
// (a session cookie, the host token, an MCP client's or a paired machine's bearer) is served, since on a laptop the page and
// every local process share 127.0.0.1 and strangers there must not lock the page out; any other
// is answered 429 too-many-connections and closed (over TLS too, after the handshake). On a
// loopback bind every local process shares 127.0.0.1 (or picks another 127.x address): this
// bounds what one address holds, not who may connect.
const MaxConnsPerClient = 256

// MaxProbation bounds the connections one address holds on probation past MaxConnsPerClient
// before its first request's header is in; past it the address's oldest connection that is
// waiting (no request under way) is closed to make room, so the address that is over its bound
// pays, and no one else.
const MaxProbation = 16

// FDReserve is how many of the process's file descriptors (RLIMIT_NOFILE, read when LimitConns
// starts) are never given to client connections: the state directory's files, the control
// socket, connections to remote MCP servers and NATS, the shelf's modules. The connections of
// every client together are bounded by the limit less this reserve (ConnBound).
const FDReserve = 128

// AuthReserveShare is the share (1/AuthReserveShare) of ConnBound kept for connections that show
// a credential: connections without one may hold the rest. At either bound a new connection
// makes room by closing a connection without a credential of the address that holds the most
// (its oldest waiting one first, then its oldest): the crowded address pays, the page's and
// every signed-in client's connections are never closed for it, and health and sign-in from
// another address still get in.
const AuthReserveShare = 8

// minConnBound is the least ConnBound is, however low the descriptor limit: the relay serves
// nothing useful with fewer.
const minConnBound = 64

// ConnBound is the bound on client connections open at once that LimitConns keeps when it is
// not given one: the process's RLIMIT_NOFILE (as the Go runtime raised it at start) less
// FDReserve, and at least minConnBound.
func ConnBound() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<24 {
		return 1 << 20 // no limit to read, or none to speak of
	}
	return max(int(lim.Cur)-FDReserve, minConnBound)
}

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
	// PerClient bounds one client address's connections without a credential at once; zero
	// means MaxConnsPerClient.
	PerClient int
	// Total bounds every client's connections together; zero means ConnBound().
	Total int
	// Exempt, when set, names peers the bounds do not apply to: trusted reverse proxies, which
	// carry every client's connections and bound them themselves. Their connections count in
	// Total but are never closed to make room.
	Exempt func(netip.Addr) bool
	// TLS says the listener's connections will speak TLS, so an over-bound one is closed without
	// a plain-HTTP answer.
	TLS bool
	// Log receives a line when an address first meets its bound; nil discards.
	Log *slog.Logger
}

// LimitConns returns ln with its accepted connections bounded per client address and in all
// (see MaxConnsPerClient, ConnBound). Wrap the TCP listener, before TLS, and give the
// http.Server ConnContext and ConnState (below) so each connection is judged at its requests'
// headers by the Server. Connections on a Unix socket pass.
func LimitConns(ln net.Listener, lim ConnLimits) net.Listener {
	if lim.PerClient <= 0 {
		lim.PerClient = MaxConnsPerClient
	}
	if lim.Total <= 0 {
		lim.Total = ConnBound()
	}
	if lim.Log == nil {
		lim.Log = slog.New(slog.DiscardHandler)
	}
	return &limitListener{Listener: ln, lim: lim, reserve: lim.Total / AuthReserveShare,
		clients: map[netip.Prefix]*clientConns{}, refusing: make(chan struct{}, maxRefusing)}
}

type limitListener struct {
	net.Listener
	lim      ConnLimits
	reserve  int           // the part of lim.Total kept for connections with a credential
	refusing chan struct{} // a slot per refusal being delivered

	mu       sync.Mutex
	clients  map[netip.Prefix]*clientConns
	total    int         // connections open now, of every client
	unproven int         // of them, those that have shown no credential
	peak     int         // the most open at once since memory was last handed back
	free     *time.Timer // hands memory back once a flood has ended; nil when none is due
}

// clientConns are one address's connections that have shown no credential, oldest first.
type clientConns struct {
	conns []*countedConn
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

// Accept returns the next connection the bounds let in, closing others to make room where they
// say so; connections refused are answered on the side and never returned.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, ip, ok := clientKey(c.RemoteAddr())
		cc := &countedConn{Conn: c, l: l, key: key}
		cc.proven = !ok || (l.lim.Exempt != nil && l.lim.Exempt(ip))
		l.mu.Lock()
		victims, in := l.admitLocked(cc)
		l.mu.Unlock()
		for _, v := range victims {
			v.Conn.Close() // its server goroutine sees the close and ends it; it counts no more
		}
		if len(victims) > 0 {
			l.lim.Log.Info("connections closed to make room", "refused", refusal.TooManyConnections, "client", victims[0].key.String(), "closed", len(victims))
		}
		if in {
			return cc, nil
		}
		l.refuse(c, key)
	}
}

// admitLocked counts cc in, on probation when its address is at its bound, and returns the
// connections closed to make room for it; in is false when there is no room (every connection
// shows a credential, or the address is past its probation too with none waiting).
func (l *limitListener) admitLocked(cc *countedConn) (victims []*countedConn, in bool) {
	if cc.proven {
		if l.total >= l.lim.Total {
			if v := l.victimLocked(nil); v != nil {
				victims = append(victims, l.dropLocked(v))
			} else {
				return nil, false
			}
		}
		l.countLocked(cc)
		return victims, true
	}
	mine := l.clients[cc.key]
	if mine != nil && len(mine.conns) >= l.lim.PerClient {
		cc.probation = true
		if len(mine.conns) >= l.lim.PerClient+MaxProbation {
			v := l.victimLocked(mine)
			if v == nil {
				return nil, false
			}
			victims = append(victims, l.dropLocked(v))
		}
	}
	for l.total >= l.lim.Total || l.unproven >= l.lim.Total-l.reserve {
		v := l.victimLocked(nil)
		if v == nil {
			break
		}
		victims = append(victims, l.dropLocked(v))
	}
	if l.total >= l.lim.Total {
		return victims, false
	}
	l.countLocked(cc)
	return victims, true
}

// countLocked counts cc as open.
func (l *limitListener) countLocked(cc *countedConn) {
	if !cc.proven {
		cs := l.clients[cc.key]
		if cs == nil {
			cs = &clientConns{}
			l.clients[cc.key] = cs
		}
		cs.conns = append(cs.conns, cc)
		l.unproven++
	}
	l.total++
	l.peak = max(l.peak, l.total)
}

// victimLocked picks the connection to close to make room: of the connections without a
// credential of from (nil: of the address that holds the most), the oldest waiting for a
// request, else the oldest being served, else the oldest socket. Nil when there is none.
func (l *limitListener) victimLocked(from *clientConns) *countedConn {
	if from == nil {
		for _, cs := range l.clients {
			if from == nil || len(cs.conns) > len(from.conns) {
				from = cs
			}
		}
		if from == nil {
			return nil
		}
	}
	for _, pick := range []func(*countedConn) bool{
		func(c *countedConn) bool { return !c.busy && !c.hijacked },
		func(c *countedConn) bool { return !c.hijacked },
		func(c *countedConn) bool { return true },
	} {
		for _, c := range from.conns {
			if pick(c) {
				return c
			}
		}
	}
	return nil
}

// dropLocked stops counting c (closed to make room) and returns it.
func (l *limitListener) dropLocked(c *countedConn) *countedConn {
	l.releaseLocked(c)
	return c
}

// releaseLocked stops counting c, once.
func (l *limitListener) releaseLocked(c *countedConn) {
	if c.released {
		return
	}
	c.released = true
	if !c.proven {
		l.forgetLocked(c)
	}
	l.total--
}

// forgetLocked takes c out of its address's connections without a credential.
func (l *limitListener) forgetLocked(c *countedConn) {
	cs := l.clients[c.key]
	if cs == nil {
		return
	}
	if i := slices.Index(cs.conns, c); i >= 0 {
		cs.conns = slices.Delete(cs.conns, i, i+1)
		l.unproven--
	}
	if len(cs.conns) == 0 {
		delete(l.clients, c.key)
	}
}

func (l *limitListener) release(c *countedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(c)
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
	body := refusal.New(refusal.TooManyConnections, "the relay holds as many connections as it may; close some and try again").JSON()
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

// countedConn is a connection LimitConns let in. It stops counting once, when it is closed (by
// the server, by a WebSocket handler that hijacked it) or closed to make room.
type countedConn struct {
	net.Conn
	l   *limitListener
	key netip.Prefix
	// Guarded by l.mu:
	proven    bool // it showed a credential (or its peer is exempt): never closed to make room
	probation bool // let in past its address's bound: refused at its first request without a credential
	busy      bool // a request is being served on it
	hijacked  bool // a WebSocket took it over
	released  bool
	judged    bool // its first request was seen
	// sendBuffer is the send buffer SetSendBuffer set on it, 0 before: a connection kept for many
	// requests has it set once, not once a request (a system call each).
	sendBuffer atomic.Int64
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.l.release(c)
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

type connKey struct{}

// ConnContext is the http.Server's ConnContext for a listener LimitConns made: it lets the
// Server find a request's connection, to judge it at the request's header.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(*countedConn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// SetSendBuffer sets the kernel's send buffer of r's connection to n bytes, when r came through
// LimitConns on a connection that has one (TCP), and reports whether it did. A stream's writer
// (internal/core/outbound) does so, so that a reader that stops is found within n bytes rather than the
// megabytes the kernel would otherwise take on for it while its writes still "succeed".
func SetSendBuffer(r *http.Request, n int) bool {
	cc, ok := r.Context().Value(connKey{}).(*countedConn)
	if !ok {
		return false
	}
	if cc.sendBuffer.Load() == int64(n) {
		return true
	}
	b, ok := cc.Conn.(interface{ SetWriteBuffer(int) error })
	if !ok || b.SetWriteBuffer(n) != nil {
		return false
	}
	cc.sendBuffer.Store(int64(n))
	return true
}

// ConnState is the http.Server's ConnState for a listener LimitConns made: a connection waiting
// for its next request, or taken over by a WebSocket, is told so.
func ConnState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, ok := c.(*countedConn)
	if !ok {
		return
	}
	cc.l.mu.Lock()
	defer cc.l.mu.Unlock()
	switch st {
	case http.StateIdle:
		cc.busy = false
	case http.StateHijacked:
		cc.hijacked = true
	}
}

// connRefused judges r's connection at r's header, when it came through LimitConns: a request
// that shows a credential (Server.credentialed) takes its connection out of its address's
// count for good; a connection on probation without one is answered 429 too-many-connections
// and closed. It reports true when it answered.
func (s *Server) connRefused(w http.ResponseWriter, r *http.Request) bool {
	cc, ok := r.Context().Value(connKey{}).(*countedConn)
	if !ok {
		return false
	}
	l := cc.l
	l.mu.Lock()
	cc.busy = true
	proven, first := cc.proven, !cc.judged
	cc.judged = true
	l.mu.Unlock()
	if proven {
		return false
	}
	if s.credentialed(r) {
		l.mu.Lock()
		if !cc.released && !cc.proven {
			l.forgetLocked(cc)
			cc.proven = true
		}
		l.mu.Unlock()
		return false
	}
	if !first || !cc.probation {
		return false
	}
	s.log.Info("connection refused", "refused", refusal.TooManyConnections, "client", cc.key.String(), "request_id", RequestID(r.Context()))
	w.Header().Set("Connection", "close")
	WriteRefusal(w, http.StatusTooManyRequests, refusal.New(refusal.TooManyConnections,
		"this address holds %d connections to the relay already; close some and try again (a signed-in browser is let in past them)", l.lim.PerClient))
	return true
}

// credentialed reports whether r shows a credential this relay issued: the host token, a live
// session cookie, or a bearer Config.Bearer accepts. Only what r carries is looked up.
func (s *Server) credentialed(r *http.Request) bool {
	if tok := r.Header.Get(HostTokenHeader); tok != "" && s.cfg.HostToken != nil && s.cfg.HostToken(tok) {
		return true
	}
	if s.cfg.Gate != nil {
		if s.cfg.Gate.Session(r) {
			return true
		}
	}
	if s.cfg.Bearer != nil {
		if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			return s.cfg.Bearer(strings.TrimSpace(tok))
		}
	}
	return false
}

// ErrBodyTimeout is what a request body's Read returns once it has waited past BodyIdleTimeout
// for its next byte or past BodyTimeout in all; ReadJSON answers it 408 body-timeout.
var ErrBodyTimeout = errors.New("server: the request body did not arrive in time")

// boundBody puts read deadlines on r's body, when it has one: its next part must come within
// the idle bound and the whole within the total bound (both from Config, else the defaults).
// Once the body is read to its end the deadline is lifted, so a handler that takes long to
// answer (a call waiting on its executor, an approval) is not cut off by it. It returns the
// bounded body, or nil when r has none.
func (s *Server) boundBody(w http.ResponseWriter, r *http.Request) *deadlineBody {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
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
		return nil // a writer that cannot set deadlines (a test's recorder)
	}
	r.Body = b
	return b
}

// deadlineBody is a request body under the idle and total read bounds.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time
	done bool // read to its end
	read bool // read at all
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
	b.read = true
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
