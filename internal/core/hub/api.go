package hub

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// maxPairBodyBytes bounds the body of /api/pair: a name.
const maxPairBodyBytes = 4 << 10

// Register adds the hub's routes to srv:
//
//	GET    /channel        the executor WebSocket
//	GET    /api/root       the declared root: {ok, kind, name, connected}
//	POST   /api/root/call  (host token) run {tool, args[, descriptorId, boundsEcho]} on the root's
//	                       executor; the answer envelope comes back as the body, with 200 whether
//	                       it is an observation or a refusal
//	POST   /api/pair       (host token) {name}: mint a bearer, returned once: {ok, name, bearer}
//	DELETE /api/pair       (host token) {name}: revoke it and close its socket
//
// Pairing needs state; without it (nil) /api/pair is not served.
func Register(srv *server.Server, h *Hub, state *hoststate.Dir) {
	a := &api{hub: h, state: state}
	if state != nil {
		a.check = state.CheckHostToken
	}
	srv.Handle("GET /channel", h)
	srv.Handle("GET /api/root", http.HandlerFunc(a.root))
	srv.Handle("POST /api/root/call", http.HandlerFunc(a.rootCall))
	if state == nil {
		return
	}
	srv.Handle("POST /api/pair", http.HandlerFunc(a.pair))
	srv.Handle("DELETE /api/pair", http.HandlerFunc(a.unpair))
}

// api holds what the hub's HTTP handlers share.
type api struct {
	hub   *Hub
	state *hoststate.Dir
	check func(string) bool // the host-token check; nil refuses every token
}

// root answers GET /api/root.
func (a *api) root(w http.ResponseWriter, r *http.Request) {
	root := a.hub.Holding()
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "kind": root.Kind, "name": root.Name, "connected": root.Connected})
}

// rootCall answers POST /api/root/call: the call goes to the root's executor and its answer
// envelope is the body.
func (a *api) rootCall(w http.ResponseWriter, r *http.Request) {
	if !server.RequireHostToken(w, r, a.check) {
		return
	}
	var body struct {
		Tool         string          `json:"tool"`
		Args         json.RawMessage `json:"args"`
		DescriptorID string          `json:"descriptorId"`
		BoundsEcho   json.RawMessage `json:"boundsEcho"`
	}
	if !server.ReadJSON(w, r, 0, &body) {
		return
	}
	call := wire.Call{CallID: a.hub.NewCallID(), Tool: body.Tool, DescriptorID: body.DescriptorID, Args: body.Args, BoundsEcho: body.BoundsEcho}
	if call.DescriptorID == "" {
		call.DescriptorID = executor.BuiltinDescriptor
	}
	if len(call.BoundsEcho) == 0 || string(call.BoundsEcho) == "null" {
		call.BoundsEcho = json.RawMessage(`{}`)
	}
	if len(call.Args) == 0 || string(call.Args) == "null" {
		call.Args = json.RawMessage(`{}`)
	}
	if _, err := call.MarshalJSON(); err != nil {
		server.WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.MalformedCall,
			"a call needs a tool name (1 to %d bytes), and args and boundsEcho must be JSON objects", wire.MaxIDBytes))
		return
	}
	answer := a.hub.Ask(r.Context(), call)
	b, err := answer.MarshalJSON()
	if err != nil {
		server.WriteRefusal(w, http.StatusInternalServerError, refusal.New(refusal.InternalError, "the relay could not encode the answer"))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(append(b, '\n'))
}

// pair answers POST /api/pair: a new bearer for the named environment, returned once.
func (a *api) pair(w http.ResponseWriter, r *http.Request) {
	name, ok := a.readName(w, r)
	if !ok {
		return
	}
	bearer, err := a.state.Pair(name)
	if err != nil {
		writeStateError(w, err, "the relay could not record the pairing")
		return
	}
	a.hub.Disconnect(name) // an earlier bearer of this name no longer works
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "name": name, "bearer": bearer})
}

// unpair answers DELETE /api/pair: the bearer is revoked and its socket closed.
func (a *api) unpair(w http.ResponseWriter, r *http.Request) {
	name, ok := a.readName(w, r)
	if !ok {
		return
	}
	err := a.state.Revoke(name)
	if errors.Is(err, hoststate.ErrNotPaired) {
		server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "no environment is paired as %q", name))
		return
	}
	if err != nil {
		writeStateError(w, err, "the relay could not record the revocation")
		return
	}
	closed := a.hub.Disconnect(name)
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "name": name, "disconnected": closed})
}

// readName checks the host token and reads the body's environment name; on false it has
// answered.
func (a *api) readName(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !server.RequireHostToken(w, r, a.check) {
		return "", false
	}
	var body struct {
		Name string `json:"name"`
		// EnvKey is the original Voicebox's spelling of the name.
		EnvKey string `json:"envKey"`
	}
	if !server.ReadJSON(w, r, maxPairBodyBytes, &body) {
		return "", false
	}
	switch {
	case body.Name == "":
		body.Name = body.EnvKey
	case body.EnvKey != "" && body.EnvKey != body.Name:
		server.WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.InvalidArgument,
			"name and envKey are two spellings of the environment's name; give one, or the same in both"))
		return "", false
	}
	if rf := hoststate.CheckName("an environment", body.Name); rf != nil {
		server.WriteRefusal(w, http.StatusBadRequest, rf)
		return "", false
	}
	return body.Name, true
}

// writeStateError answers a pairing change the state could not record: the refusal the store
// gave (a fleet's fleet-unavailable, 503), else internal-error.
func writeStateError(w http.ResponseWriter, err error, why string) {
	if rf, ok := refusal.As(err); ok {
		server.WriteRefusal(w, http.StatusServiceUnavailable, rf)
		return
	}
	server.WriteRefusal(w, http.StatusInternalServerError, refusal.New(refusal.InternalError, "%s", why))
}
