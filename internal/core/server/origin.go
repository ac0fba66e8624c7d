package server

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ParseOrigin checks a public origin as --origin takes it: scheme http or https, a host, an
// optional port, and nothing else (no path, query, fragment or user). It returns the origin as
// browsers spell it in the Origin header.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("origin %q is not scheme://host[:port] with scheme http or https", s)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// OwnLoopbackOrigin reports whether r carries exactly one Origin and it is this relay's own
// loopback origin (127.0.0.1, localhost or [::1]) on the port and scheme r arrived on (https
// when the connection is TLS). It is the one loopback check: PageOrigin, and the hub's and the
// live door's defaults, use it.
func OwnLoopbackOrigin(r *http.Request) bool {
	origins := r.Header.Values("Origin")
	if len(origins) != 1 {
		return false
	}
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
		if origins[0] == scheme+"://"+host+":"+port {
			return true
		}
	}
	return false
}

// PageOrigin reports whether r carries exactly one Origin and it is one the page is served
// from: the configured public origin, or the relay's own loopback origin. It is the one origin
// check of the relay's doors: the page's routes, /channel and /live all use it.
func (s *Server) PageOrigin(r *http.Request) bool {
	origins := r.Header.Values("Origin")
	if len(origins) != 1 {
		return false
	}
	if s.cfg.Origin != "" && origins[0] == s.cfg.Origin {
		return true
	}
	return OwnLoopbackOrigin(r)
}

// isUpgrade reports whether r asks for a WebSocket.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// originRefused answers r itself and reports true when r comes from an origin the relay does not
// serve the page to. A request with no Origin (a top-level navigation, curl) passes: browsers set
// Origin on every cross-origin request that could do harm, and scripts cannot forge it. A
// WebSocket upgrade needs an allowed origin, except on /channel, where a paired machine (no
// Origin) or a foreign page is told why by the hub after its hello (see internal/core/hub). "null"
// (a sandboxed frame) is refused only on upgrades, so a mini-app's own loads are not broken.
func (s *Server) originRefused(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == "/channel" {
		return false
	}
	origins := r.Header.Values("Origin")
	upgrade := isUpgrade(r)
	if len(origins) == 0 && !upgrade {
		return false
	}
	if len(origins) == 1 && origins[0] == "null" && !upgrade {
		return false
	}
	if s.PageOrigin(r) {
		return false
	}
	s.log.Info("origin refused", "path", r.URL.Path, "origin", strings.Join(origins, ","), "upgrade", upgrade)
	refuseUnread(w, r, http.StatusForbidden, refusal.New(refusal.OriginRefused,
		"this relay serves the page only to its own origin; configure --origin (VOICEBOX_ORIGIN) with the address the page is opened at"))
	return true
}
