package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

var goVersion = runtime.Version()

// callBound bounds one call from the page; a call still running then is refused, so every call
// gets an answer.
const callBound = 2 * time.Minute

// request is one call from the page. Bytes and Object carry what JSON cannot: params.bytes (a
// Uint8Array or ArrayBuffer) and params.handle (a FileSystemDirectoryHandle), taken out of the
// params by the js side before they are encoded.
type request struct {
	Method string
	Params json.RawMessage
	Bytes  []byte
	Object any
}

// result is a method's answer: a JSON value and, for downloads, bytes the js side hands over as a
// Uint8Array in value.bytes.
type result struct {
	Value any
	Bytes []byte
}

type method func(ctx context.Context, req request) (result, *refusal.Refusal)

// RootOpener opens the workspace root of a kind ("opfs", or "handle" with the handle object).
type RootOpener func(ctx context.Context, kind string, handle any) (fsroot.Root, RootInfo, error)

// RootInfo describes the open root to the page.
type RootInfo struct {
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	SyncHandles bool   `json:"syncHandles"`
}

// Options configure an Engine. All are optional: a missing part refuses what needs it.
type Options struct {
	// Build is the version string status and the ready message report.
	Build string
	// OpenRoot opens the workspace root root.open asks for; nil refuses root.open.
	OpenRoot RootOpener
	// OpenShelf opens the host-owned storage of saved mini-apps, out of every tool's reach; nil
	// refuses the mini-app store's methods.
	OpenShelf func(ctx context.Context) (fsroot.Root, error)
	// Post sends the page a message of the engine's own (a mini-app call, a launch); nil drops
	// them.
	Post func(msg []byte)
	// Wasm runs the WebAssembly modules the relay sends the workspace's executor (the wasm
	// primitive); nil refuses them.
	Wasm executor.WasmRunner
	// Ports starts the port a mini-app's bridge handed the worker (miniapps.port); nil refuses
	// them, and every mini-app call then goes through the page's main thread.
	Ports PortOpener
}

// Engine answers the page's calls and serves the relay's. It is portable, so that its rules are
// tested natively and in the browser alike; the js side (Run and its message loop) only moves values across
// postMessage. Its state is split by concern, each part with its own lock.
type Engine struct {
	build   string
	started time.Time
	methods map[string]method
	post    func(msg []byte) // never nil

	ws     workspaceState
	apps   miniAppState
	relay  relayState
	export exportState
}

// workspaceState is the open workspace root, its executor, and the uploads in progress on it.
// One lock, so an upload never outlives the root it writes to.
type workspaceState struct {
	openRoot RootOpener
	wasm     executor.WasmRunner // the workspace executor's runner of modules (Options.Wasm)

	mu         sync.Mutex
	root       fsroot.Root
	info       RootInfo
	exec       *workspace
	uploads    map[string]*upload
	nextUpload int
}

// miniAppState is the open mini-apps (their tools and frames) and the store over the workspace
// and the shelf.
type miniAppState struct {
	registry  *miniapp.Registry
	frames    *frames
	openShelf func(ctx context.Context) (fsroot.Root, error)
	ports     PortOpener // Options.Ports

	mu        sync.Mutex
	shelf     fsroot.Root
	store     *miniappstore.Store
	storeRoot fsroot.Root // the workspace store was made for
	seeded    bool
	// folders maps a launched folder app's id to where its files are (Entry.Folder);
	// miniapps.file reads only there.
	folders map[string]folderRef
}

// relayState is the page's connection to /channel and what it last told the relay.
type relayState struct {
	// peer, when set, is the connection: each opened root becomes the executor of the relay's
	// calls there.
	peer *peer

	mu         sync.Mutex
	toolsFrame []byte // the last tools frame given to the peer
	// externalReport is the main thread's last report of its open external mini-apps, passed
	// on in the tools frame (see externalapps.go).
	externalReport json.RawMessage
}

// New returns an Engine with no root open.
func New(opts Options) *Engine {
	a := newEngine(time.Now(), opts.OpenRoot)
	a.build = cmp.Or(opts.Build, a.build)
	a.apps.openShelf = opts.OpenShelf
	a.apps.ports = opts.Ports
	a.ws.wasm = opts.Wasm
	if opts.Post != nil {
		a.post = opts.Post
	}
	return a
}

func newEngine(now time.Time, openRoot RootOpener) *Engine {
	a := &Engine{build: "dev", started: now, post: func([]byte) {}}
	a.ws = workspaceState{openRoot: openRoot, uploads: map[string]*upload{}}
	a.apps.registry = miniapp.NewRegistry()
	a.apps.folders = map[string]folderRef{}
	a.apps.frames = newFrames(func(msg []byte) { a.post(msg) })
	a.methods = map[string]method{}
	for _, m := range methodTable() {
		a.methods[m.Name] = func(ctx context.Context, req request) (result, *refusal.Refusal) { return m.run(a, ctx, req) }
	}
	return a
}

// methodSpec is one method the worker answers the page: its name, the JSDoc types of its params
// and of its answer's value (as the page's modules check them: "undefined" for none; the shapes
// they name are worker-client.js's, see pageShapes), what it does in a line, and its Go.
// public/worker-methods.js is rendered from the table (go generate ./browser/engine), so the page
// and the worker never list the methods apart.
type methodSpec struct {
	Name   string
	Params string
	Value  string
	Doc    string
	run    func(a *Engine, ctx context.Context, req request) (result, *refusal.Refusal)
}

// methodTable is every method of the worker, in the order the page's module lists them: the
// workspace's here, the mini-apps' (miniAppMethodTable) and the external apps' after them.
func methodTable() []methodSpec {
	t := []methodSpec{
		{"status", "undefined", "{build: string, go: string, uptimeMs: number, root?: RootInfo}",
			"the build, the Go version, the uptime and the open root", (*Engine).status},
		{"root.open", "{kind: RootKind, handle?: FileSystemDirectoryHandle}", "RootInfo",
			`opens the workspace root: kind "opfs", or "handle" with params.handle`, (*Engine).rootOpen},
		{"root.info", "undefined", "RootInfo", "the open root", (*Engine).rootInfo},
		{"files.list", "{dir?: string}", "Listing", "the executor's list-files observation", (*Engine).filesList},
		{"files.read", "{path: string}", "FileView", "a file's text, at most MaxViewBytes", (*Engine).filesRead},
		{"files.write", "{path: string, content: string, mode?: 'replace' | 'create', expect?: string}", "{path: string, bytes: number, created: boolean, undoable?: boolean, digest: string}",
			`the executor's write-file observation and the digest written; mode "create" never replaces a file (file-exists), expect (files.read's digest) never a newer version (file-changed)`, (*Engine).filesWrite},
		{"files.move", "{path: string, to: string}", "{path: string, to: string, kind: 'file' | 'folder', bytes: number, parentsCreated: boolean, undoable: boolean}",
			"the executor's move-file observation: a file or a folder, never over anything (a folder on OPFS: move-unsupported)", (*Engine).filesMove},
		{"files.mkdir", "{path: string}", "{path: string, created: boolean, undoable: boolean}",
			"the executor's create-folder observation", (*Engine).filesMkdir},
		{"files.delete", "{path: string}", "{path: string, deleted: boolean, undoable?: boolean}",
			"a file, or an empty folder (folder-not-empty otherwise), kept in the history", (*Engine).filesDelete},
		{"files.download", "{path: string}", "{path: string, size: number, bytes: Uint8Array<ArrayBuffer>}",
			"a file's bytes, in value.bytes", (*Engine).filesDownload},
		{"files.upload.begin", "{path: string, mode?: 'replace' | 'create'}", "{uploadId: string}",
			`an atomic replacement, visible on commit; mode "create" refuses file-exists (at begin and at commit)`, (*Engine).uploadBegin},
		{"files.upload.chunk", "{uploadId: string, bytes: ArrayBuffer | Uint8Array}", "{written: number}",
			"the next chunk, in params.bytes", (*Engine).uploadChunk},
		{"files.upload.commit", "{uploadId: string}", "{path: string, size: number, created: boolean, undoable: boolean}",
			"the upload becomes the file: a change of the history", (*Engine).uploadCommit},
		{"files.upload.abort", "{uploadId: string}", "{path: string, aborted: boolean}", "the upload is dropped", (*Engine).uploadAbort},
		{"history.list", "undefined", "HistoryList", "the executor's list-history observation", (*Engine).historyList},
		{"history.undo", "{resolve?: Resolution}", "UndoDone",
			"undo-last's observation; resolve: keep-current, restore-earlier or keep-both (for an undo-conflict)", (*Engine).historyUndo},
		{"history.redo", "undefined", "RedoDone", "redo-last's observation", (*Engine).historyRedo},
		{"history.conflict", "undefined", "Conflict",
			"the two versions an undo weighs, each at most 64 KiB", (*Engine).historyConflict},
		{"channel.connect", "undefined", "{resumed: boolean}", `use this tab: take the slot while another holds it, or reconnect after "refused"`, (*Engine).channelConnect},
	}
	t = append(t, exportMethodTable()...)
	t = append(t, miniAppMethodTable()...)
	return append(t,
		methodSpec{"externalapps.result", "CallAnswer", "{accepted: boolean}",
			"the answer to an externalapp.call, once", (*Engine).externalAppsResult},
		methodSpec{"externalapps.report", "{apps: unknown[]}", "{apps: unknown[]}",
			"the open external apps and their tools, passed on to the relay as the tools frame's externalApps", (*Engine).externalAppsReport},
	)
}

// message is the JSON shape of a call from the page.
type message struct {
	Type   string          `json:"type"`
	ID     *float64        `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// answer is the JSON shape of the worker's reply; Bytes travel beside it (see result).
type answer struct {
	Type    string       `json:"type"`
	ID      float64      `json:"id"`
	OK      bool         `json:"ok"`
	Value   any          `json:"value,omitempty"`
	Refused refusal.Rule `json:"refused,omitempty"`
	Why     string       `json:"why,omitempty"`
	// News are the notices the call made for the page (see callNews), handed over with its
	// answer rather than posted apart.
	News []json.RawMessage `json:"news,omitempty"`
}

// readyMessage is what the worker says once Go is running.
func (a *Engine) readyMessage() []byte {
	w := rawjson.NewObject(nil, true) // as json.Marshal writes the map: names sorted
	w.String("build", a.build)
	w.String("type", "ready")
	return w.Close()
}

// parse reads a call from the page. ok is false when it has no numeric id to answer to.
func parse(in []byte) (id float64, req request, r *refusal.Refusal, ok bool) {
	var m message
	if !m.decode(in) || m.ID == nil {
		return 0, request{}, nil, false
	}
	if m.Type != "call" || m.Method == "" {
		return *m.ID, request{}, refusal.New(refusal.MalformedCall, "a call to the worker needs type \"call\" and a method"), true
	}
	return *m.ID, request{Method: m.Method, Params: m.Params}, nil, true
}

// boundedByItself reports whether method's work is bounded more tightly than callBound by what
// it calls, so a.call gives it no deadline of its own: miniapps.call's by the registry's
// tool-timeout (miniapp.ToolTimeout), whose context holds its wait for the app. A second deadline
// there would never fire and costs the worker a context, a timer and a parent's child to remove
// on every call (about 20 us of the worker's wasm; BenchmarkEngineCallsAMiniAppTool).
func boundedByItself(method string) bool { return method == "miniapps.call" }

// call runs one request and returns its answer and any bytes that go with it.
func (a *Engine) call(ctx context.Context, id float64, req request) (answer, []byte) {
	m, ok := a.methods[req.Method]
	if !ok {
		return refused(id, refusal.New(refusal.UnknownMethod, "the worker has no method %q", req.Method)), nil
	}
	if !boundedByItself(req.Method) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callBound)
		defer cancel()
	}
	news := &callNews{}
	res, r := m(newsContext{ctx, news}, req)
	var ans answer
	if r != nil {
		ans = refused(id, r)
	} else {
		ans = answer{Type: "result", ID: id, OK: true, Value: res.Value}
	}
	ans.News = news.seal()
	if !ans.OK {
		return ans, nil
	}
	return ans, res.Bytes
}

func refused(id float64, r *refusal.Refusal) answer {
	return answer{Type: "result", ID: id, Refused: r.Rule, Why: r.Why}
}

func encode(ans answer) []byte {
	b, ok := ans.appendJSON(nil)
	if !ok {
		b, _ = refused(ans.ID, refusal.New(refusal.InternalError, "the worker could not encode its answer")).appendJSON(nil)
	}
	return b
}

// decode reads in as json.NewDecoder(in).Decode(m) does (TestMessageDecodeAgreesWithJSON): the
// first value of in, an object whose members go to the field their name matches exactly, else
// case-insensitively; other members are skipped; a member of the wrong type fails the whole.
func (m *message) decode(in []byte) bool {
	obj, _, ok := rawjson.First(in)
	if !ok || obj[0] != '{' {
		return ok && string(obj) == "null" // null leaves m as it is
	}
	typed := true
	rawjson.Members(obj, func(name string, v []byte) bool {
		isNull := string(v) == "null"
		var buf [16]byte
		switch string(rawjson.AppendFold(buf[:0], name)) {
		case "TYPE":
			typed = isNull || setString(&m.Type, v)
		case "ID":
			if isNull {
				m.ID = nil
				break
			}
			f, ok := rawjson.Float(v)
			m.ID, typed = &f, ok
		case "METHOD":
			typed = isNull || setString(&m.Method, v)
		case "PARAMS":
			m.Params = append(json.RawMessage(nil), v...)
		}
		return typed
	})
	return typed
}

func setString(dst *string, v []byte) bool {
	s, ok := rawjson.Unquote(v)
	if ok {
		*dst = s
	}
	return ok
}

// appendJSON writes the answer as json.Marshal does (TestAnswerEncodingAgreesWithJSON); false when
// its value cannot be written (a NaN, say), or is of a type neither an answerValue nor one
// rawjson.AppendValue knows (TestEveryMethodsValueIsWritten).
func (ans answer) appendJSON(dst []byte) ([]byte, bool) {
	size := 64 + len(ans.Why)
	if raw, ok := ans.Value.(json.RawMessage); ok {
		size += len(raw)
	}
	w := rawjson.NewObject(slices.Grow(dst, size), true)
	w.String("type", ans.Type)
	if !w.Float("id", ans.ID) {
		return nil, false
	}
	w.Bool("ok", ans.OK)
	if v, ok := ans.Value.(answerValue); ok {
		written := false
		w.Value("value", appendFunc(func(b []byte) []byte {
			b, written = v.appendValue(b)
			return b
		}))
		if !written {
			return nil, false
		}
	} else if ans.Value != nil && !w.Any("value", ans.Value) {
		return nil, false
	}
	if ans.Refused != "" {
		w.String("refused", string(ans.Refused))
	}
	if ans.Why != "" {
		w.String("why", ans.Why)
	}
	if len(ans.News) > 0 {
		w.Value("news", appendFunc(func(b []byte) []byte {
			b = append(b, '[')
			for i, n := range ans.News {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, n...)
			}
			return append(b, ']')
		}))
	}
	return w.Close(), true
}

type statusValue struct {
	Build    string    `json:"build"`
	Go       string    `json:"go"`
	UptimeMs int64     `json:"uptimeMs"`
	Root     *RootInfo `json:"root,omitempty"`
}

func (a *Engine) status(context.Context, request) (result, *refusal.Refusal) {
	v := statusValue{Build: a.build, Go: goVersion, UptimeMs: time.Since(a.started).Milliseconds()}
	if _, info, ok := a.current(); ok {
		v.Root = &info
	}
	return result{Value: v}, nil
}
