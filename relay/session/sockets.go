package session

import (
	"sync"

	"voicebox/shared/refusal"
)

// DefaultMaxSockets bounds the sockets a Limiter admits at once.
const DefaultMaxSockets = 256

// DefaultMaxSessionSockets bounds the sockets of one session a Limiter admits at once (tabs of
// one browser, each with its sockets, plus reconnects still closing).
const DefaultMaxSessionSockets = 8

// Limiter bounds the long-lived sockets open at once, overall and per session. Routes that
// share one Limiter share its bounds: /channel and /live may each have their own, or one
// between them. It is safe for concurrent use; the zero value is not usable, call NewLimiter.
type Limiter struct {
	max, perSession int

	mu  sync.Mutex
	all int
	per map[string]int
}

// NewLimiter returns a limiter admitting max sockets at once and perSession of one session;
// zero or less means DefaultMaxSockets and DefaultMaxSessionSockets.
func NewLimiter(max, perSession int) *Limiter {
	if max <= 0 {
		max = DefaultMaxSockets
	}
	if perSession <= 0 {
		perSession = DefaultMaxSessionSockets
	}
	return &Limiter{max: max, perSession: perSession, per: map[string]int{}}
}

// Acquire counts one more socket of session ("" for a socket without a session, counted only
// overall) and returns the function that uncounts it, to call once when the socket ends. Over a
// bound it counts nothing and returns a too-many-sockets refusal.
func (l *Limiter) Acquire(session string) (release func(), r *refusal.Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.all >= l.max {
		return nil, refusal.New(refusal.TooManySockets, "this connection is over the relay's bound of %d open sockets: close another tab or connection first", l.max)
	}
	if session != "" && l.per[session] >= l.perSession {
		return nil, refusal.New(refusal.TooManySockets, "this connection is over this session's bound of %d open sockets: close another tab or connection first", l.perSession)
	}
	l.all++
	if session != "" {
		l.per[session]++
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
// bound, too-many-sockets; a session that ended meanwhile, loopback-unauthenticated.
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
	cancel, ok := s.Store.OnEnd(session, closeFn)
	if !ok {
		unlimit()
		return nil, refusal.New(refusal.LoopbackUnauthenticated, "this session has ended (expired or revoked): open a new bootstrap address")
	}
	return func() { cancel(); unlimit() }, nil
}
