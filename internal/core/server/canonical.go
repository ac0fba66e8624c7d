package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
)

// redirectedToPrinted answers r itself with a 307 to the same path and query on the address the
// relay prints (Config.BootstrapBase), and reports true, when r is a GET or HEAD of the page's
// files (the route that serves public/) that arrived on a loopback address under another
// loopback name: localhost for 127.0.0.1, [::1], another 127.x address or another port's name.
// The browser keeps a workspace's storage per origin, so the same relay opened under two names
// shows two workspaces, one of them empty; one name keeps one workspace. The API, /mcp, the
// sockets and the mini-apps' own hosts are never redirected (a client of those names its origin
// on purpose), nor is anything when the relay is opened at a public origin.
func (s *Server) redirectedToPrinted(w http.ResponseWriter, r *http.Request) bool {
	if s.printed == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.Header.Get("Upgrade") != "" {
		return false
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok || !local.IP.IsLoopback() || !otherLoopbackName(r.Host) || sameHostPort(r.Host, s.printed) {
		return false
	}
	if _, pattern := s.mux.Handler(r); pattern != staticPattern {
		return false
	}
	to := *s.printed
	to.Path, to.RawPath, to.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	http.Redirect(w, r, to.String(), http.StatusTemporaryRedirect)
	return true
}

// staticPattern is the route that serves the page's files.
const staticPattern = "GET /{path...}"

// printedLoopback parses base (Config.BootstrapBase) and returns it when it names a loopback
// address (the relay's printed address with no public origin), else nil.
func printedLoopback(base string) *url.URL {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil
	}
	a, err := netip.ParseAddr(hostName(u.Host))
	if err != nil || !a.Unmap().IsLoopback() {
		return nil
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}
}

// otherLoopbackName reports whether host is localhost or a loopback address (not a name under
// .localhost, which are the mini-apps' own hosts and the like).
func otherLoopbackName(host string) bool {
	name := hostName(host)
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Unmap().IsLoopback()
	}
	return name == "localhost"
}

// sameHostPort reports whether a Host header's value names the printed address's host and port.
func sameHostPort(host string, printed *url.URL) bool {
	port := printed.Port()
	if _, p, err := net.SplitHostPort(host); err == nil {
		return hostName(host) == hostName(printed.Host) && p == port
	}
	return false
}
