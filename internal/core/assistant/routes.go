package assistant

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/outbound"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/internal/shared/commands"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of the routes.
const (
	// maxTurnBodyBytes bounds a typed turn: a transcript or an action (a write's content
	// included).
	maxTurnBodyBytes = 256 << 10
	// maxDecisionBytes bounds an approval decision.
	maxDecisionBytes = 1 << 10
	// keepAlive is how often an idle event stream gets a comment line, so proxies keep it open.
	keepAlive = 25 * time.Second
)

// Mode names for the page: "offline" while the typed turn's resolver is the only model, "live"
// once a vendor key is configured.
const (
	ModeOffline = "offline"
	ModeLive    = "live"
)

func (c *Tools) mode() string {
	if c.opts.Live != nil && c.opts.Live() {
		return ModeLive
	}
	return ModeOffline
}

// Register adds the assistant's routes to srv. They are the page's routes, admitted like the
// others (its origin, and the session when the gate is on):
//
//	GET  /api/assistant        {ok, mode, tools, instruction}: mode "offline" or "live"
//	POST /api/turn             {transcript} or {action: {verb, ...}}: one typed turn (see Turn);
//	                           with Prefer: respond-async, 202 and a pending handle when it waits
//	                           for the person (turnAtOnce)
//	POST /api/turn/{id}/cancel the caller of a turn answered 202 stops waiting for it: a request
//	                           for the person's approval goes (approval-settled, the turn refused
//	                           approval-timed-out, nothing done), a call under way is cancelled
//	                           (an MCP server is sent notifications/cancelled); 404 not-found when
//	                           no such turn runs
//	GET  /api/events           server-sent events: hello, call, approval, approval-settled, turn,
//	                           tools, and what the relay publishes (Publish): root, extensions;
//	                           in a fleet, runs (its live relay runs, internal/door/fleet)
//	GET  /api/approvals        {ok, approvals}: the requests waiting for the user
//	POST /api/approvals/{id}   {approve: bool}: decide one; 404 not-found when none waits, 410
//	                           approval-requester-gone when the fleet relay that asked went away,
//	                           503 outcome-unknown when it did not answer (the decision or its
//	                           answer lost: it may or may not have been taken)
func (c *Tools) Register(srv *server.Server) {
	srv.Handle("GET /api/assistant", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := c.set.Load()
		names := []string{}
		for _, t := range set.Tools() {
			names = append(names, t.Name)
		}
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "mode": c.mode(), "tools": names, "instruction": set.Instruction()})
	}))
	srv.Handle("POST /api/turn", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Transcript *string         `json:"transcript"`
			Action     json.RawMessage `json:"action"`
		}
		if !server.ReadJSON(w, r, maxTurnBodyBytes, &body) {
			return
		}
		if (body.Transcript == nil) == (len(body.Action) == 0 || string(body.Action) == "null") {
			server.WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.InvalidArgument,
				"a turn is {\"transcript\": \"what you typed\"} or {\"action\": {\"verb\": tool, ...arguments}}, one of the two"))
			return
		}
		t := c.newTurn()
		run := func(ctx context.Context) Turn {
			if body.Transcript != nil {
				return c.typedTurn(ctx, t, *body.Transcript)
			}
			return c.actionTurn(ctx, t, body.Action)
		}
		if !preferAsync(r.Header) {
			server.WriteJSON(w, http.StatusOK, run(r.Context()))
			return
		}
		c.turnAtOnce(w, r, t, run)
	}))
	srv.Handle("POST /api/turn/{id}/cancel", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		cancel, ok := c.waiting.Load(id)
		if !ok {
			server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "no turn %q is running: it ended already, or it never waited for the person", id))
			return
		}
		cancel.(context.CancelFunc)()
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "turnId": id})
	}))
	srv.Handle("GET /api/approvals", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "approvals": c.approvals.pending()})
	}))
	srv.Handle("POST /api/approvals/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Approve *bool `json:"approve"`
		}
		if !server.ReadJSON(w, r, maxDecisionBytes, &body) {
			return
		}
		if body.Approve == nil {
			server.WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.MissingArgument, "say {\"approve\": true} or {\"approve\": false}"))
			return
		}
		id := r.PathValue("id")
		if !c.approvals.decide(id, *body.Approve) {
			decided, why := c.decideElsewhere(id, *body.Approve)
			if r, ok := refusal.As(why); ok {
				status := http.StatusGone
				if r.Rule == refusal.OutcomeUnknown {
					status = http.StatusServiceUnavailable // the fleet lost the decision or its answer
				}
				server.WriteRefusal(w, status, r)
				return
			}
			if !decided {
				server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "no request %q is waiting: it was decided already, or it timed out", id))
				return
			}
		}
		server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": id, "approve": *body.Approve})
	}))
	srv.Handle("GET /api/events", http.HandlerFunc(c.serveEvents))
}

// serveEvents streams the catalogue's events to one page until it goes away or the relay stops.
// The first event, hello, carries the state a page needs to start: the mode, the tools, the
// approvals already waiting and who holds the workspace (root).
func (c *Tools) serveEvents(w http.ResponseWriter, r *http.Request) {
	out := outbound.NewSSE(w, r, func(why *refusal.Refusal) {
		c.log.Warn("assistant: an event stream was closed", "rule", why.Rule, "why", why.Why)
	})
	if !c.events.subscribe(out) {
		server.WriteRefusal(w, http.StatusServiceUnavailable, refusal.New(refusal.TooManySockets,
			"the relay has %d event streams open, its bound; close another tab first", MaxSubscribers))
		return
	}
	defer c.events.unsubscribe(out)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK) // before Serve writes: nothing else writes to w yet
	names := []string{}
	for _, t := range c.set.Load().Tools() {
		names = append(names, t.Name)
	}
	// hello is composed after subscribing, so no event is missed, and goes before any event
	// queued meanwhile; after it, the outcomes of turns answered with a pending handle: a page
	// whose stream broke while it waited gets them still. One it saw already it knows by its
	// turnId. The hello names this relay's instance and every turn it can still answer for: those
	// it holds and those whose outcome follows. The held ones are read first and a turn's outcome
	// is kept before it stops being held (turnAtOnce), so a turn moving from one to the other
	// meanwhile is named all the same. A page whose pending turn this instance took and does not
	// name (or, the relay alone, that another instance took) knows it is lost (public/turns.js);
	// in a fleet another relay may hold it, and its outcome crosses the fleet, unless the hello's
	// runs (the fleet's live runs, when this relay knows them all) do not name its instance.
	held := []string{}
	c.waiting.Range(func(id, _ any) bool {
		held = append(held, id.(string))
		return true
	})
	recent := c.events.recentTurns()
	held = append(held, turnIDs(recent)...)
	hello := map[string]any{"mode": c.mode(), "tools": names, "approvals": c.approvals.pending(), "root": c.opts.Holder.Holding(),
		"instance": c.instance, "fleet": c.events.inFleet(), "turns": held}
	if runs := c.events.liveRuns(); runs != nil {
		hello["runs"] = runs // the fleet's live runs, when known; later changes come as runs events
	}
	first := frame("hello", hello)
	for _, f := range recent {
		first = append(first, f...)
	}
	out.Lead(first)
	out.Serve(r.Context().Done(), keepAlive)
}

// Turn is the answer to one typed turn.
type Turn struct {
	OK bool `json:"ok"`
	// TurnID names the turn; the event stream's call events carry it too.
	TurnID string `json:"turnId"`
	// Mode is "offline" or "live" (see Register).
	Mode string `json:"mode"`
	// Understood says, in a sentence, what the resolver took the transcript to mean; empty for
	// an action given as it is.
	Understood string `json:"understood,omitempty"`
	// Action is the action run, {"verb": tool, ...arguments}, when there was one.
	Action json.RawMessage `json:"action,omitempty"`
	// Result is the action's observation, or its refusal {"refused", "why"}.
	Result json.RawMessage `json:"result,omitempty"`
	// Refused and Why are set when the turn ran nothing (not-understood) or its action was
	// refused.
	Refused refusal.Rule `json:"refused,omitempty"`
	Why     string       `json:"why,omitempty"`
	// Help is the resolver's help text, for a transcript it did not understand (or "help").
	Help string `json:"help,omitempty"`
	// MiniAppToolCall is, for the original's typed action {"verb": "mini_app_tool", "name",
	// "args"} once it found its tool, that call as the original reports it: the tool's name in
	// its app and the arguments as sent.
	MiniAppToolCall *MiniAppToolCall `json:"miniAppToolCall,omitempty"`
	// Pending is the request for the person's approval the turn waits for, in the answer given
	// at once (202, turnAtOnce); the turn's outcome comes later as the event stream's turn event.
	Pending *Approval `json:"pending,omitempty"`
	// Instance names the run of the relay that took the turn, in the answer given at once: the
	// event stream's hello names its own and the turns it holds (serveEvents), so a page learns at
	// once that a turn is lost when that relay stopped.
	Instance string `json:"instance,omitempty"`
}

// MiniAppToolCall is a call of an open app's tool by its name in the app (Turn.MiniAppToolCall).
type MiniAppToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// maxTurnEventResultBytes bounds the result a turn event carries (the outcome of a turn answered
// with a pending handle); a larger one is replaced by a note, so the event stays well under what
// a fleet relays (internal/door/fleet.MaxEventBytes).
const maxTurnEventResultBytes = 128 << 10

// preferAsync reports whether the request asks, with Prefer: respond-async (RFC 7240), not to be
// kept waiting: the page's turns do, so that none of its connections waits on a person.
func preferAsync(h http.Header) bool {
	for _, v := range h.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			if name, _, _ := strings.Cut(strings.TrimSpace(p), ";"); strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

// turnAtOnce runs a turn for a caller that must not wait on a person (the page). A turn that ends
// without asking anyone is answered as it is, 200. A turn that asks for the person's approval is
// answered 202 as soon as the request is out on the event stream, {ok, turnId, mode, pending:
// Approval}, and runs on: its outcome, the Turn, comes exactly once as the event stream's turn
// event (and a stream opened later gets the latest of them after its hello). Until the 202 the
// turn ends with the request, as a held turn does; after it, with the approval's wait and
// approval.RunBound past it, before the page stops waiting for the outcome
// (approval.OutcomeGrace). The turns running so are bounded as the approvals are: at most
// MaxPendingApprovals wait at once, and each runs on for RunBound at most once decided.
func (c *Tools) turnAtOnce(w http.ResponseWriter, r *http.Request, t Turn, run func(context.Context) Turn) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	asked := make(chan Approval, 1)
	ctx = withAsked(ctx, func(a Approval) {
		select {
		case asked <- a: // the first request is the handle; a turn asks once
		default:
		}
	})
	done := make(chan Turn, 1)
	go func() {
		defer cancel()
		done <- run(ctx)
	}()
	select {
	case out := <-done:
		server.WriteJSON(w, http.StatusOK, out)
	case a := <-asked:
		// From here the request no longer holds the turn: the approval's wait and RunBound do.
		end := time.AfterFunc(c.opts.ApprovalTimeout+approval.RunBound, cancel)
		c.waiting.Store(t.TurnID, cancel)
		w.Header().Set("Preference-Applied", "respond-async")
		c.outcomes.Add()
		server.WriteJSON(w, http.StatusAccepted, Turn{OK: true, TurnID: t.TurnID, Mode: t.Mode, Pending: &a, Instance: c.instance})
		go func() {
			defer c.outcomes.Done()
			out := <-done
			end.Stop()
			if len(out.Result) > maxTurnEventResultBytes {
				out.Result = json.RawMessage(`{"note":"the result is too large to show here"}`)
			}
			// No longer held once kept among the recent turns, and before any stream hears it
			// (its caller may cancel no more): a hello names every turn in one or the other
			// (serveEvents).
			c.events.publishKept("turn", out, func() { c.waiting.Delete(t.TurnID) })
		}()
	case <-r.Context().Done():
		cancel() // the caller left before anyone was asked
		<-done
	}
}

// TypedTurn runs a transcript through the offline resolver and, when it understood an action,
// through the same path as Call.
func (c *Tools) TypedTurn(ctx context.Context, transcript string) Turn {
	return c.typedTurn(ctx, c.newTurn(), transcript)
}

// newTurn names a new turn.
func (c *Tools) newTurn() Turn {
	return Turn{TurnID: "turn-" + c.instance + "-" + itoa(c.seq.Add(1)), Mode: c.mode()}
}

func (c *Tools) typedTurn(ctx context.Context, t Turn, transcript string) Turn {
	res := commands.Resolve(transcript)
	t.Understood, t.Help = res.Understood, res.Help
	if res.Err != nil {
		r, _ := refusal.As(res.Err)
		t.Refused, t.Why = r.Rule, r.Why
		return t
	}
	if res.Name == "" { // help asked for
		t.OK = true
		return t
	}
	if res.NewFile {
		var a struct {
			Name string `json:"name"`
		}
		json.Unmarshal(res.Args, &a)
		if r := c.existing(ctx, a.Name); r != nil {
			t.Action, _ = json.Marshal(map[string]string{"verb": res.Name, "name": a.Name})
			t.Refused, t.Why = r.Rule, r.Why
			t.Result, _ = json.Marshal(r)
			return t
		}
	}
	return c.finish(ctx, t, res.Name, res.Args)
}

// ActionTurn runs an action given as it is, {"verb": tool, ...arguments}.
func (c *Tools) ActionTurn(ctx context.Context, action json.RawMessage) Turn {
	return c.actionTurn(ctx, c.newTurn(), action)
}

func (c *Tools) actionTurn(ctx context.Context, t Turn, action json.RawMessage) Turn {
	name, args, err := commands.SplitAction(action)
	var call *MiniAppToolCall
	if err == nil && name == commands.MiniAppTool {
		call = &MiniAppToolCall{}
		call.Name, call.Args, err = commands.SplitAppToolCall(args)
		if err == nil {
			name, args, err = c.appToolByPlainName(ctx, call.Name, call.Args)
		}
	}
	if err != nil {
		r, _ := refusal.As(err)
		t.Refused, t.Why = r.Rule, r.Why
		t.Result, _ = json.Marshal(r)
		return t
	}
	t = c.finish(ctx, t, name, args)
	t.MiniAppToolCall = call
	return t
}

func (c *Tools) finish(ctx context.Context, t Turn, name string, args json.RawMessage) Turn {
	o := c.run(ctx, FromTurn, t.TurnID, name, args)
	if o.Action != nil {
		t.Action, _ = o.Action.MarshalJSON()
	} else {
		t.Action, _ = json.Marshal(map[string]string{"verb": name})
	}
	t.Result = o.JSON()
	t.OK = o.Err == nil
	if r, ok := refusal.As(o.Err); ok {
		t.Refused, t.Why = r.Rule, r.Why
	}
	return t
}
