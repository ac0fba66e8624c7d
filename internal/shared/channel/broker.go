package channel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Kind is what the peer on the other end of a Broker is; it picks the names of absence refusals.
type Kind int

const (
	// Page is the browser page executing on its workspace root.
	Page Kind = iota + 1
	// Machine is a paired machine environment executing on a directory of its own.
	Machine
)

func (k Kind) String() string {
	switch k {
	case Page:
		return "page"
	case Machine:
		return "machine"
	}
	return textf.Sprintf("channel.Kind(%d)", int(k))
}

// Unreachable is the rule for asking while the peer is not connected.
func (k Kind) Unreachable() refusal.Rule {
	if k == Machine {
		return refusal.MachineUnreachable
	}
	return refusal.NoPage
}

// Timeout is the rule for a call the peer did not answer in time.
func (k Kind) Timeout() refusal.Rule {
	if k == Machine {
		return refusal.MachineTimeout
	}
	return refusal.PageTimeout
}

// Closed is the rule for a call in flight when the peer went away.
func (k Kind) Closed() refusal.Rule {
	if k == Machine {
		return refusal.MachineClosed
	}
	return refusal.PageClosed
}

// Peer is the transport a Broker asks through. Answer frames travel the other way: whoever reads
// them from the transport hands them to Broker.Answer, and calls Broker.Abandon when the
// connection is lost. Peer methods may be called from many goroutines at once.
type Peer interface {
	// Connected reports whether a frame sent now could reach the executor.
	Connected() bool
	// Send transmits one call frame. Send may deliver the answer (through Broker.Answer) before
	// it returns.
	Send(frame []byte) error
}

// DefaultTimeout is how long Ask waits for an answer when Options.Timeout is zero and the context
// has no earlier deadline.
const DefaultTimeout = 30 * time.Second

type waitKey struct{}

// MaxWait bounds the wait WithWait marks a context with: the longest any door asks, the external
// apps' tool call (internal/door/externalapps' callWait: a person's approval, 60 s, the app's
// answer, 10 s, and 5 s for the page to pass it back; a test there holds it under this). A call
// routed to another relay in a fleet carries its wait there (internal/door/fleet), and the relay
// holding the page believes no longer one than this from whoever publishes on its subject.
const MaxWait = 75 * time.Second

// WithWait returns ctx marked so that a Broker's Ask with it waits up to d (at most MaxWait) for
// the answer when d is longer than the Broker's Timeout: for a call that waits for a person
// before it runs (an approval asked in the page), whose executor holds its own, shorter,
// deadlines. A context deadline that comes sooner still wins.
func WithWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, waitKey{}, min(d, MaxWait))
}

// Wait returns the wait WithWait marked ctx with, if any.
func Wait(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(waitKey{}).(time.Duration)
	return d, ok
}

// Options configures a Broker. The zero value is usable.
type Options struct {
	// Timeout bounds each Ask; a context deadline that comes sooner wins. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Log receives a record for each answer frame that settles nothing. Nil discards them.
	Log Logger
}

// Stats counts answer frames that settled nothing.
type Stats struct {
	// Malformed counts frames ParseAnswer refused.
	Malformed uint64
	// Unmatched counts valid answers whose callId no call was waiting for: late, repeated or
	// invented.
	Unmatched uint64
}

// Broker sends calls to one peer and matches answers to them. It is safe for concurrent use.
type Broker struct {
	kind    Kind
	peer    Peer
	timeout time.Duration
	log     Logger

	mu      sync.Mutex
	pending map[string]chan wire.Answer // settled by whoever removes the entry

	malformed atomic.Uint64
	unmatched atomic.Uint64
}

// New returns a Broker asking peer, which is of the given kind. It panics if kind is not Page or
// Machine.
func New(kind Kind, peer Peer, opts Options) *Broker {
	if kind != Page && kind != Machine {
		panic("channel: New with " + kind.String())
	}
	b := &Broker{kind: kind, peer: peer, timeout: opts.Timeout, log: opts.Log, pending: make(map[string]chan wire.Answer)}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.log == nil {
		b.log = discard{}
	}
	return b
}

// Ask sends call to the peer and returns its answer, or a refusal: malformed-call for a call that
// cannot be sent as a valid envelope, whose frame breaks the wire's bounds (wire.CheckFrame: too
// large or too deep, refused before anything is sent) or whose callId is already waiting; the kind's unreachable
// rule, at once and without sending, when the peer is not connected or the send fails; its timeout
// rule when neither ctx nor the Broker's timeout allows waiting longer (without sending when ctx
// is already done); its closed rule when
// Abandon is called while the call waits.
func (b *Broker) Ask(ctx context.Context, call wire.Call) wire.Answer {
	frame, err := call.MarshalJSON()
	if err != nil {
		return wire.Refuse(call.CallID, refusal.New(refusal.MalformedCall, "the call cannot be sent as a valid envelope: it needs a callId, tool and descriptorId, and object args and boundsEcho"))
	}
	if r := wire.CheckFrame(frame, refusal.MalformedCall); r != nil {
		return wire.Refuse(call.CallID, r) // the executor would refuse it, or drop its socket
	}
	if !b.peer.Connected() {
		return b.unreachable(call.CallID, "is not connected")
	}
	if ctx.Err() != nil {
		return wire.Refuse(call.CallID, refusal.New(b.kind.Timeout(), "the caller stopped waiting before the call was sent to the %s; nothing ran", b.kind))
	}
	ch := make(chan wire.Answer, 1)
	b.mu.Lock()
	if _, busy := b.pending[call.CallID]; busy {
		b.mu.Unlock()
		return wire.Refuse(call.CallID, refusal.New(refusal.MalformedCall, "a call with callId %q is already waiting for its answer; each call in flight needs its own id", call.CallID))
	}
	b.pending[call.CallID] = ch
	b.mu.Unlock()

	if err := b.peer.Send(frame); err != nil {
		if b.withdraw(call.CallID, ch) {
			return b.unreachable(call.CallID, "could not be sent the call ("+err.Error()+")")
		}
		return <-ch // settled while sending
	}

	timeout := b.timeout
	if d, ok := Wait(ctx); ok && d > timeout {
		timeout = d
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a
	case <-timer.C:
		return b.expire(call.CallID, ch, textf.Sprintf("did not answer within %v", timeout))
	case <-ctx.Done():
		why := "did not answer before the caller's deadline"
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "did not answer before the caller stopped waiting"
		}
		return b.expire(call.CallID, ch, why)
	}
}

func (b *Broker) unreachable(callID, what string) wire.Answer {
	return wire.Refuse(callID, refusal.New(b.kind.Unreachable(), "the %s %s; connect it and try again", b.kind, what))
}

// withdraw removes a waiting call and reports whether it was still waiting (so the caller, not
// someone else, settles it).
func (b *Broker) withdraw(callID string, ch chan wire.Answer) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[callID] != ch {
		return false
	}
	delete(b.pending, callID)
	return true
}

func (b *Broker) expire(callID string, ch chan wire.Answer, what string) wire.Answer {
	if !b.withdraw(callID, ch) {
		return <-ch // an answer or Abandon got there first
	}
	return wire.Refuse(callID, refusal.New(b.kind.Timeout(), "the %s %s; the call may or may not have run", b.kind, what))
}

// ErrUnmatched is returned by Answer for a valid answer that no call is waiting for.
var ErrUnmatched = errors.New("channel: answer matches no waiting call")

// Answer hands the Broker one answer frame from the peer. A valid answer settles the call waiting
// for its callId. Anything else settles nothing and is counted: a frame that does not parse returns
// its *wire.ParseError, an answer nobody waits for returns ErrUnmatched.
func (b *Broker) Answer(frame []byte) error {
	a, err := wire.ParseAnswer(frame)
	if err != nil {
		b.malformed.Add(1)
		b.log.Warn("channel: answer frame refused", "peer", b.kind.String(), "rule", string(refusal.RuleOf(err)), "why", err.Error(), "bytes", len(frame))
		return err
	}
	b.mu.Lock()
	ch, ok := b.pending[a.CallID]
	if ok {
		delete(b.pending, a.CallID)
	}
	b.mu.Unlock()
	if !ok {
		b.unmatched.Add(1)
		b.log.Warn("channel: answer for no waiting call", "peer", b.kind.String(), "callId", a.CallID)
		return ErrUnmatched
	}
	ch <- a
	return nil
}

// Abandon settles every waiting call with the kind's closed refusal. The transport calls it when
// the connection to the peer is lost; calls asked afterwards wait for answers as usual.
func (b *Broker) Abandon() {
	b.mu.Lock()
	old := b.pending
	b.pending = make(map[string]chan wire.Answer)
	b.mu.Unlock()
	for id, ch := range old {
		ch <- wire.Refuse(id, refusal.New(b.kind.Closed(), "the %s went away while the call was in flight; the call may or may not have run", b.kind))
	}
}

// Waiting returns how many calls are waiting for an answer.
func (b *Broker) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// Stats returns the counts of answer frames that settled nothing.
func (b *Broker) Stats() Stats {
	return Stats{Malformed: b.malformed.Load(), Unmatched: b.unmatched.Load()}
}
