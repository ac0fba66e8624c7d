package externalapps

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// ViewBound bounds how long CurrentView waits for the apps to say what they show.
const ViewBound = 6 * time.Second

// Model adds the page's open external apps to an inner catalogue: their tools (app_x_…) and
// get_app_context in Declarations, their section in Instruction (the registry's name and
// description, the apps' own tool descriptions fenced), their calls in Call (arguments checked
// against the tool's schema here, then sent to the page, which holds the approval gate), and
// CurrentView, the per-turn note of what they show. What it knows of the open apps comes from the
// page's report (SetReport); who an app is comes only from the registry. It is safe for
// concurrent use.
type Model struct {
	inner tool.Catalogue
	reg   *Registry
	root  hub.Asker
	log   *slog.Logger

	mu        sync.Mutex
	report    []byte
	apps      []externalapp.App
	schemas   map[string]*toolschema.Schema // by model name
	listeners map[uint64]func()
	next      uint64
}

// NewModel returns a Model over inner, with no app open until the page reports one. A nil log
// discards.
func NewModel(inner tool.Catalogue, reg *Registry, root hub.Asker, log *slog.Logger) *Model {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Model{inner: inner, reg: reg, root: root, log: log, schemas: map[string]*toolschema.Schema{}, listeners: map[uint64]func(){}}
}

// report is the page's account of its open external apps (public/external-apps.js, report()).
type report struct {
	Apps []struct {
		ID      string                     `json:"id"`
		Live    bool                       `json:"live"`
		Context bool                       `json:"context"`
		Tools   []externalapp.ReportedTool `json:"tools"`
	} `json:"apps"`
}

// SetReport takes the page's report of its open external apps, {"apps": [{id, live, context,
// tools: [{name, description, inputSchema, readOnly}]}]}, or nil when the page left. An app the
// registry does not know is left out; every tool is checked again here (externalapp.Tools), and
// what is dropped is logged. Listeners run when the result differs from before.
func (m *Model) SetReport(raw json.RawMessage) {
	m.mu.Lock()
	if bytes.Equal(raw, m.report) {
		m.mu.Unlock()
		return
	}
	m.report = slices.Clone(raw)
	var r report
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r); err != nil {
			m.log.Warn("external apps: the page's report is not an account of its apps", "err", err)
			r = report{}
		}
	}
	var apps []externalapp.App
	schemas := map[string]*toolschema.Schema{}
	for _, ra := range r.Apps {
		entry, ok := m.reg.Get(ra.ID)
		if !ok {
			m.log.Warn("external apps: the page reports an app the registry does not have", "app", ra.ID)
			continue
		}
		tools, dropped := externalapp.Tools(entry.ID, ra.Tools)
		for _, d := range dropped {
			m.log.Warn("external apps: a tool was dropped", "app", d.App, "tool", d.Tool, "why", d.Why)
		}
		for _, t := range tools {
			if s, err := toolschema.Parse(t.Parameters); err == nil {
				schemas[t.ModelName] = s
			}
		}
		apps = append(apps, externalapp.App{ID: entry.ID, Name: entry.Name, Description: entry.Description, Live: ra.Live, Context: ra.Context, Tools: tools})
	}
	changed := !sameApps(m.apps, apps)
	m.apps, m.schemas = apps, schemas
	var fns []func()
	if changed {
		for _, fn := range m.listeners {
			fns = append(fns, fn)
		}
	}
	m.mu.Unlock()
	for _, fn := range fns {
		go fn()
	}
}

func sameApps(a, b []externalapp.App) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func (m *Model) snapshot() []externalapp.App {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.apps
}

// Declarations returns the inner catalogue's tools, then the live apps' tools and get_app_context.
func (m *Model) Declarations() []tool.Declaration {
	return append(m.inner.Declarations(), externalapp.Declarations(m.snapshot())...)
}

// Instruction returns the inner instruction followed by the apps' section, which changes only
// with the apps and their tools.
func (m *Model) Instruction() string {
	in, apps := m.inner.Instruction(), externalapp.Instruction(m.snapshot())
	if apps == "" {
		return in
	}
	return in + "\n\n" + apps
}

// OnChange runs fn whenever the inner catalogue's tools or the open apps change.
func (m *Model) OnChange(fn func()) (cancel func()) {
	cancelInner := m.inner.OnChange(fn)
	m.mu.Lock()
	id := m.next
	m.next++
	m.listeners[id] = fn
	m.mu.Unlock()
	return func() {
		cancelInner()
		m.mu.Lock()
		delete(m.listeners, id)
		m.mu.Unlock()
	}
}

// Call runs an external app's tool or get_app_context through the page, and everything else
// through the inner catalogue. Exactly one answer, never past ctx.
func (m *Model) Call(ctx context.Context, name string, args json.RawMessage) json.RawMessage {
	if !externalapp.Routed(name) {
		return m.inner.Call(ctx, name, args)
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage(`{}`)
	}
	if name == externalapp.ContextTool {
		var p struct {
			App string `json:"app"`
		}
		if err := json.Unmarshal(args, &p); err != nil {
			return refusalJSON(refusal.New(refusal.InvalidToolArguments, "%s takes {\"app\": id}", name))
		}
		v, err := m.view(ctx, p.App)
		if err != nil {
			return refusalJSON(err)
		}
		b, _ := json.Marshal(v)
		return b
	}
	m.mu.Lock()
	schema := m.schemas[name]
	m.mu.Unlock()
	if schema == nil {
		return refusalJSON(refusal.New(refusal.UnknownTool, "no open app offers a tool named %q", name))
	}
	if _, err := schema.Validate(args); err != nil {
		return refusalJSON(err)
	}
	a := m.ask(ctx, name, args)
	if !a.OK {
		return refusalJSON(a.Err())
	}
	return a.Observed
}

// callWait is how long the relay waits for the page's answer to an external app's tool call: the
// person's approval (every approval's deadline), then the app's answer, then the page's own
// passing it back.
const callWait = approval.Timeout + externalapp.CallTimeout + 5*time.Second

func (m *Model) ask(ctx context.Context, name string, args json.RawMessage) wire.Answer {
	if name != externalapp.ContextTool {
		ctx = channel.WithWait(ctx, callWait)
	}
	return m.root.Ask(ctx, wire.Call{CallID: m.root.NewCallID(), Tool: name, DescriptorID: executor.BuiltinDescriptor, Args: args, BoundsEcho: json.RawMessage(`{}`)})
}

// view asks the page what app shows now, re-bounding the answer as the page did.
func (m *Model) view(ctx context.Context, appID string) (externalapp.View, error) {
	var app *externalapp.App
	for _, a := range m.snapshot() {
		if a.ID == appID {
			app = &a
		}
	}
	switch {
	case app == nil:
		return externalapp.View{}, refusal.New(refusal.ExternalAppUnknown, "no app %q is open", appID)
	case !app.Live:
		return externalapp.View{}, refusal.New(refusal.ContextUnavailable, "%s has not connected, so what it shows is unknown", app.Name)
	case !app.Context:
		return externalapp.View{}, refusal.New(refusal.ContextUnavailable, "%s does not describe what it shows", app.Name)
	}
	args, _ := json.Marshal(map[string]string{"app": appID})
	a := m.ask(ctx, externalapp.ContextTool, args)
	if !a.OK {
		return externalapp.View{}, a.Err()
	}
	var v externalapp.View
	if err := json.Unmarshal(a.Observed, &v); err != nil {
		return externalapp.View{}, refusal.New(refusal.ContextUnavailable, "the page's answer for %s is not a view", app.Name)
	}
	v.App, v.Name = app.ID, app.Name
	v.Selection, v.Data = externalapp.BoundPayload(v.Selection), externalapp.BoundPayload(v.Data)
	return v, nil
}

// CurrentView asks every live app that describes its screen what it shows now, at once and within
// ViewBound, and returns the note for this turn (externalapp.ViewNote): put it in place of the
// previous turn's, so the model reads exactly one description of the screen. An app that does not
// answer is said to be unavailable; nothing stale stands in. It is "" when no app is open.
func (m *Model) CurrentView(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, ViewBound)
	defer cancel()
	var ids []string
	for _, a := range m.snapshot() {
		if a.Live && a.Context {
			ids = append(ids, a.ID)
		}
	}
	views := make([]externalapp.View, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			v, err := m.view(ctx, id)
			if err != nil {
				a, _ := m.reg.Get(id)
				rf, _ := refusal.As(err)
				why := "it did not answer"
				if rf != nil {
					why = rf.Why
				}
				v = externalapp.View{App: id, Name: a.Name, Unavailable: why}
			}
			views[i] = v
		})
	}
	wg.Wait()
	return externalapp.ViewNote(views)
}

func refusalJSON(err error) json.RawMessage {
	rf, ok := refusal.As(err)
	if !ok {
		rf = refusal.New(refusal.InternalError, "the relay failed while running the tool")
	}
	b, _ := json.Marshal(rf)
	return b
}

// Register adds GET /mini-apps/model to srv (admitted like the page's other routes): what the
// model is told about the open apps now, {ok, tools: [names], instruction, view}. view, the
// current-view note, is asked of the apps only with ?view=1. It is how a person (or a test) sees
// what the open apps add to the model's tools and instruction.
func (m *Model) Register(srv *server.Server) {
	srv.Handle("GET /mini-apps/model", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apps := m.snapshot()
		names := []string{}
		for _, d := range externalapp.Declarations(apps) {
			names = append(names, d.Name)
		}
		out := map[string]any{"ok": true, "tools": names, "instruction": externalapp.Instruction(apps)}
		if r.URL.Query().Get("view") == "1" {
			out["view"] = m.CurrentView(r.Context())
		}
		server.WriteJSON(w, http.StatusOK, out)
	}))
}
