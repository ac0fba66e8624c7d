package server

import (
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// A mini-app's own host. A page opened on a loopback name over http frames each mini-app's bridge
// at http://app-<16 hex>.localhost:PORT/mini-app-bridge.html, a name the page draws at random for
// each frame it starts. Every such name is a site of its own (*.localhost has no registrable
// domain, so the whole name is the site), and Chromium's site isolation then gives each app's
// bridge, and the sandboxed frame inside it, a renderer process of its own: one app's busy loop
// or message flood no longer holds up another app or the page. Browsers resolve every *.localhost
// name to loopback themselves (RFC 6761), so nothing needs configuring.
const (
	// AppHostPrefix starts the first label of every app host.
	AppHostPrefix = "app-"
	// AppHostDigits is how many lowercase hex digits follow AppHostPrefix.
	AppHostDigits = 16
	// AppHostDomain is what every app host ends with.
	AppHostDomain = ".localhost"
)

// AppHostFiles are the only paths an app host serves: the bridge document and the modules it
// loads, from its own host (the bridge and those it imports; a test follows the imports of
// public/ to keep this list whole).
var AppHostFiles = []string{BridgePath, "/mini-app-bridge.js", "/message-budget.js", "/rules.js", "/names.js"}

// AppHost reports whether host, a Host header's value (name or name:port), is an app host:
// app-<AppHostDigits lowercase hex digits>.localhost. Nothing else is, not even another
// subdomain of localhost.
func AppHost(host string) bool {
	name, _, ok := splitHost(host)
	if !ok {
		return false
	}
	label, ok := strings.CutSuffix(name, AppHostDomain)
	if !ok {
		return false
	}
	digits, ok := strings.CutPrefix(label, AppHostPrefix)
	if !ok || len(digits) != AppHostDigits {
		return false
	}
	for _, c := range digits {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// serveAppHost answers a request to an app host. Such a host serves AppHostFiles, and the files
// of folder apps under AppFilesPath, and nothing else, without a session: they hold no secret, and the page's session cookie is never sent to
// another site. Everything else is 404 not-found, so the page, the API and the sockets are never
// reachable under an app's origin.
func (s *Server) serveAppHost(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, AppFilesPath) {
		s.serveAppFile(w, r) // a folder app's own files (see AppFilesPath)
		return
	}
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || !slices.Contains(AppHostFiles, r.URL.Path) {
		WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound,
			"a mini-app's host serves only the mini-app bridge (%s)", strings.Join(AppHostFiles, ", ")))
		return
	}
	s.serveFile(w, r, strings.TrimPrefix(r.URL.Path, "/"))
}

// loopbackPageHost returns the port of host (a Host header's value) when it names the relay on a
// loopback name the page uses app hosts from (127.0.0.1 or localhost), and ok false otherwise.
// The port is "" for a host without one.
func loopbackPageHost(host string) (port string, ok bool) {
	name, port, ok := splitHost(host)
	if !ok || (name != "127.0.0.1" && name != "localhost") {
		return "", false
	}
	return port, true
}

// splitHost splits a Host header's value into its name and its port ("" when it has none); ok
// is false when a port is there but is not 1 to 5 digits.
func splitHost(host string) (name, port string, ok bool) {
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		return host, "", !strings.Contains(host, ":")
	}
	if len(port) == 0 || len(port) > 5 {
		return "", "", false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	return name, port, true
}

// withPort appends ":port" to origin unless port is empty.
func withPort(origin, port string) string {
	if port == "" {
		return origin
	}
	return origin + ":" + port
}

// appFrameSource is the page's frame-src source for its app hosts: every *.localhost name on
// the page's own port, for a page opened on a loopback name; "" for any other host.
func appFrameSource(host string) string {
	port, ok := loopbackPageHost(host)
	if !ok {
		return ""
	}
	return withPort("http://*"+AppHostDomain, port)
}

// bridgeAncestors are the origins that may frame the bridge served to host: the relay's own
// loopback page origins on host's port, and the public origin when one is configured. 'self'
// covers a bridge served on the page's own host (a page not on a loopback name).
func bridgeAncestors(host, publicOrigin string) []string {
	out := []string{"'self'"}
	if port, ok := loopbackPageHost(appHostAsPage(host)); ok {
		out = append(out, withPort("http://127.0.0.1", port), withPort("http://localhost", port))
	}
	if publicOrigin != "" {
		out = append(out, publicOrigin)
	}
	return out
}

// appHostAsPage turns an app host into the loopback page host on the same port
// (app-….localhost:8787 into localhost:8787); any other host is returned as it is.
func appHostAsPage(host string) string {
	if !AppHost(host) {
		return host
	}
	if _, port, _ := splitHost(host); port != "" {
		return net.JoinHostPort("localhost", port)
	}
	return "localhost"
}
