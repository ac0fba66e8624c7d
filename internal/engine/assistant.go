package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// The assistant's mini-app tools, as the relay calls them over /channel (internal/core/assistant routes
// list_mini_apps, launch_mini_app and create_mini_app here). A launch opens the app's frame on
// the main thread: the worker posts {"type":"miniapp.open", entry, html}, which public/mini-apps.js
// shows as if the user had opened it.
const (
	toolListMiniApps  = "list-mini-apps"
	toolLaunchMiniApp = "launch-mini-app"
	toolCreateMiniApp = "create-mini-app"
)

// routed sends the relay's calls where they run in the page: external app tools (app_x_…) and
// get_app_context to the main thread, mini-app tools (model-facing names, app_…) to the registry,
// the mini-app store's tools to the store, everything else to the workspace's executor.
type routed struct {
	a    *Engine
	exec *workspace
}

func (r routed) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	switch {
	case routesExternal(call.Tool):
		return r.a.apps.frames.externalCall(ctx, call.Tool, call.Args)
	case strings.HasPrefix(call.Tool, "app_"):
		out, err := r.a.apps.registry.Dispatch(ctx, call.Tool, call.Args)
		if err != nil {
			return nil, err
		}
		return asObject(out), nil
	case call.Tool == toolListMiniApps:
		return r.a.toolListMiniApps(ctx, call.Args)
	case call.Tool == toolLaunchMiniApp:
		return r.a.toolLaunchMiniApp(ctx, call.Args)
	case call.Tool == toolCreateMiniApp:
		return r.a.toolCreateMiniApp(ctx, r.exec, call)
	}
	return r.exec.Execute(ctx, call)
}

// asObject returns an app's result as the JSON object an observation must be: an object as it
// is, anything else (a number, a string, null) as {"result": value}.
func asObject(out json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(out); len(t) > 0 && t[0] == '{' {
		return out
	}
	if len(bytes.TrimSpace(out)) == 0 {
		out = json.RawMessage("null")
	}
	w := rawjson.NewObject(make([]byte, 0, 16+len(out)), true)
	if !w.Raw("result", out) {
		return nil // not JSON: as json.Marshal, which refused it
	}
	return w.Close()
}

// strictArgs decodes a call's arguments into v, refusing unknown keys; none (or null) are {}.
func strictArgs(raw json.RawMessage, v strictjson.Struct) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		raw = json.RawMessage(`{}`)
	}
	if err := strictjson.DecodeStruct(raw, v); err != nil {
		return refusal.New(refusal.InvalidArgument, "the arguments do not fit the tool: %s", strictjson.Problem(err))
	}
	return nil
}

type appListing struct {
	ID       string            `json:"id"`
	Title    string            `json:"title"`
	Kind     miniappstore.Kind `json:"kind"`
	FileName string            `json:"fileName"`
	Source   string            `json:"source"`
	Open     bool              `json:"open"`
}

func (a *Engine) toolListMiniApps(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if err := strictArgs(raw, &noParams{}); err != nil {
		return nil, err
	}
	st, r := a.miniStore(ctx)
	if r != nil {
		return nil, r
	}
	entries, err := st.Discover(ctx)
	if err != nil {
		return nil, storeRefusal(err)
	}
	out := make([]appListing, 0, len(entries))
	for _, e := range entries {
		out = append(out, appListing{ID: e.AppID, Title: e.Title, Kind: e.Kind, FileName: e.FileName, Source: e.Source, Open: a.apps.registry.IsOpen(e.AppID)})
	}
	return appendListings(nil, out), nil
}

// appendListings writes {"apps": listings, "count": n} as json.Marshal writes that map: names
// sorted.
func appendListings(dst []byte, listings []appListing) []byte {
	b := append(grow(dst, 32+128*len(listings)), `{"apps":`...)
	b = rawjson.AppendArray(b, listings, func(b []byte, l appListing) []byte { return l.AppendJSON(b) })
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(len(listings)), 10)
	return append(b, '}')
}

// AppendJSON writes the listing as json.Marshal does.
func (l appListing) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.String("id", l.ID)
	w.String("title", l.Title)
	w.String("kind", string(l.Kind))
	w.String("fileName", l.FileName)
	w.String("source", l.Source)
	w.Bool("open", l.Open)
	return w.Close()
}

type launchObserved struct {
	Launched bool              `json:"launched"`
	ID       string            `json:"id"`
	Title    string            `json:"title"`
	Kind     miniappstore.Kind `json:"kind"`
	Path     string            `json:"path,omitempty"`
	Note     string            `json:"note"`
}

const launchNote = "The app is opening in the page; the tools it registers are offered to you once it has loaded."

func (a *Engine) toolLaunchMiniApp(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var p toolLaunchMiniAppParams
	if err := strictArgs(raw, &p); err != nil {
		return nil, err
	}
	return a.launchForModel(ctx, map[string]string{"name": p.Name}, "")
}

// launchForModel launches through miniapps.launch and has the main thread open the frame.
func (a *Engine) launchForModel(ctx context.Context, target map[string]string, created string) (json.RawMessage, error) {
	params, _ := rawjson.AppendValue(nil, target, true)
	res, r := a.miniAppsLaunch(ctx, request{Method: "miniapps.launch", Params: params})
	if r != nil {
		return nil, r
	}
	l := res.Value.(launched)
	msg, ok := l.appendJSON(nil, "miniapp.open")
	if !ok {
		return nil, refusal.New(refusal.InternalError, "the app could not be handed to the page: its folder's files could not be written as JSON")
	}
	a.toolsChanged()
	if a.post != nil {
		a.post(msg)
	}
	return launchObserved{Launched: true, ID: l.Entry.AppID, Title: l.Entry.Title, Kind: l.Entry.Kind, Path: created, Note: launchNote}.AppendJSON(nil), nil
}

// AppendJSON writes the observation as json.Marshal does.
func (o launchObserved) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.Bool("launched", o.Launched)
	w.String("id", o.ID)
	w.String("title", o.Title)
	w.String("kind", string(o.Kind))
	if o.Path != "" {
		w.String("path", o.Path)
	}
	w.String("note", o.Note)
	return w.Close()
}

// toolCreateMiniApp writes {title, html} to <slug>.html at the top of the workspace, through the
// executor (so the write is kept for undo), and launches it. A name already taken is refused
// mini-app-name-taken; nothing is overwritten.
func (a *Engine) toolCreateMiniApp(ctx context.Context, w *workspace, call wire.Call) (json.RawMessage, error) {
	var p toolCreateMiniAppParams
	if err := strictArgs(call.Args, &p); err != nil {
		return nil, err
	}
	if r := names.Check("the title", p.Title); r != nil {
		return nil, r
	}
	slug := miniappstore.Slug(p.Title)
	if slug == "" {
		return nil, refusal.New(refusal.InvalidMiniAppName, "the title %q has no letters or digits to name a file after", p.Title)
	}
	if strings.TrimSpace(p.HTML) == "" {
		return nil, refusal.New(refusal.MissingHTML, "the app has no HTML")
	}
	if len(p.HTML) > miniappstore.MaxHTMLBytes {
		return nil, refusal.New(refusal.MiniAppTooLarge, "the app is %d bytes, over the bound of %d", len(p.HTML), miniappstore.MaxHTMLBytes)
	}
	root, _, ok := a.current()
	if !ok {
		return nil, refusal.New(refusal.NoRoot, "no workspace folder is open")
	}
	name := slug + ".html"
	if _, err := root.Stat(ctx, name); !errors.Is(err, fs.ErrNotExist) {
		return nil, refusal.New(refusal.MiniAppNameTaken, "%s already exists in the workspace; choose another title, or open it with launch_mini_app", name)
	}
	args, _ := rawjson.AppendValue(nil, map[string]string{"path": name, "content": p.HTML}, true)
	write := call
	write.Tool, write.Args = string(executor.WriteFile), args
	if _, err := w.Execute(ctx, write); err != nil {
		return nil, err
	}
	return a.launchForModel(ctx, map[string]string{"path": name}, name)
}

// toolsChanged tells the relay the open apps' tools when they differ from what it was told last.
func (a *Engine) toolsChanged() {
	if a.relay.peer == nil {
		return
	}
	decls := a.apps.registry.FunctionDeclarations()
	if decls == nil {
		decls = []tool.Declaration{}
	}
	a.relay.mu.Lock()
	external := a.relay.externalReport
	a.relay.mu.Unlock()
	frame, ok := appendToolsFrame(nil, decls, external)
	if !ok || len(frame) > wire.MaxFrameBytes {
		return // past the frame bound (hundreds of large tools): the relay keeps the last set
	}
	a.relay.mu.Lock()
	same := bytes.Equal(frame, a.relay.toolsFrame)
	a.relay.toolsFrame = frame
	a.relay.mu.Unlock()
	if !same {
		a.relay.peer.SetTools(frame)
	}
}

// appendToolsFrame writes the tools frame, {"type":"tools", tools, externalApps}, as json.Marshal
// writes it (externalApps left out when empty); false when a tool's parameters or the external
// apps' report is not one JSON value.
func appendToolsFrame(dst []byte, decls []tool.Declaration, external json.RawMessage) ([]byte, bool) {
	size := 64 + len(external)
	for _, d := range decls {
		size += 64 + len(d.Name) + len(d.Description) + len(d.Parameters)
	}
	w := rawjson.NewObject(grow(dst, size), true)
	w.String("type", "tools")
	ok := true
	w.Value("tools", appendFunc(func(b []byte) []byte {
		return rawjson.AppendArray(b, decls, func(b []byte, d tool.Declaration) []byte {
			dw := rawjson.NewObject(b, true)
			dw.String("name", d.Name)
			dw.String("description", d.Description)
			ok = ok && dw.Raw("parameters", d.Parameters)
			return dw.Close()
		})
	}))
	if len(external) > 0 {
		ok = ok && w.Raw("externalApps", external)
	}
	return w.Close(), ok
}
