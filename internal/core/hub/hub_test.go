package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// patience bounds every wait in these tests; nothing should come near it.
const patience = 10 * time.Second

type testRelay struct {
	url, port string
	hub       *Hub
	srv       *server.Server
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
	return &testRelay{url: ts.URL, port: port, hub: h, srv: srv, state: state, token: strings.TrimSpace(string(tok))}
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
	return hubtest.Dial(t, r.url, header, patience)
}

// peer is a test executor on a socket (hubtest.Peer).
type peer = hubtest.Peer

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
	return r.waitRootWith(t, http.Header{server.HostTokenHeader: {r.token}}, ok)
}

func (r *testRelay) waitRootWith(t testing.TB, header http.Header, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		req := mustRequest(t, r.url+"/api/root")
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
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
			p := hubtest.Serve(r.dial(t, r.origin(host), nil), executor.New(root, executor.Options{}))
			sendRoot(t, p.WS, RootOPFS, "my workspace")
			r.waitRoot(t, func(m map[string]any) bool {
				return connected(m) && m["kind"] == RootOPFS && m["name"] == "my workspace"
			})

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

// pair mints a bearer for name through the API.
func (r *testRelay) pair(t testing.TB, name string) string {
	t.Helper()
	status, m := r.post(t, http.MethodPost, "/api/pair", map[string]any{"name": name}, true)
	bearer, _ := m["bearer"].(string)
	if status != http.StatusOK || !strings.HasPrefix(bearer, hoststate.BearerPrefix) {
		t.Fatalf("POST /api/pair: %d %v", status, m)
	}
	return bearer
}

func hello(t testing.TB, ws *websocket.Conn, frame string) {
	t.Helper()
	if err := ws.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

func helloFrame(bearer string) string {
	b, _ := json.Marshal(map[string]string{"type": "hello", "role": "environment", "bearer": bearer})
	return string(b)
}

// machine connects as the paired environment name and serves exec.
func (r *testRelay) machine(t testing.TB, bearer string, exec channel.Executor) *peer {
	t.Helper()
	ws := r.dial(t, "", nil)
	hello(t, ws, helloFrame(bearer))
	p := hubtest.Serve(ws, exec)
	r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["kind"] == RootMachine })
	return p
}

// checkRefused asserts that p got exactly one control frame, a refusal of rule, then 1008, and
// never a call.
func checkRefused(t *testing.T, p *peer, rule refusal.Rule) {
	t.Helper()
	if code := p.End(t, patience); code != websocket.StatusPolicyViolation {
		t.Fatalf("closed with %v, want 1008", code)
	}
	ctl := p.Controls()
	if len(ctl) != 1 || ctl[0]["type"] != "refused" || ctl[0]["refused"] != string(rule) || ctl[0]["why"] == "" || ctl[0]["v"] != nil || len(ctl[0]) != 3 {
		t.Fatalf("control frames %v, want one refused %s", ctl, rule)
	}
	if len(p.Calls) != 0 {
		t.Fatalf("a refused socket received a call: %v", <-p.Calls)
	}
}

func TestHelloRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		origin string // "self:PORT" is replaced with a loopback origin on another port
		frame  string // "" sends nothing; "BEARER" and "REVOKED" are replaced
		rule   refusal.Rule
	}{
		{"silent past the bound", "", "", refusal.ExecutorUnauthenticated},
		{"missing bearer", "", `{"type":"hello","role":"environment"}`, refusal.ExecutorUnauthenticated},
		{"empty bearer", "", `{"type":"hello","role":"environment","bearer":""}`, refusal.ExecutorUnauthenticated},
		{"wrong type", "", `{"type":"hi","role":"environment","bearer":"BEARER"}`, refusal.ExecutorUnauthenticated},
		{"wrong role", "", `{"type":"hello","role":"page","bearer":"BEARER"}`, refusal.ExecutorUnauthenticated},
		{"extra field", "", `{"type":"hello","role":"environment","bearer":"BEARER","admin":true}`, refusal.ExecutorUnauthenticated},
		{"bearer not a string", "", `{"type":"hello","role":"environment","bearer":7}`, refusal.ExecutorUnauthenticated},
		{"not JSON", "", `hello`, refusal.ExecutorUnauthenticated},
		{"a call instead", "", `{"v":1,"callId":"c1","tool":"now","descriptorId":"voicebox.builtin","args":{},"boundsEcho":{}}`, refusal.ExecutorUnauthenticated},
		{"unknown bearer", "", helloFrame("vbx_" + strings.Repeat("0", 64)), refusal.BearerRefused},
		{"revoked bearer", "", helloFrame("REVOKED"), refusal.BearerRefused},
		{"foreign origin, no hello", "http://evil.example", "", refusal.ExecutorUnauthenticated},
		{"null origin, no hello", "null", "", refusal.ExecutorUnauthenticated},
		{"loopback on another port", "self:other", "", refusal.ExecutorUnauthenticated},
		{"https loopback", "https-self", "", refusal.ExecutorUnauthenticated},
		{"foreign origin, unknown bearer", "http://evil.example", helloFrame("vbx_nope"), refusal.BearerRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A silent peer meets the bound; one that says something is answered on receipt,
			// so its bound is only a hang guard (a short one raced the test's own setup).
			bound := 300 * time.Millisecond
			if tt.frame != "" {
				bound = patience
			}
			r := startRelay(t, Options{HelloBound: bound}, server.Config{})
			frame := strings.ReplaceAll(tt.frame, "BEARER", r.pair(t, "box"))
			if strings.Contains(frame, "REVOKED") {
				revoked := r.pair(t, "gone")
				if status, m := r.post(t, http.MethodDelete, "/api/pair", map[string]any{"name": "gone"}, true); status != http.StatusOK {
					t.Fatalf("DELETE /api/pair: %d %v", status, m)
				}
				frame = strings.ReplaceAll(frame, "REVOKED", revoked)
			}
			origin := tt.origin
			switch origin {
			case "self:other":
				origin = "http://127.0.0.1:1" + r.port
			case "https-self":
				origin = "https://127.0.0.1:" + r.port
			}
			ws := r.dial(t, origin, nil)
			p := hubtest.Serve(ws, executor.New(fsroot.NewMemory(), executor.Options{}))
			// Not yet admitted: a call must not reach it.
			if got := r.call(t, "now", nil); refused(got) != refusal.NoPage {
				t.Fatalf("a call before the hello answered %v", got)
			}
			if frame != "" {
				hello(t, ws, frame)
			}
			checkRefused(t, p, tt.rule)
			if got := r.call(t, "now", nil); refused(got) != refusal.NoPage {
				t.Fatalf("a call after the refusal answered %v", got)
			}
		})
	}
}

func TestRevokedBearerIsClosedAndRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// recheck is how often the hub looks at the pairing again: through the API, so rarely
		// that only the API can have closed the socket it reports closing.
		recheck time.Duration
		revoke  func(t *testing.T, r *testRelay)
	}{
		{"through the API", time.Hour, func(t *testing.T, r *testRelay) {
			status, m := r.post(t, http.MethodDelete, "/api/pair", map[string]any{"name": "box"}, true)
			if status != http.StatusOK || m["disconnected"] != true {
				t.Fatalf("DELETE /api/pair: %d %v", status, m)
			}
		}},
		{"by another process", 20 * time.Millisecond, func(t *testing.T, r *testRelay) {
			other, err := hoststate.Open(r.state.Path())
			if err != nil {
				t.Fatal(err)
			}
			if err := other.Revoke("box"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startRelay(t, Options{Recheck: tt.recheck}, server.Config{})
			bearer := r.pair(t, "box")
			p := r.machine(t, bearer, executor.New(fsroot.NewMemory(), executor.Options{}))
			if got := r.call(t, "now", nil); got["ok"] != true {
				t.Fatalf("the paired machine answered %v", got)
			}
			<-p.Calls // the call above reached it while it was paired
			tt.revoke(t, r)
			checkRefused(t, p, refusal.BearerRefused)
			if got := r.call(t, "now", nil); refused(got) != refusal.MachineUnreachable {
				t.Fatalf("after the revocation: %v", got)
			}
			again := hubtest.Serve(r.dial(t, "", nil), nil)
			hello(t, again.WS, helloFrame(bearer))
			checkRefused(t, again, refusal.BearerRefused)
		})
	}
}

// stuck is an executor that never answers until released.
func stuck(release <-chan struct{}) channel.Executor {
	return channel.ExecutorFunc(func(ctx context.Context, _ wire.Call) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{}`), nil
	})
}

// asyncCall starts a call and returns where its answer will arrive.
func (r *testRelay) asyncCall(t testing.TB, tool string) <-chan map[string]any {
	out := make(chan map[string]any, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"tool": tool})
		req, _ := http.NewRequest(http.MethodPost, r.url+"/api/root/call", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(server.HostTokenHeader, r.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- map[string]any{"error": err.Error()}
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		out <- m
	}()
	return out
}

func await(t testing.TB, ch <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(patience):
		t.Fatal("the call never settled")
		return nil
	}
}

func awaitCall(t testing.TB, p *peer) {
	t.Helper()
	select {
	case <-p.Calls:
	case <-time.After(patience):
		t.Fatal("the call never reached the executor")
	}
}

// TestNewestExecutorWins: a machine takes the slot when it connects, a page when its person asks
// ("take"); the calls waiting on the displaced executor settle with its closed rule. A displaced
// machine is closed 4001; a displaced page keeps its socket and is told it waits (standby).
func TestNewestExecutorWins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		first, second string // "page" or "machine"
		closed        refusal.Rule
	}{
		{"page replaces page", "page", "page", refusal.PageClosed},
		{"machine replaces page", "page", "machine", refusal.PageClosed},
		{"page replaces machine", "machine", "page", refusal.MachineClosed},
		{"machine replaces machine", "machine", "machine", refusal.MachineClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startRelay(t, Options{}, server.Config{})
			release := make(chan struct{})
			defer close(release)
			machines := 0
			connect := func(kind string, exec channel.Executor) *peer {
				if kind == "machine" {
					machines++
					return r.machine(t, r.pair(t, fmt.Sprintf("box-%d", machines)), exec)
				}
				ws := r.dial(t, r.origin("127.0.0.1"), nil)
				p := hubtest.Serve(ws, exec)
				sendControl(t, ws, "take")
				r.waitRoot(t, connected)
				return p
			}
			first := connect(tt.first, stuck(release))
			pending := r.asyncCall(t, "now")
			awaitCall(t, first)
			second := connect(tt.second, executor.New(fsroot.NewMemory(), executor.Options{}))
			if got := await(t, pending); refused(got) != tt.closed {
				t.Fatalf("the displaced executor's call settled %v, want %s", got, tt.closed)
			}
			if tt.first == "machine" {
				if code := first.End(t, patience); code != CloseReplaced {
					t.Fatalf("the displaced executor was closed with %v, want 4001", code)
				}
				if ctl := first.Controls(); len(ctl) != 1 || ctl[0]["type"] != "replaced" || ctl[0]["why"] == "" {
					t.Fatalf("the displaced executor's control frames: %v", ctl)
				}
			} else {
				waitControl(t, first, "standby")
				select {
				case err := <-first.Ended:
					t.Fatalf("the displaced page's socket ended: %v", err)
				default:
				}
			}
			if got := r.call(t, "now", nil); got["ok"] != true {
				t.Fatalf("the new executor answered %v", got)
			}
			_ = second
		})
	}
}

// withoutHolding returns the control frames but {"type":"holding"}.
func withoutHolding(ctl []map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range ctl {
		if c["type"] != "holding" {
			out = append(out, c)
		}
	}
	return out
}

// sendControl writes a control frame {"type":typ} on ws.
func sendControl(t testing.TB, ws *websocket.Conn, typ string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"type": typ})
	if err := ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// waitControl waits until p was sent a control frame of type typ, and returns its why.
func waitControl(t testing.TB, p *peer, typ string) string {
	t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(5 * time.Millisecond) {
		ctl := p.Controls()
		for i := len(ctl) - 1; i >= 0; i-- {
			if ctl[i]["type"] == typ {
				why, _ := ctl[i]["why"].(string)
				return why
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q control frame came; the frames: %v", typ, ctl)
		}
	}
}

// TestASecondPageWaitsAndTakesOverWhenTheHolderGoes: a page that connects while another holds the
// slot is told it waits and gets no call; when the holder's socket ends, the newest waiting page
// takes the slot by itself (told "holding" with why) and serves the next call; one that asks
// ("take") takes it from a live holder, which then waits in turn.
func TestASecondPageWaitsAndTakesOverWhenTheHolderGoes(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	dialPage := func(name string) (*websocket.Conn, *peer) {
		ws := r.dial(t, r.origin("127.0.0.1"), nil)
		p := hubtest.Serve(ws, executor.New(fsroot.NewMemory(), executor.Options{}))
		sendRoot(t, ws, RootHandle, name)
		return ws, p
	}
	firstWS, first := dialPage("first")
	waitControl(t, first, "holding")
	r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["name"] == "first" })
	_, second := dialPage("second")
	if why := waitControl(t, second, "standby"); !strings.Contains(why, "another tab") || !strings.Contains(why, "Use this tab") {
		t.Fatalf("the waiting page was told %q", why)
	}
	for range 3 {
		if got := r.call(t, "now", nil); got["ok"] != true {
			t.Fatalf("with the first page holding, a call answered %v", got)
		}
	}
	if len(second.Calls) != 0 || second.SawControl("holding") {
		t.Fatal("the waiting page was given a call or the slot")
	}
	thirdWS, third := dialPage("third")
	waitControl(t, third, "standby")

	firstWS.Close(websocket.StatusGoingAway, "the tab closed")
	if why := waitControl(t, third, "holding"); !strings.Contains(why, "went away") {
		t.Fatalf("the page that took over was told %q", why)
	}
	r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["name"] == "third" })
	if got := r.call(t, "now", nil); got["ok"] != true {
		t.Fatalf("after the holder went away a call answered %v", got)
	}
	if second.SawControl("holding") {
		t.Fatal("two waiting pages were given the slot")
	}

	// The second page's person asks: it takes the slot and the third waits again.
	sendControl(t, second.WS, "take")
	r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["name"] == "second" })
	waitControl(t, third, "standby")
	if got := r.call(t, "now", nil); got["ok"] != true {
		t.Fatalf("after the take a call answered %v", got)
	}
	thirdWS.Close(websocket.StatusGoingAway, "the tab closed")
	second.WS.Close(websocket.StatusGoingAway, "the tab closed")
	r.waitRoot(t, func(m map[string]any) bool { return !connected(m) })
	if got := r.call(t, "now", nil); refused(got) != refusal.NoPage {
		t.Fatalf("with every page gone a call answered %v, want no-page", got)
	}
}

func TestAbsenceRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, kind string
		happen     string // "timeout", "disconnect", "gone"
		want       refusal.Rule
	}{
		{"page timeout", "page", "timeout", refusal.PageTimeout},
		{"machine timeout", "machine", "timeout", refusal.MachineTimeout},
		{"page closed mid-call", "page", "disconnect", refusal.PageClosed},
		{"machine closed mid-call", "machine", "disconnect", refusal.MachineClosed},
		{"page gone", "page", "gone", refusal.NoPage},
		{"machine gone", "machine", "gone", refusal.MachineUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startRelay(t, Options{callTimeout: 200 * time.Millisecond}, server.Config{})
			release := make(chan struct{})
			defer close(release)
			var p *peer
			if tt.kind == "machine" {
				p = r.machine(t, r.pair(t, "box"), stuck(release))
			} else {
				p = hubtest.Serve(r.dial(t, r.origin("localhost"), nil), stuck(release))
				r.waitRoot(t, connected)
			}
			switch tt.happen {
			case "timeout":
				if got := r.call(t, "now", nil); refused(got) != tt.want {
					t.Fatalf("answered %v, want %s", got, tt.want)
				}
			case "disconnect":
				pending := r.asyncCall(t, "now")
				awaitCall(t, p)
				p.WS.Close(websocket.StatusNormalClosure, "bye")
				if got := await(t, pending); refused(got) != tt.want {
					t.Fatalf("answered %v, want %s", got, tt.want)
				}
			case "gone":
				p.WS.Close(websocket.StatusNormalClosure, "bye")
				r.waitRoot(t, func(m map[string]any) bool { return !connected(m) })
				start := time.Now()
				if got := r.call(t, "now", nil); refused(got) != tt.want {
					t.Fatalf("answered %v, want %s", got, tt.want)
				}
				if d := time.Since(start); d > patience/2 {
					t.Fatalf("the refusal took %v", d)
				}
			}
		})
	}
}

func TestGatedPageNeedsASession(t *testing.T) {
	t.Parallel()
	gate := server.NewGate()
	r := startRelay(t, Options{PageSession: gate.Session}, server.Config{Gate: gate})
	p := hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), nil), executor.New(fsroot.NewMemory(), executor.Options{}))
	checkRefused(t, p, refusal.LoopbackUnauthenticated)

	resp, err := (&http.Transport{}).RoundTrip(mustRequest(t, r.url+"/?bootstrap="+newTicket(t, gate)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("redeem: %d %v", resp.StatusCode, cookies)
	}
	header := http.Header{"Cookie": {cookies[0].Name + "=" + cookies[0].Value}}
	hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), header), executor.New(fsroot.NewMemory(), executor.Options{}))
	r.waitRootWith(t, header, connected)
	// The API behind the gate takes the host token too.
	if got := r.call(t, "now", nil); got["ok"] != true {
		t.Fatalf("a call to the gated page answered %v", got)
	}
}

func mustRequest(t testing.TB, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func FuzzParseHello(f *testing.F) {
	f.Add([]byte(`{"type":"hello","role":"environment","bearer":"vbx_00"}`))
	f.Add([]byte(`{"type":"hello","role":"environment","bearer":"vbx_00","x":1}`))
	f.Add([]byte(`{"type":"hello","type":"hello","role":"environment"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		bearer, ok := parseHello(b)
		if !ok {
			return
		}
		if bearer == "" || len(b) > MaxControlBytes {
			t.Fatalf("accepted %q with bearer %q", b, bearer)
		}
		again, ok := parseHello([]byte(helloFrame(bearer)))
		if !ok || again != bearer {
			t.Fatalf("the accepted bearer %q does not round-trip", bearer)
		}
	})
}

// TestSocketLimitsRefuseAndTheRelayKeepsServing fills the overall bound, then a session's
// bound, with the executor (a page answering calls) and a socket still saying hello: one more
// socket is refused too-many-sockets (1008), the executor keeps answering calls, another session
// still gets in under the per-session bound, and once a socket closes the next is admitted.
func TestSocketLimitsRefuseAndTheRelayKeepsServing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		opts    Options
		session bool
	}{
		{"overall", Options{MaxSockets: 1}, false},
		{"per session", Options{MaxSessionSockets: 1, SessionOf: func(r *http.Request) string { return r.Header.Get("X-Test-Session") }}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := startRelay(t, tt.opts, server.Config{})
			header := func(s string) http.Header {
				h := http.Header{}
				if tt.session {
					h.Set("X-Test-Session", s)
				}
				return h
			}
			exec := executor.New(fsroot.NewMemory(), executor.Options{})
			current := hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), header("s1")), exec)
			r.waitRoot(t, connected)
			over := hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), header("s1")), nil)
			checkRefused(t, over, refusal.TooManySockets)
			if got := r.call(t, "now", nil); got["ok"] != true {
				t.Fatalf("with the bound reached the executor answered %v", got)
			}
			if tt.session {
				// Another session is not held back by this one's bound: its page takes the slot.
				admitted(t, r, current, header("s2"), exec)
				return
			}
			current.WS.Close(websocket.StatusNormalClosure, "")
			// Once it is gone the relay admits again.
			p := hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), header("s1")), exec)
			for got := r.call(t, "now", nil); got["ok"] != true; got = r.call(t, "now", nil) {
				select {
				case <-p.Ended:
					p = hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), header("s1")), exec) // its place was not given back yet
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
}

// dialFrom opens /channel from the loopback address from (such as 127.0.0.2), with origin.
func (r *testRelay) dialFrom(t testing.TB, from, origin string) *websocket.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	header := http.Header{}
	if origin != "" {
		header.Set("Origin", origin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/channel", &websocket.DialOptions{HTTPHeader: header, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// TestSocketsSayingHelloHaveTheirOwnPool: sockets that have not said hello are bounded per
// client address, per Origin and overall, in a pool of their own, so the page and a machine with
// its bearer are admitted while the pool is full; a foreign origin gets the shorter bound.
func TestSocketsSayingHelloHaveTheirOwnPool(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{MaxSockets: 8, HelloBound: time.Hour, Hellos: session.NewHelloLimiter(session.HelloBounds{Max: 3, PerClient: 2, PerOrigin: 1})}, server.Config{})
	bearer := r.pair(t, "box")
	// Two silent sockets from 127.0.0.1 fill its share; the third is refused at once.
	r.dial(t, "", nil)
	r.dial(t, "", nil)
	checkRefused(t, hubtest.Serve(r.dial(t, "", nil), nil), refusal.TooManySockets)
	// One foreign page's socket from another address; a second of that origin is refused.
	foreign := hubtest.Serve(r.dialFrom(t, "127.0.0.3", "http://evil.example"), nil)
	checkRefused(t, hubtest.Serve(r.dialFrom(t, "127.0.0.4", "http://evil.example"), nil), refusal.TooManySockets)
	// The pool is full (three waiting): the page is admitted all the same.
	exec := executor.New(fsroot.NewMemory(), executor.Options{})
	page := hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), nil), exec)
	r.waitRoot(t, connected)
	// The foreign page is refused at its own, shorter bound, and says so.
	foreign.End(t, patience)
	if ctl := foreign.Controls(); len(ctl) != 1 || ctl[0]["refused"] != string(refusal.ExecutorUnauthenticated) || !strings.Contains(ctl[0]["why"].(string), "within "+ForeignHelloBound.String()) {
		t.Fatalf("the foreign page was told %v", ctl)
	}
	// A machine with its bearer, from an address with no waiting sockets, is admitted and takes
	// the slot from the page.
	ws := r.dialFrom(t, "127.0.0.2", "")
	hello(t, ws, helloFrame(bearer))
	machine := hubtest.Serve(ws, exec)
	r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["kind"] == RootMachine })
	if why := waitControl(t, page, "standby"); !strings.Contains(why, "box") {
		t.Fatalf("the page displaced by the machine was told %q", why)
	}
	// Fill the pool again; a machine that shows its bearer in the upgrade passes it by, even from
	// the address whose share is full, while one that does not is refused.
	r.dialFrom(t, "127.0.0.5", "") // the third waiting socket (127.0.0.1 has two)
	checkRefused(t, hubtest.Serve(r.dialFrom(t, "127.0.0.2", ""), nil), refusal.TooManySockets)
	ws = r.dial(t, "", http.Header{"Authorization": {"Bearer " + bearer}})
	hello(t, ws, helloFrame(bearer))
	hubtest.Serve(ws, exec)
	if machine.End(t, patience) != CloseReplaced {
		t.Fatal("the machine that showed its bearer did not take the slot")
	}
}

// TestAnOversizedFirstFrameIsARefusedHello: a first frame past the hello's bound (even past the
// wire's) is answered like any bad hello, a refused frame and 1008, not a bare 1009.
func TestAnOversizedFirstFrameIsARefusedHello(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	for _, size := range []int{MaxControlBytes + 1, wire.MaxFrameBytes + 1} {
		ws := r.dial(t, "", nil)
		p := hubtest.Serve(ws, nil)
		go ws.Write(context.Background(), websocket.MessageText, []byte(strings.Repeat("a", size))) // the relay may stop reading first
		checkRefused(t, p, refusal.ExecutorUnauthenticated)
		if why := p.Controls()[0]["why"].(string); !strings.Contains(why, "over the hello's bound") {
			t.Fatalf("a %d-byte first frame was told %q", size, why)
		}
	}
	// The relay serves the next peer.
	exec := executor.New(fsroot.NewMemory(), executor.Options{})
	hubtest.Serve(r.dial(t, r.origin("127.0.0.1"), nil), exec)
	r.waitRoot(t, connected)
}

// admitted dials pages with header until one is admitted, which current (the executor) sees as
// its replacement; a page refused meanwhile (a place not given back yet) is tried again.
func admitted(t *testing.T, r *testRelay, current *peer, header http.Header, exec channel.Executor) *peer {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		ws := r.dial(t, r.origin("127.0.0.1"), header.Clone())
		p := hubtest.Serve(ws, exec)
		ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"take"}`))
		for {
			if current.SawControl("standby") {
				return p
			}
			select {
			case <-p.Ended:
			case <-time.After(5 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatal("the relay never admitted a page again")
				}
				continue
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay never admitted a page again")
		}
	}
}

// The root listeners hear every change of who holds the root, in order: a page declaring its
// root, a machine taking the slot, and the machine leaving it.
func TestRootListenersHearEveryChange(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	heard := make(chan Holding, 16)
	r.hub.AddHoldingListener(HoldingFunc(func(root Holding) { heard <- root }))
	next := func(want Holding) {
		t.Helper()
		for {
			select {
			case got := <-heard:
				if got == want {
					return
				}
			case <-time.After(patience):
				t.Fatalf("no root change to %+v was heard", want)
			}
		}
	}
	ws := r.dial(t, r.origin("127.0.0.1"), nil)
	hubtest.Serve(ws, executor.New(fsroot.NewMemory(), executor.Options{}))
	sendRoot(t, ws, RootOPFS, "Browser storage")
	next(Holding{Kind: RootOPFS, Name: "Browser storage", Connected: true})
	m := r.machine(t, r.pair(t, "box"), executor.New(fsroot.NewMemory(), executor.Options{}))
	next(Holding{Kind: RootMachine, Name: "box", Connected: true})
	m.WS.Close(websocket.StatusNormalClosure, "the machine stops")
	next(Holding{Kind: RootMachine, Name: "box", Connected: false})
}

// TestAPageMaySendBinaryFrames: the page's worker sends its frames as binary WebSocket messages
// (its bytes cross from Go as they are, with no string made of them); the hub reads a binary
// control frame and a binary answer as it reads text ones.
func TestAPageMaySendBinaryFrames(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	ws := r.dial(t, r.origin("127.0.0.1"), nil)
	ctx := context.Background()
	door := channel.NewDoor(executor.New(fsroot.NewMemory(), executor.Options{}), executor.BuiltinAdmitted(), channel.DoorOptions{})
	go func() {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if _, err := wire.ParseCall(b); err == nil {
				if a := door.Serve(ctx, b); a != nil {
					ws.Write(ctx, websocket.MessageBinary, a)
				}
			}
		}
	}()
	for _, typ := range []string{"root", "take"} {
		b, _ := json.Marshal(map[string]string{"type": typ, "kind": "opfs", "name": "binary"})
		if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
			t.Fatal(err)
		}
	}
	r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["name"] == "binary" })
	if got := r.call(t, "now", map[string]any{}); got["ok"] != true {
		t.Fatalf("a call answered in a binary frame settled %v", got)
	}
}

// TestCallsAreBinaryToASocketThatAskedForThem: a socket whose upgrade asked for binary frames
// (/channel?frames=binary, the page's worker) gets its calls and admitted sets as binary
// messages, the same bytes; one that did not (an older page, a machine) gets text, as before.
// Control frames stay text for both.
func TestCallsAreBinaryToASocketThatAskedForThem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		query string
		want  websocket.MessageType
	}{
		{"?" + FramesQuery + "=" + FramesBinary, websocket.MessageBinary},
		{"", websocket.MessageText},
		{"?" + FramesQuery + "=text", websocket.MessageText},
	} {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			r := startRelay(t, Options{}, server.Config{})
			r.hub.SetAdmitted(channel.MarshalAdmitted(nil))
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/channel"+c.query,
				&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {r.origin("127.0.0.1")}}})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.CloseNow()
			sendRoot(t, ws, "opfs", "frames")
			type frame struct {
				typ websocket.MessageType
				b   []byte
			}
			frames := make(chan frame, 16)
			door := channel.NewDoor(executor.New(fsroot.NewMemory(), executor.Options{}), executor.BuiltinAdmitted(), channel.DoorOptions{})
			go func() {
				for {
					typ, b, err := ws.Read(context.Background())
					if err != nil {
						close(frames)
						return
					}
					frames <- frame{typ, b}
					if _, err := wire.ParseCall(b); err == nil {
						ws.Write(context.Background(), websocket.MessageText, door.Serve(context.Background(), b))
					}
				}
			}()
			r.waitRoot(t, func(m map[string]any) bool { return connected(m) && m["name"] == "frames" })
			if got := r.call(t, "now", map[string]any{}); got["ok"] != true {
				t.Fatalf("the call settled %v", got)
			}
			seen := map[string]websocket.MessageType{}
			for len(seen) < 3 {
				f, ok := <-frames
				if !ok {
					t.Fatalf("the socket ended having seen %v", seen)
				}
				switch {
				case bytes.Contains(f.b, []byte(`"v":`)):
					seen["call"] = f.typ
				case channel.ControlType(f.b) == channel.AdmittedType:
					seen["admitted"] = f.typ
				case bytes.Contains(f.b, []byte(`"holding"`)):
					seen["holding"] = f.typ
				}
			}
			if seen["call"] != c.want || seen["admitted"] != c.want || seen["holding"] != websocket.MessageText {
				t.Fatalf("frames by kind %v, want the call and the admitted set as %v and holding as text", seen, c.want)
			}
		})
	}
}
