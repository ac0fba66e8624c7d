package server

import (
	"net/http"
	"strings"
)

// setSecurityHeaders puts the page's security headers on every response. The policy allows what
// the page needs and nothing more: its own scripts and workers, WebAssembly compilation, its own
// connections (with its own ws: origin spelled out), its own frames, its mini-apps' own hosts
// (see AppHost) and the registered external mini-apps' origins (frames), and embedding only by
// itself. The bridge gets its own policy (bridgePolicy), and may be framed by the page's origins
// (publicOrigin, when set, and the loopback ones) from whichever host serves it.
func setSecurityHeaders(h http.Header, host, path string, frames []string, publicOrigin string) {
	connect := "'self'"
	frameSrc := []string{"frame-src 'self'"}
	if safeHost(host) {
		connect += " ws://" + host
		if app := appFrameSource(host); app != "" {
			frameSrc = append(frameSrc, app)
		}
	}
	h.Set("Content-Security-Policy", strings.Join([]string{
		"default-src 'none'",
		"script-src 'self' 'wasm-unsafe-eval'",
		"worker-src 'self'",
		"connect-src " + connect,
		"style-src 'self'",
		"img-src 'self' data:",
		strings.Join(append(frameSrc, frames...), " "),
		"frame-ancestors 'self'",
		"base-uri 'none'",
		"form-action 'none'",
	}, "; "))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	if path == BridgePath {
		ancestors := []string{"'self'"}
		if safeHost(host) {
			ancestors = bridgeAncestors(host, publicOrigin)
		}
		h.Set("Content-Security-Policy", bridgePolicy+"; frame-ancestors "+strings.Join(ancestors, " "))
		h.Set("Connection-Allowlist", BridgeConnections)
		// frame-ancestors says who may frame it; X-Frame-Options cannot name another origin.
		h.Del("X-Frame-Options")
	}
	if path == GuestPath || path == OldGuestPath {
		// External mini-apps load the guest library from their own origin, under their own
		// Cross-Origin-Embedder-Policy.
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	}
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// GuestPath is the guest library external mini-apps load (public/mini-app-guest.js). It holds no
// secret, so it is served without a session even with the loopback gate on.
const GuestPath = "/mini-app-guest.js"

// OldGuestPath is the guest library's earlier address, which apps already published keep
// loading: it serves the same file, the same way, as GuestPath.
const OldGuestPath = "/miniapp-guest.js"

// BridgePath is the mini-app bridge, the outer frame around every mini-app.
const BridgePath = "/mini-app-bridge.html"

// bridgePolicy is the bridge's Content-Security-Policy. The inner frame is an about:srcdoc
// document, which inherits it, so this is also the policy of the mini-app's own code: it may run
// inline script and style (its own code, the way a model writes it) and data: scripts (its own
// code again, run in its own window: pdf.js, in the PDF viewer of the MCP Apps examples, loads its
// worker's code as a data: module when it may start no worker), and show data: and blob:
// media, and it may connect nowhere (connect-src 'none', as MCP Apps hosts default to), so what a
// user shows an app cannot be sent away. The bridge itself needs only its own script. Its
// frame-ancestors, the page's origins, is added per request (see setSecurityHeaders).
var bridgePolicy = strings.Join([]string{
	"default-src 'none'",
	"script-src 'self' 'unsafe-inline' data:",
	"style-src 'unsafe-inline'",
	"img-src data: blob:",
	"media-src data: blob:",
	"font-src data:",
	"connect-src 'none'",
	"frame-src 'none'",
	"worker-src 'none'",
	"base-uri 'none'",
	"form-action 'none'",
}, "; ")

// BridgeConnections is the bridge's Connection-Allowlist (WICG Connection Allowlists): its own
// origin and nothing else, and webrtc=block. CSP's connect-src does not govern WebRTC, and
// Chromium honours no CSP webrtc directive; this header does: a document under it cannot open a
// peer connection or gather ICE candidates (the browser never binds the sockets), and the inner
// srcdoc frame, the app, and every about:blank, srcdoc, blob: or data: frame the app makes
// inherit it. A door's BridgePolicy may add the origins it granted (a view's). Browsers that do not
// know the header ignore it; SECURITY.md says what holds there.
const BridgeConnections = "(response-origin);webrtc=block"

// safeHost reports whether a Host header value is a plain host[:port] that may be echoed into a
// policy: letters, digits, dots, dashes, colons and the brackets of an IPv6 literal.
func safeHost(host string) bool {
	if host == "" || len(host) > 255 {
		return false
	}
	for _, c := range host {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
