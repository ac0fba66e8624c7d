// Package session is the relay's memory of who signed in: one-time bootstrap tickets, the
// sessions they are redeemed for, and the hooks that close a session's sockets when it ends.
//
// A session is a 64-hex-digit random token, sent to the browser in a cookie. The store keeps only
// its SHA-256; a session is named everywhere else (listings, logs, revocation) by its ID, the
// first 8 bytes of that hash in hex, which tells nothing about the token. A session ends when its
// lifetime runs out or when it is revoked; either way every socket registered with OnEnd for it
// is closed before Revoke returns.
//
// Where tickets and sessions are kept is the Store's Records: in this process's memory by default
// (a restart ends every session and forgets every ticket), or shared by a fleet of relays
// (internal/door/fleet keeps them in NATS JetStream, so a session minted on one relay passes on every
// other and a revocation on one closes its sockets on all). Both are held to one conformance
// suite, sessiontest.RunRecords. The sockets a session's end closes (OnEnd) are always this
// process's own.
//
// # Sockets
//
// A long-lived socket route (/channel, and /live) admits each socket with Sockets.Admit, which
// applies the Limiter's bounds and registers the socket's close function with the Store, and calls
// the release function it returns when the socket ends. Admit before accepting the upgrade, so a
// peer that sees its upgrade succeed already holds its place (internal/core/hub does so):
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
	// Records keeps the tickets and sessions; nil keeps them in this process's memory
	// (NewMemoryRecords).
	Records Records
}

// Info describes a session without its secret.
type Info struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Client is the address the ticket was redeemed from (behind a trusted proxy, the client's).
	Client string `json:"client,omitempty"`
	// Sockets counts the sockets registered with OnEnd that are open now, on this relay.
	Sockets int `json:"sockets"`
}

// Record is a session as Records keep it: its token's SHA-256 and what is known of it (Sockets
// is not kept).
type Record struct {
	Hash [32]byte
	Info Info
}

// Records is where a Store keeps tickets (by the SHA-256 of the ticket) and sessions (by ID).
// Implementations are safe for concurrent use and say why in their errors; a Store passes those
// on, so a shared store that cannot be reached refuses instead of signing anyone out. Times are
// the Store's clock's, passed in, so expiry means the same on every implementation.
type Records interface {
	// AddTicket records an unused ticket, redeemable until deadline (zero: until used).
	AddTicket(hash [32]byte, deadline time.Time) error
	// TakeTicket spends the ticket: ok is true exactly once, for the first caller, and only
	// before its deadline (at now). Among several stores sharing the records, one wins.
	TakeTicket(hash [32]byte, now time.Time) (ok bool, err error)
	// AddSession records a new session under rec.Info.ID.
	AddSession(rec Record) error
	// Session returns the session id while it lives (now before its Expires).
	Session(id string, now time.Time) (rec Record, ok bool, err error)
	// RemoveSession forgets the session id; ok is false when there was none.
	RemoveSession(id string) (ok bool, err error)
	// Sessions returns every live session, in any order.
	Sessions(now time.Time) ([]Record, error)
}

// EndWatcher is implemented by Records shared with other processes: fn is called with the ID of
// every session removed by anyone (revoked on another relay, or expired in the shared store), so
// the sockets this process holds for it close too; and with "" when removals may have been
// missed (the watch was made again after the store was out of reach), so the Store checks every
// session it holds sockets of. A Store whose Records implement it watches from NewStore until
// Close.
type EndWatcher interface {
	WatchEnds(fn func(id string)) (stop func(), err error)
}

// Store holds tickets and sessions. It is safe for concurrent use. The zero value is not usable;
// call NewStore.
type Store struct {
	lifetime time.Duration
	clock    Clock
	records  Records
	unwatch  func()

	mu   sync.Mutex
	live map[string]*entry // sessions this process times or holds sockets of, by ID
	seq  uint64
}

type entry struct {
	expires time.Time
	stop    func() bool
	hooks   map[uint64]func(*refusal.Refusal)
}

// NewStore returns a store with no tickets and no sessions of its own, on opts.Records (a new
// memory store when nil).
func NewStore(opts Options) *Store {
	if opts.Lifetime <= 0 {
		opts.Lifetime = DefaultLifetime
	}
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	if opts.Records == nil {
		opts.Records = NewMemoryRecords()
	}
	s := &Store{lifetime: opts.Lifetime, clock: opts.Clock, records: opts.Records, live: map[string]*entry{}}
	if w, ok := opts.Records.(EndWatcher); ok {
		if stop, err := w.WatchEnds(s.endedElsewhere); err == nil {
			s.unwatch = stop
		}
	}
	return s
}

// Close stops watching shared records for sessions ended elsewhere; sockets stay as they are.
func (s *Store) Close() {
	if s.unwatch != nil {
		s.unwatch()
	}
}

// Lifetime returns how long a session lasts.
func (s *Store) Lifetime() time.Duration { return s.lifetime }

// NewTicket returns a fresh single-use ticket. It stays redeemable for ttl, or until redeemed
// when ttl is zero.
func (s *Store) NewTicket(ttl time.Duration) (ticket string, deadline time.Time, err error) {
	t := randomToken()
	if ttl > 0 {
		deadline = s.clock.Now().Add(ttl)
	}
	if err := s.records.AddTicket(sha256.Sum256([]byte(t)), deadline); err != nil {
		return "", time.Time{}, err
	}
	return t, deadline, nil
}

// Redeem spends ticket and starts a session for the client at address client. It returns the
// session's token (the cookie's value) and what the store knows of it, or ok false when the ticket
// is unknown, spent or past its deadline. err says the records could not be reached.
func (s *Store) Redeem(ticket, client string) (token string, info Info, ok bool, err error) {
	if len(ticket) != TokenHexLen {
		return "", Info{}, false, nil
	}
	// Records are keyed by hashes, so a lookup compares nothing secret byte by byte.
	now := s.clock.Now()
	if ok, err := s.records.TakeTicket(sha256.Sum256([]byte(ticket)), now); !ok || err != nil {
		return "", Info{}, false, err
	}
	token = randomToken()
	rec := Record{Hash: sha256.Sum256([]byte(token))}
	rec.Info = Info{ID: hex.EncodeToString(rec.Hash[:IDHexLen/2]), Created: now, Expires: now.Add(s.lifetime), Client: client}
	if err := s.records.AddSession(rec); err != nil {
		return "", Info{}, false, err
	}
	s.mu.Lock()
	s.track(rec.Info.ID, rec.Info.Expires, now)
	s.mu.Unlock()
	return token, rec.Info, true, nil
}

// track makes sure the session id has an entry whose timer ends it at expires. The caller
// holds s.mu.
func (s *Store) track(id string, expires, now time.Time) *entry {
	if e := s.live[id]; e != nil {
		return e
	}
	e := &entry{expires: expires, hooks: map[uint64]func(*refusal.Refusal){}}
	s.live[id] = e
	e.stop = s.clock.AfterFunc(expires.Sub(now), func() {
		s.end(id, refusal.New(refusal.SessionExpired, "this session reached the end of its lifetime (%v): sign in again with a new bootstrap address", s.lifetime))
	})
	return e
}

// ID returns the session ID of token: the first 8 bytes of its SHA-256 in hex. It does not say
// whether the session exists.
func ID(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:IDHexLen/2])
}

// Lookup returns the ID of the live session whose token is token, or ok false.
func (s *Store) Lookup(token string) (id string, ok bool, err error) {
	if len(token) != TokenHexLen {
		return "", false, nil
	}
	h := sha256.Sum256([]byte(token))
	id = hex.EncodeToString(h[:IDHexLen/2])
	rec, found, err := s.records.Session(id, s.clock.Now())
	if err != nil || !found || subtle.ConstantTimeCompare(rec.Hash[:], h[:]) != 1 {
		return "", false, err
	}
	return id, true, nil
}

// List returns every live session, oldest first; Sockets counts this process's sockets.
func (s *Store) List() ([]Info, error) {
	recs, err := s.records.Sessions(s.clock.Now())
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(recs))
	s.mu.Lock()
	for _, r := range recs {
		info := r.Info
		info.Sockets = 0
		if e := s.live[info.ID]; e != nil {
			info.Sockets = len(e.hooks)
		}
		out = append(out, info)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Revoke ends the session id and closes its sockets; it returns how many sockets of this process
// it closed, and ok false when there is no such session. Sockets on other relays sharing the
// records close when those hear of it (EndWatcher).
func (s *Store) Revoke(id string) (sockets int, ok bool, err error) {
	removed, err := s.records.RemoveSession(id)
	if err != nil {
		return 0, false, err
	}
	n, here := s.end(id, refusal.New(refusal.SessionRevoked, "the host revoked this session: sign in again with a new bootstrap address"))
	return n, removed || here, nil
}

// RevokeAll ends every session and closes their sockets; it returns how many sessions it ended.
func (s *Store) RevokeAll() (int, error) {
	list, err := s.List()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, info := range list {
		_, ok, err := s.Revoke(info.ID)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// endedElsewhere ends what this process holds of a session another process removed; id ""
// checks every session it holds.
func (s *Store) endedElsewhere(id string) {
	if id == "" {
		s.mu.Lock()
		ids := make([]string, 0, len(s.live))
		for id := range s.live {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		now := s.clock.Now()
		for _, id := range ids {
			if _, ok, err := s.records.Session(id, now); err == nil && !ok {
				s.endedElsewhere(id)
			}
		}
		return
	}
	why := refusal.New(refusal.SessionRevoked, "the host revoked this session: sign in again with a new bootstrap address")
	s.mu.Lock()
	if e := s.live[id]; e != nil && !s.clock.Now().Before(e.expires) {
		why = refusal.New(refusal.SessionExpired, "this session reached the end of its lifetime (%v): sign in again with a new bootstrap address", s.lifetime)
	}
	s.mu.Unlock()
	s.end(id, why)
}

// end removes the session id (from the records too) and runs its hooks with why, each once, and
// waits for them. It reports how many hooks ran and whether this process knew the session.
func (s *Store) end(id string, why *refusal.Refusal) (int, bool) {
	s.mu.Lock()
	e := s.live[id]
	if e == nil {
		s.mu.Unlock()
		return 0, false
	}
	delete(s.live, id)
	hooks := e.hooks
	e.hooks = nil
	s.mu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	if why.Rule == refusal.SessionExpired {
		s.records.RemoveSession(id) // a shared store also forgets it by its own TTL if this fails
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
// goroutine of its own. Call cancel when the socket ends by itself. ok is false when the session
// has already ended (or never was): fn will not be called, and the caller should refuse the
// socket; err says the records could not be reached.
func (s *Store) OnEnd(id string, fn func(why *refusal.Refusal)) (cancel func(), ok bool, err error) {
	now := s.clock.Now()
	rec, found, err := s.records.Session(id, now)
	if err != nil || !found {
		return func() {}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.track(id, rec.Info.Expires, now)
	if e.hooks == nil {
		return func() {}, false, nil
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
	}, true, nil
}

// MemoryRecords are Records in this process's memory: the single relay's. Safe for concurrent
// use; call NewMemoryRecords.
type MemoryRecords struct {
	mu       sync.Mutex
	tickets  map[[32]byte]time.Time // hash of an unused ticket -> its deadline (zero: none)
	sessions map[string]Record      // by ID
}

// NewMemoryRecords returns empty records.
func NewMemoryRecords() *MemoryRecords {
	return &MemoryRecords{tickets: map[[32]byte]time.Time{}, sessions: map[string]Record{}}
}

// AddTicket implements Records.
func (m *MemoryRecords) AddTicket(hash [32]byte, deadline time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tickets[hash] = deadline
	return nil
}

// TakeTicket implements Records; it also forgets tickets past their deadline, so minting many
// cannot grow the map without bound.
func (m *MemoryRecords) TakeTicket(hash [32]byte, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	deadline, found := m.tickets[hash]
	delete(m.tickets, hash)
	for h, d := range m.tickets {
		if !d.IsZero() && !now.Before(d) {
			delete(m.tickets, h)
		}
	}
	return found && (deadline.IsZero() || now.Before(deadline)), nil
}

// AddSession implements Records.
func (m *MemoryRecords) AddSession(rec Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[rec.Info.ID] = rec
	return nil
}

// Session implements Records.
func (m *MemoryRecords) Session(id string, now time.Time) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.sessions[id]
	if !ok || !now.Before(rec.Info.Expires) {
		return Record{}, false, nil
	}
	return rec, true, nil
}

// RemoveSession implements Records.
func (m *MemoryRecords) RemoveSession(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[id]
	delete(m.sessions, id)
	return ok, nil
}

// Sessions implements Records.
func (m *MemoryRecords) Sessions(now time.Time) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.sessions))
	for _, r := range m.sessions {
		if now.Before(r.Info.Expires) {
			out = append(out, r)
		}
	}
	return out, nil
}
func randomToken() string {
	b := make([]byte, TokenHexLen/2)
	rand.Read(b) // never fails (crypto/rand's contract since Go 1.24)
	return hex.EncodeToString(b)
}
