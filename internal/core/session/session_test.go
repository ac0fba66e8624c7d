package session_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/core/session/sessiontest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newStore(lifetime time.Duration) (*session.Store, *sessiontest.Clock) {
	clock := sessiontest.NewClock(start)
	return session.NewStore(session.Options{Lifetime: lifetime, Clock: clock}), clock
}

// signIn mints a ticket and redeems it.
func signIn(t *testing.T, s *session.Store) (token string, info session.Info) {
	t.Helper()
	ticket, _, _ := s.NewTicket(0)
	token, info, ok, _ := s.Redeem(ticket, "192.0.2.7")
	if !ok {
		t.Fatal("a fresh ticket was not redeemed")
	}
	return token, info
}

func TestTicketsAreSingleUseAndMintedOnesRunOut(t *testing.T) {
	t.Parallel()
	s, clock := newStore(time.Hour)
	ticket, deadline, _ := s.NewTicket(0)
	if len(ticket) != session.TokenHexLen || strings.Trim(ticket, "0123456789abcdef") != "" || !deadline.IsZero() {
		t.Fatalf("ticket %q deadline %v", ticket, deadline)
	}
	token, info, ok, _ := s.Redeem(ticket, "192.0.2.7")
	if !ok || token == ticket || len(token) != session.TokenHexLen {
		t.Fatalf("redeem: %q %v", token, ok)
	}
	if info.ID != session.ID(token) || len(info.ID) != session.IDHexLen || strings.Contains(token, info.ID) {
		t.Fatalf("id %q of token %q", info.ID, token)
	}
	if info.Client != "192.0.2.7" || !info.Created.Equal(start) || !info.Expires.Equal(start.Add(time.Hour)) {
		t.Fatalf("info %+v", info)
	}
	if _, _, ok, _ := s.Redeem(ticket, ""); ok {
		t.Fatal("a ticket was redeemed twice")
	}
	if _, _, ok, _ := s.Redeem(strings.Repeat("ab", 32), ""); ok {
		t.Fatal("an invented ticket was redeemed")
	}
	if _, _, ok, _ := s.Redeem("short", ""); ok {
		t.Fatal("a short ticket was redeemed")
	}

	minted, deadline, _ := s.NewTicket(session.TicketLifetime)
	if !deadline.Equal(start.Add(session.TicketLifetime)) {
		t.Fatalf("minted ticket deadline %v", deadline)
	}
	clock.Advance(session.TicketLifetime)
	if _, _, ok, _ := s.Redeem(minted, ""); ok {
		t.Fatal("a minted ticket was redeemed after its deadline")
	}
	early, _, _ := s.NewTicket(session.TicketLifetime)
	clock.Advance(session.TicketLifetime - time.Second)
	if _, _, ok, _ := s.Redeem(early, ""); !ok {
		t.Fatal("a minted ticket was refused before its deadline")
	}
}

func TestLookupAndList(t *testing.T) {
	t.Parallel()
	s, clock := newStore(time.Hour)
	a, ia := signIn(t, s)
	clock.Advance(time.Minute)
	b, ib := signIn(t, s)
	for _, tt := range []struct {
		name, token, id string
		ok              bool
	}{
		{"first", a, ia.ID, true},
		{"second", b, ib.ID, true},
		{"the id is not a token", ia.ID, "", false},
		{"an invented token", strings.Repeat("0", 64), "", false},
		{"a token sharing nothing", strings.Repeat("f", 63), "", false},
	} {
		if id, ok, _ := s.Lookup(tt.token); id != tt.id || ok != tt.ok {
			t.Errorf("%s: Lookup = %q %v, want %q %v", tt.name, id, ok, tt.id, tt.ok)
		}
	}
	cancel, ok, _ := s.OnEnd(ib.ID, func(*refusal.Refusal) {})
	if !ok {
		t.Fatal("OnEnd of a live session")
	}
	list, _ := s.List()
	if len(list) != 2 || list[0].ID != ia.ID || list[1].ID != ib.ID || list[0].Sockets != 0 || list[1].Sockets != 1 {
		t.Fatalf("List = %+v", list)
	}
	cancel()
	if list, _ := s.List(); list[1].Sockets != 0 {
		t.Fatalf("after cancel List = %+v", list)
	}
}

// TestExpiryAndRevocationCloseTheSessionsSockets: every hook of an ending session runs once with
// the reason, the session no longer passes, and other sessions are untouched.
func TestExpiryAndRevocationCloseTheSessionsSockets(t *testing.T) {
	t.Parallel()
	s, clock := newStore(time.Hour)
	var mu sync.Mutex
	got := map[string][]refusal.Rule{}
	hook := func(name string) func(*refusal.Refusal) {
		return func(why *refusal.Refusal) {
			mu.Lock()
			got[name] = append(got[name], why.Rule)
			mu.Unlock()
		}
	}
	early, ie := signIn(t, s)
	clock.Advance(30 * time.Minute)
	late, il := signIn(t, s)
	third, it := signIn(t, s)
	for _, h := range []struct{ name, id string }{{"early-1", ie.ID}, {"early-2", ie.ID}, {"late", il.ID}, {"third", it.ID}} {
		if _, ok, _ := s.OnEnd(h.id, hook(h.name)); !ok {
			t.Fatalf("OnEnd %s", h.name)
		}
	}
	cancelled, _, _ := s.OnEnd(il.ID, hook("cancelled"))
	cancelled()

	clock.Advance(30 * time.Minute) // the early session's lifetime is over
	if _, ok, _ := s.Lookup(early); ok {
		t.Fatal("an expired session still passes")
	}
	if _, ok, _ := s.Lookup(late); !ok {
		t.Fatal("a younger session ended with the older one")
	}
	n, ok, _ := s.Revoke(il.ID)
	if !ok || n != 1 {
		t.Fatalf("Revoke = %d %v, want 1 socket", n, ok)
	}
	if _, ok, _ := s.Lookup(late); ok {
		t.Fatal("a revoked session still passes")
	}
	if _, ok, _ := s.Revoke(il.ID); ok {
		t.Fatal("revoked twice")
	}
	if _, ok, _ := s.OnEnd(il.ID, hook("too-late")); ok {
		t.Fatal("OnEnd of a revoked session")
	}
	clock.Advance(2 * time.Hour) // the revoked session's timer must not fire again
	mu.Lock()
	defer mu.Unlock()
	want := map[string][]refusal.Rule{
		"early-1": {refusal.SessionExpired}, "early-2": {refusal.SessionExpired},
		"late": {refusal.SessionRevoked}, "third": {refusal.SessionExpired},
	}
	for name, rules := range want {
		if strings.Join(toStrings(got[name]), ",") != strings.Join(toStrings(rules), ",") {
			t.Errorf("%s got %v, want %v", name, got[name], rules)
		}
	}
	for _, name := range []string{"cancelled", "too-late"} {
		if len(got[name]) != 0 {
			t.Errorf("%s ran: %v", name, got[name])
		}
	}
	if _, ok, _ := s.Lookup(third); ok {
		t.Fatal("the third session outlived its lifetime")
	}
}

func TestRevokeAll(t *testing.T) {
	t.Parallel()
	s, _ := newStore(0)
	if s.Lifetime() != session.DefaultLifetime {
		t.Fatalf("default lifetime %v", s.Lifetime())
	}
	var tokens []string
	for range 3 {
		tok, _ := signIn(t, s)
		tokens = append(tokens, tok)
	}
	if n, _ := s.RevokeAll(); n != 3 {
		t.Fatalf("RevokeAll = %d", n)
	}
	for _, tok := range tokens {
		if _, ok, _ := s.Lookup(tok); ok {
			t.Fatal("a session outlived RevokeAll")
		}
	}
	if l, _ := s.List(); len(l) != 0 {
		t.Fatal("sessions left")
	}
	if n, _ := s.RevokeAll(); n != 0 {
		t.Fatal("sessions left")
	}
}

// TestTheWallClockEndsASession runs a store on the real clock with a short lifetime: the hook
// runs by itself. (It waits for the event; it asserts no duration.)
func TestTheWallClockEndsASession(t *testing.T) {
	t.Parallel()
	s := session.NewStore(session.Options{Lifetime: 50 * time.Millisecond})
	ticket, _, _ := s.NewTicket(0)
	_, info, _, _ := s.Redeem(ticket, "")
	ended := make(chan refusal.Rule, 1)
	if _, ok, _ := s.OnEnd(info.ID, func(why *refusal.Refusal) { ended <- why.Rule }); !ok {
		// The machine was slow enough for the session to end first: that is the same outcome.
		return
	}
	select {
	case r := <-ended:
		if r != refusal.SessionExpired {
			t.Fatalf("ended with %s", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the session never ended")
	}
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	l := session.NewLimiter(3, 2)
	r1, rf := l.Acquire("a")
	if rf != nil {
		t.Fatal(rf)
	}
	r2, _ := l.Acquire("a")
	if _, rf := l.Acquire("a"); refusal.RuleOf(rf) != refusal.TooManySockets || !strings.Contains(rf.Why, "session") {
		t.Fatalf("the third of a session: %v", rf)
	}
	r3, rf := l.Acquire("") // another peer, without a session
	if rf != nil {
		t.Fatal(rf)
	}
	if _, rf := l.Acquire("b"); refusal.RuleOf(rf) != refusal.TooManySockets || !strings.Contains(rf.Why, "relay's bound") {
		t.Fatalf("over the overall bound: %v", rf)
	}
	r1()
	r1() // a second release counts nothing
	if _, rf := l.Acquire("b"); rf != nil {
		t.Fatalf("after a release: %v", rf)
	}
	if _, rf := l.Acquire("a"); refusal.RuleOf(rf) != refusal.TooManySockets {
		t.Fatalf("a double release freed two places: %v", rf)
	}
	r2()
	r3()
}

func TestSocketsAdmit(t *testing.T) {
	t.Parallel()
	s, _ := newStore(time.Hour)
	_, info := signIn(t, s)
	socks := session.Sockets{Limiter: session.NewLimiter(2, 2), Store: s}
	closed := make(chan refusal.Rule, 4)
	release, rf := socks.Admit(info.ID, func(why *refusal.Refusal) { closed <- why.Rule })
	if rf != nil {
		t.Fatal(rf)
	}
	if _, rf := socks.Admit("no-such-session", func(*refusal.Refusal) {}); refusal.RuleOf(rf) != refusal.LoopbackUnauthenticated {
		t.Fatalf("a socket of an unknown session: %v", rf)
	}
	// That refusal gave its place back: one more fits.
	other, rf := socks.Admit("", nil)
	if rf != nil {
		t.Fatalf("a socket without a session: %v", rf)
	}
	if _, rf := socks.Admit("", nil); refusal.RuleOf(rf) != refusal.TooManySockets {
		t.Fatalf("over the bound: %v", rf)
	}
	if n, _, _ := s.Revoke(info.ID); n != 1 || <-closed != refusal.SessionRevoked {
		t.Fatalf("revoke closed %d", n)
	}
	release()
	other()
	if _, rf := socks.Admit("", nil); rf != nil {
		t.Fatalf("after the releases: %v", rf)
	}
}

// TestHammer: sockets come and go on many sessions while sessions are revoked and expire; every
// hook runs at most once and the counts settle to zero.
func TestHammer(t *testing.T) {
	t.Parallel()
	s, clock := newStore(time.Hour)
	lim := session.NewLimiter(1000, 100)
	socks := session.Sockets{Limiter: lim, Store: s}
	var ids []string
	for range 8 {
		_, info := signIn(t, s)
		ids = append(ids, info.ID)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				id := ids[(g+i)%len(ids)]
				var calls atomic.Int32
				release, rf := socks.Admit(id, func(*refusal.Refusal) {
					if calls.Add(1) > 1 {
						t.Errorf("a hook ran twice")
					}
				})
				if rf == nil {
					release()
				}
			}
		})
	}
	wg.Go(func() {
		for _, id := range ids[:4] {
			s.Revoke(id)
		}
	})
	wg.Go(func() { clock.Advance(2 * time.Hour) })
	wg.Wait()
	if l, _ := s.List(); len(l) != 0 {
		t.Fatalf("sessions left: %+v", l)
	}
	// Every place was given back.
	var rel []func()
	for range 100 {
		r, rf := lim.Acquire("x")
		if rf != nil {
			t.Fatalf("a place was not given back: %v", rf)
		}
		rel = append(rel, r)
	}
	for _, r := range rel {
		r()
	}
}

func toStrings(rs []refusal.Rule) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// TestLimiterSessionless: sockets without a session have their own bound under the overall one,
// so they cannot fill the relay; a session's sockets are admitted past it.
func TestLimiterSessionless(t *testing.T) {
	t.Parallel()
	l := session.NewLimiterWith(session.Bounds{Max: 4, PerSession: 4, Sessionless: 2})
	r1, _ := l.Acquire("")
	if _, rf := l.Acquire(""); rf != nil {
		t.Fatal(rf)
	}
	if _, rf := l.Acquire(""); refusal.RuleOf(rf) != refusal.TooManySockets || !strings.Contains(rf.Why, "without a session") {
		t.Fatalf("the third socket without a session: %v", rf)
	}
	if _, rf := l.Acquire("a"); rf != nil {
		t.Fatalf("a session's socket past the sessionless bound: %v", rf)
	}
	r1()
	if _, rf := l.Acquire(""); rf != nil {
		t.Fatalf("after a release: %v", rf)
	}
	if got := session.NewLimiterWith(session.Bounds{Max: 2, Sessionless: 9}); got == nil {
		t.Fatal("no limiter")
	}
}

// TestMemoryRecords holds the single relay's records to the conformance suite.
func TestMemoryRecords(t *testing.T) {
	sessiontest.RunRecords(t, func(t *testing.T) (session.Records, session.Records) {
		r := session.NewMemoryRecords()
		return r, r
	})
}

// watchedRecords are memory records whose watch the test drives, standing for a shared store.
type watchedRecords struct {
	*session.MemoryRecords
	fn func(id string)
}

func (w *watchedRecords) WatchEnds(fn func(id string)) (func(), error) {
	w.fn = fn
	return func() {}, nil
}

// TestEndsHeardFromSharedRecords: a session removed by another process closes this process's
// sockets of it when the watch says so, and, when removals may have been missed (the watch made
// again), when the store checks its sessions afresh.
func TestEndsHeardFromSharedRecords(t *testing.T) {
	t.Parallel()
	recs := &watchedRecords{MemoryRecords: session.NewMemoryRecords()}
	s := session.NewStore(session.Options{Lifetime: time.Hour, Clock: sessiontest.NewClock(start), Records: recs})
	defer s.Close()
	_, one := signIn(t, s)
	_, two := signIn(t, s)
	_, three := signIn(t, s)
	ended := make(chan string, 3)
	for _, info := range []session.Info{one, two, three} {
		if _, ok, err := s.OnEnd(info.ID, func(why *refusal.Refusal) { ended <- info.ID + " " + string(why.Rule) }); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	recs.RemoveSession(one.ID) // another relay revoked it, and the watch says so
	recs.fn(one.ID)
	if got := <-ended; got != one.ID+" session-revoked" {
		t.Fatalf("heard %q", got)
	}
	recs.RemoveSession(two.ID) // revoked while the watch was down: nobody said so
	recs.fn("")
	if got := <-ended; got != two.ID+" session-revoked" {
		t.Fatalf("after the resync heard %q", got)
	}
	select {
	case got := <-ended:
		t.Fatalf("a live session's socket was closed: %q", got)
	default:
	}
}
