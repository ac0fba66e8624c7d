package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/core/outbound"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// maxTransportErrorBytes bounds the error text of the SDK's transport that an answer keeps; an
// error body past it is cut there.
const maxTransportErrorBytes = 4 << 10

// refusalWriter holds back an error the SDK's streamable transport answers (an HTTP status of
// 400 or more: http.Error's plain text, or a JSON-RPC error), so that finish can answer it the way
// every other refusal of /mcp is written. Success answers (a POST's JSON-RPC message, a GET's
// event stream) pass through, a JSON-RPC error among them given data {refused, why}.
type refusalWriter struct {
	http.ResponseWriter
	held   int // the error status held back; 0 while the answer passes through
	body   bytes.Buffer
	passed bool // a status went through
	// answers is the id of the POST's one call (callID), "" when it holds none; the event
	// answering it is the stream's last, written through last (outbound.SSE.Last) when set.
	answers string
	last    func([]byte) bool
	// json says the response is application/json (a POST's message, or a batch's array), not
	// an event stream; read once, before anything passes through: after that the stream's writer
	// goroutine owns the response's header.
	json, decided bool
}

// decide reads the response's content type, once, before the first status or bytes pass through.
func (w *refusalWriter) decide() {
	if !w.decided {
		w.decided = true
		w.json = strings.HasPrefix(w.Header().Get("Content-Type"), "application/json")
	}
}

func (w *refusalWriter) WriteHeader(status int) {
	if !w.passed && w.held == 0 && status >= http.StatusBadRequest {
		w.held = status
		return
	}
	w.passed = true
	w.decide()
	w.ResponseWriter.WriteHeader(status)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.held != 0 {
		if room := maxTransportErrorBytes - w.body.Len(); room > 0 {
			w.body.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	w.passed = true
	w.decide()
	var event []byte
	if w.json {
		event = jsonWithErrorData(b) // a JSON response: the message itself, or a batch's
	} else {
		event = eventWithErrorData(b)
	}
	if w.last != nil && w.answers != "" && answersCall(event, w.answers) {
		// The SDK ends the stream after this event (its Flush then finds the stream ended). A
		// Write keeps nothing of b: the stream gets a copy.
		if !w.last(bytes.Clone(event)) {
			return 0, outbound.ErrClosed
		}
		return len(b), nil
	}
	if _, err := w.ResponseWriter.Write(event); err != nil {
		return 0, err
	}
	return len(b), nil
}

// answersCall reports whether event, one JSON-RPC message or one server-sent event holding one
// as the SDK's transport writes it, is the answer to the call of id (as the SDK encodes it): the
// message begins as the SDK's encoder begins every answer, the id, then the result or the error.
// A request of the server's own that happens to carry the same id has a method there, and is
// not.
func answersCall(event []byte, id string) bool {
	msg := event
	if i := bytes.Index(event, []byte("data: ")); i == 0 || i > 0 && event[i-1] == '\n' {
		msg = event[i+len("data: "):]
	}
	rest, ok := bytes.CutPrefix(msg, []byte(errorAnswerStart))
	if !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(id)); !ok {
		return false
	}
	return bytes.HasPrefix(rest, []byte(`,"result":`)) || bytes.HasPrefix(rest, []byte(`,"error":`))
}

// jsonWithErrorData is body, a JSON response of the SDK's transport (one JSON-RPC message, or
// the array of a batch's answers), with each error answer passed through withErrorData.
func jsonWithErrorData(body []byte) []byte {
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		fixed, _ := withErrorData(body)
		return fixed
	}
	var msgs []json.RawMessage
	if json.Unmarshal(body, &msgs) != nil {
		return body
	}
	changed := false
	for i, m := range msgs {
		if fixed, added := withErrorData(m); added {
			msgs[i], changed = fixed, true
		}
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(msgs)
	if err != nil {
		return body
	}
	return out
}

// eventWithErrorData is event, one server-sent event as the SDK's transport writes it (its
// fields, then "data: " and one JSON-RPC message, then a blank line), with the message passed
// through withErrorData.
func eventWithErrorData(event []byte) []byte {
	i := bytes.Index(event, []byte("data: "))
	if i < 0 || (i > 0 && event[i-1] != '\n') {
		return event
	}
	data, end := event[i+len("data: "):], ""
	if d, ok := bytes.CutSuffix(data, []byte("\n\n")); ok {
		data, end = d, "\n\n"
	}
	fixed, added := withErrorData(data)
	if !added {
		return event
	}
	return append(append(append(bytes.Clone(event[:i]), "data: "...), fixed...), end...)
}

// Flush passes a flush of an event stream on; a held error is written by finish.
func (w *refusalWriter) Flush() {
	if w.held == 0 {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.NewResponseController reach the connection's writer.
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish answers a held error: a JSON-RPC error keeps its shape and gains data {refused, why}
// when it has none; anything else (the transport's plain text) becomes the refusal
// {"ok":false,"refused","why"} that bearer and body refusals of /mcp are. It returns the
// refusal's rule, "" when nothing was held.
func (w *refusalWriter) finish() refusal.Rule {
	if w.held == 0 {
		return ""
	}
	text := strings.TrimSpace(w.body.String())
	rf := transportRefusal(w.held, text)
	h := w.ResponseWriter.Header()
	h.Del("X-Content-Type-Options")
	h.Del("Content-Length")
	if b, ok := withRefusalData(text, rf); ok {
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.ResponseWriter.WriteHeader(w.held)
		w.ResponseWriter.Write(b)
		return rf.Rule
	}
	server.WriteRefusal(w.ResponseWriter, w.held, rf)
	return rf.Rule
}

// transportRefusal names an error of the SDK's transport by its status, keeping its text as the
// reason.
func transportRefusal(status int, text string) *refusal.Refusal {
	if m := jsonRPCErrorMessage(text); m != "" {
		text = m
	}
	switch {
	case status == http.StatusNotFound:
		return refusal.New(refusal.MCPSessionUnknown, "no MCP session has this Mcp-Session-Id (it was closed, or idle past %v); open a new one with initialize and no Mcp-Session-Id", SessionIdle)
	case status == http.StatusForbidden:
		return refusal.New(refusal.MCPSessionForeign, "this MCP session was opened by another client; a session belongs to the client that opened it, so open your own with initialize")
	case status == http.StatusRequestEntityTooLarge:
		return refusal.New(refusal.BodyTooLarge, "a request to /mcp is at most %d bytes", MaxBodyBytes)
	case status == http.StatusUnsupportedMediaType:
		return refusal.New(refusal.UnsupportedContentType, "send the JSON-RPC message as Content-Type: application/json")
	case status >= http.StatusInternalServerError:
		return refusal.New(refusal.InternalError, "the MCP transport failed (%s); try again", text)
	}
	return refusal.New(refusal.MalformedCall, "the MCP transport refused the request: %s", text)
}

// jsonRPCErrorMessage is the error message of text when it is a JSON-RPC error response.
func jsonRPCErrorMessage(text string) string {
	var resp struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(text), &resp) != nil || resp.Error == nil {
		return ""
	}
	return resp.Error.Message
}

// withRefusalData is text, a JSON-RPC error response, with data {refused, why} added to its
// error when it has no data; ok is false when text is no JSON-RPC error. An error that carries
// data of its own (the SDK's supported protocol versions) keeps it.
func withRefusalData(text string, rf *refusal.Refusal) ([]byte, bool) {
	var resp map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &resp) != nil || resp["error"] == nil {
		return nil, false
	}
	var e map[string]json.RawMessage
	if json.Unmarshal(resp["error"], &e) != nil {
		return nil, false
	}
	if _, has := e["data"]; !has {
		e["data"], _ = json.Marshal(rf)
		resp["error"], _ = json.Marshal(e)
	}
	b, err := json.Marshal(resp)
	return append(b, '\n'), err == nil
}

// withRefusalErrors is the receiving middleware that gives every JSON-RPC error a session
// answers (an unknown method, parameters that do not fit, a tool or resource the SDK refuses)
// data {refused, why}, keeping its code; an error that carries data of its own keeps it. Tool
// refusals are not errors: they come back as results with isError set.
func withRefusalErrors(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil {
			if r, ok := res.(*sdk.CallToolResult); ok && r != nil {
				return textResult{r}, nil // outermost: the SDK only encodes it from here
			}
			return res, nil
		}
		we := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		if wrapped := (*jsonrpc.Error)(nil); errors.As(err, &wrapped) {
			we.Code, we.Data = wrapped.Code, wrapped.Data
		}
		if len(we.Data) == 0 {
			rf, ok := refusal.As(err)
			if !ok {
				rf = refusal.New(codeRule(we.Code), "%s", err.Error())
			}
			we.Data, _ = json.Marshal(rf)
		}
		return res, we
	}
}

// codeRule is the rule a JSON-RPC error of code names when it carries no refusal of its own.
func codeRule(code int64) refusal.Rule {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return refusal.UnknownMethod
	case jsonrpc.CodeInvalidParams:
		return refusal.InvalidArgument
	case jsonrpc.CodeInvalidRequest:
		return refusal.MalformedCall
	case jsonrpc.CodeParseError:
		return refusal.MalformedJSON
	}
	return refusal.InternalError
}

// withErrorData is msg, one JSON-RPC message as the SDK encodes it, with data {refused, why}
// added to its error when it is an error answer that has no data (added reports that): the errors the SDK answers
// before any middleware runs (params that do not decode into the method's type) reach the client
// only through the transport, so /mcp's event stream and `relay mcp`'s lines pass every message
// through here. Any other message is returned as it is, looked at only as far as its id.
func withErrorData(msg []byte) (_ []byte, added bool) {
	if !isErrorAnswer(msg) {
		return msg, false
	}
	var m struct {
		Error struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.Error.Data) != 0 {
		return msg, false
	}
	rf := refusal.New(codeRule(m.Error.Code), "%s", m.Error.Message)
	if m.Error.Code == jsonrpc.CodeInvalidParams { // the SDK's own words name its Go types
		rf = refusal.New(refusal.InvalidArgument, "the request's params do not fit its method: an MCP request's params are an object holding the method's fields, each of its type (%s)", m.Error.Message)
	}
	b, ok := withRefusalData(string(msg), rf)
	if !ok {
		return msg, false
	}
	return bytes.TrimSuffix(b, []byte("\n")), true
}

// errorAnswerStart is how the SDK's encoder begins every answer: its members in the order of its
// wire struct, the id before result or error.
const errorAnswerStart = `{"jsonrpc":"2.0","id":`

// isErrorAnswer reports whether msg is an answer whose next member after its id is its error,
// without decoding it: the id is skipped (a string, a number or null), the rest is not read.
func isErrorAnswer(msg []byte) bool {
	rest, ok := bytes.CutPrefix(msg, []byte(errorAnswerStart))
	if !ok || len(rest) == 0 {
		return false
	}
	i := 0
	if rest[0] == '"' {
		for i = 1; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' {
				i++
			}
		}
		i++
	} else {
		for i < len(rest) && rest[i] != ',' && rest[i] != '}' {
			i++
		}
	}
	return i <= len(rest) && bytes.HasPrefix(rest[i:], []byte(`,"error":`))
}
