package assistant

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Approval is one request for the user's decision, as the page shows it.
type Approval struct {
	ID string `json:"id"`
	// Tool is the tool waiting, such as delete_file.
	Tool string `json:"tool"`
	// Client is the MCP client that made the call, or "" for the page's own model and turns.
	Client string `json:"client,omitempty"`
	// Summary says what will happen if the user approves, in a sentence.
	Summary string `json:"summary"`
	// Deadline is when the request times out.
	Deadline time.Time `json:"deadline"`
	// TimeoutMs is how long the request waits in all.
	TimeoutMs int64 `json:"timeoutMs"`
}

// The ways an approval ends.
const (
	Approved = "approved"
	Denied   = "denied"
	TimedOut = "timed-out"
)

// MaxPendingApprovals bounds the requests waiting for the user at once. A call that would be one
// more is refused too-many-approvals at once: a model asking for many deletes together cannot
// flood the page (or the event stream's hello, which lists them all).
const MaxPendingApprovals = 16

// approvals holds the requests waiting for the user.
type approvals struct {
	events *events

	mu      sync.Mutex
	waiting map[string]*request
	closed  bool
}

type request struct {
	Approval
	decided chan bool // buffered: one decision
}

// askedKey carries, in a call's context, what to tell once the call waits for the person
// (withAsked).
type askedKey struct{}

// withAsked returns ctx marked so that each approval a call made with it waits for is handed to
// asked as soon as the request is out on the event stream, before anyone decides. POST /api/turn
// uses it to answer the page at once with the pending handle (see Register).
func withAsked(ctx context.Context, asked func(Approval)) context.Context {
	return context.WithValue(ctx, askedKey{}, asked)
}

func newApprovals(ev *events) *approvals {
	return &approvals{events: ev, waiting: map[string]*request{}}
}

// wait asks the user to approve summary and returns nil once they did, or approval-denied, or
// approval-timed-out when timeout passed (or ctx ended) with no decision. With no page on the
// event stream to ask (this relay's, or in a fleet any relay's), it returns no-page at once. A call from an MCP client (WithMCPClient)
// names the client in the request.
func (p *approvals) wait(ctx context.Context, tool, summary string, timeout time.Duration) error {
	var id [12]byte
	rand.Read(id[:])
	client := mcpClient(ctx)
	asked := summary
	if client != "" {
		asked = fmt.Sprintf("MCP client %q asks: %s", client, summary)
	}
	req := &request{
		Approval: Approval{ID: "ap-" + hex.EncodeToString(id[:]), Tool: tool, Client: client, Summary: asked,
			Deadline: time.Now().Add(timeout).UTC(), TimeoutMs: timeout.Milliseconds()},
		decided: make(chan bool, 1),
	}
	watched := p.events.watched() // outside p.mu: in a fleet it asks the other relays
	p.mu.Lock()
	closed, full := p.closed, len(p.waiting) >= MaxPendingApprovals
	if !closed && !full && watched {
		p.waiting[req.ID] = req
	}
	p.mu.Unlock()
	if closed {
		return refusal.New(refusal.ApprovalTimedOut, "the relay is shutting down, so nothing was done: %s", summary)
	}
	if !watched {
		return refusal.New(refusal.NoPage, "nobody is there to approve it: open the Voicebox page, where the person decides, and call again; nothing was done: %s", summary)
	}
	if full {
		return refusal.New(refusal.TooManyApprovals, "%d requests already wait for the user's decision, so nothing was done and nobody was asked: %s", MaxPendingApprovals, summary)
	}
	p.events.publish("approval", req.Approval)
	if asked, ok := ctx.Value(askedKey{}).(func(Approval)); ok {
		asked(req.Approval)
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var ok, open, decided bool
	select {
	case ok, open = <-req.decided: // decide or closeAll took the request out of waiting first
		decided = true
	case <-timer.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	_, still := p.waiting[req.ID]
	delete(p.waiting, req.ID)
	p.mu.Unlock()
	if !decided && !still {
		// A decision (or the shutdown) took the request just as the wait ended: it stands, so a
		// page that was answered "ok" is right. It is in the channel, or about to be.
		ok, open = <-req.decided
		decided = true
	}
	outcome := TimedOut
	var err error
	switch {
	case decided && !open:
		err = refusal.New(refusal.ApprovalTimedOut, "the relay is shutting down, so nothing was done: %s", summary)
	case decided && ok:
		outcome = Approved
	case decided:
		outcome = Denied
		err = refusal.New(refusal.ApprovalDenied, "the user denied it: %s", summary)
	case ctx.Err() != nil:
		err = refusal.New(refusal.ApprovalTimedOut, "the call ended before the user answered, so nothing was done: %s", summary)
	default:
		err = refusal.New(refusal.ApprovalTimedOut, "the user did not answer within %v, so nothing was done: %s", timeout.Round(time.Second), summary)
	}
	p.events.publish("approval-settled", map[string]string{"id": req.ID, "outcome": outcome})
	return err
}

// decide records the user's decision on id and reports whether a request was waiting for it.
func (p *approvals) decide(id string, approve bool) bool {
	p.mu.Lock()
	req, ok := p.waiting[id]
	if ok {
		delete(p.waiting, id) // a second decision finds nothing
	}
	p.mu.Unlock()
	if ok {
		req.decided <- approve
	}
	return ok
}

// pending returns the requests waiting, oldest deadline first.
func (p *approvals) pending() []Approval {
	p.mu.Lock()
	out := make([]Approval, 0, len(p.waiting))
	for _, r := range p.waiting {
		out = append(out, r.Approval)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b Approval) int { return a.Deadline.Compare(b.Deadline) })
	return out
}

// closeAll settles every waiting request as timed out, doing nothing. For shutdown.
func (p *approvals) closeAll() {
	p.mu.Lock()
	p.closed = true
	reqs := make([]*request, 0, len(p.waiting))
	for id, r := range p.waiting {
		reqs = append(reqs, r)
		delete(p.waiting, id)
	}
	p.mu.Unlock()
	for _, r := range reqs {
		close(r.decided)
	}
}
