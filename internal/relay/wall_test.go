package relay

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// freeGETs are the relay's GET routes, each with why answering it changes nothing and spends no
// budget: a page of another site can make a browser send any of them (a no-cors fetch, an
// <img>) with the person's cookies. A new GET route fails TestEveryRouteHoldsTheCrossSiteWall
// until it is added here with its reason; one that would change something is a POST instead
// (POST /api/extensions/view, which spends a remote extension's requests, is one).
var freeGETs = map[string]string{
	"GET /api/health":                      "reads the build",
	"GET /api/ready":                       "reads whether the relay is stopping",
	"GET /api/sessions":                    "lists sessions, with the host token",
	"GET /{path...}":                       "the page's files; a bootstrap ticket is redeemed by a top-level navigation the gate answers",
	"GET /channel":                         "a WebSocket: the page's Origin and session, or a machine's hello (internal/core/hub)",
	"GET /api/root":                        "reads who holds the root",
	"GET /live":                            "a WebSocket: an upgrade needs the page's Origin (originRefused)",
	"GET /api/agent-settings":              "reads the settings",
	"GET /api/assistant":                   "reads the catalogue",
	"GET /api/approvals":                   "lists the approvals waiting",
	"GET /api/events":                      "an event stream that only reads",
	"GET /api/extensions":                  "reads the listing",
	"GET /api/extensions/catalogue":        "reads the shipped descriptors",
	"GET /api/extensions/{kind}/{id}/plan": "reads a staged or shipped descriptor's plan",
	"GET /mini-apps":                       "lists the registered external apps",
	"GET /mini-apps/model":                 "reads what the open apps add; ?view=1 asks them, and answers are free to an app",
	"GET /mcp":                             "an MCP client's event stream, admitted by bearer (internal/door/mcp)",
	"GET /api/mcp/clients":                 "lists MCP clients, with the host token",
}

// wildcard is a path segment pattern of a ServeMux route.
var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// TestEveryRouteHoldsTheCrossSiteWall walks every route the relay registers (server.Routes)
// and sends each state-changing one what a page of another site can send without a preflight,
// with the gate off: Origin null, a foreign Origin, a text/plain body and an empty body. Each is
// refused by the wall with its rule before any handler runs, and the page's own request passes
// the wall. Every GET route must be one freeGETs vouches for.
func TestEveryRouteHoldsTheCrossSiteWall(t *testing.T) {
	t.Parallel()
	r, url := startRelay(t, Config{})
	page := strings.Replace(url, "localhost", "127.0.0.1", 1)
	send := func(method, path string, header map[string]string, body string) (int, refusal.Rule) {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body, req.ContentLength = http.NoBody, 0
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var m struct {
			Refused refusal.Rule `json:"refused"`
		}
		json.Unmarshal(b, &m)
		return resp.StatusCode, m.Refused
	}
	jsonType := "application/json"
	walked := 0
	for _, route := range r.Server.Routes() {
		method, path, ok := strings.Cut(route.Pattern, " ")
		if !ok {
			method, path = "", route.Pattern // a pattern for every method
		}
		if method == http.MethodGet || method == http.MethodHead {
			if _, ok := freeGETs[route.Pattern]; !ok {
				t.Errorf("%s is a GET route no one has said changes nothing: add it to freeGETs with why, or make it a POST", route.Pattern)
			}
			continue
		}
		path = wildcard.ReplaceAllStringFunc(path, func(w string) string {
			if strings.HasSuffix(w, "...}") {
				return "a/b.js"
			}
			return "x"
		})
		methods := []string{method}
		if method == "" {
			methods = []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}
		}
		ctype := jsonType
		if route.Body == server.BytesBody {
			ctype = server.BytesType
		}
		for _, m := range methods {
			walked++
			for _, origin := range []string{"null", "https://elsewhere.example"} {
				if status, rule := send(m, path, map[string]string{"Origin": origin, "Content-Type": ctype}, "{}"); status != http.StatusForbidden || rule != refusal.OriginRefused {
					t.Errorf("%s %s from Origin %s: %d %q, want 403 origin-refused", m, path, origin, status, rule)
				}
			}
			if status, rule := send(m, path, map[string]string{"Origin": page, "Content-Type": ctype}, "{}"); rule == refusal.OriginRefused || rule == refusal.UnsupportedContentType || rule == refusal.BodyRequired {
				t.Errorf("%s %s from the page with a %s body: %d %q; the wall refused the page", m, path, ctype, status, rule)
			}
			if route.Body == server.NoBody {
				continue
			}
			if status, rule := send(m, path, map[string]string{"Content-Type": "text/plain"}, "{}"); status != http.StatusUnsupportedMediaType || rule != refusal.UnsupportedContentType {
				t.Errorf("%s %s with a text/plain body: %d %q, want 415 unsupported-content-type", m, path, status, rule)
			}
			if route.Body == server.BytesBody {
				continue // an empty file is a file
			}
			if status, rule := send(m, path, map[string]string{"Content-Type": jsonType}, ""); status != http.StatusBadRequest || rule != refusal.BodyRequired {
				t.Errorf("%s %s with an empty body: %d %q, want 400 body-required", m, path, status, rule)
			}
			if status, rule := send(m, path, nil, ""); status != http.StatusUnsupportedMediaType || rule != refusal.UnsupportedContentType {
				t.Errorf("%s %s with no body and no type: %d %q, want 415 unsupported-content-type", m, path, status, rule)
			}
		}
	}
	for pattern := range freeGETs {
		if !slices.ContainsFunc(r.Server.Routes(), func(rt server.Route) bool { return rt.Pattern == pattern }) {
			t.Errorf("freeGETs vouches for %s, which the relay does not register", pattern)
		}
	}
	if walked < 20 {
		t.Fatalf("walked %d state-changing routes; the relay has more", walked)
	}
}
