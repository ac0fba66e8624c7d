// Package mcp serves the assistant's tools to MCP clients (desktop assistants, coding agents,
// IDEs) at /mcp, over the MCP Streamable HTTP transport of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// # What a client gets
//
// tools/list is the catalogue as the live voice model sees it at that moment: the file tools on
// whichever executor holds the workspace (the page's OPFS or granted folder, or a paired machine),
// the open mini-apps' and external apps' tools, and the extension tools. tools/call goes through
// the catalogue's Call, so it meets the same mapping, validation, executor, approval gate and undo
// history as a voice call. A call that needs the person's approval asks them in the page, naming
// the client; with no page open it is refused no-page at once. Every answer is a tool result:
// the observation as JSON text, or, with isError set, the refusal
// {"refused": rule, "why": sentence}. notifications/tools/list_changed goes out whenever the
// catalogue's tools change (a mini-app opens or closes, an external app's tools change).
//
// Resources are the workspace's files, voicebox://workspace/PATH: resources/list walks the
// workspace (at most MaxResources files, MaxResourceListings folders), resources/read reads one
// through read_file (at most its 64 KiB), and completion/complete offers the paths that start
// with what was typed. There are no subscriptions. There is no logging capability (the
// protocol's logging is deprecated, SEP-2577): a call's result says how it ended, and the relay's
// own log has a line for each call.
//
// The answer to a POST is its JSON-RPC message as application/json (the transport's
// JSONResponse), which every client of the Streamable HTTP transport reads, sent whole with its
// Content-Length; /mcp sends no notification during a call, and what it sends otherwise
// (notifications/tools/list_changed) goes on the client's GET stream.
//
// # Who may connect
//
// Every request carries "Authorization: Bearer vbm_..." with a bearer the host minted for the
// client by name (`relay mcp-token NAME`, or POST /api/mcp/clients with the host token), kept
// hashed in the state directory (internal/core/hoststate). Refusals, as {"ok":false,"refused","why"}:
//
//	401 bearer-missing   no bearer
//	401 bearer-refused   a bearer the host never minted
//	401 bearer-revoked   a bearer the host revoked (or replaced by minting the name again)
//	403 origin-refused   an Origin header that is not the page's own (browsers send one; MCP
//	                     clients that are programs send none)
//	413 body-too-large   a body over MaxBodyBytes
//	408 body-timeout     a body that did not arrive within BodyReadBound
//	503 too-many-sockets MaxSessions sessions are open; a new one is refused
//	404 mcp-session-unknown  an Mcp-Session-Id that names no open session
//	403 mcp-session-foreign  a session another client opened
//
// Every other error of the SDK's transport (a wrong Accept header, a body that is no JSON-RPC
// message, a method it does not take) is refused the same way, malformed-call with the
// transport's reason; a JSON-RPC error, the transport's or a method's (an unknown tool), keeps
// that shape and carries {"refused", "why"} as the error's data. No error of /mcp is plain text.
//
// A DNS-rebound Host is refused host-refused (421) by internal/core/server before any handler.
//
// A session belongs to the client that opened it: another bearer cannot use its session id
// (the SDK compares the client names). A session idle for SessionIdle is closed.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/outbound"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/inflight"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// Path is where the relay serves MCP.
const Path = "/mcp"

// The bounds of /mcp.
const (
	// MaxBodyBytes bounds one request's body: a JSON-RPC message (a write's content included).
	MaxBodyBytes = 1 << 20
	// BodyReadBound bounds how long a request's body may take to arrive; a stalled one is
	// refused body-timeout, so it never holds a handler.
	BodyReadBound = 10 * time.Second
	// MaxSessions bounds the MCP sessions open at once, of all clients.
	MaxSessions = 64
	// SessionIdle is how long a session may go without a request before it is closed.
	SessionIdle = 30 * time.Minute
	// MaxCallsPerClient bounds the tool calls one client has running at once; one more is
	// answered with the refusal too-many-calls (a tool result, nothing run).
	MaxCallsPerClient = 16
	// CloseWait bounds how long Close lets the POSTs being served finish writing their answers
	// before it closes the sessions (whose Close ends their streams, answered or not). The relay
	// settles what calls wait for (approvals, the page's calls) first, so they end at once.
	CloseWait = 2 * time.Second
)

// Clients finds the MCP client a bearer was minted for (a hoststate.MCPClientStore, such as
// FileClients).
type Clients interface {
	Lookup(bearer string) (hoststate.MCPClient, bool, error)
}

// Options configures a Handler. Catalogue and Clients are required.
type Options struct {
	Catalogue tool.Catalogue
	Clients   Clients
	// Attribute marks a call's context as coming from the client name, so approvals name it
	// (internal/core/assistant.WithMCPClient). Nil leaves the context as it is.
	Attribute func(ctx context.Context, client string) context.Context
	// PageOrigin reports whether a request's Origin header is the page's own (the server's
	// PageOrigin). Nil admits only requests without an Origin.
	PageOrigin func(r *http.Request) bool
	// Build is the version the server reports to clients.
	Build string
	// Log receives session and refusal events; never a bearer. Nil discards.
	Log *slog.Logger
}

// Handler is the /mcp endpoint. It is an http.Handler and safe for concurrent use.
type Handler struct {
	opts   Options
	log    *slog.Logger
	server *sdk.Server
	stream http.Handler
	tools  *toolSync
	cancel func()
	posts  inflight.Count // the POSTs being served: calls answered on them among them

	mu      sync.Mutex
	calls   map[string]int    // client name -> tool calls running
	owners  map[string]string // session id -> the client that opened it
	opening int               // requests that may open a session, being served
}

// New returns a Handler serving opts.Catalogue's tools. Close stops it following the catalogue.
func New(opts Options) *Handler {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{opts: opts, log: log, calls: map[string]int{}, owners: map[string]string{}}
	h.server = sdk.NewServer(&sdk.Implementation{Name: "voicebox", Title: "Voicebox", Version: opts.Build}, &sdk.ServerOptions{
		Instructions:      instructions,
		CompletionHandler: h.complete,
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{},
		},
	})
	h.tools = &toolSync{server: h.server, handler: h.callTool, have: map[string]string{}}
	h.addResources()
	h.server.AddReceivingMiddleware(withRefusalErrors) // outermost: it sees every method's error
	h.tools.sync(opts.Catalogue.Declarations())
	h.cancel = opts.Catalogue.OnChange(func() { h.tools.sync(opts.Catalogue.Declarations()) })
	stream := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return h.server }, &sdk.StreamableHTTPOptions{
		SessionTimeout: SessionIdle,
		// internal/core/server checks the Host of every request before any handler (host-refused, 421),
		// with the public origin's host among the names it admits.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxBodyBytes,
		Logger:                     log,
		// A call's answer is its message as application/json: no event to frame on the relay
		// and to scan on the client (BENCHMARKS.md, "mcp48").
		JSONResponse: true,
	})
	// The SDK's bearer middleware puts the client's name in the request, so the transport binds
	// each session to the client that opened it. admit has checked the bearer already.
	h.stream = auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		name, ok := ctx.Value(clientKey{}).(string)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: name}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
	return h
}

// Close stops following the catalogue, lets the POSTs being served finish (CloseWait at most),
// and closes every session.
func (h *Handler) Close() {
	h.cancel()
	if !h.posts.Wait(CloseWait) {
		h.log.Warn("mcp: closing with calls still unanswered", "waited", CloseWait)
	}
	for s := range h.server.Sessions() {
		s.Close()
	}
}

type clientKey struct{}

// ServeHTTP admits the request (bearer, Origin, Host, body) and hands it to the SDK's transport.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, rf, status := h.admit(r)
	var body []byte
	if rf == nil {
		body, rf, status = h.readBody(w, r)
	}
	opening := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	if rf == nil && opening {
		if !h.reserve() {
			rf, status = refusal.New(refusal.TooManySockets, "%d MCP sessions are open, the relay's bound; close one (or wait %v for an idle one to end)", MaxSessions, SessionIdle), http.StatusServiceUnavailable
		}
	}
	if rf != nil {
		h.log.Info("mcp: request refused", "rule", rf.Rule, "client", name, "method", r.Method)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="voicebox"`)
		}
		server.WriteRefusal(w, status, rf)
		return
	}
	if r.Method == http.MethodPost {
		h.posts.Add()
		defer h.posts.Done()
	}
	// Every answer goes through a stream of internal/core/outbound: the SDK's writes (a notification
	// fanned out to every session among them) are queued and return, and a reader that does not
	// keep up has its stream cancelled and its session closed slow-reader, never waited on.
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), clientKey{}, name))
	defer cancel()
	session := r.Header.Get("Mcp-Session-Id")
	out := outbound.NewSSE(w, r, func(why *refusal.Refusal) {
		h.log.Warn("mcp: a stream was closed", "rule", why.Rule, "client", name, "session", session, "why", why.Why)
		cancel()
		h.closeSession(session)
	})
	// The stream's writer starts with the first message that is not the whole response; a POST
	// answered by one message alone (a call's answer, outbound.SSE.Last) is written here, after
	// the SDK's handler returned, without a goroutine and its wake-up per request.
	out.ServeOnDemand(ctx.Done())
	rw := &refusalWriter{ResponseWriter: out, answers: callID(body), last: out.Last}
	h.stream.ServeHTTP(rw, r.WithContext(ctx))
	rule := rw.finish()
	out.Finish()
	if rule != "" {
		h.log.Info("mcp: request refused", "rule", rule, "client", name, "method", r.Method)
	}
	if opening {
		h.settle(w.Header().Get("Mcp-Session-Id"), name)
	}
}

// closeSession closes the session id (when one is open) on a goroutine of its own: a slow
// reader's session ends with its stream.
func (h *Handler) closeSession(id string) {
	if id == "" {
		return
	}
	for s := range h.server.Sessions() {
		if s.ID() == id {
			go s.Close()
			return
		}
	}
}

// reserve counts a request that may open a session, and reports false when the open sessions
// and those being opened reach MaxSessions. settle ends the count, recording the session the
// request opened, if any, as client's.
func (h *Handler) reserve() bool {
	h.mu.Lock() // before listing the sessions, so none settles in between and is pruned
	defer h.mu.Unlock()
	live := map[string]bool{}
	for s := range h.server.Sessions() {
		live[s.ID()] = true
	}
	for id := range h.owners {
		if !live[id] {
			delete(h.owners, id) // closed by its client, or idle past SessionIdle
		}
	}
	if len(h.owners)+h.opening >= MaxSessions {
		return false
	}
	h.opening++
	return true
}

func (h *Handler) settle(id, client string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opening--
	if id != "" {
		h.owners[id] = client
	}
}

// admit checks who is asking: Origin, then the bearer. (The Host was checked before any handler,
// by internal/core/server: a DNS-rebound name is refused host-refused there.) It returns the client's name, or
// the refusal and its status.
func (h *Handler) admit(r *http.Request) (string, *refusal.Refusal, int) {
	if origins := r.Header.Values("Origin"); len(origins) > 0 && (h.opts.PageOrigin == nil || !h.opts.PageOrigin(r)) {
		return "", refusal.New(refusal.OriginRefused, "/mcp takes no requests from web pages of other origins; an MCP client that is a program sends no Origin"), http.StatusForbidden
	}
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "Bearer") {
		return "", refusal.New(refusal.BearerMissing, "send Authorization: Bearer with the bearer the host minted for this client (`relay mcp-token NAME` prints one)"), http.StatusUnauthorized
	}
	c, ok, err := h.opts.Clients.Lookup(fields[1])
	switch {
	case refusal.RuleOf(err) == refusal.FleetUnavailable:
		// A fleet's bearers out of reach (NATS away): nobody is refused for good; the client
		// tries again.
		rf, _ := refusal.As(err)
		return "", rf, http.StatusServiceUnavailable
	case err != nil:
		h.log.Error("mcp: the client records could not be read", "err", err)
		return "", refusal.New(refusal.InternalError, "the relay could not read its MCP clients; its log says why"), http.StatusInternalServerError
	case !ok:
		return "", refusal.New(refusal.BearerRefused, "this bearer was not minted by this relay's host; ask the host for one (`relay mcp-token NAME`)"), http.StatusUnauthorized
	case !c.Live():
		return c.Name, refusal.New(refusal.BearerRevoked, "the host revoked the bearer of MCP client %q; ask the host for a new one", c.Name), http.StatusUnauthorized
	}
	return c.Name, nil, 0
}

// readBody reads r's body whole, within MaxBodyBytes and BodyReadBound, and puts it back as a
// reader, so the SDK never waits on a slow client. It returns the body it read.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *refusal.Refusal, int) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil, 0
	}
	if r.ContentLength > MaxBodyBytes {
		return nil, refusal.New(refusal.BodyTooLarge, "a request to /mcp is at most %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(BodyReadBound))
	defer rc.SetReadDeadline(time.Time{})
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	r.Body.Close()
	switch {
	case len(b) > MaxBodyBytes:
		return nil, refusal.New(refusal.BodyTooLarge, "a request to /mcp is at most %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge
	case err != nil:
		return nil, refusal.New(refusal.BodyTimeout, "the request's body did not arrive within %v", BodyReadBound), http.StatusRequestTimeout
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return b, nil, 0
}

// callID is the id of the one call body holds, as the SDK's encoder writes it in the call's
// answer; "" when body is no single call (a notification, a batch, no JSON-RPC message). The
// SDK's transport ends a POST's stream once its calls are answered, so the answer to this id is
// the stream's last event (refusalWriter).
func callID(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	msg, err := decodeMessage(bytes.TrimSpace(body))
	if err != nil {
		return ""
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return ""
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the SDK's jsonrpc2 encoder
	if enc.Encode(req.ID.Raw()) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// instructions is what every client is told at initialization.
const instructions = `Voicebox's workspace: a folder the person chose (browser storage, a granted folder, or a machine's directory), its open mini-apps and admitted extensions. Paths are relative to the workspace and slash-separated; names that begin with a dot are hidden and refused.
Every tool answers once: the observation as JSON, or a refusal {"refused": "rule-id", "why": "a sentence"} with isError set, after which nothing happened. delete_file, and extension tools that write files, wait for the person to approve in the Voicebox page; with no page open they are refused no-page. Every write, edit and delete keeps the earlier version: undo_last_action puts back the most recent.
The tool list changes as mini-apps open and close (notifications/tools/list_changed).`
