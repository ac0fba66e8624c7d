package mcp

import (
	"errors"
	"net/http"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// maxNameBodyBytes bounds the body of POST /api/mcp/clients: a name.
const maxNameBodyBytes = 4 << 10

// clientView is a client as the routes list it: never its bearer nor its hash.
type clientView struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// RegisterClients adds the routes of the MCP clients to srv:
//
//	GET    /api/mcp/clients         {ok, clients: [{name, created}]}: the clients with a live bearer
//	POST   /api/mcp/clients         (host token) {name}: mint a bearer, returned once:
//	                                {ok, name, bearer, url}; a live bearer of the name is revoked
//	DELETE /api/mcp/clients/{name}  revoke the name's bearer and close its sessions; 404 not-found
//	                                when it holds none
//
// The list and the revocation are the page's routes (its origin, and the session when the gate
// is on), so a person can see and revoke clients in the page; minting needs the host token.
func (h *Handler) RegisterClients(srv *server.Server, store hoststate.MCPClientStore, hostToken func(string) bool) {
	srv.Handle("GET /api/mcp/clients", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs, err := store.List()
		if unavailable(w, err) {
			return
		}
		if err != nil {
			h.log.Error("mcp: the client records could not be read", "err", err)
			server.WriteRefusal(w, http.StatusInternalServerError, refusal.New(refusal.InternalError, "the relay could not read its MCP clients"))
			return
		}
		out := make([]clientView, 0, len(cs))
		for _, c := range cs {
			out = append(out, clientView{c.Name, c.Created})
		}
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "clients": out})
	}))
	srv.Handle("POST /api/mcp/clients", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !server.RequireHostToken(w, r, hostToken) {
			return
		}
		var body struct {
			Name string `json:"name"`
		}
		if !server.ReadJSON(w, r, maxNameBodyBytes, &body) {
			return
		}
		if rf := hoststate.CheckName("a client", body.Name); rf != nil {
			server.WriteRefusal(w, http.StatusBadRequest, rf)
			return
		}
		bearer, err := store.Mint(body.Name)
		if unavailable(w, err) {
			return
		}
		if errors.Is(err, hoststate.ErrTooManyClients) {
			server.WriteRefusal(w, http.StatusConflict, refusal.New(refusal.TooManySockets, "%d MCP clients hold a bearer already; revoke one first", hoststate.MaxMCPClients))
			return
		}
		if err != nil {
			h.log.Error("mcp: a client could not be recorded", "err", err)
			server.WriteRefusal(w, http.StatusInternalServerError, refusal.New(refusal.InternalError, "the relay could not record the client"))
			return
		}
		h.Disconnect(body.Name) // its earlier bearer no longer works
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "name": body.Name, "bearer": bearer})
	}))
	srv.Handle("DELETE /api/mcp/clients/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		err := store.Revoke(name)
		if unavailable(w, err) {
			return
		}
		if errors.Is(err, hoststate.ErrNoClient) {
			server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "no MCP client %q holds a bearer", name))
			return
		}
		if err != nil {
			h.log.Error("mcp: a revocation could not be recorded", "err", err)
			server.WriteRefusal(w, http.StatusInternalServerError, refusal.New(refusal.InternalError, "the relay could not record the revocation"))
			return
		}
		closed := h.Disconnect(name)
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "name": name, "sessionsClosed": closed})
	}))
}

// unavailable answers err when the state could not be reached or changed (a fleet's
// fleet-unavailable while NATS is away, 503; a full state disk, state-disk-full 507), and
// reports whether it did.
func unavailable(w http.ResponseWriter, err error) bool {
	if r := refusal.RuleOf(err); r != refusal.FleetUnavailable && r != refusal.StateDiskFull {
		return false
	}
	rf, _ := refusal.As(err)
	server.WriteRefusal(w, http.StatusServiceUnavailable, rf)
	return true
}

// Disconnect closes the open sessions of the client name and returns how many there were. Its
// next request meets the bearer check again.
func (h *Handler) Disconnect(name string) int {
	h.mu.Lock()
	ids := map[string]bool{}
	for id, client := range h.owners {
		if client == name {
			ids[id] = true
			delete(h.owners, id)
		}
	}
	h.mu.Unlock()
	n := 0
	for s := range h.server.Sessions() {
		if ids[s.ID()] {
			s.Close()
			n++
		}
	}
	return n
}
