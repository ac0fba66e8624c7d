package extensionhost

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/voicebox-go/voicebox/shared/extensions"
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

// ViewSources is the server's ViewPolicies (server.SetViewPolicies): the sources each directive
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
