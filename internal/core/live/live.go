// Package live is the relay's live-voice harness: the seam between the /live socket (and any other
// host) and the vendors' realtime models. It knows no vendor: providers (internal/core/live/openai,
// internal/core/live/gemini) register themselves in a Providers with the audio rate they take, and a
// Conversation runs one of them.
//
// # What a session promises
//
//   - A readiness gate: audio and text sent before the provider says it is ready (OpenAI's
//     session.updated, Gemini's setupComplete) are counted and dropped, never queued or forwarded.
//     Tool calls reach the host only while ready.
//   - Rates: SendAudio takes PCM16 at the provider's registered input rate and refuses any other
//     rate (live-rate-mismatch) instead of mislabelling the bytes; a provider registered without
//     an input rate cannot be started (live-no-input-rate).
//   - Exactly one terminal state, whichever comes first: closed (Close), upstream-closed (the
//     vendor went away) or failed (it never became ready, or the transport could not connect).
//     Nothing is delivered after it.
//   - Keys never leave: every detail a session reports has the vendor key blanked out, and a
//     transport that cannot carry the authentication header refuses to connect
//     (live-transport-unauthenticated) rather than connecting without it.
//
// Providers dial through an injected Transport (connect with headers, send by kind, events as
// plain data), so tests and the vendor fixture stand in for the vendor; WebSocketTransport is the
// real one. A provider never runs a tool: it normalizes the vendor's calls to Call values, and the
// host answers each one with SendToolResponses, refusals included.
package live

import (
	"encoding/json"

	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// State is what a session reports through Callbacks.OnState.
type State string

// The states. Closed, UpstreamClosed and Failed are terminal: exactly one of them is reported,
// and nothing follows it. The rest are notifications.
const (
	// TransportOpen: the vendor socket is open; the setup is sent but not yet acknowledged.
	TransportOpen State = "transport-open"
	// Ready: the vendor acknowledged the setup; audio, text and tool calls flow.
	Ready State = "ready"
	// Reconnecting: the provider is dialing again (Gemini's one fallback); the gate is shut
	// until Ready comes again.
	Reconnecting State = "reconnecting"
	// Interrupted: the person spoke over the model; playback should stop at once.
	Interrupted State = "interrupted"
	// TurnComplete: the model finished its turn.
	TurnComplete State = "turn-complete"
	// GoAway: the vendor announced it will close the connection soon (detail: how soon).
	GoAway State = "go-away"
	// Error: a non-terminal problem the vendor reported (detail says what).
	Error State = "error"

	// Closed: the host closed the session.
	Closed State = "closed"
	// UpstreamClosed: the vendor closed the connection (detail: code and reason).
	UpstreamClosed State = "upstream-closed"
	// Failed: the session could not start or become ready (detail: why).
	Failed State = "failed"
)

// Terminal reports whether s ends a session.
func (s State) Terminal() bool { return s == Closed || s == UpstreamClosed || s == Failed }

// TextKind says whose words a text is.
type TextKind string

// The kinds of text a session delivers.
const (
	// UserText is a transcript of what the person said.
	UserText TextKind = "user"
	// ModelText is a transcript of what the model said aloud.
	ModelText TextKind = "model"
	// PlainText is text the model wrote rather than spoke.
	PlainText TextKind = "text"
)

// Call is one tool call a model made, normalized from the vendor's encoding. Args is a JSON
// object. When the vendor's arguments could not be read, Refused says why, and the host answers
// the call with that refusal instead of running anything.
type Call struct {
	ID      string           `json:"id"`
	Name    string           `json:"name"`
	Args    json.RawMessage  `json:"args"`
	Refused *refusal.Refusal `json:"-"`
}

// NewCall normalizes a vendor's call: args must be one JSON object (empty reads as {}); anything
// else makes a call the host refuses with invalid-tool-arguments, and nothing runs.
func NewCall(id, name string, args []byte) Call {
	c := Call{ID: id, Name: name, Args: json.RawMessage(`{}`)}
	if len(args) == 0 {
		return c
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		c.Refused = refusal.New(refusal.InvalidToolArguments, "the arguments of %s were not a JSON object, so nothing ran; call it again with an object", name)
		return c
	}
	c.Args = json.RawMessage(args)
	return c
}

// ToolResult answers one Call: Result is the observation JSON object, or {"refused":..., "why":...}.
type ToolResult struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Result json.RawMessage `json:"result"`
}

// Refused reports whether r is a refusal ({"refused": RULE, ...}), and which.
func (r ToolResult) Refused() (refusal.Rule, bool) {
	var peek struct {
		Refused refusal.Rule `json:"refused"`
	}
	if json.Unmarshal(r.Result, &peek) != nil || peek.Refused == "" {
		return "", false
	}
	return peek.Refused, true
}

// RefusalResult returns a ToolResult answering call with rf.
func RefusalResult(call Call, rf *refusal.Refusal) ToolResult {
	b, _ := json.Marshal(rf)
	return ToolResult{ID: call.ID, Name: call.Name, Result: b}
}

// EventKind is the kind of an Event a provider emits.
type EventKind int

// The events a provider emits; the session turns them into callbacks.
const (
	EventTransportOpen EventKind = iota + 1
	EventReady
	EventReconnecting
	EventAudio
	EventText
	EventToolCall
	EventInterrupted
	EventTurnComplete
	EventGoAway
	EventError
	EventClosed
)

// Event is what a provider tells its session. Only the fields of its kind are set.
type Event struct {
	Kind EventKind
	// EventAudio: PCM16 little-endian mono at Rate.
	PCM  []byte
	Rate int
	// EventText.
	Text     string
	TextKind TextKind
	// EventToolCall.
	Calls []Call
	// EventClosed: the vendor's close code and reason; EventError, EventGoAway,
	// EventReconnecting: Detail.
	Code   int
	Detail string
}

// Provider is one vendor's adapter, made by a Factory for one session. Its methods are called by
// the session only, never before Start and never after Close; they may be called from several
// goroutines at once.
type Provider interface {
	// Start dials through the transport and sends the vendor's setup. It returns once the
	// connection is open (or could not be); readiness comes later as EventReady.
	Start() error
	// SendAudio forwards PCM16 at the provider's input rate.
	SendAudio(pcm []byte) error
	// SendText sends what the person typed as a user turn.
	SendText(text string) error
	// SendToolResponses answers calls, in the vendor's encoding; it reports false when none of
	// them could be sent (an unknown or cancelled id, or a closed connection).
	SendToolResponses(results []ToolResult) bool
	// Interrupt tells the vendor the person barged in; playedMs is how much of the current
	// reply was heard (negative when unknown).
	Interrupt(playedMs int) error
	// UpdateTools offers a new tool set and instruction to the running session, or refuses
	// live-update-unsupported when the vendor cannot change them mid-session.
	UpdateTools(tools []tool.Declaration, instruction string) error
	// Close closes the vendor connection; idempotent.
	Close()
}

// Env is what a Factory gets to build a Provider for one session.
type Env struct {
	// Emit delivers an event to the session. It may be called from any goroutine, but the
	// provider must not call it concurrently with itself (events are ordered).
	Emit func(Event)
	// Transport is the session's facade over the injected transport: it refuses to connect
	// without the headers it cannot carry, and refuses audio before the session is ready.
	Transport Transport
	// BaseURL is the vendor endpoint to dial (a fixture's in tests); empty means the vendor's.
	BaseURL string
	// Key is the vendor key. Providers put it in a header, never in a URL, a log or an error.
	Key                   string
	Model, Voice          string
	Thinking              string
	Tools                 []tool.Declaration
	Instruction           string
	InputRate, OutputRate int
	// Log receives what a provider wants to say; never the key. Never nil.
	Log Logger
}

// Logger is the little a provider logs through (slog.Logger has it).
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
}

// Factory builds a provider for one session.
type Factory func(env Env) (Provider, error)
