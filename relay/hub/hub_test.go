package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"voicebox/relay/hoststate"
	"voicebox/relay/server"
	"voicebox/shared/channel"
	"voicebox/shared/executor"
	"voicebox/shared/fsroot"
	"voicebox/shared/refusal"
	"voicebox/shared/wire"
)

// patience bounds every wait in these tests; nothing should come near it.
const patience = 10 * time.Second

type testRelay struct {
	url, port string
	hub       *Hub
	state     *hoststate.Dir
	token     string
}

func startRelay(t testing.TB, opts Options, cfg server.Config) *testRelay {
	t.Helper()
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	state, err := hoststate.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(state.Path(), hoststate.HostTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Pairings == nil {
		opts.Pairings = state
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Public, cfg.Log, cfg.HostToken = public, opts.Log, state.CheckHostToken
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := New(opts)
	Register(srv, h, state)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { h.Close(); ts.Close() })
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	return &testRelay{url: ts.URL, port: port, hub: h, state: state, token: strings.TrimSpace(string(tok))}
}

func (r *testRelay) origin(host string) string { return "http://" + host + ":" + r.port }

// dial opens /channel with origin ("" sends none).
func (r *testRelay) dial(t testing.TB, origin string, header http.Header) *websocket.Conn {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	if origin != "" {
		header.Set("Origin", origin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/channel", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// peer is a test executor on a socket: it answers call frames with a door and records what else
// it saw.
type peer struct {
	ws    *websocket.Conn
	calls chan wire.Call // every call frame that arrived
	ended chan error     // the read error, with its close status
	mu    sync.Mutex
	ctl   []map[string]any
}

// serve runs exec behind a door on ws (exec nil: calls are recorded, never answered).
func serve(t testing.TB, ws *websocket.Conn, exec channel.Executor) *peer {
	p := &peer{ws: ws, calls: make(chan wire.Call, 64), ended: make(chan error, 1)}
	var door *channel.Door
	if exec != nil {
		door = channel.NewDoor(exec, executor.BuiltinAdmitted(), channel.DoorOptions{})
	}
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				p.ended <- err
				return
			}
			if c, err := wire.ParseCall(b); err == nil {
				select {
				case p.calls <- c:
				default:
				}
				if door != nil {
					go ws.Write(context.Background(), websocket.MessageText, door.Serve(context.Background(), b))
				}
				continue
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			p.mu.Lock()
			p.ctl = append(p.ctl, m)
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *peer) controls() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.ctl...)
}

// end waits for the socket to end and returns its close status.
func (p *peer) end(t testing.TB) websocket.StatusCode {
	t.Helper()
	select {
	case err := <-p.ended:
		return websocket.CloseStatus(err)
	case <-time.After(patience):
		t.Fatal("the socket was not closed")
		return 0
	}
}

func sendRoot(t testing.TB, ws *websocket.Conn, kind, name string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"type": "root", "kind": kind, "name": name})
	if err := ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// waitRoot polls GET /api/root until ok accepts it.
func (r *testRelay) waitRoot(t testing.TB, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		resp, err := http.Get(r.url + "/api/root")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /api/root stayed %v", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func connected(m map[string]any) bool { return m["connected"] == true }

// post sends body as JSON to path with the host token (when withToken) and returns the status
// and the decoded answer.
func (r *testRelay) post(t testing.TB, method, path string, body any, withToken bool) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, r.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if withToken {
		req.Header.Set(server.HostTokenHeader, r.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s answered %d %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}

// call runs tool on the root through POST /api/root/call.
func (r *testRelay) call(t testing.TB, tool string, args any) map[string]any {
	t.Helper()
	status, m := r.post(t, http.MethodPost, "/api/root/call", map[string]any{"tool": tool, "args": args}, true)
	if status != http.StatusOK {
		t.Fatalf("POST /api/root/call %s: %d %v", tool, status, m)
	}
	return m
}

func refused(m map[string]any) refusal.Rule {
	s, _ := m["refused"].(string)
	return refusal.Rule(s)
}

func TestPageOriginsAreAdmitted(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			r := startRelay(t, Options{}, server.Config{})
			root := fsroot.NewMemory()
			p := serve(t, r.dial(t, r.origin(host), nil), executor.New(root, executor.Options{}))
			sendRoot(t, p.ws, RootOPFS, "my workspace")
			r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["kind"] == RootOPFS && m["name"] == "my workspace" })

			w := r.call(t, "write-file", map[string]any{"path": "notes/a.txt", "content": "hello"})
			if w["ok"] != true {
				t.Fatalf("write-file answered %v", w)
			}
			got := r.call(t, "read-file", map[string]any{"path": "notes/a.txt"})
			obs, _ := got["observed"].(map[string]any)
			if got["ok"] != true || obs["content"] != "hello" || got["v"] != float64(1) {
				t.Fatalf("read-file answered %v", got)
			}
			if b, err := root.ReadFile(context.Background(), "notes/a.txt"); err != nil || string(b) != "hello" {
				t.Fatalf("the root holds %q, %v", b, err)
			}
		})
	}
}

func TestNoExecutorIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	m := r.waitRoot(t, func(map[string]any) bool { return true })
	if m["ok"] != true || m["kind"] != "" || m["connected"] != false {
		t.Fatalf("GET /api/root before anything connected: %v", m)
	}
	start := time.Now()
	if got := r.call(t, "read-file", map[string]any{"path": "a.txt"}); got["ok"] != false || refused(got) != refusal.NoPage {
		t.Fatalf("with no page: %v", got)
	}
	if d := time.Since(start); d > patience/2 {
		t.Fatalf("the refusal took %v; it should not wait at all", d)
	}
}

func TestHostTokenIsRequired(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	tests := []struct {
		name, method, path string
		body               any
	}{
		{"root call", http.MethodPost, "/api/root/call", map[string]any{"tool": "now"}},
		{"pair", http.MethodPost, "/api/pair", map[string]any{"name": "box"}},
		{"unpair", http.MethodDelete, "/api/pair", map[string]any{"name": "box"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, tok := range []string{"", "wrong", r.token + "x"} {
				b, _ := json.Marshal(tt.body)
				req, _ := http.NewRequest(tt.method, r.url+tt.path, bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				if tok != "" {
					req.Header.Set(server.HostTokenHeader, tok)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden || refused(m) != refusal.HostTokenRequired {
					t.Fatalf("token %q: %d %v", tok, resp.StatusCode, m)
				}
			}
		})
	}
	if ps, _ := r.state.List(); len(ps) != 0 {
		t.Fatalf("a refused pair request left pairings %v", ps)
	}
}

var _ = errors.New
