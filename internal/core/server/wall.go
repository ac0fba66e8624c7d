package server

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The cross-site wall. A page of another site can make a browser send a request to the relay
// without asking first (no CORS preflight) only when the request is "simple": GET, HEAD or
// POST, with no body or a body of text/plain, application/x-www-form-urlencoded or
// multipart/form-data. It cannot read the answer, but the request itself happens, with the
// person's cookies. Every request that is not GET or HEAD therefore passes stateChangeRefused
// before any route, whatever the route and whether the gate is on:
//
//   - its Origin, when it has one, must be the page's (PageOrigin): "null" (a sandboxed frame,
//     a file: page, a redirect chain) and every other origin are refused 403 origin-refused.
//     A request with no Origin passes: browsers put an Origin on every request that is not GET
//     or HEAD, so such a request comes from a program (the relay's CLI on its control socket, an
//     MCP client, curl), which the gate and the routes' own checks (host token, bearer) judge;
//   - its body must be what its route reads (BodyRule, JSONBody unless the route was registered
//     with HandleBody): a JSON route takes only a declared JSON type (415
//     unsupported-content-type) and a body that is not empty (400 body-required). A declared
//     JSON type is not one a page may send without a preflight, which the relay never grants,
//     so no page of another site gets such a request through, whatever its Origin says.
//
// GET and HEAD change nothing and spend no budget on any route (each route says so; the
// test of every route checks the rest): that is what lets them pass with no Origin check
// beyond originRefused's.

// BodyRule is what a state-changing route (any method but GET and HEAD) takes as its body.
type BodyRule int

const (
	// JSONBody is the rule of every route not registered otherwise: a declared JSON type
	// (application/json or application/*+json, UTF-8) and a body that is not empty, even when
	// the route reads nothing from it ({} then).
	JSONBody BodyRule = iota
	// BytesBody is a file's raw bytes (a folder app's file, PUT /api/app-files/...): declared
	// application/octet-stream, which is not a type a page may send without a preflight, and
	// possibly empty (an empty file is a file).
	BytesBody
	// NoBody is a route that reads no body and whose method is not one a page may send
	// without a preflight (DELETE /mcp, which ends an MCP session, is the one; it is also
	// admitted by bearer). A body sent there is not read.
	NoBody
)

// BytesType is the Content-Type a BytesBody route takes.
const BytesType = "application/octet-stream"

// Route is a pattern registered on the server and the body rule its requests are held to.
type Route struct {
	Pattern string
	Body    BodyRule
}

// Routes lists every pattern registered on the server, in the order registered, with its body
// rule: the page's files, the JSON API and the routes other packages added. The test of every
// route walks it, so a route added later cannot skip the wall.
func (s *Server) Routes() []Route {
	s.routesMu.RLock()
	defer s.routesMu.RUnlock()
	return slices.Clone(s.routes)
}

// HandleBody registers h for pattern, as Handle does, with body as its requests' body rule
// instead of JSONBody.
func (s *Server) HandleBody(pattern string, body BodyRule, h http.Handler) {
	s.routesMu.Lock()
	s.routes = append(s.routes, Route{pattern, body})
	if body != JSONBody {
		s.bodies[pattern] = body
	}
	s.routesMu.Unlock()
	s.mux.Handle(pattern, h)
}

// bodyRuleOf is the body rule of the route r goes to.
func (s *Server) bodyRuleOf(r *http.Request) BodyRule {
	_, pattern := s.mux.Handler(r)
	s.routesMu.RLock()
	defer s.routesMu.RUnlock()
	return s.bodies[pattern] // JSONBody when the route was not registered otherwise
}

// StateChanging reports whether method is one the cross-site wall holds (any but GET and HEAD).
func StateChanging(method string) bool {
	return method != http.MethodGet && method != http.MethodHead
}

// stateChangeRefused answers r itself and reports true when r is a state-changing request the
// cross-site wall refuses (see above). It may replace r.Body (to look at its first byte).
func (s *Server) stateChangeRefused(w http.ResponseWriter, r *http.Request) bool {
	if !StateChanging(r.Method) {
		return false
	}
	if origins := r.Header.Values("Origin"); len(origins) > 0 && !s.PageOrigin(r) {
		s.log.Info("origin refused", "path", loggedPath(r), "method", r.Method, "origin", strings.Join(origins, ","))
		refuseUnread(w, r, http.StatusForbidden, refusal.New(refusal.OriginRefused,
			"a request that changes something is taken only from the page's own origin or from a program (no Origin); this one came from %s", describeOrigin(origins)))
		return true
	}
	switch s.bodyRuleOf(r) {
	case NoBody:
		return false
	case BytesBody:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != BytesType {
			refuseUnread(w, r, http.StatusUnsupportedMediaType, refusal.New(refusal.UnsupportedContentType,
				"this route takes a file's bytes; send them with Content-Type: %s", BytesType))
			return true
		}
		return false
	}
	if !isJSONType(r.Header.Get("Content-Type")) {
		refuseUnread(w, r, http.StatusUnsupportedMediaType, refusal.New(refusal.UnsupportedContentType,
			"a request that changes something takes a JSON body; send it with Content-Type: application/json (and no charset but utf-8)"))
		return true
	}
	empty, rf := emptyBody(r)
	if rf != nil {
		WriteRefusal(w, http.StatusRequestTimeout, rf)
		return true
	}
	if empty {
		writeBodyRequired(w)
		return true
	}
	return false
}

// describeOrigin names the origins a refused request carried, for its refusal.
func describeOrigin(origins []string) string {
	if len(origins) != 1 {
		return "several origins at once"
	}
	if origins[0] == "null" {
		return `"null" (a sandboxed frame, a file or a redirect)`
	}
	return "another origin"
}

// writeBodyRequired answers a JSON route's request whose body is empty.
func writeBodyRequired(w http.ResponseWriter) {
	WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.BodyRequired,
		"a request that changes something carries a JSON object as its body, {} when there is nothing to say"))
}

// emptyBody reports whether r's body is empty. A body of unknown length (chunked) is read for
// its first byte, which is put back; a body that stalls before it is refused body-timeout.
func emptyBody(r *http.Request) (bool, *refusal.Refusal) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true, nil
	}
	if r.ContentLength > 0 {
		return false, nil
	}
	var first [1]byte
	n, err := io.ReadFull(r.Body, first[:])
	if n == 0 {
		if errors.Is(err, ErrBodyTimeout) {
			return false, refusal.New(refusal.BodyTimeout, "the request body stopped arriving (the relay waits %s for each part); send it whole", BodyIdleTimeout)
		}
		return true, nil
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(first[:n]), r.Body), r.Body}
	return false, nil
}
