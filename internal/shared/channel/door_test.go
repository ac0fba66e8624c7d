package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

var admitted = wire.AdmittedMap{
	"notes": json.RawMessage(`{"maxBytes":4096}`),
	"web":   json.RawMessage(`{"hosts":["a.example"],"maxRequests":3}`),
}

const doorCall = `{"v":1,"callId":"c1","tool":"read_notes","descriptorId":"notes","args":{"path":"a.txt"},"boundsEcho":{"maxBytes":4096}}`

func TestDoorRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		frame  string
		exec   func(call wire.Call) (json.RawMessage, error)
		answer bool         // whether the frame gets an answer
		rule   refusal.Rule // the answer's rule, "" for an observation
		ran    bool         // whether the executor must have run
		budget *wire.Budget
		why    string // a part of the answer's why, when set
	}{
		// No callId can be read: no answer.
		{name: "not JSON", frame: `hello`},
		{name: "array", frame: `[` + doorCall + `]`},
		{name: "duplicate key", frame: `{"v":1,"callId":"c1","callId":"c2","tool":"t","descriptorId":"notes","boundsEcho":{"maxBytes":4096}}`},
		{name: "trailing data", frame: doorCall + `{}`},
		{name: "oversized", frame: strings.Replace(doorCall, `"a.txt"`, `"`+strings.Repeat("a", wire.MaxFrameBytes)+`"`, 1)},
		{name: "no callId", frame: `{"v":1,"tool":"t","descriptorId":"notes","boundsEcho":{"maxBytes":4096}}`},

		// Parse failures with a callId: refused answers, nothing runs.
		{name: "ambient grant", frame: `{"v":1,"callId":"c1","tool":"t","descriptorId":"notes","boundsEcho":{"maxBytes":4096},"grant":"everything"}`, answer: true, rule: refusal.UnknownField},
		{name: "bad version", frame: `{"v":3,"callId":"c1","tool":"t","descriptorId":"notes","boundsEcho":{"maxBytes":4096}}`, answer: true, rule: refusal.BadVersion},
		{name: "no descriptorId", frame: `{"v":1,"callId":"c1","tool":"t","boundsEcho":{"maxBytes":4096}}`, answer: true, rule: refusal.UnattributedCall},
		{name: "args not object", frame: `{"v":1,"callId":"c1","tool":"t","descriptorId":"notes","boundsEcho":{"maxBytes":4096},"args":[]}`, answer: true, rule: refusal.MalformedCall},

		// Attribution against the door's own admitted set.
		{name: "not admitted", frame: `{"v":1,"callId":"c1","tool":"t","descriptorId":"shell","boundsEcho":{}}`, answer: true, rule: refusal.UnattributedCall},
		{name: "bounds raised", frame: `{"v":1,"callId":"c1","tool":"t","descriptorId":"notes","boundsEcho":{"maxBytes":1e9}}`, answer: true, rule: refusal.BoundsMismatch},
		{name: "bounds reordered", frame: `{"v":1,"callId":"c1","tool":"fetch","descriptorId":"web","boundsEcho":{"maxRequests":3,"hosts":["a.example"]}}`, answer: true, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) { return json.RawMessage(`{"status":200}`), nil }},

		// The executor.
		{name: "observed", frame: doorCall, answer: true, ran: true,
			exec: func(c wire.Call) (json.RawMessage, error) { return json.RawMessage(`{"text":"hi"}`), nil }},
		{name: "panic", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) { panic("index out of range") }},
		{name: "panic with error", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) { panic(errors.New("boom")) }},
		{name: "plain error", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) { return nil, errors.New("disk on fire") }},
		{name: "context error", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) { return nil, context.DeadlineExceeded }},
		{name: "result not object", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true, why: `result for "read_notes" is not a JSON object`,
			exec: func(wire.Call) (json.RawMessage, error) { return json.RawMessage(`"done"`), nil }},
		{name: "result nil", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true, why: `result for "read_notes" is not a JSON object`,
			exec: func(wire.Call) (json.RawMessage, error) { return nil, nil }},
		{name: "result broken", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true, why: `result for "read_notes" is not a JSON object`,
			exec: func(wire.Call) (json.RawMessage, error) { return json.RawMessage(`{"a":`), nil }},
		{name: "result with trailing data", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true, why: `result for "read_notes" is not a JSON object`,
			exec: func(wire.Call) (json.RawMessage, error) { return json.RawMessage(`{"a":1} {"b":2}`), nil }},
		{name: "result spaced", frame: doorCall, answer: true, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) {
				return json.RawMessage(" {\n \"a\" : [1, \"x y\"]\t}\n"), nil
			}},
		{name: "result too large", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) {
				return json.RawMessage(`{"text":"` + strings.Repeat("x", wire.MaxFrameBytes) + `"}`), nil
			}},
		{name: "host-not-allowed crosses", frame: doorCall, answer: true, rule: refusal.HostNotAllowed, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) {
				return nil, refusal.New(refusal.HostNotAllowed, "evil.example is not among the descriptor's hosts")
			}},
		{name: "wrapped fetch-failed crosses", frame: doorCall, answer: true, rule: refusal.FetchFailed, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) {
				return nil, fmt.Errorf("http-get: %w", refusal.New(refusal.FetchFailed, "a.example answered 503"))
			}},
		{name: "budget-exhausted crosses with figures", frame: doorCall, answer: true, rule: refusal.BudgetExhausted, ran: true, budget: &wire.Budget{Used: 3, Max: 3},
			exec: func(wire.Call) (json.RawMessage, error) {
				return nil, &wire.BudgetError{Refusal: refusal.New(refusal.BudgetExhausted, "all 3 requests are spent"), Budget: wire.Budget{Used: 3, Max: 3}}
			}},
		{name: "refusal without why", frame: doorCall, answer: true, rule: refusal.FetchFailed, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) { return nil, refusal.Of(refusal.FetchFailed) }},
		{name: "refusal with a bad id", frame: doorCall, answer: true, rule: refusal.ExecThrew, ran: true,
			exec: func(wire.Call) (json.RawMessage, error) { return nil, refusal.New("Not A Rule", "x") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Bool
			exec := ExecutorFunc(func(ctx context.Context, c wire.Call) (json.RawMessage, error) {
				ran.Store(true)
				if tt.exec == nil {
					t.Errorf("the executor ran for a call the door should have refused")
					return json.RawMessage(`{}`), nil
				}
				return tt.exec(c)
			})
			d := NewDoor(exec, admitted, DoorOptions{})
			out := d.Serve(context.Background(), []byte(tt.frame))
			if ran.Load() != tt.ran {
				t.Errorf("executor ran = %v, want %v", ran.Load(), tt.ran)
			}
			if !tt.answer {
				if out != nil {
					t.Fatalf("answered %s, want no answer", out)
				}
				if d.Unanswered() != 1 {
					t.Fatalf("Unanswered() = %d", d.Unanswered())
				}
				return
			}
			if out == nil {
				t.Fatalf("no answer")
			}
			a, err := wire.ParseAnswer(out)
			if err != nil {
				t.Fatalf("the door's answer %s does not parse: %v", out, err)
			}
			if a.CallID != "c1" {
				t.Errorf("callId = %q", a.CallID)
			}
			if tt.rule == "" {
				if !a.OK {
					t.Fatalf("answer = %+v, want an observation", a)
				}
			} else if a.OK || a.Refused != tt.rule || a.Why == "" {
				t.Fatalf("answer = %s, want %s", out, tt.rule)
			}
			if !strings.Contains(a.Why, tt.why) {
				t.Errorf("why = %q, want it to say %q", a.Why, tt.why)
			}
			if a.OK && strings.ContainsAny(string(a.Observed), " \t\n") && !strings.Contains(string(a.Observed), "x y") {
				t.Errorf("observed = %s, not compact", a.Observed)
			}
			if (a.Budget == nil) != (tt.budget == nil) || a.Budget != nil && *a.Budget != *tt.budget {
				t.Fatalf("budget = %+v, want %+v", a.Budget, tt.budget)
			}
			if h, ok := d.Handle(context.Background(), []byte(tt.frame)); !ok || h.Refused != a.Refused {
				t.Fatalf("Handle = %+v, %v; Serve said %s", h, ok, out)
			}
		})
	}
}

// loopPeer connects a Broker to a Door in the same process.
type loopPeer struct {
	door   *Door
	broker *Broker
}

func (p *loopPeer) Connected() bool { return true }

func (p *loopPeer) Send(frame []byte) error {
	if out := p.door.Serve(context.Background(), frame); out != nil {
		p.broker.Answer(out)
	}
	return nil
}

func TestBudgetCrossesEndToEnd(t *testing.T) {
	t.Parallel()
	exec := ExecutorFunc(func(ctx context.Context, c wire.Call) (json.RawMessage, error) {
		return nil, fmt.Errorf("fetch: %w", &wire.BudgetError{Refusal: refusal.New(refusal.BudgetExhausted, "2 of 2 requests used"), Budget: wire.Budget{Used: 2, Max: 2}})
	})
	p := &loopPeer{door: NewDoor(exec, admitted, DoorOptions{})}
	p.broker = New(Machine, p, Options{})
	a := p.broker.Ask(context.Background(), testCall("c1"))
	var be *wire.BudgetError
	if err := a.Err(); !errors.As(err, &be) || be.Refusal.Rule != refusal.BudgetExhausted || be.Refusal.Why != "2 of 2 requests used" || be.Budget != (wire.Budget{Used: 2, Max: 2}) {
		t.Fatalf("Ask = %+v (%v), want budget-exhausted with 2 of 2", a, err)
	}
}
