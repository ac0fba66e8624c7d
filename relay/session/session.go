// Package session is the relay's memory of who signed in: one-time bootstrap tickets, the
// sessions they are redeemed for, and the hooks that close a session's sockets when it ends.
//
// A session is a 64-hex-digit random token, sent to the browser in a cookie. The store keeps only
// its SHA-256; a session is named everywhere else (listings, logs, revocation) by its ID, the
// first 8 bytes of that hash in hex, which tells nothing about the token. A session ends when its
// lifetime runs out or when it is revoked; either way every socket registered with OnEnd for it
// is closed before Revoke returns.
//
// Everything lives in memory: a restart ends every session and forgets every ticket.
//
// # Sockets
//
// A long-lived socket route (/channel, and /live) admits each socket with Sockets.Admit, which
// applies the Limiter's bounds and registers the socket's close function with the Store, and calls
// the release function it returns when the socket ends. Admit before accepting the upgrade, so a
// peer that sees its upgrade succeed already holds its place (relay/hub does so):
//
//	sockets := session.Sockets{Limiter: limiter, Store: gate.Store()} // one Limiter per route, or shared
//	release, rf := sockets.Admit(gate.SessionID(r), func(why *refusal.Refusal) {
//		// settle what the socket carries; then, in a goroutine, write
//		// {"type":"refused","refused":why.Rule,"why":why.Why} and close 1008
//	})
//	if release != nil {
//		defer release()
//	}
//	ws, err := websocket.Accept(w, r, opts)
//	...
//	if rf != nil {
//		// tell the peer rf (too-many-sockets, or a session that ended meanwhile), close 1008
//		return
//	}
package session

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// DefaultLifetime is how long a session lasts when Options.Lifetime is zero: a working day and
// the night after it.
const DefaultLifetime = 24 * time.Hour

// TicketLifetime is how long a ticket minted on request (POST /api/bootstrap, `relay ticket`)
// stays redeemable. The ticket printed at start has no deadline: it lasts until used or the
// relay stops.
const TicketLifetime = 15 * time.Minute

// TokenHexLen is the length of a ticket and of a session token: 32 random bytes in hex.
const TokenHexLen = 64

// IDHexLen is the length of a session ID.
const IDHexLen = 16

// Clock is the time the store runs on. The zero Options use the wall clock; tests pass their own.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f once d has passed, unless stop is called first; stop reports whether it
	// prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Options configures a Store. The zero value is a store on the wall clock whose sessions last
// DefaultLifetime.
type Options struct {
	// Lifetime is how long a session lasts from its sign-in; zero means DefaultLifetime. It is
	// not extended by use.
	Lifetime time.Duration
	// Clock replaces the wall clock (tests).
	Clock Clock
}

// Info describes a session without its secret.
type Info struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Client is the address the ticket was redeemed from (behind a trusted proxy, the client's).
	Client string `json:"client,omitempty"`
	// Sockets counts the sockets registered with OnEnd that are open now.
	Sockets int `json:"sockets"`
}

// Store holds tickets and sessions. It is safe for concurrent use. The zero value is not usable;
// call NewStore.
type Store struct {
	lifetime time.Duration
	clock    Clock

	mu       sync.Mutex
	tickets  map[[32]byte]time.Time // hash of an unused ticket -> its deadline (zero: none)
	sessions map[string]*entry      // by ID
	seq      uint64
}

type entry struct {
	hash  [32]byte
	info  Info
	stop  func() bool
	hooks map[uint64]func(*refusal.Refusal)
}

// NewStore returns a store with no tickets and no sessions.
func NewStore(opts Options) *Store {
	if opts.Lifetime <= 0 {
		opts.Lifetime = DefaultLifetime
	}
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	return &Store{lifetime: opts.Lifetime, clock: opts.Clock, tickets: map[[32]byte]time.Time{}, sessions: map[string]*entry{}}
}

// Lifetime returns how long a session lasts.
func (s *Store) Lifetime() time.Duration { return s.lifetime }

// NewTicket returns a fresh single-use ticket. It stays redeemable for ttl, or until redeemed
// when ttl is zero.
func (s *Store) NewTicket(ttl time.Duration) (ticket string, deadline time.Time) {
	t := randomToken()
	if ttl > 0 {
		deadline = s.clock.Now().Add(ttl)
	}
	s.mu.Lock()
	s.tickets[sha256.Sum256([]byte(t))] = deadline
	s.mu.Unlock()
	return t, deadline
}

// Redeem spends ticket and starts a session for the client at address client. It returns the
// session's token (the cookie's value) and what the store knows of it, or ok false when the ticket
// is unknown, spent or past its deadline.
func (s *Store) Redeem(ticket, client string) (token string, info Info, ok bool) {
	if len(ticket) != TokenHexLen {
		return "", Info{}, false
	}
	// Keys are hashes, so the map lookup compares nothing secret byte by byte.
	h := sha256.Sum256([]byte(ticket))
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline, found := s.tickets[h]
	if !found {
		return "", Info{}, false
	}
	delete(s.tickets, h)
	if !deadline.IsZero() && !now.Before(deadline) {
		return "", Info{}, false
	}
	s.dropStaleTickets(now)
	token = randomToken()
	e := &entry{hash: sha256.Sum256([]byte(token)), hooks: map[uint64]func(*refusal.Refusal){}}
	e.info = Info{ID: hex.EncodeToString(e.hash[:IDHexLen/2]), Created: now, Expires: now.Add(s.lifetime), Client: client}
	s.sessions[e.info.ID] = e
	id := e.info.ID
	e.stop = s.clock.AfterFunc(s.lifetime, func() {
		s.end(id, refusal.New(refusal.SessionExpired, "this session reached the end of its lifetime (%v): sign in again with a new bootstrap address", s.lifetime))
	})
	return token, e.info, true
}

// dropStaleTickets forgets tickets past their deadline, so minting many cannot grow the map
// without bound. The caller holds s.mu.
func (s *Store) dropStaleTickets(now time.Time) {
	for h, d := range s.tickets {
		if !d.IsZero() && !now.Before(d) {
			delete(s.tickets, h)
		}
	}
}

// ID returns the session ID of token: the first 8 bytes of its SHA-256 in hex. It does not say
// whether the session exists.
func ID(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:IDHexLen/2])
}

// Lookup returns the ID of the live session whose token is token, or ok false.
func (s *Store) Lookup(token string) (id string, ok bool) {
	if len(token) != TokenHexLen {
		return "", false
	}
	h := sha256.Sum256([]byte(token))
	id = hex.EncodeToString(h[:IDHexLen/2])
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.sessions[id]
	if e == nil || subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 || !now.Before(e.info.Expires) {
		return "", false
	}
	return id, true
}

// List returns every live session, oldest first.
func (s *Store) List() []Info {
	s.mu.Lock()
	out := make([]Info, 0, len(s.sessions))
	for _, e := range s.sessions {
		info := e.info
		info.Sockets = len(e.hooks)
		out = append(out, info)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// Revoke ends the session id and closes its sockets; it returns how many sockets it closed, and
// ok false when there is no such session.
func (s *Store) Revoke(id string) (sockets int, ok bool) {
	return s.end(id, refusal.New(refusal.SessionRevoked, "the host revoked this session: sign in again with a new bootstrap address"))
}

// RevokeAll ends every session and closes their sockets; it returns how many sessions it ended.
func (s *Store) RevokeAll() int {
	s.mu.Lock()
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := s.Revoke(id); ok {
			n++
		}
	}
	return n
}

// end removes the session id and runs its hooks with why, each once, and waits for them.
func (s *Store) end(id string, why *refusal.Refusal) (int, bool) {
	s.mu.Lock()
	e := s.sessions[id]
	if e == nil {
		s.mu.Unlock()
		return 0, false
	}
	delete(s.sessions, id)
	hooks := e.hooks
	e.hooks = nil
	s.mu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	var wg sync.WaitGroup
	for _, fn := range hooks {
		wg.Go(func() { fn(why) })
	}
	wg.Wait()
	return len(hooks), true
}

// OnEnd registers fn to be called once, with the reason (session-expired or session-revoked),
// when the session id ends. Revoke and the expiry wait for every fn, so fn settles what the
// socket carries at once and leaves the close handshake, which waits for the peer, to a
// goroutine of its own. Call cancel when the socket ends by itself. ok is false when the session has already ended (or never was): fn will not be called,
// and the caller should refuse the socket.
func (s *Store) OnEnd(id string, fn func(why *refusal.Refusal)) (cancel func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.sessions[id]
	if e == nil || e.hooks == nil {
		return func() {}, false
	}
	s.seq++
	n := s.seq
	e.hooks[n] = fn
	return func() {
		s.mu.Lock()
		if e.hooks != nil {
			delete(e.hooks, n)
		}
		s.mu.Unlock()
	}, true
}

func randomToken() string {
	b := make([]byte, TokenHexLen/2)
	rand.Read(b) // never fails (crypto/rand's contract since Go 1.24)
	return hex.EncodeToString(b)
}
