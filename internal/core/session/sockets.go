package session

import (
	"sync"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// DefaultMaxSockets bounds the sockets a Limiter admits at once.
const DefaultMaxSockets = 256

// DefaultMaxSessionSockets bounds the sockets of one session a Limiter admits at once (tabs of
// one browser, each with its sockets, plus reconnects still closing).
const DefaultMaxSessionSockets = 8

// DefaultMaxSessionlessSockets is the usual bound on sockets without a session where sessions
// exist (the gate is on): machine environments and peers still saying hello.
const DefaultMaxSessionlessSockets = 32

// Limiter bounds the long-lived sockets open at once, overall and per session. Routes that
// share one Limiter share its bounds: /channel and /live may each have their own, or one
// between them. It is safe for concurrent use; the zero value is not usable, call NewLimiter.
type Limiter struct {
	b Bounds

	mu   sync.Mutex
	all  int
	none int // sockets without a session
	per  map[string]int
}

// Bounds are a Limiter's bounds; a zero field takes its default.
type Bounds struct {
	// Max bounds all sockets at once (DefaultMaxSockets).
	Max int
	// PerSession bounds one session's sockets (DefaultMaxSessionSockets).
	PerSession int
	// Sessionless bounds the sockets without a session (zero: Max). Where the gate is on, anyone
	// can open such a socket and hold it until its hello bound, so a bound under Max is what keeps
	// them from filling the relay and turning signed-in pages away; without the gate every socket
	// is sessionless and this bound is Max.
	Sessionless int
}

// NewLimiter returns a limiter admitting max sockets at once and perSession of one session;
// zero or less means DefaultMaxSockets and DefaultMaxSessionSockets.
func NewLimiter(max, perSession int) *Limiter {
	return NewLimiterWith(Bounds{Max: max, PerSession: perSession})
}

// NewLimiterWith returns a limiter with bounds b.
func NewLimiterWith(b Bounds) *Limiter {
	if b.Max <= 0 {
		b.Max = DefaultMaxSockets
	}
	if b.PerSession <= 0 {
		b.PerSession = DefaultMaxSessionSockets
	}
	if b.Sessionless <= 0 || b.Sessionless > b.Max {
		b.Sessionless = b.Max
	}
	return &Limiter{b: b, per: map[string]int{}}
}

// Acquire counts one more socket of session ("" for a socket without a session, counted
// overall and against Bounds.Sessionless) and returns the function that uncounts it, to call once when the socket ends. Over a
// bound it counts nothing and returns a too-many-sockets refusal.
func (l *Limiter) Acquire(session string) (release func(), r *refusal.Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.all >= l.b.Max {
		return nil, refusal.New(refusal.TooManySockets, "this connection is over the relay's bound of %d open sockets: close another tab or connection first", l.b.Max)
	}
	if session != "" && l.per[session] >= l.b.PerSession {
		return nil, refusal.New(refusal.TooManySockets, "this connection is over this session's bound of %d open sockets: close another tab or connection first", l.b.PerSession)
	}
	if session == "" && l.none >= l.b.Sessionless {
		return nil, refusal.New(refusal.TooManySockets, "this connection is over the relay's bound of %d open sockets without a session: sign in, or close another connection first", l.b.Sessionless)
	}
	l.all++
	if session != "" {
		l.per[session]++
	} else {
		l.none++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.all--
			if session != "" {
				if l.per[session]--; l.per[session] <= 0 {
					delete(l.per, session)
				}
			} else {
				l.none--
			}
		})
	}, nil
}

// Sockets is what a long-lived socket route needs to admit a socket: the bounds, and the store
// whose sessions' ends close it. Either field may be nil (no bounds; no sessions).
type Sockets struct {
	Limiter *Limiter
	Store   *Store
}

// Admit admits one socket of session ("" when it has none) and registers closeFn to run when the
// session ends (expires or is revoked), with the reason to tell the peer. It returns the release
// function to call once when the socket ends, or a refusal to answer the socket with: over a
// bound, too-many-sockets; a session that ended meanwhile, loopback-unauthenticated; records that
// cannot be reached, their refusal (Unavailable).
func (s Sockets) Admit(session string, closeFn func(why *refusal.Refusal)) (release func(), r *refusal.Refusal) {
	unlimit := func() {}
	if s.Limiter != nil {
		var rf *refusal.Refusal
		if unlimit, rf = s.Limiter.Acquire(session); rf != nil {
			return nil, rf
		}
	}
	if session == "" || s.Store == nil {
		return unlimit, nil
	}
	cancel, ok, err := s.Store.OnEnd(session, closeFn)
	if err != nil {
		unlimit()
		return nil, Unavailable(err)
	}
	if !ok {
		unlimit()
		return nil, refusal.New(refusal.LoopbackUnauthenticated, "this session has ended (expired or revoked): open a new bootstrap address")
	}
	return func() { cancel(); unlimit() }, nil
}

// The usual bounds on sockets that have not said hello yet (see HelloLimiter).
const (
	// DefaultMaxHelloSockets bounds all sockets waiting to say hello at once.
	DefaultMaxHelloSockets = 64
	// DefaultMaxHelloPerClient bounds those of one client address.
	DefaultMaxHelloPerClient = 16
	// DefaultMaxHelloPerOrigin bounds those of one foreign Origin (a page of another site, or
	// "null" from a sandboxed frame). Sockets without an Origin (machine environments) count
	// per client address only.
	DefaultMaxHelloPerOrigin = 8
)

// HelloBounds are a HelloLimiter's bounds; a zero field takes its default.
type HelloBounds struct {
	Max, PerClient, PerOrigin int
}

// HelloLimiter bounds the sockets that have not proved who they are yet: peers of /channel that
// are not the page and have not said hello. They hold a place only until their hello bound, and
// anyone who can reach the relay can open them, so they have a pool of their own: they never take
// the places of the page or of machines that said hello (the Limiter's), and one client address
// or one origin cannot take the whole pool. Safe for concurrent use; call NewHelloLimiter.
type HelloLimiter struct {
	b HelloBounds

	mu        sync.Mutex
	all       int
	perClient map[string]int
	perOrigin map[string]int
}

// NewHelloLimiter returns a limiter with bounds b.
func NewHelloLimiter(b HelloBounds) *HelloLimiter {
	if b.Max <= 0 {
		b.Max = DefaultMaxHelloSockets
	}
	if b.PerClient <= 0 {
		b.PerClient = DefaultMaxHelloPerClient
	}
	if b.PerOrigin <= 0 {
		b.PerOrigin = DefaultMaxHelloPerOrigin
	}
	return &HelloLimiter{b: b, perClient: map[string]int{}, perOrigin: map[string]int{}}
}

// Acquire counts one more socket waiting to say hello, from client with origin ("" for none),
// and returns the function that uncounts it (call it once: when the hello is done, or the socket
// ends). Over a bound it counts nothing and returns a too-many-sockets refusal.
func (l *HelloLimiter) Acquire(client, origin string) (release func(), r *refusal.Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.all >= l.b.Max:
		return nil, refusal.New(refusal.TooManySockets, "%d connections are waiting to say hello already: try again in a few seconds", l.b.Max)
	case l.perClient[client] >= l.b.PerClient:
		return nil, refusal.New(refusal.TooManySockets, "this address has %d connections waiting to say hello already: say hello on one of them first", l.b.PerClient)
	case origin != "" && l.perOrigin[origin] >= l.b.PerOrigin:
		return nil, refusal.New(refusal.TooManySockets, "pages of this origin have %d connections waiting to say hello already", l.b.PerOrigin)
	}
	l.all++
	l.perClient[client]++
	if origin != "" {
		l.perOrigin[origin]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.all--
			if l.perClient[client]--; l.perClient[client] <= 0 {
				delete(l.perClient, client)
			}
			if origin != "" {
				if l.perOrigin[origin]--; l.perOrigin[origin] <= 0 {
					delete(l.perOrigin, origin)
				}
			}
		})
	}, nil
}

// Unavailable is the refusal to answer with when the Records failed: the refusal err is or wraps
// (shared records say fleet-unavailable), else internal-error.
func Unavailable(err error) *refusal.Refusal {
	if r, ok := refusal.As(err); ok {
		return r
	}
	return refusal.New(refusal.InternalError, "the relay could not read its sessions: its log says why")
}
