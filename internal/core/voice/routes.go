package voice

import (
	"net/http"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// maxRouteBodyBytes bounds the bodies of the settings and keys routes.
const maxRouteBodyBytes = 4 << 10

// providerView is a provider as GET /api/agent-settings lists it. It says whether a key is
// configured and where from, never the key.
type providerView struct {
	Name           string   `json:"name"`
	Label          string   `json:"label"`
	Live           bool     `json:"live"`
	Why            string   `json:"why,omitempty"`
	InputRate      int      `json:"inputRate,omitempty"`
	OutputRate     int      `json:"outputRate,omitempty"`
	Models         []string `json:"models"`
	Voices         []string `json:"voices"`
	Thinking       []string `json:"thinking"`
	ThinkingModels []string `json:"thinkingModels"`
	KeyEnv         string   `json:"keyEnv,omitempty"`
	KeyConfigured  bool     `json:"keyConfigured"`
	KeySource      string   `json:"keySource,omitempty"`
}

// view is the body of GET and PUT /api/agent-settings.
func (h *Handler) view() map[string]any {
	reg := h.opts.Providers
	var ps []providerView
	for _, name := range reg.Names() {
		o, _ := reg.Offer(name)
		p := providerView{Name: name, Label: o.Label, Live: o.Unavailable == "" && o.InputRate > 0, Why: o.Unavailable,
			InputRate: o.InputRate, OutputRate: o.OutputRate, Models: nonNil(o.Models), Voices: nonNil(o.Voices),
			Thinking: nonNil(o.Thinking), ThinkingModels: nonNil(o.ThinkingModels), KeyEnv: o.KeyEnv}
		if o.KeyEnv != "" {
			p.KeySource = h.opts.Keys.Source(name)
			p.KeyConfigured = p.KeySource != ""
		}
		ps = append(ps, p)
	}
	return map[string]any{"ok": true, "settings": h.opts.Settings.Current(), "providers": ps}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Register adds the live-voice routes to srv:
//
//	GET /live                  the live session socket (see the package doc)
//	GET /api/agent-settings    {ok, settings: {provider, model, voice, thinking}, providers: [...]}
//	PUT /api/agent-settings    {provider, model?, voice?, thinking?}: the next session's; empty
//	                           fields take the provider's defaults; answers like GET, or 400 with
//	                           live-provider-unknown, live-model-refused, live-voice-refused,
//	                           live-thinking-refused
//	PUT /api/keys              (host token) {provider, key}: store a vendor key ("" removes it);
//	                           answers {ok, provider, keyConfigured, keySource}, never the key
func Register(srv *server.Server, h *Handler, hostToken func(string) bool) {
	srv.Handle("GET /live", h)
	srv.Handle("GET /api/agent-settings", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server.WriteJSON(w, http.StatusOK, h.view())
	}))
	srv.Handle("PUT /api/agent-settings", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c live.Choice
		if !server.ReadJSON(w, r, maxRouteBodyBytes, &c) {
			return
		}
		if _, err := h.opts.Settings.Set(c); err != nil {
			rf, ok := refusal.As(err)
			if !ok {
				rf = refusal.New(refusal.InternalError, "the relay could not keep the settings")
			}
			server.WriteRefusal(w, http.StatusBadRequest, rf)
			return
		}
		server.WriteJSON(w, http.StatusOK, h.view())
	}))
	srv.Handle("PUT /api/keys", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !server.RequireHostToken(w, r, hostToken) {
			return
		}
		var body struct {
			Provider string `json:"provider"`
			Key      string `json:"key"`
		}
		if !server.ReadJSON(w, r, maxRouteBodyBytes, &body) {
			return
		}
		if err := h.opts.Keys.Set(body.Provider, body.Key); err != nil {
			rf, _ := refusal.As(err)
			status := http.StatusBadRequest
			if rf.Rule == refusal.InternalError {
				status = http.StatusInternalServerError
			}
			server.WriteRefusal(w, status, rf)
			return
		}
		src := h.opts.Keys.Source(body.Provider)
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "provider": body.Provider, "keyConfigured": src != "", "keySource": src})
	}))
}
