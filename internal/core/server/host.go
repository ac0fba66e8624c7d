package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// LoopbackHost reports whether host, a Host header's value (with or without a port), names this
// machine's loopback: an address in 127.0.0.0/8 or ::1, localhost, or any name under .localhost,
// which browsers resolve to loopback themselves and never ask DNS for.
func LoopbackHost(host string) bool {
	name := hostName(host)
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Unmap().IsLoopback()
	}
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// hostName is the host of a Host header's value, without port or brackets, lower-case and
// without a final dot.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// hostRefused answers r itself (421 host-refused) and reports true when r arrived on a loopback
// address with a Host header that names anything but loopback (LoopbackHost) or the configured
// public origin's host. A page of another site that a DNS answer pointed at 127.0.0.1 (DNS
// rebinding) sends its own name there, and is refused before any handler runs, so it reads no
// listing and reaches no route, whatever the origin and gate checks would say. A request on
// another address (a server's public one) or on the control socket is not checked here: there
// the session gate holds.
func (s *Server) hostRefused(w http.ResponseWriter, r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok || !local.IP.IsLoopback() {
		return false
	}
	if LoopbackHost(r.Host) || (s.publicHost != "" && hostName(r.Host) == s.publicHost) {
		return false
	}
	s.log.Info("host refused", "path", loggedPath(r), "host", clipHost(r.Host))
	refuseUnread(w, r, http.StatusMisdirectedRequest, refusal.New(refusal.HostRefused,
		"this relay answers on a loopback address only to loopback names (127.0.0.1, [::1], localhost, *.localhost) and its --origin's host; open it at one of those"))
	return true
}

// originHost returns the host name of a public origin (see ParseOrigin), or "".
func originHost(origin string) string {
	u, err := url.Parse(origin)
	if err != nil || origin == "" {
		return ""
	}
	return hostName(u.Host)
}

// clipHost is a Host header's value as a log line may show it: at most 64 bytes of letters,
// digits and the punctuation of host names.
func clipHost(h string) string {
	var b strings.Builder
	for _, c := range h {
		if b.Len() >= 64 {
			break
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]_", c) {
			b.WriteRune(c)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}
