package assistant_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/machine"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// bound is the hang guard of every wait in these tests; nothing asserts how long anything takes.
const bound = 20 * time.Second

// rig is a relay's assistant side as relay serve builds it: a real hub on a real HTTP server,
// the extension registry over a real store, and the catalogue.
type rig struct {
	t     testing.TB
	url   string
	hub   *hub.Hub
	cat   *assistant.Tools
	state *hoststate.Dir
	exts  *extensionhost.Runtime
}

func newRig(t testing.TB, opts assistant.Options) *rig {
	t.Helper()
	state, err := hoststate.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler), HostToken: state.CheckHostToken})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, state: state}
	r.hub = hub.New(hub.Options{Pairings: state, HelloBound: bound})
	hub.Register(srv, r.hub, state)
	r.exts = &extensionhost.Runtime{Admissions: extensionhost.NewAdmissions(t.TempDir(), nil), Fetcher: &extensionhost.Fetcher{}, Ask: r.hub.Ask, Console: io.Discard,
		Publish: r.hub.SetAdmitted}
	if err := r.exts.Reload(); err != nil {
		t.Fatal(err)
	}
	opts.Holder = r.hub
	if opts.Extensions == nil {
		opts.Extensions = extensionhost.ForAssistant(r.exts)
	}
	r.cat = assistant.New(opts)
	r.cat.Register(srv)
	r.hub.AddOfferListener(hub.OfferFunc(func(o hub.Offer) { r.cat.SetPageTools(o.Tools) }))
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		r.cat.Close()
		r.hub.Close()
		ts.Close()
	})
	r.url = ts.URL
	return r
}

// call runs a tool through Call and decodes the answer.
func (r *rig) call(name string, args any) map[string]any {
	r.t.Helper()
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	out := r.cat.Call(ctx, name, raw)
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		r.t.Fatalf("%s answered %s, not an object", name, out)
	}
	return m
}

func (r *rig) ok(name string, args any) map[string]any {
	r.t.Helper()
	m := r.call(name, args)
	if m["refused"] != nil {
		r.t.Fatalf("%s %v was refused: %v", name, args, m)
	}
	return m
}

func (r *rig) refused(rule refusal.Rule, name string, args any) map[string]any {
	r.t.Helper()
	m := r.call(name, args)
	if m["refused"] != string(rule) {
		r.t.Fatalf("%s %v answered %v, want %s", name, args, m, rule)
	}
	return m
}

// machine pairs and runs a machine environment on a fresh OS root and waits until it holds the
// root. It returns the root's directory.
func (r *rig) machine() string {
	r.t.Helper()
	bearer, err := r.state.Pair("box")
	if err != nil {
		r.t.Fatal(err)
	}
	dir := r.t.TempDir()
	root, err := fsroot.OpenOS(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		machine.Run(ctx, machine.Config{Relay: r.url, Bearer: bearer, Root: root})
	}()
	r.t.Cleanup(func() {
		cancel()
		<-done
		root.Close()
	})
	r.waitRoot(func(h hub.Holding) bool { return h.Kind == hub.RootMachine && h.Connected })
	return dir
}

func (r *rig) waitRoot(ok func(hub.Holding) bool) {
	r.t.Helper()
	deadline := time.Now().Add(bound)
	for !ok(r.hub.Holding()) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the root never became as wanted: %+v", r.hub.Holding())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// page is a stand-in for the page's worker on /channel: it connects with the page's origin,
// declares its root, runs file calls through the real executor (with its history) on a memory
// root, and answers the calls the worker would answer itself (the mini-app store and app tools)
// by recording them. The real worker is tested in Chromium (tests/assistant_test.go).
type page struct {
	t    testing.TB
	ws   *websocket.Conn
	root *fsroot.MemRoot

	mu      sync.Mutex
	seen    []wire.Call
	listing json.RawMessage // what list-mini-apps answers, when set
}

func (r *rig) page() *page {
	r.t.Helper()
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/channel",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {r.url}}})
	if err != nil {
		r.t.Fatal(err)
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	p := &page{t: r.t, ws: ws, root: fsroot.NewMemory()}
	h, err := executor.OpenHistory(ctx, p.root, executor.HistoryOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	exec := executor.New(p.root, executor.Options{History: h})
	door := channel.NewDoor(channel.ExecutorFunc(func(ctx context.Context, c wire.Call) (json.RawMessage, error) {
		if strings.HasPrefix(c.Tool, "app_") || strings.Contains(c.Tool, "mini-app") {
			p.mu.Lock()
			p.seen = append(p.seen, c)
			listing := p.listing
			p.mu.Unlock()
			if c.Tool == "list-mini-apps" && listing != nil {
				return listing, nil
			}
			return json.Marshal(map[string]any{"page": c.Tool, "args": c.Args})
		}
		return exec.Execute(ctx, c)
	}), executor.BuiltinAdmitted(), channel.DoorOptions{})
	p.send(`{"type":"root","kind":"opfs","name":"Browser storage"}`)
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if bytes.HasPrefix(b, []byte(`{"type"`)) {
				continue
			}
			go func() {
				if a := door.Serve(ctx, b); a != nil {
					ws.Write(ctx, websocket.MessageText, a)
				}
			}()
		}
	}()
	r.t.Cleanup(func() { ws.CloseNow() })
	r.waitRoot(func(h hub.Holding) bool { return h.Kind == hub.RootOPFS && h.Connected })
	return p
}

func (p *page) send(frame string) {
	p.t.Helper()
	if err := p.ws.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) calls() []wire.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]wire.Call(nil), p.seen...)
}

// events subscribes to GET /api/events and returns a channel of {kind, data} events.
type event struct {
	Kind string
	Data map[string]any
}

func (r *rig) events() <-chan event {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		r.t.Fatalf("GET /api/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan event, 256)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.Kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
			case line == "" && ev.Kind != "":
				out <- ev
				ev = event{}
			}
		}
	}()
	r.t.Cleanup(cancel)
	return out
}

// next returns the next event of kind, skipping others.
func next(t testing.TB, ch <-chan event, kind string) event {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the event stream ended before a %s event", kind)
			}
			if ev.Kind == kind {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no %s event", kind)
		}
	}
}

// post sends a JSON body and decodes the answer.
func (r *rig) post(path string, body any) (int, map[string]any) {
	r.t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(r.url+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// decideNext answers the next approval request on the stream.
func (r *rig) decideNext(ch <-chan event, approve bool) event {
	r.t.Helper()
	ev := next(r.t, ch, "approval")
	id, _ := ev.Data["id"].(string)
	if code, m := r.post("/api/approvals/"+id, map[string]bool{"approve": approve}); code != http.StatusOK {
		r.t.Fatalf("deciding %s: %d %v", id, code, m)
	}
	return ev
}

// async runs a call in the background and returns its answer's channel.
func (r *rig) async(name string, args any) <-chan map[string]any {
	out := make(chan map[string]any, 1)
	go func() {
		raw, _ := json.Marshal(args)
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		var m map[string]any
		json.Unmarshal(r.cat.Call(ctx, name, raw), &m)
		out <- m
	}()
	return out
}

func wait(t testing.TB, ch <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(bound):
		t.Fatal("the call never answered")
		return nil
	}
}
