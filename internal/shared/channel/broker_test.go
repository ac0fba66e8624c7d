package channel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// testDeadline bounds any wait in these tests; reaching it is a failure, never a measurement.
const testDeadline = 10 * time.Second

// scriptPeer is a Peer whose Send records frames and runs onSend.
type scriptPeer struct {
	connected atomic.Bool
	sendErr   error
	onSend    func(frame []byte)

	mu   sync.Mutex
	sent [][]byte
}

func (p *scriptPeer) Connected() bool { return p.connected.Load() }

func (p *scriptPeer) Send(frame []byte) error {
	if p.sendErr != nil {
		return p.sendErr
	}
	p.mu.Lock()
	p.sent = append(p.sent, frame)
	p.mu.Unlock()
	if p.onSend != nil {
		p.onSend(frame)
	}
	return nil
}

func (p *scriptPeer) sentCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sent)
}

func newPeer() *scriptPeer {
	p := &scriptPeer{}
	p.connected.Store(true)
	return p
}

func testCall(id string) wire.Call {
	return wire.Call{CallID: id, Tool: "read_notes", DescriptorID: "notes", Args: json.RawMessage(`{"path":"a.txt"}`), BoundsEcho: json.RawMessage(`{"maxBytes":4096}`)}
}

func observedFrame(id string) []byte {
	b, err := wire.OK(id, json.RawMessage(`{"for":"`+id+`"}`)).MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

// waitFor polls cond until it holds, failing the test at testDeadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, testDeadline)
		}
		time.Sleep(time.Millisecond)
	}
}

// askAsync runs Ask in a goroutine and returns a channel with its answer.
func askAsync(b *Broker, ctx context.Context, call wire.Call) <-chan wire.Answer {
	out := make(chan wire.Answer, 1)
	go func() { out <- b.Ask(ctx, call) }()
	return out
}

func receive(t *testing.T, ch <-chan wire.Answer) wire.Answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(testDeadline):
		t.Fatalf("Ask did not return within %v", testDeadline)
		return wire.Answer{}
	}
}

func TestBrokerRules(t *testing.T) {
	t.Parallel()
	for _, kind := range []Kind{Page, Machine} {
		names := map[string]refusal.Rule{
			"unreachable": kind.Unreachable(), "timeout": kind.Timeout(), "closed": kind.Closed(),
		}
		tests := []struct {
			name     string
			rule     refusal.Rule // the rule of Ask's answer, "" for an observation
			wantSent int
			run      func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer
		}{
			{"not connected", names["unreachable"], 0, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				p.connected.Store(false)
				return b.Ask(context.Background(), testCall("c1"))
			}},
			{"send fails", names["unreachable"], 0, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				p.sendErr = errors.New("socket closed")
				return b.Ask(context.Background(), testCall("c1"))
			}},
			{"broker timeout", names["timeout"], 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				b.timeout = 5 * time.Millisecond
				return b.Ask(context.Background(), testCall("c1"))
			}},
			{"context deadline", names["timeout"], 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				ctx := &deadlineOnSend{Context: context.Background(), done: make(chan struct{})}
				p.onSend = func([]byte) { ctx.pass() }
				return b.Ask(ctx, testCall("c1"))
			}},
			{"context done before sending", names["timeout"], 0, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return b.Ask(ctx, testCall("c1"))
			}},
			{"context cancelled", names["timeout"], 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				ctx, cancel := context.WithCancel(context.Background())
				ch := askAsync(b, ctx, testCall("c1"))
				waitFor(t, "the call to wait", func() bool { return b.Waiting() == 1 })
				cancel()
				return receive(t, ch)
			}},
			{"abandoned", names["closed"], 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				ch := askAsync(b, context.Background(), testCall("c1"))
				waitFor(t, "the call to wait", func() bool { return b.Waiting() == 1 })
				b.Abandon()
				return receive(t, ch)
			}},
			{"abandoned while sending", names["closed"], 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				p.onSend = func([]byte) { b.Abandon() }
				return b.Ask(context.Background(), testCall("c1"))
			}},
			{"answered", "", 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				p.onSend = func([]byte) {
					if err := b.Answer(observedFrame("c1")); err != nil {
						t.Errorf("Answer: %v", err)
					}
				}
				return b.Ask(context.Background(), testCall("c1"))
			}},
			{"peer refusal crosses", refusal.BudgetExhausted, 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				p.onSend = func([]byte) {
					b.Answer([]byte(`{"v":1,"callId":"c1","ok":false,"refused":"budget-exhausted","why":"3 of 3 requests used","budget":{"used":3,"max":3}}`))
				}
				a := b.Ask(context.Background(), testCall("c1"))
				if a.Budget == nil || *a.Budget != (wire.Budget{Used: 3, Max: 3}) {
					t.Errorf("budget = %+v, want 3 of 3", a.Budget)
				}
				return a
			}},
			{"invalid call", refusal.MalformedCall, 0, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				c := testCall("c1")
				c.BoundsEcho = nil
				return b.Ask(context.Background(), c)
			}},
			{"call over the frame bound", refusal.MalformedCall, 0, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				c := testCall("c1")
				c.Args = json.RawMessage(`{"content":"` + strings.Repeat("a", wire.MaxFrameBytes) + `"}`)
				return b.Ask(context.Background(), c)
			}},
			{"call deeper than the wire allows", refusal.MalformedCall, 0, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				c := testCall("c1")
				c.Args = json.RawMessage(`{"x":` + strings.Repeat("[", wire.MaxDepth) + strings.Repeat("]", wire.MaxDepth) + `}`)
				return b.Ask(context.Background(), c)
			}},
			{"callId already waiting", refusal.MalformedCall, 1, func(t *testing.T, b *Broker, p *scriptPeer) wire.Answer {
				first := askAsync(b, context.Background(), testCall("c1"))
				waitFor(t, "the first call to wait", func() bool { return b.Waiting() == 1 })
				a := b.Ask(context.Background(), testCall("c1"))
				b.Answer(observedFrame("c1"))
				if got := receive(t, first); !got.OK {
					t.Errorf("the first call got %+v", got)
				}
				return a
			}},
		}
		for _, tt := range tests {
			t.Run(kind.String()+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				p := newPeer()
				b := New(kind, p, Options{})
				a := tt.run(t, b, p)
				if a.CallID != "c1" {
					t.Errorf("answer callId = %q, want c1", a.CallID)
				}
				if tt.rule == "" {
					if !a.OK || string(a.Observed) != `{"for":"c1"}` {
						t.Errorf("answer = %+v, want the peer's observation", a)
					}
				} else if a.OK || a.Refused != tt.rule || a.Why == "" {
					t.Errorf("answer = %+v, want refusal %s with a why", a, tt.rule)
				}
				if got := p.sentCount(); got != tt.wantSent {
					t.Errorf("sent %d frames, want %d", got, tt.wantSent)
				}
				if n := b.Waiting(); n != 0 {
					t.Errorf("Waiting() = %d after the call settled", n)
				}
			})
		}
	}
}

func TestBrokerIgnoresBadAnswerFrames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		frame     string
		rule      refusal.Rule // the refusal Answer returns, "" for ErrUnmatched
		malformed uint64
		unmatched uint64
	}{
		{"not JSON", `oops`, refusal.MalformedAnswer, 1, 0},
		{"bare claim", `{"v":1,"callId":"c1","ok":true}`, refusal.MalformedAnswer, 1, 0},
		{"ambient grant", `{"v":1,"callId":"c1","ok":true,"observed":{},"grant":"everything"}`, refusal.UnknownField, 1, 0},
		{"wrong version", `{"v":2,"callId":"c1","ok":true,"observed":{}}`, refusal.BadVersion, 1, 0},
		{"duplicate callId key", `{"v":1,"callId":"x","callId":"c1","ok":true,"observed":{}}`, refusal.MalformedAnswer, 1, 0},
		{"refusal without why", `{"v":1,"callId":"c1","ok":false,"refused":"page-closed"}`, refusal.MalformedAnswer, 1, 0},
		{"unmatched", `{"v":1,"callId":"c2","ok":true,"observed":{}}`, "", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPeer()
			b := New(Page, p, Options{})
			ch := askAsync(b, context.Background(), testCall("c1"))
			waitFor(t, "the call to wait", func() bool { return b.Waiting() == 1 })
			err := b.Answer([]byte(tt.frame))
			if tt.rule == "" {
				if !errors.Is(err, ErrUnmatched) {
					t.Fatalf("Answer = %v, want ErrUnmatched", err)
				}
			} else if refusal.RuleOf(err) != tt.rule {
				t.Fatalf("Answer = %v, want %s", err, tt.rule)
			}
			if got := b.Stats(); got != (Stats{Malformed: tt.malformed, Unmatched: tt.unmatched}) {
				t.Fatalf("Stats = %+v", got)
			}
			select {
			case a := <-ch:
				t.Fatalf("a bad frame settled the call with %+v", a)
			default:
			}
			if b.Waiting() != 1 {
				t.Fatalf("Waiting() = %d, want the call still waiting", b.Waiting())
			}
			if err := b.Answer(observedFrame("c1")); err != nil {
				t.Fatal(err)
			}
			if a := receive(t, ch); !a.OK {
				t.Fatalf("answer = %+v", a)
			}
			if err := b.Answer(observedFrame("c1")); !errors.Is(err, ErrUnmatched) {
				t.Fatalf("a second answer for a settled call: %v, want ErrUnmatched", err)
			}
		})
	}
}

func TestBrokerLateAnswerIsUnmatched(t *testing.T) {
	t.Parallel()
	p := newPeer()
	b := New(Machine, p, Options{Timeout: time.Millisecond})
	if a := b.Ask(context.Background(), testCall("c1")); a.Refused != refusal.MachineTimeout {
		t.Fatalf("answer = %+v", a)
	}
	if err := b.Answer(observedFrame("c1")); !errors.Is(err, ErrUnmatched) {
		t.Fatalf("late answer: %v", err)
	}
	if b.Stats().Unmatched != 1 {
		t.Fatalf("Stats = %+v", b.Stats())
	}
}

// A call marked WithWait outlives the Broker's Timeout (it waits for a person first); one
// without the mark does not, and a shorter wait never shortens the Timeout.
func TestBrokerWithWaitOutlivesTheTimeout(t *testing.T) {
	t.Parallel()
	p := newPeer()
	b := New(Page, p, Options{Timeout: time.Millisecond})
	if a := b.Ask(WithWait(context.Background(), time.Nanosecond), testCall("short")); a.Refused != refusal.PageTimeout {
		t.Fatalf("a shorter wait: %+v, want page-timeout", a)
	}
	ch := askAsync(b, WithWait(context.Background(), time.Hour), testCall("long"))
	waitFor(t, "the call to be sent", func() bool { return p.sentCount() == 2 })
	// Well past the Broker's Timeout, the call still waits.
	time.Sleep(20 * time.Millisecond)
	if err := b.Answer(observedFrame("long")); err != nil {
		t.Fatalf("the answer to a call waiting longer: %v", err)
	}
	if a := receive(t, ch); !a.OK {
		t.Fatalf("answer = %+v", a)
	}
}

func TestKindNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind                         Kind
		unreachable, timeout, closed refusal.Rule
	}{
		{Page, "no-page", "page-timeout", "page-closed"},
		{Machine, "machine-unreachable", "machine-timeout", "machine-closed"},
	}
	for _, tt := range tests {
		if tt.kind.Unreachable() != tt.unreachable || tt.kind.Timeout() != tt.timeout || tt.kind.Closed() != tt.closed {
			t.Errorf("%v names %s %s %s", tt.kind, tt.kind.Unreachable(), tt.kind.Timeout(), tt.kind.Closed())
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("New accepted the zero Kind")
		}
	}()
	New(0, newPeer(), Options{})
}

// deadlineOnSend is a context whose deadline passes when pass is called: the case of a deadline
// that passes while the call waits for its answer (a deadline of a few milliseconds could pass
// before the frame is sent on a busy machine, which is the case "context done before sending").
type deadlineOnSend struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func (c *deadlineOnSend) pass() { c.once.Do(func() { close(c.done) }) }

func (c *deadlineOnSend) Done() <-chan struct{} { return c.done }

func (c *deadlineOnSend) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
