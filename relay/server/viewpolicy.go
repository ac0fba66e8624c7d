package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// An MCP Apps view's bridge policy. A view may declare origins it needs; the relay that read the
// view (relay/extensionhost) keeps the part of them within its extension's declared hosts and
// gives the page a token for it. The page frames the view's bridge with ?view=<token>, and the
// bridge's policy then gains those origins in the directives they were granted for, and nothing
// else: without a token, or with one the relay no longer knows (expired, or its extension
// revoked), the bridge keeps its default policy (connect-src 'none').

// ViewPolicies answers, for a view token, the sources each CSP directive of the view's bridge
// gains, or nil. ViewSources is called on every bridge request that carries ?view=, with the
// token as the page sent it, and must be safe for concurrent use.
type ViewPolicies interface {
	ViewSources(token string) map[string][]string
}

// viewDirectives are the only directives a view grant may widen (extensions.ViewDirectives,
// which a test holds this list to).
var viewDirectives = []string{"connect-src", "img-src", "script-src", "style-src", "font-src", "media-src", "frame-src", "base-uri"}

// maxViewToken bounds the token read from ?view=.
const maxViewToken = 64

// SetViewPolicies makes p the source of views' bridge policies (see ViewPolicies). Call it before
// the server serves; a nil p (the default) leaves every bridge at its default policy.
func (s *Server) SetViewPolicies(p ViewPolicies) {
	s.views.Store(&p)
}

// viewSources returns the sources r's view token grants, or nil.
func (s *Server) viewSources(r *http.Request) map[string][]string {
	token := r.URL.Query().Get("view")
	p := s.views.Load()
	if token == "" || len(token) > maxViewToken || p == nil || *p == nil {
		return nil
	}
	return (*p).ViewSources(token)
}

// widenViewPolicy adds sources (viewSources) to the bridge's policy in h: each to its directive
// when it is one of viewDirectives, replacing a 'none' there, and to its Connection-Allowlist. A source that is not a plain origin
// (scheme://host[:port] of letters, digits, dots, dashes and colons) is left out, whatever the
// grant says.
func widenViewPolicy(h http.Header, sources map[string][]string) {
	if len(sources) == 0 {
		return
	}
	parts := strings.Split(h.Get("Content-Security-Policy"), "; ")
	for name, srcs := range sources {
		if !slices.Contains(viewDirectives, name) {
			continue
		}
		var add []string
		for _, src := range srcs {
			if plainOrigin(src) {
				add = append(add, src)
			}
		}
		if len(add) == 0 {
			continue
		}
		found := false
		for i, p := range parts {
			directive, rest, _ := strings.Cut(p, " ")
			if directive != name {
				continue
			}
			found = true
			if rest == "'none'" {
				parts[i] = name
			}
			parts[i] += " " + strings.Join(add, " ")
		}
		if !found {
			// A directive the bridge leaves to default-src 'none': it gets exactly the grant.
			parts = append(parts, name+" "+strings.Join(add, " "))
		}
	}
	h.Set("Content-Security-Policy", strings.Join(parts, "; "))
	allowViewConnections(h, sources)
}

// allowViewConnections adds the plain origins of sources, in the directives a view grant may
// widen (base-uri names no connection), to the bridge's Connection-Allowlist in h, as URL
// patterns of the whole origin (ws: and wss: as http: and https:, as the header matches them).
// WebRTC stays blocked: a grant names hosts, and a peer connection goes to none of them.
func allowViewConnections(h http.Header, sources map[string][]string) {
	list := h.Get("Connection-Allowlist")
	inner, params, ok := strings.Cut(list, ")")
	if !ok {
		return
	}
	var add []string
	for _, name := range viewDirectives {
		if name == "base-uri" {
			continue
		}
		for _, src := range sources[name] {
			if !plainOrigin(src) {
				continue
			}
			scheme, host, _ := strings.Cut(src, "://")
			switch scheme {
			case "ws":
				scheme = "http"
			case "wss":
				scheme = "https"
			}
			pattern := strconv.Quote(scheme + "://" + host + "/*")
			if !slices.Contains(add, pattern) {
				add = append(add, pattern)
			}
		}
	}
	if len(add) == 0 {
		return
	}
	h.Set("Connection-Allowlist", inner+" "+strings.Join(add, " ")+")"+params)
}

// plainOrigin reports whether src is scheme://host[:port] with an http, https, ws or wss scheme
// and a host of letters, digits, dots, dashes and a port's colon and digits.
func plainOrigin(src string) bool {
	scheme, host, ok := strings.Cut(src, "://")
	if !ok || !slices.Contains([]string{"http", "https", "ws", "wss"}, scheme) || host == "" || len(host) > 255 {
		return false
	}
	for _, c := range host {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == ':':
		default:
			return false
		}
	}
	return true
}
