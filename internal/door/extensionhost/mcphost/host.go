// Package mcphost is the MCP host of the extension door: the relay as the client of the remote
// MCP servers that admitted extensions name. A Session is one admitted server's client session
// (the official Go SDK's client over Streamable HTTP), every request of it through the door's
// mediated fetch (the descriptor's hosts, its request budget, redirect checks, time and response
// bounds, its declared secrets, redaction):
//
//	host.go       what the session needs of the extension door (Host, Budget, Config) and what
//	              it offers the model (Offered).
//	session.go    connecting after admission, the server's tool list and what is offered of it
//	              (Status), each tool judged against its pinned definition (definitionOf,
//	              pinned), a new plan staged when the server adds or redefines tools,
//	              list_changed coalesced and charged to the budget, the session's bounded log and
//	              its bounded reconnection, calls (Call) and MCP Apps views (ReadView).
//	schema.go     a server tool's input schema: compiled as full JSON Schema under a loader that
//	              fetches nothing, within its bounds (MaxRemoteSchemaBytes, ...); the arguments
//	              validated against it before a call leaves; the schema the model is offered,
//	              its local $refs resolved.
//	transport.go  the mediated fetch as the session's http.RoundTripper, and JSON nested past
//	              MaxMCPMessageDepth cut as it streams in (depthCap).
//
// The door (internal/door/extensionhost) keeps the loaded set, the budgets, the plans and the
// audit; it makes a Session for each admitted remote MCP extension and hears from it through
// Host.
package mcphost

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
)

// Host is what a session asks of the extension door that admitted its server.
type Host interface {
	// Changed says that what the extension id offers changed (a listing was read).
	Changed(id string)
	// Proposal returns the bytes of the plan staged for id, if any.
	Proposal(id string) ([]byte, error)
	// Stage stages raw, a new plan of the session's extension, for a person to admit.
	Stage(raw []byte) error
}

// Budget counts an admitted descriptor's requests against its maxRequests.
type Budget interface {
	// Take spends one request and says which it is, as "3/20"; a refusal (budget-exhausted)
	// when none is left.
	Take() (string, error)
	// Spent says how much of the budget is spent, as "7/50".
	Spent() string
}

// Config is what a Session is made with. Every field but RetryInterval is required.
type Config struct {
	// Descriptor is the admitted plan, Raw its admitted bytes.
	Descriptor *extensions.Descriptor
	Raw        []byte
	Budget     Budget
	Host       Host
	// Base is the transport under the mediation.
	Base http.RoundTripper
	// Headers returns the secrets the descriptor declares for u's host, and nothing else of the
	// relay's.
	Headers func(u *url.URL) (http.Header, error)
	// RequestTimeout bounds every request but the notification stream, from sending it to the
	// last byte of its body.
	RequestTimeout time.Duration
	// MaxRedirects is how many redirects a request follows.
	MaxRedirects int
	// Redact scrubs a URL of its credentials for what is logged and answered.
	Redact func(string) string
	// RetryInterval replaces MCPRetryInterval when it is not zero.
	RetryInterval time.Duration
	// Background counts the session's work in the background (listings, reconnections, a
	// listing a view's read asks for): the door waits for it when it closes, so nothing of the
	// session's writes after that.
	Background *sync.WaitGroup
	// Log receives the session's lines (at most MaxMCPSessionLogLines each MCPLogWindow).
	Log *slog.Logger
}

// Offered is a tool a session offers the model now, as the admitted plan defines it.
type Offered struct {
	// Name is the model's name of the tool (extensions.MCPModelName).
	Name        string
	Description string
	// Params is the tool's input schema, as offered.
	Params json.RawMessage
	// URL is the server's.
	URL string
	// ReadOnly says the tool declares it changes nothing (its readOnlyHint).
	ReadOnly bool
	// SchemaNote says how Params differs from the server's own input schema (its $refs
	// resolved, or reduced), "" when it does not.
	SchemaNote string
	// View is the tool's MCP Apps view, its ui:// resource.
	View string
}
