package extensionhost

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
)

// Views' CSP grants. ReadView reads what a view declares (_meta.ui.csp) and, when any of it is
// within the extension's bounds.hosts, gives the page a token for it (View.Policy). The page
// frames the view's bridge with ?view=<token>, and the relay's server asks ViewSources what the
// bridge's policy gains. The intersection is computed again on every such request, against the
// extension's bounds as admitted then: a revoked extension's token grants nothing, and a plan
// admitted with fewer hosts grants less.
const (
	// MaxViewGrants bounds the tokens held at once; a new one past it drops the oldest (its view,
	// framed again, keeps the default policy until it is opened again).
	MaxViewGrants = 64
	// viewTokenBytes is the randomness of a view token.
	viewTokenBytes = 16
)

// viewGrant is what a view token is bound to: the extension, the view's tool (the server's name
// of it) and the domains the view declared.
type viewGrant struct {
	extension, serverTool string
	declared              extensions.ViewCSP
}

// viewGrants holds the tokens, oldest first. Its zero value is empty and ready.
type viewGrants struct {
	mu     sync.Mutex
	grants map[string]viewGrant
	order  []string
}

// issue returns a new token for g.
func (v *viewGrants) issue(g viewGrant) string {
	b := make([]byte, viewTokenBytes)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.grants == nil {
		v.grants = map[string]viewGrant{}
	}
	for len(v.order) >= MaxViewGrants {
		delete(v.grants, v.order[0])
		v.order = v.order[1:]
	}
	v.grants[token] = g
	v.order = append(v.order, token)
	return token
}

func (v *viewGrants) get(token string) (viewGrant, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	g, ok := v.grants[token]
	return g, ok
}

// maxViewToken bounds the token read from the bridge's ?view=.
const maxViewToken = 64

// BridgePolicy is the door's server.BridgePolicy: a view's bridge, framed with ?view=<token>,
// gains in its policy what the token grants now (ViewSources), and nothing else; without a
// token, or with one no longer known (expired, or its extension revoked), the bridge keeps its
// default policy (connect-src 'none').
func (rt *Runtime) BridgePolicy(h http.Header, r *http.Request) {
	token := r.URL.Query().Get("view")
	if token == "" || len(token) > maxViewToken {
		return
	}
	widenViewPolicy(h, rt.ViewSources(token))
}

// ViewSources is what BridgePolicy grants a bridge framed with token: the sources each directive
// of the bridge framed with token gains: the view's declared domains within its extension's
// bounds.hosts as admitted now, or nil for an unknown token, or an extension or tool no longer
// admitted.
func (rt *Runtime) ViewSources(token string) map[string][]string {
	g, ok := rt.views.get(token)
	if !ok {
		return nil
	}
	rt.mu.Lock()
	x, admitted := rt.loaded[g.extension]
	rt.mu.Unlock()
	if !admitted || x.Descriptor.MCP == nil || !slices.Contains(x.Descriptor.MCP.Tools, g.serverTool) {
		return nil
	}
	granted, _ := extensions.ViewPolicy(x.Descriptor.Bounds.Hosts, g.declared)
	return granted.Directives()
}

// widenViewPolicy adds sources (viewSources) to the bridge's policy in h: each to its directive
// when it is one of extensions.ViewDirectives, replacing a 'none' there, and to its Connection-Allowlist. A source that is not a plain origin
// (scheme://host[:port] of letters, digits, dots, dashes and colons) is left out, whatever the
// grant says.
func widenViewPolicy(h http.Header, sources map[string][]string) {
	if len(sources) == 0 {
		return
	}
	parts := strings.Split(h.Get("Content-Security-Policy"), "; ")
	for name, srcs := range sources {
		if !slices.Contains(extensions.ViewDirectives, name) {
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
	for _, name := range extensions.ViewDirectives {
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
