package engine

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/voicebox-go/voicebox/internal/shared/sha"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/samples"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// seededFile, on the shelf, lists the sample apps already put there once, so a sample the user
// deleted stays deleted.
const seededFile = "seeded-samples.json"

// miniAppMethodTable is the mini-app methods (see methodTable). The frames live on the page's main thread; the rules live here: the
// store decides what a name means and what the tray lists, and the registry checks every
// declaration and every call's arguments before a call reaches a frame.
func miniAppMethodTable() []methodSpec {
	return []methodSpec{
		{"miniapps.list", "undefined", "{entries: StoreEntry[]}",
			"the store's discovery: its apps and pages, each with its kind", (*Engine).miniAppsList},
		{"miniapps.launch", "{name: string} | {path: string}", "{entry: StoreEntry, html: string, folder?: {path: string, size: number}[]}",
			"resolves a name through the store, or a workspace .html file; folder lists a folder app's files", (*Engine).miniAppsLaunch},
		{"miniapps.file", "{appId: string, path: string}", "{path: string, size: number, bytes: Uint8Array<ArrayBuffer>}",
			"one file of a launched folder app, in value.bytes", (*Engine).miniAppsFile},
		{"miniapps.reset", "{appId: string, doc?: number}", "{reset: boolean}",
			"the frame loaded a new document: forget its tools", (*Engine).miniAppsReset},
		{"miniapps.close", "{appId: string, why?: string, doc?: number}", "{closed: boolean}",
			"forgets the app; why is what calls still waiting are told, and its port is closed if of document doc or older (any, without doc)", (*Engine).miniAppsClose},
		{PortMethod, "{appId: string, doc: number, port: MessagePort}", "{bound: boolean, doc: number}",
			"the port the app's bridge made for its document doc (the page numbers them, growing); served as it arrives", (*Engine).miniAppsPort},
		{"miniapps.ports", "{appId?: string}", "{ports: {appId: string, doc: number, sent: number, answered: number, dropped: number}[]}",
			"the ports handed over and what went over them", (*Engine).miniAppsPorts},
		{"miniapps.register", "{appId: string, tool: unknown, view?: boolean}", "RegisteredTool",
			"a tool an app declares, checked by the registry; view: its document serves it as an MCP Apps view, so its calls go through the bridge, not the app's port", (*Engine).miniAppsRegister},
		{"miniapps.unregister", "{appId: string, name: string}", "{removed: boolean}", "an app withdraws a tool", (*Engine).miniAppsUnregister},
		{"miniapps.tools", "{appId?: string}", "{tools: RegisteredTool[]}", "the open apps' tools", (*Engine).miniAppsTools},
		{"miniapps.call", "{appId: string, tool: string, args: unknown} | {name: string, args: unknown}", "{result: unknown}",
			"calls an app's tool, by its app and name or by its model-facing name", (*Engine).miniAppsCall},
		{"miniapps.validate", "{appId: string, tool: string, args: unknown}", "{args: unknown}",
			"the check a call makes, calling nothing", (*Engine).miniAppsValidate},
		{"miniapps.result", "CallAnswer", "{accepted: boolean}", "the answer to a miniapp.call, once", (*Engine).miniAppsResult},
		{"miniapps.save", "{name: string, title?: string}", "StoreEntry", "promotes a page to an app on the shelf", (*Engine).miniAppsSave},
		{"miniapps.delete", "{id: string}", "StoreEntry", "deletes an app or page of the store (per-artifact ownership, see miniappstore)", (*Engine).miniAppsDelete},
		{"miniapps.restoreSamples", "undefined", "{restored: StoreEntry[]}",
			"puts back on the shelf each shipped sample app that is not there (one the person deleted)", (*Engine).miniAppsRestoreSamples},
	}
}

// miniStore returns the store over the open workspace (none is fine) and the shelf, opening and
// seeding the shelf on first use.
func (a *Engine) miniStore(ctx context.Context) (*miniappstore.Store, *refusal.Refusal) {
	root, _, _ := a.current()
	a.apps.mu.Lock()
	defer a.apps.mu.Unlock()
	if a.apps.shelf == nil {
		if a.apps.openShelf == nil {
			return nil, refusal.New(refusal.RootUnavailable, "this worker has no shelf for mini-apps")
		}
		shelf, err := a.apps.openShelf(ctx)
		if err != nil {
			return nil, refusal.New(refusal.RootUnavailable, "the mini-app shelf could not be opened: %v", err)
		}
		a.apps.shelf = shelf
	}
	if a.apps.store == nil || a.apps.storeRoot != root {
		st, err := miniappstore.New(miniappstore.Config{Workspace: root, Shelf: a.apps.shelf})
		if err != nil {
			return nil, refusal.New(refusal.InternalError, "the mini-app store could not start: %v", err)
		}
		if !a.apps.seeded {
			a.apps.seeded = true
			seedSamples(ctx, st, a.apps.shelf)
		}
		a.apps.store, a.apps.storeRoot = st, root
	}
	return a.apps.store, nil
}

// seedSamples saves each sample app the shelf has not had yet. A failure costs only the samples.
func seedSamples(ctx context.Context, st *miniappstore.Store, shelf fsroot.Root) {
	done := map[string]bool{}
	if data, err := shelf.ReadFile(ctx, seededFile); err == nil {
		readSeeded(data, done)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return
	}
	changed := false
	for _, s := range samples.All() {
		if done[s.Name] {
			continue
		}
		if _, err := st.Save(ctx, miniappstore.SaveOptions{HTML: s.HTML}); err != nil {
			continue
		}
		done[s.Name], changed = true, true
	}
	if changed {
		_ = shelf.WriteFile(ctx, seededFile, appendSeeded(nil, done))
	}
}

func (a *Engine) miniAppsList(ctx context.Context, req request) (result, *refusal.Refusal) {
	if r := decodeParams(req, &noParams{}); r != nil {
		return result{}, r
	}
	st, r := a.miniStore(ctx)
	if r != nil {
		return result{}, r
	}
	entries, err := st.Discover(ctx)
	if err != nil {
		return result{}, storeRefusal(err)
	}
	if entries == nil {
		entries = []miniappstore.Entry{}
	}
	return result{Value: entriesValue{"entries", entries}}, nil
}

// launched is what the page needs to show an app: its entry and its HTML, and for a folder app
// the files beside it (the page reads each with miniapps.file).
type launched struct {
	Entry  miniappstore.Entry        `json:"entry"`
	HTML   string                    `json:"html"`
	Folder []miniappstore.FolderFile `json:"folder,omitempty"`
}

// folderRef is where a launched folder app's files are: a folder of the workspace or the shelf.
type folderRef struct {
	root fsroot.Root
	dir  string
}

// miniAppsLaunch resolves {name} through the store, or takes the workspace file {path} ("Open as
// mini-app"), and opens it in the registry with no tools; a frame already showing it is replaced.
func (a *Engine) miniAppsLaunch(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsLaunchParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	if (p.Name == "") == (p.Path == "") {
		return result{}, refusal.New(refusal.MissingArgument, "launch a mini-app by name or by path, one of the two")
	}
	st, r := a.miniStore(ctx)
	if r != nil {
		return result{}, r
	}
	var e miniappstore.Entry
	var html []byte
	var err error
	if p.Name != "" {
		if e, err = st.Resolve(ctx, p.Name); err == nil {
			html, err = st.ReadHTML(ctx, e)
		}
	} else {
		e, html, err = a.fileEntry(ctx, st, p.Path)
	}
	if err != nil {
		return result{}, storeRefusal(err)
	}
	var files []miniappstore.FolderFile
	a.apps.mu.Lock()
	delete(a.apps.folders, e.AppID)
	a.apps.mu.Unlock()
	if e.Folder != "" {
		if root := a.sourceRoot(e); root != nil {
			if files, err = miniappstore.FolderFiles(ctx, root, e.Folder); err != nil {
				return result{}, storeRefusal(err)
			}
			a.apps.mu.Lock()
			a.apps.folders[e.AppID] = folderRef{root, e.Folder}
			a.apps.mu.Unlock()
		}
	}
	a.openApp(e.AppID)
	return result{Value: launched{Entry: e, HTML: string(html), Folder: files}}, nil
}

// sourceRoot is the root an entry's file is in: the workspace, or the shelf; nil for a sandbox.
func (a *Engine) sourceRoot(e miniappstore.Entry) fsroot.Root {
	switch e.Source {
	case miniappstore.SourceWorkspace:
		root, _, _ := a.current()
		return root
	case miniappstore.SourceShelf:
		a.apps.mu.Lock()
		defer a.apps.mu.Unlock()
		return a.apps.shelf
	}
	return nil
}

// miniAppsFile reads one file of a launched folder app, {appId, path} with path relative to its
// folder and held to the file tools' containment (miniappstore.ReadFolderFile), as bytes.
func (a *Engine) miniAppsFile(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsFileParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	a.apps.mu.Lock()
	ref, ok := a.apps.folders[p.AppID]
	a.apps.mu.Unlock()
	if !ok {
		return result{}, refusal.New(refusal.InvalidAppID, "no folder app %q is open", p.AppID)
	}
	data, err := miniappstore.ReadFolderFile(ctx, ref.root, ref.dir, p.Path)
	if err != nil {
		return result{}, storeRefusal(err)
	}
	return result{Value: map[string]any{"path": p.Path, "size": len(data)}, Bytes: data}, nil
}

// fileEntry is the entry of the workspace file at p: the store's own when discovery lists it,
// otherwise a page named after the file.
func (a *Engine) fileEntry(ctx context.Context, st *miniappstore.Store, p string) (miniappstore.Entry, []byte, error) {
	if _, _, ok := a.current(); !ok {
		return miniappstore.Entry{}, nil, refusal.New(refusal.NoRoot, "no workspace folder is open")
	}
	if !strings.HasSuffix(strings.ToLower(p), ".html") {
		return miniappstore.Entry{}, nil, refusal.New(refusal.InvalidMiniAppName, "%s is not an .html file", p)
	}
	entries, err := st.Discover(ctx)
	if err != nil {
		return miniappstore.Entry{}, nil, err
	}
	e := miniappstore.Entry{
		AppID: "page_" + miniappstore.Slug(path.Base(p)), Slug: miniappstore.Slug(path.Base(p)),
		FileName: path.Base(p), Source: miniappstore.SourceWorkspace, Kind: miniappstore.KindPage, StoragePath: p,
	}
	e.Folder, _ = miniappstore.FolderOf(p)
	taken := false
	for _, d := range entries {
		if d.Source == miniappstore.SourceWorkspace && d.StoragePath == p {
			e, taken = d, false
			break
		}
		taken = taken || d.AppID == e.AppID
	}
	if taken {
		h := sha.Sum256([]byte(p))
		e.AppID += "-" + hex.EncodeToString(h[:4])
	}
	if e.Title == "" {
		e.Title = e.FileName
	}
	// The store reads it, with the same bound as any launch.
	data, err := st.ReadHTML(ctx, e)
	if err != nil {
		return miniappstore.Entry{}, nil, err
	}
	e.Size = int64(len(data))
	return e, data, nil
}

// openApp (re)opens appID in the registry with no tools; calls still waiting on an earlier frame
// of it are answered mini-app-closed.
func (a *Engine) openApp(appID string) {
	a.apps.frames.closeApp(appID, "the mini-app was reloaded before it answered")
	_ = a.apps.registry.Open(appID, a.apps.frames.app(appID)) // Open drops the tools an earlier frame registered
	a.toolsChanged()
}

type appParam struct {
	AppID string `json:"appId"`
}

// miniAppsReset forgets appID's tools when its frame loaded a new document, which registers
// its tools afresh. The port of the document that went ({doc}, or any without it) is closed and
// the calls waiting on it are answered mini-app-closed: that document will answer none.
func (a *Engine) miniAppsReset(_ context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsResetParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	if !a.apps.registry.IsOpen(p.AppID) {
		return result{}, refusal.New(refusal.InvalidAppID, "no app %q is open", p.AppID)
	}
	a.apps.frames.unbind(p.AppID, p.Doc, "the mini-app reloaded itself before it answered")
	a.openApp(p.AppID)
	return result{Value: map[string]any{"reset": true}}, nil
}

// miniAppsClose forgets appID's tools and answers its calls still waiting with mini-app-closed,
// saying why (the page's reason when it stopped the app, {why}). Its port is closed when it is
// of document {doc} or an earlier one (any, without doc).
func (a *Engine) miniAppsClose(_ context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsCloseParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	why := "the mini-app was closed before it answered"
	if p.Why != "" {
		why = clipWhy(p.Why)
	}
	a.apps.frames.unbind(p.AppID, p.Doc, "")
	a.apps.frames.closeApp(p.AppID, why)
	a.apps.registry.Close(p.AppID)
	a.toolsChanged()
	return result{Value: map[string]any{"closed": true}}, nil
}

// toolView is a registered tool as the page shows it.
type toolView struct {
	AppID       string          `json:"appId"`
	Name        string          `json:"name"`
	ModelName   string          `json:"modelName"`
	Description string          `json:"description"`
	ReadOnly    bool            `json:"readOnly,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

func viewOf(appID string, d *miniapp.Declaration) toolView {
	return toolView{AppID: appID, Name: d.Name, ModelName: miniapp.ModelName(appID, d.Name),
		Description: d.Description, ReadOnly: d.ReadOnly, Parameters: parametersOf(d.JSON())}
}

// parametersOf is the "parameters" member of a declaration's JSON, as json.Unmarshal reads it
// into a json.RawMessage field: the last member whose name folds to it, as written (null too);
// nil when there is none or decl is not one JSON object.
func parametersOf(decl []byte) json.RawMessage {
	var params json.RawMessage
	rawjson.Members(decl, func(name string, v []byte) bool {
		if rawjson.FoldEqual(name, "parameters") {
			params = append(json.RawMessage(nil), v...)
		}
		return true
	})
	return params
}

// readSeeded reads the shelf's record of the samples it has had, {name: true}, into done, as
// json.Unmarshal reads it into a map[string]bool whose error is not looked at: nothing unless it
// is one JSON object; each member is true when its value is, false otherwise (encoding/json sets
// a member of another type to false too, and reports the error).
func readSeeded(data []byte, done map[string]bool) {
	rawjson.Members(data, func(name string, v []byte) bool {
		done[name] = string(v) == "true"
		return true
	})
}

// appendSeeded writes the record of the samples had as json.Marshal writes the map: names sorted.
func appendSeeded(dst []byte, done map[string]bool) []byte {
	w := rawjson.NewObject(dst, true)
	for _, name := range slices.Sorted(maps.Keys(done)) {
		w.Bool(name, done[name])
	}
	return w.Close()
}

func (a *Engine) miniAppsRegister(_ context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsRegisterParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	d, err := a.apps.registry.Register(p.AppID, p.Tool)
	if err != nil {
		return result{}, asRefusal(err)
	}
	a.apps.frames.setViewTool(p.AppID, d.Name, p.View)
	a.toolsChanged()
	return result{Value: viewOf(p.AppID, d)}, nil
}

func (a *Engine) miniAppsUnregister(_ context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsUnregisterParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	removed := a.apps.registry.Unregister(p.AppID, p.Name)
	a.apps.frames.setViewTool(p.AppID, p.Name, false)
	a.toolsChanged()
	return result{Value: map[string]any{"removed": removed}}, nil
}

func (a *Engine) miniAppsTools(_ context.Context, req request) (result, *refusal.Refusal) {
	var p appParam
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	views := []toolView{}
	for _, id := range a.apps.registry.Apps() {
		if p.AppID != "" && id != p.AppID {
			continue
		}
		for _, d := range a.apps.registry.Tools(id) {
			views = append(views, viewOf(id, d))
		}
	}
	return result{Value: map[string]any{"tools": toolViews(views)}}, nil
}

// miniAppsCall calls a tool by {appId, tool} or by its model-facing {name}, through the same
// checks as a call from the relay.
func (a *Engine) miniAppsCall(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsCallParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	name := p.Name
	if name == "" {
		name = miniapp.ModelName(p.AppID, p.Tool)
	}
	args := p.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	out, err := a.apps.registry.Dispatch(ctx, name, args)
	if err != nil {
		return result{}, asRefusal(err)
	}
	return result{Value: map[string]any{"result": out}}, nil
}

// miniAppsValidate checks {appId, tool, args} against the tool's schema as a call would be, and
// answers {args} re-encoded from the validated value; nothing is called. The page asks it for an
// app's own in-page agent (document.modelContext.executeTool), which runs the tool in the app.
func (a *Engine) miniAppsValidate(_ context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsValidateParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	args := p.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	valid, err := a.apps.registry.Validate(p.AppID, p.Tool, args)
	if err != nil {
		return result{}, asRefusal(err)
	}
	return result{Value: map[string]any{"args": valid}}, nil
}

// miniAppsResult is a frame's answer to a miniapp.call: {callId, result} or {callId, refused, why}.
func (a *Engine) miniAppsResult(_ context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsResultParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	ans := frameAnswer{out: p.Result}
	if p.Refused != "" {
		ans = frameAnswer{err: refusal.New(refusal.Rule(p.Refused), "%s", p.Why)}
	}
	return result{Value: map[string]any{"accepted": a.apps.frames.settle(p.CallID, ans)}}, nil
}

// PortMethod is the method that hands the worker an app's port: {appId, doc} with the port
// transferred as params.port. The worker's message loop serves it as it arrives, before any
// message after it, so a call never goes to an older port once a newer one was handed over.
const PortMethod = "miniapps.port"

// miniAppsPort binds the port the page transferred for appId's document doc (a number the page
// gives each document, growing): calls to the app go over it from now on. Refused
// invalid-app-id for an app that is not open, mini-app-port-refused for a document not newer
// than the one bound.
func (a *Engine) miniAppsPort(_ context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsPortParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	if a.apps.ports == nil {
		return result{}, refusal.New(refusal.MiniAppPortRefused, "this worker takes no ports; calls go through the page")
	}
	if req.Object == nil {
		return result{}, refusal.New(refusal.MissingArgument, "%s carries the bridge's port as params.port", PortMethod)
	}
	open := func(receive func([]byte), over func(string, int, int)) (AppPort, error) {
		return a.apps.ports(req.Object, receive, over)
	}
	if !a.apps.registry.IsOpen(p.AppID) {
		if port, err := open(func([]byte) {}, func(string, int, int) {}); err == nil {
			port.Close()
		}
		return result{}, refusal.New(refusal.InvalidAppID, "no app %q is open", clip(p.AppID))
	}
	if r := a.apps.frames.bind(p.AppID, p.Doc, open); r != nil {
		return result{}, r
	}
	return result{Value: map[string]any{"bound": true, "doc": jsonUint(p.Doc)}}, nil
}

// miniAppsPorts reports the open apps' ports ({appId} for one): for the tests and the console.
func (a *Engine) miniAppsPorts(_ context.Context, req request) (result, *refusal.Refusal) {
	var p appParam
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	ports := []PortStats{}
	for _, id := range a.apps.registry.Apps() {
		if st, ok := a.apps.frames.portStats(id); ok && (p.AppID == "" || id == p.AppID) {
			ports = append(ports, st)
		}
	}
	return result{Value: map[string]any{"ports": portStatsList(ports)}}, nil
}

func (a *Engine) miniAppsSave(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsSaveParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	st, r := a.miniStore(ctx)
	if r != nil {
		return result{}, r
	}
	e, err := st.SavePage(ctx, p.Name, p.Title)
	if err != nil {
		return result{}, storeRefusal(err)
	}
	return result{Value: entryValue(e)}, nil
}

func (a *Engine) miniAppsDelete(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p miniAppsDeleteParams
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	st, r := a.miniStore(ctx)
	if r != nil {
		return result{}, r
	}
	e, err := st.Delete(ctx, p.ID)
	if err != nil {
		return result{}, storeRefusal(err)
	}
	a.apps.frames.unbind(e.AppID, nil, "")
	a.apps.frames.closeApp(e.AppID, "the mini-app was deleted before it answered")
	a.apps.registry.Close(e.AppID)
	a.toolsChanged()
	return result{Value: entryValue(e)}, nil
}

// miniAppsRestoreSamples saves each shipped sample whose shelf name is free again (the person
// deleted it), leaving the samples that are there as they are: the way back from deleting one.
func (a *Engine) miniAppsRestoreSamples(ctx context.Context, req request) (result, *refusal.Refusal) {
	if r := decodeParams(req, &noParams{}); r != nil {
		return result{}, r
	}
	st, r := a.miniStore(ctx)
	if r != nil {
		return result{}, r
	}
	entries, err := st.Discover(ctx)
	if err != nil {
		return result{}, storeRefusal(err)
	}
	there := map[string]bool{}
	for _, e := range entries {
		if e.Source == miniappstore.SourceShelf {
			there[e.Slug] = true
		}
	}
	restored := []miniappstore.Entry{}
	for _, s := range samples.All() {
		if there[miniappstore.Slug(miniappstore.TitleOf(s.HTML))] {
			continue
		}
		e, err := st.Save(ctx, miniappstore.SaveOptions{HTML: s.HTML})
		if err != nil {
			return result{}, storeRefusal(err)
		}
		restored = append(restored, e)
	}
	a.toolsChanged()
	return result{Value: entriesValue{"restored", restored}}, nil
}

// storeRefusal names a store error: its own refusal, or a root's error by kind.
func storeRefusal(err error) *refusal.Refusal {
	if r, ok := refusal.As(err); ok {
		return r
	}
	return fileRefusal(err)
}

func asRefusal(err error) *refusal.Refusal {
	if r, ok := refusal.As(err); ok {
		return r
	}
	return refusal.New(refusal.ExecThrew, "%v", err)
}

// maxWhyChars bounds a reason the page gives for closing an app, as it reaches a caller.
const maxWhyChars = 500

// clipWhy cuts why to maxWhyChars code points.
func clipWhy(why string) string {
	if r := []rune(why); len(r) > maxWhyChars {
		return string(r[:maxWhyChars-1]) + "…"
	}
	return why
}
