package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"

	"voicebox/shared/refusal"
)

// SessionCookie is the cookie the loopback gate's session travels in.
const SessionCookie = "vb_session"

// BootstrapParam is the query parameter a bootstrap ticket is redeemed with: /?bootstrap=TICKET.
const BootstrapParam = "bootstrap"

// Gate is the loopback gate: it keeps the page and /api/* from other local users, who can reach
// a loopback port as well as the host's own browser can. A request passes with a session cookie
// made by redeeming a one-time ticket, or with the host token. /api/health, the external mini-apps'
// guest library and /channel are not gated here (/channel admits a page only with a session; see relay/hub).
//
// Tickets and sessions live in memory: a restart ends every session and prints a new ticket.
// The zero value is not usable; call NewGate.
type Gate struct {
	mu       sync.Mutex
	tickets  map[[32]byte]bool // hash of a ticket -> still unused
	sessions map[[32]byte]bool // hash of a session token
}

// NewGate returns a gate with no tickets and no sessions.
func NewGate() *Gate {
	return &Gate{tickets: map[[32]byte]bool{}, sessions: map[[32]byte]bool{}}
}

// NewTicket returns a fresh single-use ticket (64 hex digits) to print for the host.
func (g *Gate) NewTicket() string {
	t := randomToken()
	g.mu.Lock()
	g.tickets[sha256.Sum256([]byte(t))] = true
	g.mu.Unlock()
	return t
}

// redeem spends ticket and returns a new session token, or "" when the ticket is unknown or spent.
func (g *Gate) redeem(ticket string) string {
	if len(ticket) != 64 {
		return ""
	}
	// Keys are hashes, so the map lookup compares nothing secret byte by byte.
	h := sha256.Sum256([]byte(ticket))
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.tickets[h] {
		return ""
	}
	g.tickets[h] = false
	s := randomToken()
	g.sessions[sha256.Sum256([]byte(s))] = true
	return s
}

// Session reports whether r carries a valid session cookie.
func (g *Gate) Session(r *http.Request) bool {
	c, err := r.Cookie(SessionCookie)
	if err != nil || len(c.Value) != 64 {
		return false
	}
	h := sha256.Sum256([]byte(c.Value))
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessions[h]
}

// SessionID returns a name for r's session that is not its secret (a prefix of the token's
// hash), or "" when r has no valid session; for counting and logging.
func (g *Gate) SessionID(r *http.Request) string {
	if !g.Session(r) {
		return ""
	}
	c, _ := r.Cookie(SessionCookie)
	h := sha256.Sum256([]byte(c.Value))
	return hex.EncodeToString(h[:8])
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// gate answers r itself and reports true when the loopback gate stops it or redeems a ticket.
func (s *Server) gate(w http.ResponseWriter, r *http.Request) bool {
	g := s.cfg.Gate
	if g == nil {
		return false
	}
	switch r.URL.Path {
	case "/api/health", "/api/ready", "/channel", GuestPath:
		return false
	}
	if r.URL.Path == "/" && r.URL.Query().Has(BootstrapParam) {
		if tok := g.redeem(r.URL.Query().Get(BootstrapParam)); tok != "" {
			http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: tok, Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return true
		}
		s.unauthenticated(w, r, "that bootstrap address was already used or is not one this relay printed")
		return true
	}
	if g.Session(r) || (s.cfg.HostToken != nil && s.cfg.HostToken(r.Header.Get(HostTokenHeader))) {
		return false
	}
	s.unauthenticated(w, r, "this relay requires a session")
	return true
}

func (s *Server) unauthenticated(w http.ResponseWriter, r *http.Request, why string) {
	if len(r.URL.Path) >= 5 && r.URL.Path[:5] == "/api/" {
		WriteRefusal(w, http.StatusUnauthorized, refusal.New(refusal.LoopbackUnauthenticated,
			"%s: open the bootstrap address the relay printed at start, or send the host token", why))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("Voicebox: " + why + ".\n\nThis relay runs with VOICEBOX_LOOPBACK_AUTH=1, so only a browser holding a session may open\nthe page. Open the one-time address (http://.../?bootstrap=...) the relay printed when it\nstarted; restart the relay to get a new one.\n"))
}
