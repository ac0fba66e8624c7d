package live_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/live/livetest"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// bound is a hang guard for waits; nothing asserts how long anything took.
const bound = 10 * time.Second

// fakeTransport records what a provider sends and lets a test deliver events.
type fakeTransport struct {
	headers bool

	mu        sync.Mutex
	connected int
	url       string
	sent      []string
	onEvent   func(live.TransportEvent)
	closed    int
}

func (t *fakeTransport) CarriesHeaders() bool { return t.headers }

func (t *fakeTransport) Connect(_ context.Context, url string, opts live.ConnectOptions) error {
	t.mu.Lock()
	t.connected++
	t.url = url
	t.onEvent = opts.OnEvent
	t.mu.Unlock()
	opts.OnEvent(live.TransportEvent{Kind: live.TransportOpened})
	return nil
}

func (t *fakeTransport) Send(kind live.SendKind, frame []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent = append(t.sent, fmt.Sprintf("%d:%s", kind, frame))
	return nil
}

func (t *fakeTransport) Close(int, string) {
	t.mu.Lock()
	t.closed++
	t.mu.Unlock()
}

func (t *fakeTransport) Sent() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.sent...)
}

// fakeProvider passes what the session asks straight to the transport, and lets a test emit
// events as the vendor would.
type fakeProvider struct {
	env      live.Env
	startErr error
	mu       sync.Mutex
	closes   int
	results  []live.ToolResult
	played   []int
}

// holder keeps the provider a registry's factory made last.
type holder struct {
	sync.Mutex
	p *fakeProvider
}

func (h *holder) get() *fakeProvider {
	h.Lock()
	defer h.Unlock()
	return h.p
}

func fakeFactory(startErr error, h *holder) live.Factory {
	return func(env live.Env) (live.Provider, error) {
		p := &fakeProvider{env: env, startErr: startErr}
		if h != nil {
			h.Lock()
			h.p = p
			h.Unlock()
		}
		return p, nil
	}
}

func (p *fakeProvider) Start() error {
	if p.startErr != nil {
		return p.startErr
	}
	h := map[string][]string{"Authorization": {"Bearer " + p.env.Key}}
	return p.env.Transport.Connect(context.Background(), "fake://vendor", live.ConnectOptions{Headers: h, OnEvent: func(te live.TransportEvent) {
		if te.Kind == live.TransportOpened {
			p.env.Transport.Send(live.SendHandshake, []byte("setup"))
			p.env.Emit(live.Event{Kind: live.EventTransportOpen})
		}
	}})
}
func (p *fakeProvider) SendAudio(pcm []byte) error {
	return p.env.Transport.Send(live.SendAudio, pcm)
}
func (p *fakeProvider) SendText(text string) error {
	return p.env.Transport.Send(live.SendText, []byte(text))
}
func (p *fakeProvider) SendToolResponses(rs []live.ToolResult) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.results = append(p.results, rs...)
	return true
}
func (p *fakeProvider) Interrupt(ms int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.played = append(p.played, ms)
	return nil
}
func (p *fakeProvider) UpdateTools([]tool.Declaration, string) error { return nil }
func (p *fakeProvider) Close() {
	p.mu.Lock()
	p.closes++
	p.mu.Unlock()
	p.env.Transport.Close(1000, "")
}

const testKey = "sk-test-0123456789abcdef"

func registry(rate int) (*live.Providers, *holder) {
	r, h := &live.Providers{}, &holder{}
	r.Register("fake", fakeFactory(nil, h), live.Offer{InputRate: rate, OutputRate: 24000, Models: []string{"m1", "m2"}, Voices: []string{"v1"}})
	return r, h
}

func start(t *testing.T, rate int, tr live.Transport, rec *livetest.Recorder) (*live.Conversation, *fakeProvider) {
	t.Helper()
	r, h := registry(rate)
	s, err := r.Start(context.Background(), live.Config{Choice: live.Choice{Provider: "fake"}, Key: testKey, Transport: tr, Callbacks: rec.Callbacks()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Close)
	return s, h.get()
}

func TestRegistryRates(t *testing.T) {
	t.Parallel()
	r, _ := registry(24000)
	if rate, err := r.InputRate("fake"); err != nil || rate != 24000 {
		t.Fatalf("InputRate = %d, %v; want 24000", rate, err)
	}
	r.Register("fake", fakeFactory(nil, nil), live.Offer{Models: []string{"m1"}, Voices: []string{"v1"}})
	if _, err := r.InputRate("fake"); refusal.RuleOf(err) != refusal.LiveNoInputRate {
		t.Fatalf("re-registered without a rate: InputRate err = %v; want live-no-input-rate (the old rate must not be kept)", err)
	}
	if _, err := r.Start(context.Background(), live.Config{Choice: live.Choice{Provider: "fake"}, Transport: &fakeTransport{headers: true}}); refusal.RuleOf(err) != refusal.LiveNoInputRate {
		t.Fatalf("Start without a rate: %v; want live-no-input-rate", err)
	}
	if err := r.Register("fake", fakeFactory(nil, nil), live.Offer{InputRate: 16000, Models: []string{"m1"}, Voices: []string{"v1"}}); err != nil {
		t.Fatalf("re-registered at 16000: %v", err)
	}
	if rate, _ := r.InputRate("fake"); rate != 16000 {
		t.Fatalf("re-registered at 16000: InputRate = %d", rate)
	}
	// A negative rate is refused at registration by name, and registers nothing: the provider
	// keeps the offer it had.
	if err := r.Register("fake", fakeFactory(nil, nil), live.Offer{InputRate: -5, Models: []string{"m1"}, Voices: []string{"v1"}}); refusal.RuleOf(err) != refusal.LiveInputRateInvalid {
		t.Fatalf("a negative rate: Register = %v; want live-input-rate-invalid", err)
	}
	if err := r.Register("other", fakeFactory(nil, nil), live.Offer{InputRate: -1}); refusal.RuleOf(err) != refusal.LiveInputRateInvalid {
		t.Fatalf("a negative rate for a new name: Register = %v; want live-input-rate-invalid", err)
	}
	if rate, err := r.InputRate("fake"); err != nil || rate != 16000 {
		t.Fatalf("after a refused registration: InputRate = %d, %v; want the 16000 it had", rate, err)
	}
	if _, err := r.InputRate("other"); refusal.RuleOf(err) != refusal.LiveProviderUnknown {
		t.Fatalf("a refused registration of a new name: InputRate = %v; want live-provider-unknown", err)
	}
	if _, err := r.InputRate("nobody"); refusal.RuleOf(err) != refusal.LiveProviderUnknown {
		t.Fatalf("unknown provider: %v", err)
	}
	r.Register("claude", nil, live.Offer{Unavailable: "Claude has no live voice API"})
	_, err := r.Start(context.Background(), live.Config{Choice: live.Choice{Provider: "claude"}})
	if refusal.RuleOf(err) != refusal.LiveProviderUnavailable || !strings.Contains(err.Error(), "no live voice API") {
		t.Fatalf("claude: %v; want live-provider-unavailable with its reason", err)
	}
}

func TestResolveChoices(t *testing.T) {
	t.Parallel()
	r := &live.Providers{}
	r.Register("a", fakeFactory(nil, nil), live.Offer{InputRate: 16000, Models: []string{"a-live", "a-think"}, Aliases: map[string]string{"a-old": "a-think"},
		Voices: []string{"Kore", "Puck"}, Thinking: []string{"low", "high"}, ThinkingModels: []string{"a-think"}})
	r.Register("b", fakeFactory(nil, nil), live.Offer{InputRate: 24000, Models: []string{"b-rt"}, Voices: []string{"alloy"}})
	for _, tc := range []struct {
		name string
		in   live.Choice
		want live.Choice
		rule refusal.Rule
		says string
	}{
		{"defaults", live.Choice{Provider: "a"}, live.Choice{Provider: "a", Model: "a-live", Voice: "Kore"}, "", ""},
		{"thinking default", live.Choice{Provider: "a", Model: "a-think"}, live.Choice{Provider: "a", Model: "a-think", Voice: "Kore", Thinking: "low"}, "", ""},
		{"legacy alias", live.Choice{Provider: "a", Model: "a-old", Thinking: "high"}, live.Choice{Provider: "a", Model: "a-think", Voice: "Kore", Thinking: "high"}, "", ""},
		{"model of another provider", live.Choice{Provider: "a", Model: "b-rt"}, live.Choice{}, refusal.LiveModelRefused, "belongs to the b provider"},
		{"unknown model", live.Choice{Provider: "b", Model: "nope"}, live.Choice{}, refusal.LiveModelRefused, "b offers no model"},
		{"voice of another provider", live.Choice{Provider: "b", Voice: "Kore"}, live.Choice{}, refusal.LiveVoiceRefused, "belongs to the a provider"},
		{"thinking on a model without it", live.Choice{Provider: "a", Thinking: "low"}, live.Choice{}, refusal.LiveThinkingRefused, ""},
		{"thinking not offered", live.Choice{Provider: "a", Model: "a-think", Thinking: "max"}, live.Choice{}, refusal.LiveThinkingRefused, "low, high"},
		{"unknown provider", live.Choice{Provider: "c"}, live.Choice{}, refusal.LiveProviderUnknown, "a, b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Resolve(tc.in)
			if refusal.RuleOf(err) != tc.rule {
				t.Fatalf("Resolve(%+v) err = %v; want rule %q", tc.in, err, tc.rule)
			}
			if tc.rule == "" && got != tc.want {
				t.Fatalf("Resolve(%+v) = %+v; want %+v", tc.in, got, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("refusal %q does not say %q", err, tc.says)
			}
		})
	}
}

func TestReadinessGateDropsAndCounts(t *testing.T) {
	t.Parallel()
	tr := &fakeTransport{headers: true}
	rec := livetest.NewRecorder()
	s, p := start(t, 24000, tr, rec)
	if err := s.SendAudio([]byte{1, 2}, 24000); refusal.RuleOf(err) != refusal.LiveNotReady {
		t.Fatalf("audio before ready: %v; want live-not-ready", err)
	}
	if err := s.SendText("hello"); refusal.RuleOf(err) != refusal.LiveNotReady {
		t.Fatalf("text before ready: %v; want live-not-ready", err)
	}
	// A provider that sends audio or text itself before ready is stopped by the transport facade.
	if err := p.env.Transport.Send(live.SendAudio, []byte{9, 9}); refusal.RuleOf(err) != refusal.LiveNotReady {
		t.Fatalf("facade audio before ready: %v", err)
	}
	p.env.Emit(live.Event{Kind: live.EventToolCall, Calls: []live.Call{{ID: "early", Name: "x"}}})
	if sent := tr.Sent(); len(sent) != 1 || sent[0] != "1:setup" {
		t.Fatalf("before ready the transport carried %q; want only the setup", sent)
	}
	st := s.Stats()
	if st.AudioDropped != 2 || st.TextDropped != 1 || st.CallsDropped != 1 {
		t.Fatalf("stats = %+v; want 2 audio, 1 text, 1 call dropped", st)
	}
	p.env.Emit(live.Event{Kind: live.EventReady})
	if err := s.SendAudio([]byte{3, 4}, 24000); err != nil {
		t.Fatalf("audio after ready: %v", err)
	}
	if err := s.SendText("hi"); err != nil {
		t.Fatalf("text after ready: %v", err)
	}
	p.env.Emit(live.Event{Kind: live.EventToolCall, Calls: []live.Call{{ID: "c1", Name: "x"}}})
	want := []string{"1:setup", "2:\x03\x04", "3:hi"}
	if got := tr.Sent(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after ready the transport carried %q; want %q (nothing queued from before)", got, want)
	}
	if ev := rec.Events(); strings.Join(ev, "|") != "state:transport-open:|state:ready:|calls:1" {
		t.Fatalf("callbacks = %q", ev)
	}
}

func TestRateMismatchRefused(t *testing.T) {
	t.Parallel()
	tr := &fakeTransport{headers: true}
	s, p := start(t, 16000, tr, livetest.NewRecorder())
	p.env.Emit(live.Event{Kind: live.EventReady})
	err := s.SendAudio([]byte{1, 2}, 24000)
	if refusal.RuleOf(err) != refusal.LiveRateMismatch || !strings.Contains(err.Error(), "16000") {
		t.Fatalf("SendAudio at 24000 to a 16000 provider: %v; want live-rate-mismatch", err)
	}
	if len(tr.Sent()) != 1 {
		t.Fatalf("mislabelled audio reached the transport: %q", tr.Sent())
	}
	if s.InputRate() != 16000 {
		t.Fatalf("InputRate = %d", s.InputRate())
	}
}

func TestExactlyOneTerminalState(t *testing.T) {
	t.Parallel()
	t.Run("close twice", func(t *testing.T) {
		rec := livetest.NewRecorder()
		s, p := start(t, 24000, &fakeTransport{headers: true}, rec)
		s.Close()
		s.Close()
		p.env.Emit(live.Event{Kind: live.EventClosed, Code: 1000})
		p.env.Emit(live.Event{Kind: live.EventText, Text: "late", TextKind: live.ModelText})
		if got := rec.Terminals(); len(got) != 1 || got[0] != "state:closed:" {
			t.Fatalf("terminals = %q; want one closed", got)
		}
		if last := rec.Events()[len(rec.Events())-1]; last != "state:closed:" {
			t.Fatalf("something came after the terminal state: %q", rec.Events())
		}
		if !s.Done() || s.SendToolResponses([]live.ToolResult{{ID: "x"}}) {
			t.Fatalf("a closed session still answers")
		}
		if err := s.Interrupt(0); refusal.RuleOf(err) != refusal.LiveSessionClosed {
			t.Fatalf("Interrupt after close: %v", err)
		}
		if err := s.SendAudio([]byte{0, 0}, 24000); refusal.RuleOf(err) != refusal.LiveSessionClosed {
			t.Fatalf("SendAudio after close: %v", err)
		}
	})
	t.Run("upstream first", func(t *testing.T) {
		rec := livetest.NewRecorder()
		s, p := start(t, 24000, &fakeTransport{headers: true}, rec)
		p.env.Emit(live.Event{Kind: live.EventReady})
		p.env.Emit(live.Event{Kind: live.EventClosed, Code: 1011, Detail: "internal error"})
		s.Close()
		if got := rec.Terminals(); len(got) != 1 || !strings.HasPrefix(got[0], "state:upstream-closed:") || !strings.Contains(got[0], "1011") {
			t.Fatalf("terminals = %q; want one upstream-closed naming 1011", got)
		}
	})
	t.Run("close from inside a callback", func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		add := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
		var s *live.Conversation
		var once sync.Once
		cb := live.Callbacks{
			OnState: func(st live.State, d string) { add("state:" + string(st) + ":" + d) },
			OnText: func(text string, k live.TextKind) {
				add("text:" + string(k) + ":" + text)
				once.Do(func() { s.Close() }) // must not deadlock; the terminal comes after this callback
				add("after-close-call")
			},
		}
		r, h := registry(24000)
		var err error
		s, err = r.Start(context.Background(), live.Config{Choice: live.Choice{Provider: "fake"}, Transport: &fakeTransport{headers: true}, Callbacks: cb})
		if err != nil {
			t.Fatal(err)
		}
		p := h.get()
		p.env.Emit(live.Event{Kind: live.EventText, Text: "bye", TextKind: live.ModelText})
		p.env.Emit(live.Event{Kind: live.EventText, Text: "after", TextKind: live.ModelText})
		want := "state:transport-open:|text:model:bye|after-close-call|state:closed:"
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(events, "|"); got != want {
			t.Fatalf("events = %q; want %q", got, want)
		}
	})
	t.Run("hammer", func(t *testing.T) {
		for range 50 {
			rec := livetest.NewRecorder()
			s, p := start(t, 24000, &fakeTransport{headers: true}, rec)
			p.env.Emit(live.Event{Kind: live.EventReady})
			var wg sync.WaitGroup
			wg.Go(func() {
				for range 20 {
					p.env.Emit(live.Event{Kind: live.EventAudio, PCM: []byte{0, 0}, Rate: 24000})
				}
				p.env.Emit(live.Event{Kind: live.EventClosed, Code: 1000})
			})
			wg.Go(s.Close)
			wg.Go(s.Close)
			wg.Wait()
			ev := rec.Events()
			if got := rec.Terminals(); len(got) != 1 {
				t.Fatalf("terminals = %q; want exactly one", got)
			}
			if !strings.HasPrefix(ev[len(ev)-1], "state:closed:") && !strings.HasPrefix(ev[len(ev)-1], "state:upstream-closed:") {
				t.Fatalf("the last callback is not the terminal state: %q", ev)
			}
		}
	})
}

func TestReadyBoundFailsTheSession(t *testing.T) {
	t.Parallel()
	rec := livetest.NewRecorder()
	r, h := registry(24000)
	s, err := r.Start(context.Background(), live.Config{Choice: live.Choice{Provider: "fake"}, Transport: &fakeTransport{headers: true},
		Callbacks: rec.Callbacks(), ReadyBound: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(t, "state:failed:", 1)
	if got := rec.Terminals(); len(got) != 1 || !strings.Contains(got[0], "did not acknowledge") {
		t.Fatalf("terminals = %q", got)
	}
	p := h.get()
	p.mu.Lock()
	closes := p.closes
	p.mu.Unlock()
	if closes == 0 {
		t.Fatalf("the provider was not closed when the session failed")
	}
	s.Close()
	if got := rec.Terminals(); len(got) != 1 {
		t.Fatalf("terminals after Close = %q", got)
	}
}

func TestTransportWithoutHeadersRefusesToConnect(t *testing.T) {
	t.Parallel()
	tr := &fakeTransport{headers: false}
	rec := livetest.NewRecorder()
	r, _ := registry(24000)
	_, err := r.Start(context.Background(), live.Config{Choice: live.Choice{Provider: "fake"}, Key: testKey, Transport: tr, Callbacks: rec.Callbacks()})
	if refusal.RuleOf(err) != refusal.LiveTransportUnauthenticated {
		t.Fatalf("Start over a header-less transport: %v; want live-transport-unauthenticated", err)
	}
	if tr.connected != 0 {
		t.Fatalf("the transport connected %d times without its header", tr.connected)
	}
	if got := rec.Terminals(); len(got) != 1 || !strings.HasPrefix(got[0], "state:failed:") {
		t.Fatalf("terminals = %q; want one failed", got)
	}
}

func TestInterruptToolResponsesAndClose(t *testing.T) {
	t.Parallel()
	tr := &fakeTransport{headers: true}
	s, p := start(t, 24000, tr, livetest.NewRecorder())
	p.env.Emit(live.Event{Kind: live.EventReady})
	if err := s.Interrupt(640); err != nil {
		t.Fatal(err)
	}
	if !s.SendToolResponses([]live.ToolResult{{ID: "c1", Name: "x", Result: []byte(`{"ok":true}`)}}) {
		t.Fatal("SendToolResponses reported false")
	}
	s.Close()
	s.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.played) != 1 || p.played[0] != 640 || len(p.results) != 1 || p.results[0].ID != "c1" {
		t.Fatalf("provider saw interrupts %v, results %v", p.played, p.results)
	}
	if tr.closed == 0 {
		t.Fatalf("Close did not close the transport")
	}
}

func TestKeyNeverInDetails(t *testing.T) {
	t.Parallel()
	r := &live.Providers{}
	r.Register("leaky", fakeFactory(errors.New("dial wss://vendor/?key="+testKey+" failed"), nil), live.Offer{InputRate: 24000, Models: []string{"m"}, Voices: []string{"v"}})
	rec := livetest.NewRecorder()
	_, err := r.Start(context.Background(), live.Config{Choice: live.Choice{Provider: "leaky"}, Key: testKey, Transport: &fakeTransport{headers: true}, Callbacks: rec.Callbacks()})
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[key]") {
		t.Fatalf("Start error = %v; want the key blanked", err)
	}
	for _, e := range rec.Events() {
		if strings.Contains(e, testKey) {
			t.Fatalf("a callback carried the key: %q", e)
		}
	}
	rec2 := livetest.NewRecorder()
	s, p := start(t, 24000, &fakeTransport{headers: true}, rec2)
	p.env.Emit(live.Event{Kind: live.EventError, Detail: "vendor said: bad key " + testKey})
	p.env.Emit(live.Event{Kind: live.EventClosed, Code: 1008, Detail: testKey})
	for _, e := range rec2.Events() {
		if strings.Contains(e, testKey) {
			t.Fatalf("a callback carried the key: %q", e)
		}
	}
	_ = s
}

func TestToolResultRefused(t *testing.T) {
	t.Parallel()
	r := live.RefusalResult(live.Call{ID: "1", Name: "n"}, refusal.New(refusal.UnknownTool, "no such tool"))
	if rule, ok := r.Refused(); !ok || rule != refusal.UnknownTool || r.ID != "1" {
		t.Fatalf("RefusalResult = %+v", r)
	}
	if _, ok := (live.ToolResult{Result: []byte(`{"ok":true}`)}).Refused(); ok {
		t.Fatal("an observation read as a refusal")
	}
}
