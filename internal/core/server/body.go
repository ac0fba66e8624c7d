package server

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxBodyBytes is the largest request body a JSON route reads. A route may pass a smaller bound to
// ReadJSON; none may read more.
const MaxBodyBytes = 1 << 20

// ReadJSON is the JSON door every JSON route reads its body through. It decodes the body into v
// and reports true, or answers the refusal itself and reports false:
//
//   - a non-empty body needs a declared JSON type (application/json or application/*+json, with
//     no charset or utf-8);
//     any other declared type, and a body with none, is 415 unsupported-content-type, before
//     anything is read (a page of another site can POST a body with no type, or text/plain,
//     without asking first; those never reach a handler);
//   - a body over max bytes (MaxBodyBytes when max is zero or larger) is 413 body-too-large,
//     before anything is read when its Content-Length says so;
//   - a refusal before anything is read is answered at once, without waiting for the body, and
//     closes the connection (refuseUnread);
//   - a body that stalls past the server's read bounds (BodyIdleTimeout, BodyTimeout) is 408
//     body-timeout;
//   - an empty body (or only white space) is 400 body-required: a route with nothing to read
//     takes {} (see stateChangeRefused, which refuses most of these before any route);
//   - anything but one JSON object, and a property v does not have, is 400 malformed-json.
func ReadJSON(w http.ResponseWriter, r *http.Request, max int64, v any) bool {
	if max <= 0 || max > MaxBodyBytes {
		max = MaxBodyBytes
	}
	ctype := r.Header.Get("Content-Type")
	if !isJSONType(ctype) {
		refuseUnread(w, r, http.StatusUnsupportedMediaType, refusal.New(refusal.UnsupportedContentType,
			"this route reads JSON in UTF-8; send the body with Content-Type: application/json (and no charset but utf-8)"))
		return false
	}
	if r.ContentLength > max {
		refuseUnread(w, r, http.StatusRequestEntityTooLarge, tooLarge(max))
		return false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeTooLarge(w, max)
			return false
		}
		if errors.Is(err, ErrBodyTimeout) {
			WriteRefusal(w, http.StatusRequestTimeout, refusal.New(refusal.BodyTimeout,
				"the request body stopped arriving (the relay waits %s for each part and %s for all of it); send it whole", BodyIdleTimeout, BodyTimeout))
			return false
		}
		WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.MalformedJSON, "the request body could not be read whole"))
		return false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		writeBodyRequired(w)
		return false
	}
	return decodeJSON(w, b, v)
}

func writeTooLarge(w http.ResponseWriter, max int64) {
	WriteRefusal(w, http.StatusRequestEntityTooLarge, tooLarge(max))
}

func tooLarge(max int64) *refusal.Refusal {
	return refusal.New(refusal.BodyTooLarge, "the request body is over this route's bound of %d bytes", max)
}

// refuseUnread answers a refusal given before any of r's body was read, at once, and when r has
// a body closes the connection after it: nothing more is read from it. Otherwise net/http would
// read what is left of the body (up to 256 KiB, under the body's idle bound), first to keep the
// connection (holding the answer) and then to close the body, so a client that sent only
// headers would wait BodyIdleTimeout for its answer, or for the connection to end.
func refuseUnread(w http.ResponseWriter, r *http.Request, status int, rf *refusal.Refusal) {
	if r.ContentLength == 0 {
		WriteRefusal(w, status, rf)
		return
	}
	w.Header().Set("Connection", "close")
	WriteRefusal(w, status, rf)
	http.NewResponseController(w).SetReadDeadline(time.Now()) // not supported by a test's recorder: no matter
}

func decodeJSON(w http.ResponseWriter, b []byte, v any) bool {
	err := strictjson.Decode(b, v)
	if err == nil {
		return true
	}
	e, _ := errors.AsType[*strictjson.Error](err)
	switch e.Kind {
	case strictjson.NotObject:
		WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.MalformedJSON, "the request body must be one JSON object"))
	case strictjson.Trailing:
		WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.MalformedJSON, "the request body must be one JSON object with nothing after it"))
	default:
		WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.MalformedJSON, "the request body is not the JSON object this route reads: %s", jsonProblem(e)))
	}
	return false
}

// jsonProblem says what was wrong without echoing the body.
func jsonProblem(e *strictjson.Error) string {
	switch e.Kind {
	case strictjson.Syntax:
		if e.Offset > 0 {
			return "a syntax error at byte " + strconv.FormatInt(e.Offset, 10)
		}
		return "it ends early"
	case strictjson.WrongType:
		return "property " + quoteField(e.Field) + " has the wrong type"
	case strictjson.UnknownField:
		if e.Field == "" {
			return "it has a property this route does not take"
		}
		return "it has the property " + strconv.Quote(e.Field) + ", which this route does not take"
	}
	return "it does not decode"
}

func quoteField(f string) string {
	if f == "" {
		return "(the body)"
	}
	return `"` + f + `"`
}

// isJSONType reports whether ctype declares JSON: application/json or application/*+json, with
// no charset or charset utf-8 (JSON is UTF-8; a body declared in another charset would be read
// as something its sender did not mean).
func isJSONType(ctype string) bool {
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return false
	}
	if mt == "application/json" {
		return true
	}
	return len(mt) > len("application/+json") && mt[:len("application/")] == "application/" && mt[len(mt)-len("+json"):] == "+json"
}

// HostTokenHeader is the request header that carries the host token.
const HostTokenHeader = "X-Voicebox-Host-Token"

// RequireHostToken answers 403 host-token-required and reports false unless r carries a host
// token check accepts.
func RequireHostToken(w http.ResponseWriter, r *http.Request, check func(string) bool) bool {
	if check != nil && check(r.Header.Get(HostTokenHeader)) {
		return true
	}
	refuseUnread(w, r, http.StatusForbidden, refusal.New(refusal.HostTokenRequired,
		"this route needs the host token in the x-voicebox-host-token header; it is in the .host-token file of the relay's state directory"))
	return false
}
