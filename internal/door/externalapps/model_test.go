package externalapps

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// builtins is an inner catalogue with one tool and a change signal the test fires.
type builtins struct {
	mu        sync.Mutex
	listeners []func()
}

func (b *builtins) Declarations() []tool.Declaration {
	return []tool.Declaration{{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)}}
}
func (b *builtins) Instruction() string { return "You are Voicebox." }
func (b *builtins) Call(_ context.Context, name string, _ json.RawMessage) json.RawMessage {
	return json.RawMessage(`{"inner":"` + name + `"}`)
}
func (b *builtins) OnChange(fn func()) func() {
	b.mu.Lock()
	b.listeners = append(b.listeners, fn)
	b.mu.Unlock()
	return func() {}
}

// page answers the relay's calls the way the page's main thread does, and records them.
type page struct {
	mu     sync.Mutex
	calls  []wire.Call
	answer func(c wire.Call) wire.Answer
}

func (p *page) Ask(_ context.Context, c wire.Call) wire.Answer {
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
	return p.answer(c)
}
func (p *page) NewCallID() string { return "call-1" }

func (p *page) seen() []wire.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]wire.Call(nil), p.calls...)
}

const ordersReport = `{"apps": [
  {"id": "orders", "live": true, "context": true, "tools": [
    {"name": "list_orders", "description": "List the orders.", "readOnly": true},
    {"name": "set_order_status", "description": "Change one order's status.", "readOnly": false,
     "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "shipped"]}}, "required": ["id", "status"]}},
    {"name": "patterned", "description": "outside the subset", "inputSchema": {"type": "object", "properties": {"id": {"type": "string", "pattern": "x"}}}}
  ]},
  {"id": "stranger", "live": true, "context": true, "tools": [{"name": "steal", "description": "not registered"}]},
  {"id": "wiki", "live": false, "context": true, "tools": []}
]}`

func newModel(t *testing.T, answer func(wire.Call) wire.Answer) (*Model, *page, *builtins) {
	t.Helper()
	reg, err := Parse([]byte(goodRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	p := &page{answer: answer}
	in := &builtins{}
	return NewModel(in, reg, p, nil), p, in
}

func TestModelOffersTheReportedAppsUnderTheRegistrysNames(t *testing.T) {
	t.Parallel()
	m, _, _ := newModel(t, nil)
	changed := make(chan struct{}, 4)
	m.OnChange(func() { changed <- struct{}{} })
	if len(m.Declarations()) != 1 || m.Instruction() != "You are Voicebox." {
		t.Fatal("before any report, the model should see only the inner catalogue")
	}
	m.SetReport(json.RawMessage(ordersReport))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change signal after the report")
	}
	var names []string
	for _, d := range m.Declarations() {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "read_file,app_x_orders__list_orders,app_x_orders__set_order_status,get_app_context" {
		t.Fatalf("declarations %s", got)
	}
	in := m.Instruction()
	if !strings.HasPrefix(in, "You are Voicebox.\n\n# Apps open beside you\n") || !strings.Contains(in, "## Order Book (app \"orders\")\nOpen orders and their status.\n") ||
		strings.Contains(in, "stranger") || strings.Contains(in, "Wiki") {
		t.Fatalf("instruction:\n%s", in)
	}
	// The same report again changes nothing and signals nothing.
	m.SetReport(json.RawMessage(ordersReport))
	select {
	case <-changed:
		t.Fatal("an unchanged report signalled a change")
	case <-time.After(50 * time.Millisecond):
	}
	m.SetReport(nil)
	if len(m.Declarations()) != 1 {
		t.Fatal("after the page left, the apps' tools are still offered")
	}
}

func TestModelCallsCheckArgumentsThenAskThePage(t *testing.T) {
	t.Parallel()
	m, p, _ := newModel(t, func(c wire.Call) wire.Answer {
		switch c.Tool {
		case "app_x_orders__set_order_status":
			return wire.Refuse(c.CallID, refusal.New(refusal.ExternalAppNavigated, "the app loaded another document"))
		case externalapp.ContextTool:
			big := `"` + strings.Repeat("d", externalapp.MaxContextPayloadChars) + `"`
			return wire.OK(c.CallID, json.RawMessage(`{"app":"orders","name":"spoofed","title":"Orders","summary":"2 open","selection":{"order":"A-1"},"data":`+big+`}`))
		}
		return wire.OK(c.CallID, json.RawMessage(`{"text":"[]"}`))
	})
	m.SetReport(json.RawMessage(ordersReport))
	ctx := context.Background()

	if got := string(m.Call(ctx, "read_file", nil)); got != `{"inner":"read_file"}` {
		t.Fatalf("a built-in went %s", got)
	}
	if got := string(m.Call(ctx, "app_x_orders__list_orders", nil)); got != `{"text":"[]"}` {
		t.Fatalf("list_orders answered %s", got)
	}
	// Arguments outside the schema never reach the page.
	before := len(p.seen())
	var r refusal.Refusal
	json.Unmarshal(m.Call(ctx, "app_x_orders__set_order_status", json.RawMessage(`{"id":"A-1","status":"lost"}`)), &r)
	if r.Rule != refusal.InvalidArgumentEnum || len(p.seen()) != before {
		t.Fatalf("bad arguments: %+v, page saw %d calls", r, len(p.seen())-before)
	}
	// The page's refusal reaches the caller as it is.
	json.Unmarshal(m.Call(ctx, "app_x_orders__set_order_status", json.RawMessage(`{"id":"A-1","status":"shipped"}`)), &r)
	if r.Rule != refusal.ExternalAppNavigated {
		t.Fatalf("the denied call answered %+v", r)
	}
	for _, name := range []string{"app_x_orders__patterned", "app_x_stranger__steal", "app_x_orders__nothing"} {
		json.Unmarshal(m.Call(ctx, name, nil), &r)
		if r.Rule != refusal.UnknownTool {
			t.Errorf("%s answered %+v", name, r)
		}
	}

	// get_app_context: the registry's name, the payload bounded again.
	var v struct {
		Name  string
		Title string
		Data  struct{ Withheld bool }
	}
	if err := json.Unmarshal(m.Call(ctx, externalapp.ContextTool, json.RawMessage(`{"app":"orders"}`)), &v); err != nil || v.Name != "Order Book" || v.Title != "Orders" || !v.Data.Withheld {
		t.Fatalf("get_app_context answered %+v (%v)", v, err)
	}
	for app, rule := range map[string]refusal.Rule{"wiki": refusal.ContextUnavailable, "stranger": refusal.ExternalAppUnknown} {
		json.Unmarshal(m.Call(ctx, externalapp.ContextTool, json.RawMessage(`{"app":"`+app+`"}`)), &r)
		if r.Rule != rule {
			t.Errorf("get_app_context of %s answered %+v", app, r)
		}
	}

	note := m.CurrentView(ctx)
	if !strings.Contains(note, "# Current view\nOrder Book:\n<app-provided-view>\ntitle: Orders\nsummary: 2 open\nselection: {\"order\":\"A-1\"}\n") {
		t.Fatalf("the note:\n%s", note)
	}
}

func TestCurrentViewSaysWhatCouldNotBeRead(t *testing.T) {
	t.Parallel()
	m, _, _ := newModel(t, func(c wire.Call) wire.Answer {
		return wire.Refuse(c.CallID, refusal.New(refusal.ExternalAppNavigated, "the app loaded another document"))
	})
	if m.CurrentView(context.Background()) != "" {
		t.Fatal("a note with no app open")
	}
	m.SetReport(json.RawMessage(ordersReport))
	note := m.CurrentView(context.Background())
	if !strings.Contains(note, "Order Book: what it shows is unavailable right now (the app loaded another document).") {
		t.Fatalf("the note:\n%s", note)
	}
}

// brokerPage is the page behind a real channel.Broker whose own timeout is far shorter than an
// approval: it answers each call late, as a person deciding would make it.
type brokerPage struct {
	broker *channel.Broker
	late   time.Duration
}

func (p *brokerPage) Connected() bool { return true }
func (p *brokerPage) Send(frame []byte) error {
	c, err := wire.ParseCall(frame)
	if err != nil {
		return err
	}
	go func() {
		time.Sleep(p.late)
		b, _ := wire.OK(c.CallID, json.RawMessage(`{"text":"done","approval":"approved"}`)).MarshalJSON()
		p.broker.Answer(b)
	}()
	return nil
}
func (p *brokerPage) Ask(ctx context.Context, c wire.Call) wire.Answer { return p.broker.Ask(ctx, c) }
func (p *brokerPage) NewCallID() string                                { return "call-" + time.Now().Format("150405.000000000") }

// An app's tool call may wait for the person's approval (every approval's deadline) and then
// the app: the relay waits that long for it, whatever its broker's own timeout, while a call
// that never waits for a person (get_app_context) keeps the broker's timeout.
func TestAnAppToolCallOutlivesTheBrokersTimeout(t *testing.T) {
	t.Parallel()
	reg, err := Parse([]byte(goodRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	p := &brokerPage{late: 50 * time.Millisecond}
	p.broker = channel.New(channel.Page, p, channel.Options{Timeout: time.Millisecond})
	m := NewModel(&builtins{}, reg, p, nil)
	m.SetReport(json.RawMessage(ordersReport))
	if got := string(m.Call(context.Background(), "app_x_orders__set_order_status", json.RawMessage(`{"id":"A-1","status":"shipped"}`))); got != `{"text":"done","approval":"approved"}` {
		t.Fatalf("the call waiting for a person answered %s", got)
	}
	var r refusal.Refusal
	json.Unmarshal(m.Call(context.Background(), externalapp.ContextTool, json.RawMessage(`{"app":"orders"}`)), &r)
	if r.Rule != refusal.PageTimeout {
		t.Fatalf("get_app_context past the broker's timeout answered %+v", r)
	}
}

// The wait an app's tool call asks is the longest any door asks: channel.MaxWait bounds what
// WithWait marks, and what a relay holding the page in a fleet believes from a routed call's
// header, so a longer callWait would be cut there.
func TestAnAppToolCallsWaitIsWithinTheChannelsBound(t *testing.T) {
	if callWait > channel.MaxWait {
		t.Fatalf("callWait is %v, past channel.MaxWait (%v): raise MaxWait with it", callWait, channel.MaxWait)
	}
	if d, _ := channel.Wait(channel.WithWait(context.Background(), callWait)); d != callWait {
		t.Fatalf("WithWait(callWait) marked %v", d)
	}
}
