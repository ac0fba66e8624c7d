package externalapps

import (
	"net/http"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// maxTokenBodyBytes bounds the body of the token route, which reads nothing from it: the audience
// and everything else come from the registry.
const maxTokenBodyBytes = 1 << 10

// Register adds the routes to srv; they pass the page's origin check and loopback gate like the
// page's other routes:
//
//	GET  /mini-apps                 {ok, apps: [{id, name, description, url, origin, icon,
//	                                capabilities, audience?}]}; no secret ever
//	POST /mini-apps/{appId}/token   {ok, token, expiresAt} for an app with the auth capability;
//	                                404 external-app-unknown, 403 external-app-no-auth
//
// subject names who a token is about (the page's session); nil or "" means "local".
func Register(srv *server.Server, m *Minter, subject func(*http.Request) string) {
	srv.Handle("GET /mini-apps", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "apps": m.Registry.Apps()})
	}))
	srv.Handle("POST /mini-apps/{appId}/token", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{}
		if !server.ReadJSON(w, r, maxTokenBodyBytes, &body) {
			return
		}
		sub := ""
		if subject != nil {
			sub = subject(r)
		}
		if sub == "" {
			sub = "local"
		}
		tok, err := m.Mint(r.PathValue("appId"), sub)
		if err != nil {
			rf, _ := refusal.As(err)
			status := http.StatusInternalServerError
			switch rf.Rule {
			case refusal.ExternalAppUnknown:
				status = http.StatusNotFound
			case refusal.ExternalAppNoAuth:
				status = http.StatusForbidden
			}
			server.WriteRefusal(w, status, rf)
			return
		}
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "token": tok.Token, "expiresAt": tok.ExpiresAt})
	}))
}
