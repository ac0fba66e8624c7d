package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// LegacySessionCookie is the name every relay gave its session cookie before the name was its
// deployment's (SessionCookieName). A browser scopes cookies by host, not by port, so two relays
// on one machine shared it and signing in to one signed the other out. A gate still reads it when
// its own is absent, so a fleet's sessions outlive its upgrade; it never sets it.
const LegacySessionCookie = "vb_session"

// sessionCookieHexLen is how many hex digits of the deployment's hash a session cookie's name
// carries: 48 bits, so two deployments on one host do not meet by chance.
const sessionCookieHexLen = 12

// SessionCookieName is the name of the session cookie of the deployment named deployment:
// "vb_session_" and the first hex digits of the name's SHA-256. The relays of one fleet name one
// deployment, so a session signed in on one is carried to every other; two relays apart name two,
// so a browser signed in to both keeps both sessions (see core.Config.Deployment).
func SessionCookieName(deployment string) string {
	sum := sha256.Sum256([]byte("voicebox deployment\x00" + deployment))
	return LegacySessionCookie + "_" + hex.EncodeToString(sum[:])[:sessionCookieHexLen]
}

// BootstrapParam is the query parameter a bootstrap ticket is redeemed with: /?bootstrap=TICKET.
const BootstrapParam = "bootstrap"

// Gate is the session gate: it keeps the page and /api/* from anyone without a session (other
// local users on a laptop, everyone on a network). A request passes with a session cookie made by
// redeeming a one-time ticket, or with the host token. /api/health, /api/ready, the external
// mini-apps' guest library, /channel and /mcp are not gated here (/channel admits a page only
// with a session, see internal/core/hub; /mcp admits MCP clients by their bearers, see internal/door/mcp).
//
// Tickets and sessions live in a session.Store, in memory: a restart ends every session. The zero
// value is not usable; call NewGate or NewGateFor.
type Gate struct {
	store  *session.Store
	cookie string
}

// NewGate returns a gate over a new store whose sessions last session.DefaultLifetime, for the
// unnamed deployment "".
func NewGate() *Gate { return NewGateFor(session.NewStore(session.Options{})) }

// NewGateFor returns a gate over store for the unnamed deployment "".
func NewGateFor(store *session.Store) *Gate { return NewDeploymentGate(store, "") }

// NewDeploymentGate returns a gate over store whose cookie is deployment's
// (SessionCookieName(deployment)).
func NewDeploymentGate(store *session.Store, deployment string) *Gate {
	return &Gate{store: store, cookie: SessionCookieName(deployment)}
}

// Cookie is the name of the cookie this gate's sessions travel in.
func (g *Gate) Cookie() string { return g.cookie }

// Store returns the gate's session store: for listing and revoking sessions, and for the socket
// routes' Sockets.Admit.
func (g *Gate) Store() *session.Store { return g.store }

// NewTicket returns a fresh single-use ticket (64 hex digits) that lasts until it is redeemed, to
// print on the relay's console.
func (g *Gate) NewTicket() (string, error) {
	t, _, err := g.store.NewTicket(0)
	return t, err
}

// Session reports whether r carries a live session cookie.
func (g *Gate) Session(r *http.Request) bool { return g.SessionID(r) != "" }

// SessionID returns the ID of r's live session (see session.ID; never its secret), or "" when
// r has none or the sessions cannot be read (it fails closed; Check says which).
func (g *Gate) SessionID(r *http.Request) string {
	id, _ := g.Check(r)
	return id
}

// Check returns the ID of r's live session, "" when it has none, and an error when the sessions
// cannot be read (a fleet's shared store out of reach).
func (g *Gate) Check(r *http.Request) (string, error) {
	c, err := r.Cookie(g.cookie)
	if err != nil {
		// A browser signed in before cookies were named for their deployment (a fleet's
		// session outlives a rolling upgrade); a token another relay's gate made is no session
		// here, so reading it lets no one in.
		if c, err = r.Cookie(LegacySessionCookie); err != nil {
			return "", nil
		}
	}
	id, _, err := g.store.Lookup(c.Value)
	return id, err
}

// gate answers r itself and reports true when the loopback gate stops it or redeems a ticket.
func (s *Server) gate(w http.ResponseWriter, r *http.Request) bool {
	g := s.cfg.Gate
	if g == nil {
		return false
	}
	switch r.URL.Path {
	case "/api/health", "/api/ready", "/channel", "/mcp", GuestPath, OldGuestPath:
		return false // /channel and /mcp admit by bearer (internal/core/hub, internal/door/mcp)
	}
	if r.URL.Path == "/" && r.URL.Query().Has(BootstrapParam) {
		tok, info, ok, err := g.store.Redeem(r.URL.Query().Get(BootstrapParam), ClientAddr(r))
		if err != nil {
			s.sessionsUnavailable(w, r, err)
			return true
		}
		if ok {
			s.log.Info("session started", "session", info.ID, "client", info.Client, "expires", info.Expires.UTC().Format(time.RFC3339), "request_id", RequestID(r.Context()))
			http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: tok, Path: "/", MaxAge: int(g.store.Lifetime().Seconds()),
				HttpOnly: true, Secure: HTTPS(r), SameSite: http.SameSiteStrictMode})
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, withoutTicket(r.URL.RawQuery), http.StatusSeeOther)
			return true
		}
		if g.Session(r) {
			// A used address opened again (a bookmark, the back button) by a browser that is
			// signed in: nothing is left to decide, so it lands on the page as a fresh one does.
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, withoutTicket(r.URL.RawQuery), http.StatusSeeOther)
			return true
		}
		s.unauthenticated(w, r, "that bootstrap address was already used or is not one this relay printed")
		return true
	}
	if s.cfg.HostToken != nil && s.cfg.HostToken(r.Header.Get(HostTokenHeader)) {
		return false
	}
	id, err := g.Check(r)
	if err != nil {
		s.sessionsUnavailable(w, r, err)
		return true
	}
	if id != "" {
		return false
	}
	s.unauthenticated(w, r, "this relay requires a session")
	return true
}

// sessionsUnavailable answers a request whose session could not be checked because the
// sessions' records are out of reach (a fleet's NATS): 503 with the records' refusal, so the
// browser keeps its cookie and the request can be retried.
func (s *Server) sessionsUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Warn("sessions unavailable", "err", err, "request_id", RequestID(r.Context()))
	WriteRefusal(w, http.StatusServiceUnavailable, session.Unavailable(err))
}

func (s *Server) unauthenticated(w http.ResponseWriter, r *http.Request, why string) {
	if len(r.URL.Path) >= 5 && r.URL.Path[:5] == "/api/" {
		refuseUnread(w, r, http.StatusUnauthorized, refusal.New(refusal.LoopbackUnauthenticated,
			"%s: open the bootstrap address the relay printed at start, or send the host token", why))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("Voicebox: " + why + ".\n\nThis relay runs with VOICEBOX_LOOPBACK_AUTH=1, so only a browser holding a session may open\nthe page. Open the one-time address (http://.../?bootstrap=...) the relay printed when it\nstarted, or one its host made with `relay ticket`.\n"))
}

// withoutTicket is the page's address a redeemed bootstrap link redirects to: "/" with the query
// it came with, less every bootstrap parameter, the others kept as written and in their order (a
// link may carry the page's own parameters). It is relative, so the browser stays on the origin
// that now holds the cookie.
func withoutTicket(rawQuery string) string {
	var kept []string
	for _, part := range strings.Split(rawQuery, "&") {
		key, _, _ := strings.Cut(part, "=")
		if k, err := url.QueryUnescape(key); part == "" || err == nil && k == BootstrapParam {
			continue
		}
		kept = append(kept, part)
	}
	if len(kept) == 0 {
		return "/"
	}
	return "/?" + strings.Join(kept, "&")
}
