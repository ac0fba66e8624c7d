package server

import (
	"net/http"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// registerSessionRoutes adds the host's routes for sessions and tickets, all behind the host
// token:
//
//	GET    /api/sessions       {ok, gate, lifetimeMs, sessions: [{id, created, expires, client, sockets}]}
//	DELETE /api/sessions/{id}  end one session and close its sockets: {ok, id, sockets}
//	DELETE /api/sessions       end every session: {ok, revoked}
//	POST   /api/bootstrap      mint a one-time ticket: {ok, url, expires}
//
// Sockets count this relay's own (in a fleet, each relay its own). A session is listed by its ID,
// never its secret. Without the gate there are no sessions: the
// listing is empty with gate false, and minting is refused gate-off.
func (s *Server) registerSessionRoutes() {
	host := func(h func(http.ResponseWriter, *http.Request, *Gate)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !RequireHostToken(w, r, s.cfg.HostToken) {
				return
			}
			h(w, r, s.cfg.Gate)
		}
	}
	s.Handle("GET /api/sessions", host(func(w http.ResponseWriter, r *http.Request, g *Gate) {
		if g == nil {
			WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "gate": false, "sessions": []session.Info{}})
			return
		}
		list, err := g.store.List()
		if err != nil {
			s.sessionsUnavailable(w, r, err)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "gate": true, "lifetimeMs": g.store.Lifetime().Milliseconds(), "sessions": list})
	}))
	s.Handle("DELETE /api/sessions/{id}", host(func(w http.ResponseWriter, r *http.Request, g *Gate) {
		id := r.PathValue("id")
		if g == nil {
			writeGateOff(w)
			return
		}
		n, ok, err := g.store.Revoke(id)
		if err != nil {
			s.sessionsUnavailable(w, r, err)
			return
		}
		if !ok {
			WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "no live session has the id %q (GET /api/sessions lists them)", clip(id, session.IDHexLen)))
			return
		}
		s.log.Info("session revoked", "session", id, "sockets", n, "request_id", RequestID(r.Context()))
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": id, "sockets": n})
	}))
	s.Handle("DELETE /api/sessions", host(func(w http.ResponseWriter, r *http.Request, g *Gate) {
		if g == nil {
			writeGateOff(w)
			return
		}
		n, err := g.store.RevokeAll()
		if err != nil {
			s.sessionsUnavailable(w, r, err)
			return
		}
		s.log.Info("every session revoked", "sessions", n, "request_id", RequestID(r.Context()))
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "revoked": n})
	}))
	s.Handle("POST /api/bootstrap", host(func(w http.ResponseWriter, r *http.Request, g *Gate) {
		if g == nil {
			writeGateOff(w)
			return
		}
		ticket, deadline, err := g.store.NewTicket(session.TicketLifetime)
		if err != nil {
			s.sessionsUnavailable(w, r, err)
			return
		}
		base := s.cfg.BootstrapBase
		if base == "" {
			scheme := "http"
			if HTTPS(r) {
				scheme = "https"
			}
			host := r.Host
			if !safeHost(host) {
				host = "localhost"
			}
			base = scheme + "://" + host
		}
		s.log.Info("bootstrap ticket minted", "expires", deadline.UTC().Format(time.RFC3339), "request_id", RequestID(r.Context()))
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "url": base + "/?" + BootstrapParam + "=" + ticket, "expires": deadline.UTC()})
	}))
}

func writeGateOff(w http.ResponseWriter) {
	WriteRefusal(w, http.StatusConflict, refusal.New(refusal.GateOff,
		"this relay runs without the session gate, so it has no sessions or tickets; start it with VOICEBOX_LOOPBACK_AUTH=1"))
}

// clip returns s cut to n bytes, for echoing a caller's value in a refusal.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
