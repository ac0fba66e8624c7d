package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RequestIDHeader is the response header that carries the request's id, the one its log lines
// carry. From a trusted proxy, a well-formed incoming value is kept.
const RequestIDHeader = "X-Request-Id"

// ControlClient is the client address logged for a request that came over a Unix socket (the
// relay's control socket, where `relay sessions` and `relay ticket` connect).
const ControlClient = "control-socket"

// maxRequestIDBytes bounds a request id taken from a trusted proxy.
const maxRequestIDBytes = 64

// maxLoggedPathBytes bounds the path a log line carries.
const maxLoggedPathBytes = 256

// requestInfo is what ServeHTTP works out once per request.
type requestInfo struct {
	id     string
	client string // the client's address: the peer's, or what trusted proxies report
	https  bool   // served over TLS, to the relay or (trusted) to the proxy
	gate   *Gate  // the server's session gate, nil when it runs without one
	// held, when set, is the request's count in busy once its handler has handed the hijacked
	// connection to a goroutine of its own (Detach).
	held *heldRequest
}

// heldRequest is a request that outlives its handler (see Detach).
type heldRequest struct {
	detached bool // set by the handler's goroutine, read by ServeHTTP's after the handler
	done     func()
}

// Detach lets the handler of a hijacked connection (a WebSocket) return while a goroutine of its
// own serves the connection on, so that net/http's goroutine, its stack and the request's state
// are let go. It returns done, which that goroutine must call once when the connection has
// ended: until then the request counts as being served (Server.Drain waits for it). The request's
// log line is written when the handler returns (status 101, the upgrade's time). The handler's
// goroutine must call Detach; a request that did not come through a Server gets a done that does
// nothing. Panics in the detached goroutine are its own to recover.
func Detach(r *http.Request) (done func()) {
	info, ok := r.Context().Value(infoKey{}).(requestInfo)
	if !ok || info.held == nil || info.held.detached {
		return func() {}
	}
	info.held.detached = true
	return info.held.done
}

type infoKey struct{}

func infoOf(ctx context.Context) requestInfo {
	info, _ := ctx.Value(infoKey{}).(requestInfo)
	return info
}

// RequestID returns the id of the request ctx belongs to, or "" outside a request the Server
// serves. Socket handlers put it on their log lines, so they join the request's own line.
func RequestID(ctx context.Context) string { return infoOf(ctx).id }

// ClientAddr returns r's client address without port: the peer's, or, when the peer is a trusted
// proxy, the nearest untrusted address its forwarding headers name.
func ClientAddr(r *http.Request) string {
	if info, ok := r.Context().Value(infoKey{}).(requestInfo); ok {
		return info.client
	}
	return peerString(r.RemoteAddr)
}

// Requester names who asks, for limits that must hold per asker rather than for everyone at
// once: "session ID" when r carries a live session of the gate, else "client ADDRESS" (see
// ClientAddr). Without the gate every local process is the same client 127.0.0.1 (or another
// loopback address it picks), so such a limit tells them apart only by address.
func Requester(r *http.Request) string {
	info, ok := r.Context().Value(infoKey{}).(requestInfo)
	if !ok {
		return "client " + peerString(r.RemoteAddr)
	}
	if info.gate != nil {
		if id := info.gate.SessionID(r); id != "" {
			return "session " + id
		}
	}
	return "client " + info.client
}

// HTTPS reports whether r came over TLS: to the relay itself, or to a trusted proxy that says so.
// A session cookie made for such a request is Secure.
func HTTPS(r *http.Request) bool {
	if info, ok := r.Context().Value(infoKey{}).(requestInfo); ok {
		return info.https
	}
	return r.TLS != nil
}

// ParseTrustedProxies reads a comma-separated list of CIDR prefixes (10.0.0.0/8, fd00::/8) or
// single addresses (127.0.0.1); an empty string trusts none.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither an address nor a CIDR prefix", part)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func (s *Server) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// requestInfo works out r's id, client and scheme. Forwarding headers count only when the peer is
// a trusted proxy: Forwarded (RFC 7239) when present, else X-Forwarded-For and X-Forwarded-Proto.
// The client is the nearest address, from the right, that is not itself a trusted proxy; the
// scheme is the one the nearest proxy reports (the last proto).
func (s *Server) requestInfo(r *http.Request) requestInfo {
	info := requestInfo{client: peerString(r.RemoteAddr), https: r.TLS != nil, gate: s.cfg.Gate}
	if _, ok := r.Context().Value(http.LocalAddrContextKey).(*net.UnixAddr); ok {
		info.client = ControlClient
	}
	peer := parseHop(r.RemoteAddr)
	if s.trusted(peer) {
		var hops []string
		var proto string
		if fwd := r.Header.Values("Forwarded"); len(fwd) > 0 {
			hops, proto = parseForwarded(fwd)
		} else {
			hops = splitList(r.Header.Values("X-Forwarded-For"))
			if protos := splitList(r.Header.Values("X-Forwarded-Proto")); len(protos) > 0 {
				proto = protos[len(protos)-1]
			}
		}
		switch strings.ToLower(proto) {
		case "https":
			info.https = true
		case "http":
			info.https = false
		}
		for i := len(hops) - 1; i >= 0; i-- {
			if a := parseHop(hops[i]); i > 0 && s.trusted(a) {
				continue
			}
			info.client = hopString(hops[i])
			break
		}
		if id := r.Header.Get(RequestIDHeader); validRequestID(id) {
			info.id = id
		}
	}
	if info.id == "" {
		b := make([]byte, 8)
		rand.Read(b)
		info.id = hex.EncodeToString(b)
	}
	return info
}

// parseForwarded returns the for= addresses of every element of Forwarded header values, in
// order, and the proto= of the last element that has one.
func parseForwarded(values []string) (hops []string, proto string) {
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			for pair := range strings.SplitSeq(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok {
					continue
				}
				val = strings.Trim(strings.TrimSpace(val), `"`)
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "for":
					hops = append(hops, val)
				case "proto":
					proto = val
				}
			}
		}
	}
	return hops, proto
}

func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// parseHop reads an address as forwarding headers and RemoteAddr spell it: 192.0.2.1,
// 192.0.2.1:4711, 2001:db8::1, [2001:db8::1]:4711. Anything else is the invalid Addr.
func parseHop(s string) netip.Addr {
	s = strings.Trim(strings.TrimSpace(s), `"`)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if strings.HasPrefix(s, "[") {
		if end := strings.IndexByte(s, ']'); end > 0 {
			if a, err := netip.ParseAddr(s[1:end]); err == nil {
				return a.Unmap()
			}
		}
	}
	return netip.Addr{}
}

// hopString is a hop as a log line shows it: the address, or for anything else (unknown,
// _obfuscated) its first 64 letters, digits, '.', '_', ':' and '-'.
func hopString(s string) string {
	if a := parseHop(s); a.IsValid() {
		return a.String()
	}
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= 64 {
			break
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:-", c) {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}

func peerString(remote string) string {
	if a := parseHop(remote); a.IsValid() {
		return a.String()
	}
	if host, _, err := net.SplitHostPort(remote); err == nil && host != "" {
		return hopString(host)
	}
	return hopString(remote)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDBytes {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// loggedPath is r's path for a log line: never the query (a bootstrap ticket travels there),
// and at most maxLoggedPathBytes.
func loggedPath(r *http.Request) string {
	p := r.URL.Path
	if len(p) > maxLoggedPathBytes {
		p = p[:maxLoggedPathBytes] + "..."
	}
	return p
}
