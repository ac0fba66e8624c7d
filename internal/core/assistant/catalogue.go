// Package assistant is the relay's side of the assistant's tools: the Catalogue every model path
// uses (live voice, the typed turn, the page's Undo button), the router that sends each action
// where it can run, the user's approvals, and the HTTP routes of the typed turn and the page's
// event stream.
//
// # The catalogue
//
// A Catalogue offers the built-in tools of internal/shared/commands plus the open mini-apps' tools, which
// the page's worker reports over /channel (it hears internal/core/hub's offers). Call maps a model's
// (name, args) through commands.Set.Map and routes the action; every call gets exactly one answer,
// the observation object or {"refused": rule, "why": sentence}, and never blocks past its
// context. OnChange listeners run whenever the tool set, and so Instruction, changes.
//
// # Where an action runs
//
//	read_file write_file list_files   the root's executor over /channel (internal/core/hub's Ask): the
//	delete_file edit_file grep_files  page's worker on OPFS or a folder, or a paired machine
//	undo_last_action redo_last_action environment; primitives of internal/shared/executor
//	list_mini_apps launch_mini_app    the page's worker over /channel (it holds the mini-app store
//	create_mini_app, app_… tools      and the frames); refused no-page while a machine holds the root
//	list_extensions call_extension    the relay's extension registry (internal/door/extensionhost)
//	propose_extension
//
// With no root declared (no page has opened a folder and no machine is paired in), root and page
// actions are refused root-not-declared at once, without asking anyone.
//
// # Approval
//
// delete_file, call_extension of a tool whose primitive writes files, and of a remote MCP tool that
// does not declare readOnlyHint, wait for the user's
// decision in the page: the request goes out on the event stream (GET /api/events), so it
// reaches the page even when a machine environment holds the root, and the page answers with
// POST /api/approvals/{id}. The call then runs and its observation carries "approval":
// "approved", or it is refused approval-denied, or approval-timed-out when no decision came
// within Options.ApprovalTimeout (or the caller stopped waiting). With no page listening on the
// event stream nobody could answer, so the call is refused no-page at once. A request for an
// MCP client's call names the client (Approval.Client, and the summary). A delete of something that
// cannot be deleted (missing, a folder, a hidden name) is refused before anyone is asked. When
// another executor took the root while the person was asked, the approved call is refused
// root-changed: the approval was about the other folder.
//
// # Nobody's connection waits on the person, where it matters
//
// One mechanism, withAsked, tells a door the moment its call is out for the person's decision;
// each door decides what its caller is told:
//
//	the page (POST /api/turn with Prefer: respond-async, public/turns.js)
//	    answered at once, 202 {turnId, pending: Approval}; the outcome comes once as the event
//	    stream's turn event. A browser opens few connections per host and the event stream holds
//	    one: a held turn per waiting request would queue the page's own decision behind them.
//	a program (POST /api/turn without Prefer, curl)
//	    held until the outcome, 200, as before: its connections are its own.
//	an MCP client (Call, from /mcp's tools/call) and a live model (Call)
//	    held until the outcome: tools/call has one answer, and neither holds the page's
//	    connections.
package assistant

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/internal/shared/commands"
	"github.com/voicebox-go/voicebox/internal/shared/inflight"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// DefaultApprovalTimeout is how long a call waits for the user's approval when Options says
// nothing else: every approval's deadline (internal/shared/approval), the one the page's external apps
// hold to as well.
const DefaultApprovalTimeout = approval.Timeout

// Options configures a Catalogue. Root is required.
type Options struct {
	// Holder is where file and mini-app actions go.
	Holder hub.Holder
	// Extensions runs the extension tools; nil refuses them not-admitted.
	Extensions Extensions
	// ApprovalTimeout bounds the wait for the user's approval; zero means
	// DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// Live reports whether a live voice model is configured (a vendor key); nil or false means
	// the typed turn's offline resolver is the only model, and the page says "offline mode".
	Live func() bool
	// Log receives refusals of the page's tool declarations and dropped event subscribers. Nil
	// discards.
	Log *slog.Logger
}

// Tools are the assistant's tools: the catalogue the model calls, before any door adds to it. It is safe for concurrent use.
type Tools struct {
	opts      Options
	log       *slog.Logger
	set       atomic.Pointer[commands.Set]
	events    *events
	approvals *approvals
	seq       atomic.Uint64
	// instance names this run of the relay's Tools in every turn id it makes and in the event
	// stream's hello: a page waiting for a turn's outcome tells by it whether the relay that
	// greets it is the one that took the turn (and, restarted, turn ids begin anew without
	// meeting the old ones; in a fleet, no two relays' turns share an id).
	instance string
	// waiting holds the cancel of each turn answered 202 (turnAtOnce) until it ends, by turn id:
	// POST /api/turn/{id}/cancel ends it. Each is bounded in time (the approval's wait and
	// approval.RunBound) and in number by MaxPendingApprovals while it waits.
	waiting sync.Map
	// outcomes counts the turns answered 202 whose outcome is not yet published: Close waits
	// for them, so a relay leaving a fleet says so after its turns' outcomes.
	outcomes inflight.Count

	mu        sync.Mutex
	pageTools json.RawMessage // the last declarations the page sent, as sent
	listeners map[uint64]func()
	nextL     uint64
}

// New returns a Catalogue offering the built-in tools.
func New(opts Options) *Tools {
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = DefaultApprovalTimeout
	}
	c := &Tools{opts: opts, log: opts.Log, listeners: map[uint64]func(){}, instance: newInstance()}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.set.Store(commands.Builtins())
	c.events = newEvents(c.log)
	c.approvals = newApprovals(c.events)
	return c
}

// instanceHexLen is the length of a Tools' instance name: 48 random bits in hex, so two runs of a
// relay (or two relays of a fleet) do not meet by chance.
const instanceHexLen = 12

// newInstance returns a fresh instance name.
func newInstance() string {
	b := make([]byte, instanceHexLen/2)
	rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}

// UseExtensions has the extension tools call x (the extension door); until it is called they
// are refused not-admitted. It is for mounting, before the relay serves.
func (c *Tools) UseExtensions(x Extensions) { c.opts.Extensions = x }

// Declarations returns every tool the model is offered now: the built-ins, then the open
// mini-apps' tools.
func (c *Tools) Declarations() []tool.Declaration { return c.set.Load().Declarations() }

// Instruction returns the system instruction for a live model, for the current tool set.
func (c *Tools) Instruction() string { return c.set.Load().Instruction() }

// OnChange registers fn to run, on a goroutine of its own, whenever the tool set changes. The
// returned cancel removes it.
func (c *Tools) OnChange(fn func()) (cancel func()) {
	c.mu.Lock()
	id := c.nextL
	c.nextL++
	c.listeners[id] = fn
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.listeners, id)
		c.mu.Unlock()
	}
}

// SetPageTools takes the function declarations the page's worker offers (a JSON array of
// {name, description, parameters}), or nil when the page left. Each declaration is checked as a
// mini-app tool is at registration; one that fails is left out and logged. It hears the Tools of
// internal/core/hub's offers.
func (c *Tools) SetPageTools(tools json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Equal(tools, c.pageTools) {
		return
	}
	c.pageTools = slices.Clone(tools)
	decls, errs := pageDeclarations(tools)
	next, more := commands.Builtins().With(decls)
	errs = append(errs, more...)
	for _, err := range errs {
		c.log.Warn("assistant: a page tool was left out", "err", err)
	}
	if sameTools(c.set.Load(), next) {
		return
	}
	c.set.Store(next)
	names := make([]string, 0, len(decls))
	for _, t := range next.Tools() {
		names = append(names, t.Name)
	}
	c.events.publish("tools", map[string]any{"tools": names})
	for _, fn := range c.listeners {
		go fn()
	}
}

// pageDeclarations reads the page's list of declarations one by one, so a bad one costs only
// itself: one that is not an object is refused invalid-tool-declaration naming its index (as the
// original's registration does), and so is one whose fields are not of their types.
func pageDeclarations(tools json.RawMessage) ([]tool.Declaration, []error) {
	if len(tools) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(tools, &raws); err != nil {
		return nil, []error{refusal.New(refusal.InvalidToolDeclaration, "the page's tools are not a list of declarations")}
	}
	var decls []tool.Declaration
	var errs []error
	for i, raw := range raws {
		var d tool.Declaration
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			errs = append(errs, miniapp.AtIndex(i, refusal.New(refusal.InvalidToolDeclaration, "a tool declaration must be a JSON object {name, description, parameters}")))
			continue
		}
		if json.Unmarshal(raw, &d) != nil {
			errs = append(errs, miniapp.AtIndex(i, refusal.New(refusal.InvalidToolDeclaration, "its name and description must be strings and its parameters an object")))
			continue
		}
		decls = append(decls, d)
	}
	return decls, errs
}

func sameTools(a, b *commands.Set) bool {
	ta, tb := a.Tools(), b.Tools()
	return slices.EqualFunc(ta, tb, func(x, y *commands.Tool) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters)
	})
}

// Fleet carries what a catalogue shares with the other relays of a fleet (internal/door/fleet): its
// events, so a page following /api/events on one relay sees the calls and approval requests made
// through another, and the person's decisions on approvals that wait on another relay.
type Fleet interface {
	// PublishEvent sends an encoded event of this relay to the others; it must not block.
	PublishEvent(frame []byte)
	// Decide offers a decision on an approval this relay does not hold to the others, and
	// reports whether one of them held it; why, when not nil, is the refusal to answer with
	// instead of not-found (the approval ended, and how).
	Decide(id string, approve bool) (decided bool, why error)
	// Watching tells the others whether a page follows this relay's event stream now; it is
	// called each time that changes.
	Watching(on bool)
	// Watched reports whether a page follows the event stream of another relay, so a call
	// needing the person's approval asks there instead of refusing no-page.
	Watched() bool
	// LiveRuns returns the fleet's live relay runs (their instances, this relay's among them),
	// at most approval.MaxLiveRuns, and known true only when the list is whole: the hello
	// tells them to a page, which then knows a turn taken by a run not listed is lost.
	LiveRuns() (runs []string, known bool)
}

// UseFleet shares the catalogue's events and approvals with a fleet from now on.
func (c *Tools) UseFleet(f Fleet) {
	c.events.mu.Lock()
	c.events.fleet = f
	c.events.mu.Unlock()
	c.events.announce()
}

// DeliverEvent hands an event another relay published to this relay's event streams.
func (c *Tools) DeliverEvent(frame []byte) {
	c.events.deliver(frame, nil)
	c.events.announce() // delivering may have dropped the last subscriber
}

// Instance names this run of the relay (random per process): the turns it takes name it, and a
// fleet tells it to the others (internal/door/fleet's presence).
func (c *Tools) Instance() string { return c.instance }

// DecideLocal records the person's decision on an approval waiting on this relay, and reports
// whether one was; a fleet calls it for decisions made through another relay.
func (c *Tools) DecideLocal(id string, approve bool) bool { return c.approvals.decide(id, approve) }

// decideElsewhere offers a decision to the fleet's other relays; false for a relay alone. why
// is Fleet.Decide's.
func (c *Tools) decideElsewhere(id string, approve bool) (decided bool, why error) {
	c.events.mu.Lock()
	f := c.events.fleet
	c.events.mu.Unlock()
	if f == nil {
		return false, nil
	}
	return f.Decide(id, approve)
}

// Publish sends an event of kind to every page on the event stream (GET /api/events), for a
// change the page follows that the catalogue did not make: "root" (who holds the workspace,
// hub.Holding) and "extensions" ({what, id}: a proposal, admission, revocation or dismissal). v is
// encoded as JSON.
func (c *Tools) Publish(kind string, v any) { c.events.publish(kind, v) }

// OutcomesWait bounds how long Close waits for the outcomes of the turns answered 202 to be
// published. A turn waiting for approval ends at once when the shutdown settles it; one already
// approved and running may take longer, and past this bound its outcome is not waited for (a
// page following another relay of the fleet then shows it outcome-unknown once this run is gone).
const OutcomesWait = 2 * time.Second

// OutcomesWaitLog is what Close logs (at Info, with how many turns and the bound) when it waits
// for turns' outcomes: a shutdown that takes longer says why, and a test that holds a turn across
// a relay's stop knows when to let it end.
const OutcomesWaitLog = "shutdown: waiting for the outcomes of turns still running"

// Close settles the approvals still waiting as timed out, waits (OutcomesWait at most) for the
// turns answered 202 to publish their outcomes, so in a fleet they go out before this relay says
// it leaves, and ends every event stream; for shutdown. Calls made afterwards still get their one
// answer.
func (c *Tools) Close() {
	c.approvals.closeAll()
	if n := c.outcomes.Len(); n > 0 {
		c.log.Info(OutcomesWaitLog, "turns", n, "bound", OutcomesWait)
	}
	if !c.outcomes.Wait(OutcomesWait) {
		c.log.Warn("shutdown: a turn's outcome was not published in time", "waited", OutcomesWait)
	}
	c.events.close()
}

// Source says who made a call, for the page's record of them.
type Source string

// The sources of calls.
const (
	FromModel Source = "model" // a live model, through Call
	FromTurn  Source = "turn"  // a typed turn (POST /api/turn), or the page's Undo button
	FromMCP   Source = "mcp"   // an MCP client at /mcp, through Call with a context from WithMCPClient
)

type callerKey struct{}

// WithMCPClient returns ctx marked as carrying a call from the MCP client name (the name the
// host minted its bearer for): Call records it as FromMCP, and an approval it waits for names
// the client to the person.
func WithMCPClient(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callerKey{}, name)
}

// mcpClient returns the MCP client ctx carries a call from, or "".
func mcpClient(ctx context.Context) string {
	name, _ := ctx.Value(callerKey{}).(string)
	return name
}

// Call runs the tool name with args and returns its one answer: the observation object, or
// {"refused": rule, "why": sentence}. It waits for the user's approval when the tool needs it,
// and never past ctx.
func (c *Tools) Call(ctx context.Context, name string, args json.RawMessage) json.RawMessage {
	src := FromModel
	if mcpClient(ctx) != "" {
		src = FromMCP
	}
	return c.run(ctx, src, "", name, args).JSON()
}

// Outcome is how one call ended: Observed, or Err (a *refusal.Refusal, or a *wire.BudgetError
// carrying budget figures).
type Outcome struct {
	Action   *commands.Action
	Observed json.RawMessage
	Err      error
}

// JSON returns the outcome as a model receives it.
func (o Outcome) JSON() json.RawMessage {
	if o.Err == nil {
		return o.Observed
	}
	r, ok := refusal.As(o.Err)
	if !ok {
		r = refusal.New(refusal.InternalError, "the relay failed while running the tool")
	}
	out := map[string]any{"refused": r.Rule, "why": r.Why}
	if be, ok := o.Err.(*wire.BudgetError); ok {
		out["budget"] = be.Budget
	}
	b, _ := json.Marshal(out)
	return b
}

// callEvent is what the event stream says about each call.
type callEvent struct {
	ID     string          `json:"id"`
	Source Source          `json:"source"`
	Client string          `json:"client,omitempty"` // the MCP client, for Source FromMCP
	TurnID string          `json:"turnId,omitempty"`
	Tool   string          `json:"tool"`
	Action json.RawMessage `json:"action,omitempty"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	At     time.Time       `json:"at"`
}

// maxEventResultBytes bounds the result a call event carries; a larger one is replaced by a note.
const maxEventResultBytes = 16 << 10

// run maps and routes one call and tells the event stream how it ended.
func (c *Tools) run(ctx context.Context, src Source, turnID, name string, args json.RawMessage) Outcome {
	var o Outcome
	action, err := c.set.Load().Map(name, args)
	if err != nil {
		o.Err = err
	} else {
		o.Action = &action
		o.Observed, o.Err = c.route(ctx, action)
		if o.Err == nil && (len(o.Observed) == 0 || o.Observed[0] != '{') {
			o.Observed, o.Err = nil, refusal.New(refusal.ExecThrew, "the tool answered with something that is not a JSON object")
		}
	}
	ev := callEvent{ID: "call-" + itoa(c.seq.Add(1)), Source: src, Client: mcpClient(ctx), TurnID: turnID, Tool: name, OK: o.Err == nil, Result: o.JSON(), At: time.Now().UTC()}
	if o.Action != nil {
		ev.Action, _ = o.Action.MarshalJSON()
	}
	if len(ev.Action) > maxEventResultBytes {
		ev.Action = nil
	}
	if len(ev.Result) > maxEventResultBytes {
		ev.Result = json.RawMessage(`{"note":"the result is too large to show here"}`)
	}
	c.events.publish("call", ev)
	return o
}
