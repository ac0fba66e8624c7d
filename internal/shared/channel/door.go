package channel

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Executor runs one verified call and returns what it observed, a JSON object. To refuse, it
// returns a *refusal.Refusal (or an error wrapping one), or a *wire.BudgetError to send budget
// figures along; any other error, and any panic, becomes exec-threw.
type Executor interface {
	Execute(ctx context.Context, call wire.Call) (observed json.RawMessage, err error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, call wire.Call) (json.RawMessage, error)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	return f(ctx, call)
}

// DoorOptions configures a Door. The zero value is usable.
type DoorOptions struct {
	// Log receives a record for each frame that gets no answer and each exec-threw. Nil discards.
	Log Logger
}

// Door is the executing side of the channel: it turns call frames into answer frames. A result
// that is not a JSON object, or that would make an answer frame outside the wire's bounds
// (wire.CheckFrame: larger than wire.MaxFrameBytes or deeper than wire.MaxDepth), is answered with
// exec-threw, as is a refusal whose rule is not a kebab-case id; a refusal with
// an empty why gets one. It is safe for concurrent use if its Executor and Admitted are.
type Door struct {
	exec       Executor
	admitted   wire.Admitted
	log        Logger
	unanswered atomic.Uint64
}

// NewDoor returns a Door that runs calls on exec once they are verified against admitted, the
// receiver's own record of admitted descriptors and their bounds. When admitted is also a
// ToolScope (a *LiveAdmitted is), a call for a tool its descriptor was not admitted with is
// refused under-declared.
func NewDoor(exec Executor, admitted wire.Admitted, opts DoorOptions) *Door {
	d := &Door{exec: exec, admitted: admitted, log: opts.Log}
	if d.log == nil {
		d.log = discard{}
	}
	return d
}

// maxWhyBytes bounds the part of an executor's error or panic value copied into an exec-threw why.
const maxWhyBytes = 512

// Serve handles one call frame and returns the answer frame to send back, or nil when the frame
// is refused before a callId could be read from it (such a frame gets no answer; it is counted in
// Unanswered). A frame refused later is answered with its refusal.
func (d *Door) Serve(ctx context.Context, frame []byte) []byte {
	_, out := d.handle(ctx, frame)
	return out
}

// Handle is Serve returning the answer as a value too; ok is false when the frame gets no answer.
func (d *Door) Handle(ctx context.Context, frame []byte) (a wire.Answer, ok bool) {
	a, out := d.handle(ctx, frame)
	return a, out != nil
}

// Unanswered returns how many frames got no answer.
func (d *Door) Unanswered() uint64 { return d.unanswered.Load() }

func (d *Door) handle(ctx context.Context, frame []byte) (wire.Answer, []byte) {
	call, err := wire.ParseCall(frame)
	if err != nil {
		// ParseCall's failures are *ParseError; anything else is read as a frame with no callId.
		if pe, ok := errors.AsType[*wire.ParseError](err); ok && pe.CallID != "" {
			return d.finish(wire.Refuse(pe.CallID, pe.Refusal), "")
		}
		d.unanswered.Add(1)
		d.log.Warn("channel: call frame refused without an answer", "rule", string(refusal.RuleOf(err)), "err", err, "bytes", len(frame))
		return wire.Answer{}, nil
	}
	if r := wire.Verify(call, d.admitted); r != nil {
		return d.finish(wire.Refuse(call.CallID, r), call.Tool)
	}
	if scope, ok := d.admitted.(ToolScope); ok && !scope.Allows(call.DescriptorID, call.Tool) {
		return d.finish(wire.Refuse(call.CallID, refuseScope(call)), call.Tool)
	}
	return d.finish(d.run(ctx, call), call.Tool)
}

// finish marshals a, the answer to a call of tool; an answer that cannot cross the wire becomes
// exec-threw. Marshalling is where an observation is checked to be one JSON object, and the frame
// to be within CheckFrame's bounds: the library's validator reads it once, however large it is,
// and the bounds are counted as it is written.
func (d *Door) finish(a wire.Answer, tool string) (wire.Answer, []byte) {
	out, r, err := a.AppendFrame(nil, refusal.MalformedAnswer)
	if errors.Is(err, wire.ErrObservedNotObject) {
		a = d.threw(a.CallID, "the executor's result for %q is not a JSON object", tool)
		out, r, err = a.AppendFrame(nil, refusal.MalformedAnswer)
	}
	if err == nil && r != nil {
		err = textf.Errorf("%s", r.Why)
	}
	if err != nil {
		a = d.threw(a.CallID, "the executor's answer cannot be sent: %s", err)
		out, _ = a.MarshalJSON()
	}
	return a, out
}

func (d *Door) threw(callID, format string, args ...any) wire.Answer {
	r := refusal.New(refusal.ExecThrew, format, args...)
	d.log.Warn("channel: executor threw", "callId", callID, "why", r.Why)
	return wire.Refuse(callID, r)
}

func (d *Door) run(ctx context.Context, call wire.Call) (a wire.Answer) {
	defer func() {
		if v := recover(); v != nil {
			a = d.threw(call.CallID, "the executor panicked running %q: %s", call.Tool, clip(textf.Sprintf("%v", v)))
		}
	}()
	observed, err := d.exec.Execute(ctx, call)
	if err == nil {
		return wire.OK(call.CallID, observed) // finish checks that it is one JSON object
	}
	if be, ok := errors.AsType[*wire.BudgetError](err); ok && be.Refusal != nil {
		a = d.passOn(call, be.Refusal)
		if !a.OK && a.Refused == be.Refusal.Rule {
			budget := be.Budget
			a.Budget = &budget
		}
		return a
	}
	if r, ok := refusal.As(err); ok {
		return d.passOn(call, r)
	}
	return d.threw(call.CallID, "the executor failed running %q: %s", call.Tool, clip(err.Error()))
}

// passOn answers with the executor's own refusal, unchanged when it can cross the wire.
func (d *Door) passOn(call wire.Call, r *refusal.Refusal) wire.Answer {
	a := wire.Refuse(call.CallID, r)
	if a.Why == "" {
		a.Why = textf.Sprintf("the executor refused %q without saying why", call.Tool)
	}
	if _, err := a.MarshalJSON(); err != nil {
		return d.threw(call.CallID, "the executor refused %q with %q, which is not a rule id", call.Tool, clip(string(r.Rule)))
	}
	return a
}

func clip(s string) string {
	if len(s) <= maxWhyBytes {
		return s
	}
	cut := maxWhyBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
