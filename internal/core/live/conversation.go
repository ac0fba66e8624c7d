package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// DefaultReadyBound is how long a session may take from Start to ready before it fails with
// live-setup-timeout.
const DefaultReadyBound = 20 * time.Second

// Callbacks are how a session reports to its host. Each may be nil. They are called one at a
// time, in the order the vendor produced what they carry, and never after the terminal state;
// they must not block for long (a callback may call the session's methods, Close included).
type Callbacks struct {
	// OnState reports a state (see State) with a detail for people; the key never appears in it.
	OnState func(state State, detail string)
	// OnText delivers a transcript or text.
	OnText func(text string, kind TextKind)
	// OnAudio delivers output PCM16 and its rate.
	OnAudio func(pcm []byte, rate int)
	// OnToolCall delivers calls made while ready; the host answers each with SendToolResponses.
	OnToolCall func(calls []Call)
}

// Config starts a session.
type Config struct {
	// Choice names the provider, model, voice and thinking depth (see Providers.Resolve).
	Choice
	// Key is the vendor key.
	Key string
	// BaseURL is the vendor endpoint; empty means the vendor's own.
	BaseURL string
	// Tools and Instruction are what the model is offered.
	Tools       []tool.Declaration
	Instruction string
	// Transport reaches the vendor; nil means a new WebSocketTransport.
	Transport Transport
	Callbacks Callbacks
	// ReadyBound bounds Start to ready; zero means DefaultReadyBound.
	ReadyBound time.Duration
	// Log receives the session's events; never the key. Nil discards.
	Log *slog.Logger
}

// Stats counts what a session dropped at its gates.
type Stats struct {
	// AudioDropped and TextDropped count sends before ready; CallsDropped counts tool calls a
	// provider reported before ready.
	AudioDropped, TextDropped, CallsDropped int64
}

// Conversation is one live session: a conversation with a vendor's model (a "session" alone is a
// person's sign-in, internal/core/session). Its methods are safe for concurrent use.
type Conversation struct {
	provider Provider
	cb       Callbacks
	rate     int
	key      string
	log      *slog.Logger
	ready    atomic.Bool
	bound    time.Duration

	audioDropped, textDropped, callsDropped atomic.Int64

	dmu sync.Mutex // held while a callback is delivered

	mu         sync.Mutex
	done       bool
	inDelivery bool
	pending    *terminal // a terminal reached while a callback was running, delivered after it
	timer      *time.Timer
}

type terminal struct {
	state  State
	detail string
}

// Start resolves cfg's choice against the registry, builds the provider and starts it. When it
// cannot start, the session reports Failed (its one terminal state) and Start returns the reason.
func (r *Providers) Start(ctx context.Context, cfg Config) (*Conversation, error) {
	choice, err := r.Resolve(cfg.Choice)
	if err != nil {
		return nil, err
	}
	e, rf := r.lookup(choice.Provider)
	if rf != nil {
		return nil, rf
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Conversation{cb: cfg.Callbacks, rate: e.offer.InputRate, key: cfg.Key, log: log}
	t := cfg.Transport
	if t == nil {
		t = &WebSocketTransport{}
	}
	env := Env{
		Emit:      s.emit,
		Transport: &facade{t: t, ready: s.ready.Load, drop: func() { s.audioDropped.Add(1) }},
		BaseURL:   cfg.BaseURL, Key: cfg.Key,
		Model: choice.Model, Voice: choice.Voice, Thinking: choice.Thinking,
		Tools: cfg.Tools, Instruction: cfg.Instruction,
		InputRate: e.offer.InputRate, OutputRate: e.offer.OutputRate,
		Log: log,
	}
	p, err := e.factory(env)
	if err != nil {
		return nil, s.redactErr(err)
	}
	s.provider = p
	bound := cfg.ReadyBound
	if bound <= 0 {
		bound = DefaultReadyBound
	}
	s.bound = bound
	if err := p.Start(); err != nil {
		err = s.redactErr(err)
		s.finish(Failed, err.Error())
		p.Close()
		return nil, err
	}
	s.mu.Lock()
	if !s.done && !s.ready.Load() {
		s.timer = time.AfterFunc(bound, func() {
			if s.finish(Failed, fmt.Sprintf("the vendor did not acknowledge the setup within %v", bound)) {
				p.Close()
			}
		})
	}
	s.mu.Unlock()
	return s, nil
}

// InputRate is the rate SendAudio takes.
func (s *Conversation) InputRate() int { return s.rate }

// Ready reports whether the gate is open.
func (s *Conversation) Ready() bool { return s.ready.Load() }

// Stats returns what the gates dropped so far.
func (s *Conversation) Stats() Stats {
	return Stats{AudioDropped: s.audioDropped.Load(), TextDropped: s.textDropped.Load(), CallsDropped: s.callsDropped.Load()}
}

// Done reports whether the session has reached its terminal state.
func (s *Conversation) Done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// SendAudio forwards PCM16 captured at rate, which must be the provider's input rate
// (live-rate-mismatch otherwise). Before ready the audio is counted and dropped (live-not-ready);
// after the end it is refused live-session-closed.
func (s *Conversation) SendAudio(pcm []byte, rate int) error {
	if rate != s.rate {
		return refusal.New(refusal.LiveRateMismatch, "this provider takes audio at %d Hz, not %d Hz; capture at the announced rate", s.rate, rate)
	}
	if s.Done() {
		return refusal.New(refusal.LiveSessionClosed, "the live session has ended")
	}
	if !s.ready.Load() {
		s.audioDropped.Add(1)
		return refusal.New(refusal.LiveNotReady, "the vendor has not acknowledged the setup yet; audio before that is dropped")
	}
	return s.redactErr(s.provider.SendAudio(pcm))
}

// SendText sends what the person typed. Before ready it is counted and dropped.
func (s *Conversation) SendText(text string) error {
	if s.Done() {
		return refusal.New(refusal.LiveSessionClosed, "the live session has ended")
	}
	if !s.ready.Load() {
		s.textDropped.Add(1)
		return refusal.New(refusal.LiveNotReady, "the vendor has not acknowledged the setup yet; text before that is dropped")
	}
	return s.redactErr(s.provider.SendText(text))
}

// SendToolResponses answers calls the session delivered; it reports false when nothing could be
// sent (the session ended, or the ids are unknown to the provider).
func (s *Conversation) SendToolResponses(results []ToolResult) bool {
	if s.Done() {
		return false
	}
	return s.provider.SendToolResponses(results)
}

// Interrupt tells the vendor the person barged in (see Provider.Interrupt).
func (s *Conversation) Interrupt(playedMs int) error {
	if s.Done() {
		return refusal.New(refusal.LiveSessionClosed, "the live session has ended")
	}
	return s.redactErr(s.provider.Interrupt(playedMs))
}

// UpdateTools offers a new tool set and instruction, when the provider can change them.
func (s *Conversation) UpdateTools(tools []tool.Declaration, instruction string) error {
	if s.Done() {
		return refusal.New(refusal.LiveSessionClosed, "the live session has ended")
	}
	return s.redactErr(s.provider.UpdateTools(tools, instruction))
}

// Close ends the session (Closed, unless another terminal state came first) and closes the
// vendor connection. It is idempotent.
func (s *Conversation) Close() {
	s.finish(Closed, "")
	s.provider.Close()
}

// emit is the provider's Env.Emit.
func (s *Conversation) emit(ev Event) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	var deliver func()
	switch ev.Kind {
	case EventTransportOpen:
		deliver = s.state(TransportOpen, "")
	case EventReady:
		s.ready.Store(true)
		if s.timer != nil {
			s.timer.Stop()
		}
		deliver = s.state(Ready, "")
	case EventReconnecting:
		s.ready.Store(false)
		if s.timer != nil {
			s.timer.Reset(s.bound)
		} else {
			s.timer = time.AfterFunc(s.bound, func() {
				if s.finish(Failed, fmt.Sprintf("the vendor did not acknowledge the new setup within %v", s.bound)) {
					s.provider.Close()
				}
			})
		}
		deliver = s.state(Reconnecting, ev.Detail)
	case EventAudio:
		if s.cb.OnAudio != nil {
			deliver = func() { s.cb.OnAudio(ev.PCM, ev.Rate) }
		}
	case EventText:
		if s.cb.OnText != nil {
			deliver = func() { s.cb.OnText(ev.Text, ev.TextKind) }
		}
	case EventToolCall:
		if !s.ready.Load() {
			s.callsDropped.Add(int64(len(ev.Calls)))
			s.log.Warn("live: tool calls before ready dropped", "calls", len(ev.Calls))
		} else if s.cb.OnToolCall != nil {
			deliver = func() { s.cb.OnToolCall(ev.Calls) }
		}
	case EventInterrupted:
		deliver = s.state(Interrupted, "")
	case EventTurnComplete:
		deliver = s.state(TurnComplete, "")
	case EventGoAway:
		deliver = s.state(GoAway, ev.Detail)
	case EventError:
		deliver = s.state(Error, ev.Detail)
	case EventClosed:
		s.done = true
		s.ready.Store(false)
		if s.timer != nil {
			s.timer.Stop()
		}
		detail := fmt.Sprintf("the vendor closed the connection (%d)", ev.Code)
		if ev.Detail != "" {
			detail += ": " + ev.Detail
		}
		deliver = s.state(UpstreamClosed, detail)
	}
	if deliver == nil {
		s.mu.Unlock()
		return
	}
	s.inDelivery = true
	s.mu.Unlock()
	deliver()
	s.mu.Lock()
	s.inDelivery = false
	p := s.pending
	s.pending = nil
	s.mu.Unlock()
	if p != nil && s.cb.OnState != nil {
		s.cb.OnState(p.state, p.detail)
	}
}

// state returns the delivery of an OnState call with a redacted detail, or nil without OnState.
func (s *Conversation) state(st State, detail string) func() {
	if s.cb.OnState == nil {
		return nil
	}
	detail = s.redact(detail)
	return func() { s.cb.OnState(st, detail) }
}

// finish makes st the terminal state unless there is one already, and reports whether it did.
// The terminal callback is delivered now, or right after the callback being delivered.
func (s *Conversation) finish(st State, detail string) bool {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return false
	}
	s.done = true
	s.ready.Store(false)
	if s.timer != nil {
		s.timer.Stop()
	}
	detail = s.redact(detail)
	s.log.Info("live: session ended", "state", st, "detail", detail)
	if s.inDelivery {
		s.pending = &terminal{st, detail}
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	if s.cb.OnState != nil {
		s.dmu.Lock()
		s.cb.OnState(st, detail)
		s.dmu.Unlock()
	}
	return true
}

// redact blanks the key out of a text meant for people or logs.
func (s *Conversation) redact(text string) string { return Redact(text, s.key) }

func (s *Conversation) redactErr(err error) error {
	if err == nil || s.key == "" {
		return err
	}
	if rf, ok := refusal.As(err); ok {
		return &refusal.Refusal{Rule: rf.Rule, Why: s.redact(rf.Why)}
	}
	msg := err.Error()
	if !strings.Contains(msg, s.key) {
		return err
	}
	return errors.New(s.redact(msg))
}

// Redact returns text with every occurrence of key replaced by "[key]". Keys shorter than 8
// bytes are not real vendor keys and are left alone, so a test key like "k" does not garble text.
func Redact(text, key string) string {
	if len(key) < 8 {
		return text
	}
	return strings.ReplaceAll(text, key, "[key]")
}
