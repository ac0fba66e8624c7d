package voice_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/live/gemini"
	"github.com/voicebox-go/voicebox/internal/core/live/livetest"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/voice"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// bound is the hang guard of every wait; nothing asserts how long anything took.
const bound = 20 * time.Second

// catalogue is a test double of the assistant's catalogue.
type catalogue struct {
	mu       sync.Mutex
	decls    []tool.Declaration
	calls    []string
	answers  func(name string, args json.RawMessage) json.RawMessage
	onChange []func()
}

var writeFile = tool.Declaration{Name: "write_file", Description: "Write a file in the workspace",
	Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"content":{"type":"string"}},"required":["name","content"]}`)}

func (c *catalogue) Declarations() []tool.Declaration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]tool.Declaration(nil), c.decls...)
}
func (c *catalogue) Instruction() string {
	return "Use the tools; never claim what you did not observe."
}
func (c *catalogue) Call(_ context.Context, name string, args json.RawMessage) json.RawMessage {
	c.mu.Lock()
	c.calls = append(c.calls, name+" "+string(args))
	answers := c.answers
	c.mu.Unlock()
	if answers != nil {
		return answers(name, args)
	}
	return json.RawMessage(`{"ok":true,"name":"a.txt","bytes":5}`)
}
func (c *catalogue) OnChange(fn func()) func() {
	c.mu.Lock()
	c.onChange = append(c.onChange, fn)
	c.mu.Unlock()
	return func() {}
}
func (c *catalogue) change(decls ...tool.Declaration) {
	c.mu.Lock()
	c.decls = decls
	fns := append([]func(){}, c.onChange...)
	c.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
func (c *catalogue) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

type relay struct {
	url   string
	state *hoststate.Dir
	h     *voice.Handler
	keys  *voice.Keys
	set   *voice.Settings
	log   *livetest.LogBuffer
	cat   *catalogue
}

type relayOpts struct {
	fx       *vendorfixture.Fixture
	env      map[string]string
	gate     *server.Gate
	max      int
	provider string
	// catalogue, when set, is the session's catalogue instead of the test's own.
	catalogue tool.Catalogue
}

func startRelay(t *testing.T, o relayOpts) *relay {
	t.Helper()
	state, err := hoststate.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &livetest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	srv, err := server.New(server.Config{Public: t.TempDir(), Log: log, HostToken: state.CheckHostToken, Gate: o.gate})
	if err != nil {
		t.Fatal(err)
	}
	reg := voice.Providers()
	env := o.env
	keys := voice.NewKeys(state, func(k string) string { return env[k] }, voice.KeyEnvs(reg))
	set := voice.NewSettings(reg, state)
	if o.provider != "" {
		if _, err := set.Set(live.Choice{Provider: o.provider}); err != nil {
			t.Fatal(err)
		}
	}
	cat := &catalogue{decls: []tool.Declaration{writeFile}}
	var use tool.Catalogue = cat
	if o.catalogue != nil {
		use = o.catalogue
	}
	opts := voice.Options{Providers: reg, Settings: set, Keys: keys, Catalogue: use, PageOrigin: srv.PageOrigin, Log: log, MaxSockets: o.max}
	if o.fx != nil {
		opts.BaseURLs = map[string]string{openai.Name: o.fx.OpenAIURL(), gemini.Name: o.fx.GeminiURL()}
	}
	if o.gate != nil {
		opts.PageSession, opts.SessionOf, opts.Sessions = o.gate.Session, o.gate.SessionID, o.gate.Store()
	}
	h := voice.New(opts)
	voice.Register(srv, h, state.CheckHostToken)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		h.Close()
		ts.Close()
	})
	return &relay{url: ts.URL, state: state, h: h, keys: keys, set: set, log: logs, cat: cat}
}

// page is the test's stand-in for the page on /live.
type page struct {
	t      *testing.T
	ws     *websocket.Conn
	mu     sync.Mutex
	frames []map[string]any
	raw    []string
	audio  []byte
	code   websocket.StatusCode
	ended  bool
	change chan struct{}
}

func dialPage(t *testing.T, r *relay, header http.Header) *page {
	t.Helper()
	p, resp, err := tryDial(t, r, header)
	if err != nil {
		t.Fatalf("dial /live: %v (%v)", err, resp)
	}
	return p
}

func tryDial(t *testing.T, r *relay, header http.Header) (*page, *http.Response, error) {
	if header == nil {
		header = http.Header{}
	}
	if header.Get("Origin") == "" {
		header.Set("Origin", r.url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http")+"/live", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	p := &page{t: t, ws: ws, change: make(chan struct{})}
	t.Cleanup(func() { ws.CloseNow() })
	go p.read()
	return p, resp, nil
}

func (p *page) read() {
	for {
		typ, b, err := p.ws.Read(context.Background())
		p.mu.Lock()
		if err != nil {
			p.ended, p.code = true, websocket.CloseStatus(err)
		} else if typ == websocket.MessageBinary {
			p.audio = append(p.audio, b...)
		} else {
			var m map[string]any
			json.Unmarshal(b, &m)
			p.frames = append(p.frames, m)
			p.raw = append(p.raw, string(b))
		}
		close(p.change)
		p.change = make(chan struct{})
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// wait waits until cond holds over the page's state.
func (p *page) wait(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.After(bound)
	for {
		p.mu.Lock()
		ch := p.change
		ok := cond()
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			p.mu.Lock()
			defer p.mu.Unlock()
			p.t.Fatalf("page: %s: not within %v; frames %q, ended %v (%d)", what, bound, p.raw, p.ended, p.code)
		}
	}
}

// frame waits for the n-th (from 1) frame of typ, with state when typ is "state", and returns it.
func (p *page) frame(typ, state string, n int) map[string]any {
	p.t.Helper()
	var got map[string]any
	p.wait("frame "+typ+" "+state, func() bool {
		k := 0
		for _, f := range p.frames {
			if f["type"] == typ && (state == "" || f["state"] == state) {
				if k++; k == n {
					got = f
					return true
				}
			}
		}
		return false
	})
	return got
}

func (p *page) closed() websocket.StatusCode {
	p.t.Helper()
	p.wait("close", func() bool { return p.ended })
	return p.code
}

func (p *page) sendBinary(b []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := p.ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		p.t.Fatalf("page write: %v", err)
	}
}

func (p *page) sendJSON(s string) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := p.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		p.t.Fatalf("page write: %v", err)
	}
}

func (p *page) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw, "\n")
}

// noSecrets fails when the key appears in what the page received or in the relay's log.
func noSecrets(t *testing.T, r *relay, p *page, key string) {
	t.Helper()
	if strings.Contains(p.text(), key) {
		t.Errorf("the key reached the page")
	}
	if strings.Contains(r.log.String(), key) {
		t.Errorf("the key reached the relay's log")
	}
}

// TestVoiceTurnWithAToolCall is the whole loop for each vendor: the page's audio reaches the
// vendor at the announced rate, the vendor calls write_file, the catalogue answers, the vendor
// gets the answer under the same id and speaks, and the page gets the audio and the captions.
func TestVoiceTurnWithAToolCall(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{openai.Name, gemini.Name} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			reply := vendorfixture.Tone(24000, 200, 500)
			outputs := make(chan string, 4)
			var once sync.Once
			fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
				OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
					if c.AudioBytes() >= 4*640 {
						once.Do(func() {
							c.Hear("save a note")
							c.CallTools(vendorfixture.ToolCall{ID: "call_7", Name: "write_file", Args: `{"name":"a.txt","content":"hello"}`})
						})
					}
				},
				OnToolOutput: func(c *vendorfixture.Conn, id string, out json.RawMessage) {
					outputs <- id + " " + string(out)
					if c.Vendor == vendorfixture.Gemini {
						c.Say("Saved it.", reply)
					}
				},
				OnResponseCreate: func(c *vendorfixture.Conn) { c.Say("Saved it.", reply) },
			}})
			key := fx.Key()
			r := startRelay(t, relayOpts{fx: fx, provider: provider, env: map[string]string{"OPENAI_API_KEY": key, "GEMINI_API_KEY": key}})
			p := dialPage(t, r, nil)
			rate := p.frame("rate", "", 1)
			wantRate := map[string]float64{openai.Name: 24000, gemini.Name: 16000}[provider]
			if rate["inputRate"] != wantRate || rate["outputRate"] != float64(24000) || rate["provider"] != provider {
				t.Fatalf("rate frame %v", rate)
			}
			p.frame("state", "ready", 1)
			frame := vendorfixture.Tone(int(wantRate), 20, 440)
			for range 6 {
				p.sendBinary(frame)
			}
			got := <-outputs
			if !strings.HasPrefix(got, "call_7 ") || !strings.Contains(got, `bytes`) {
				t.Fatalf("the vendor got %q; want the catalogue's answer under call_7", got)
			}
			p.wait("the reply's audio", func() bool { return len(p.audio) >= len(reply) })
			call := p.frame("tool-call", "", 1)
			res := p.frame("tool-result", "", 1)
			if call["name"] != "write_file" || call["id"] != "call_7" || res["id"] != "call_7" || res["refused"] != nil {
				t.Fatalf("tool frames %v / %v", call, res)
			}
			if calls := r.cat.Calls(); len(calls) != 1 || calls[0] != `write_file {"name":"a.txt","content":"hello"}` {
				t.Fatalf("catalogue calls %q", calls)
			}
			p.wait("both captions", func() bool {
				all := strings.Join(p.raw, "\n")
				return strings.Contains(all, `"kind":"user","text":"save a note"`) && strings.Contains(all, `"kind":"model","text":"Saved it."`)
			})
			conn := fx.Conn(t, 0, bound)
			if provider == openai.Name {
				types := strings.Join(conn.Types(), " ")
				if types != "session.update conversation.item.create response.create" {
					t.Fatalf("vendor frames %q", types)
				}
			}
			if v := fx.Violations(); len(v) > 0 {
				t.Fatalf("the fixture refused %q", v)
			}
			p.sendJSON(`{"type":"close"}`)
			p.frame("state", "closed", 1)
			if code := p.closed(); code != websocket.StatusNormalClosure {
				t.Fatalf("closed %d", code)
			}
			noSecrets(t, r, p, key)
		})
	}
}

func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	t.Run("no key points to the offline mode", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOpts{provider: openai.Name})
		p := dialPage(t, r, nil)
		f := p.frame("refused", "", 1)
		if f["refused"] != string(refusal.LiveKeyMissing) || !strings.Contains(f["why"].(string), "offline mode") || !strings.Contains(f["why"].(string), "OPENAI_API_KEY") {
			t.Fatalf("frame %v", f)
		}
		if code := p.closed(); code != websocket.StatusPolicyViolation {
			t.Fatalf("closed %d", code)
		}
	})
	t.Run("claude has no live voice", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOpts{provider: voice.Claude})
		p := dialPage(t, r, nil)
		f := p.frame("refused", "", 1)
		if f["refused"] != string(refusal.LiveProviderUnavailable) || !strings.Contains(f["why"].(string), "no live voice API") {
			t.Fatalf("frame %v", f)
		}
	})
	t.Run("a foreign origin", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOpts{})
		_, resp, err := tryDial(t, r, http.Header{"Origin": {"http://evil.example"}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a foreign origin: %v", err)
		}
	})
	t.Run("the gate needs a session", func(t *testing.T) {
		t.Parallel()
		r := startRelay(t, relayOpts{gate: server.NewGate()})
		_, resp, err := tryDial(t, r, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("no session: %v", err)
		}
	})
	t.Run("too many sockets", func(t *testing.T) {
		t.Parallel()
		fx := vendorfixture.Start(t, vendorfixture.Options{})
		r := startRelay(t, relayOpts{max: 1, fx: fx, provider: openai.Name, env: map[string]string{"OPENAI_API_KEY": fx.Key()}})
		a := dialPage(t, r, nil)
		a.frame("state", "ready", 1)
		b := dialPage(t, r, nil)
		if f := b.frame("refused", "", 1); f["refused"] != string(refusal.TooManySockets) {
			t.Fatalf("frame %v", f)
		}
		a.sendJSON(`{"type":"close"}`)
		a.closed()
		deadline := time.Now().Add(bound)
		for r.h.Open() > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		c := dialPage(t, r, nil)
		c.frame("state", "ready", 1)
	})
}

func TestBadFramesAreRefusedAndTheSessionGoesOn(t *testing.T) {
	t.Parallel()
	fx := vendorfixture.Start(t, vendorfixture.Options{})
	r := startRelay(t, relayOpts{fx: fx, provider: openai.Name, env: map[string]string{"OPENAI_API_KEY": fx.Key()}})
	p := dialPage(t, r, nil)
	p.frame("state", "ready", 1)
	p.sendBinary([]byte{1, 2, 3})
	p.sendBinary(make([]byte, voice.MaxAudioFrameBytes+2))
	p.sendJSON(`{"type":"shout"}`)
	p.sendJSON(`not json`)
	p.sendJSON(`{"type":"text","text":"hi","extra":1}`)
	p.sendJSON(`{"type":"text","text":"` + strings.Repeat("a", voice.MaxTextBytes+1) + `"}`)
	p.frame("refused", "", 6)
	var rules []string
	p.mu.Lock()
	for _, f := range p.frames {
		if f["type"] == "refused" {
			rules = append(rules, f["refused"].(string))
		}
	}
	p.mu.Unlock()
	want := "live-audio-frame-invalid live-audio-frame-invalid live-message-invalid live-message-invalid live-message-invalid live-message-invalid"
	if strings.Join(rules, " ") != want {
		t.Fatalf("refusals %q", rules)
	}
	p.sendBinary(make([]byte, 960))
	conn := fx.Conn(t, 0, bound)
	conn.Wait(t, bound, "the good frame", func(c *vendorfixture.Conn) bool { return c.AudioBytes() == 960 })
	p.sendJSON(`{"type":"interrupt","playedMs":120}`)
	p.sendJSON(`{"type":"text","text":"still here"}`)
	conn.WaitType(t, bound, "response.create", 1)
	if v := fx.Violations(); len(v) > 0 {
		t.Fatalf("violations %q", v)
	}
}

func TestToolLoopAnswersEveryCallOnce(t *testing.T) {
	t.Parallel()
	outputs := make(chan string, 8)
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnSetup: func(c *vendorfixture.Conn) {
			c.CallTools(
				vendorfixture.ToolCall{ID: "c-ok", Name: "write_file", Args: `{"name":"a","content":"b"}`},
				vendorfixture.ToolCall{ID: "c-bad-args", Name: "write_file", Args: `{"name":`},
				vendorfixture.ToolCall{ID: "c-panic", Name: "explode", Args: `{}`},
				vendorfixture.ToolCall{ID: "c-junk", Name: "junk", Args: `{}`},
				vendorfixture.ToolCall{ID: "c-refused", Name: "delete_file", Args: `{"name":"x"}`},
			)
		},
		OnToolOutput: func(c *vendorfixture.Conn, id string, out json.RawMessage) { outputs <- id + " " + string(out) },
	}})
	r := startRelay(t, relayOpts{fx: fx, provider: openai.Name, env: map[string]string{"OPENAI_API_KEY": fx.Key()}})
	r.cat.answers = func(name string, args json.RawMessage) json.RawMessage {
		switch name {
		case "explode":
			panic("boom")
		case "junk":
			return json.RawMessage(`[1,2]`)
		case "delete_file":
			return json.RawMessage(`{"refused":"permission-denied","why":"the person said no"}`)
		}
		return json.RawMessage(`{"ok":true}`)
	}
	p := dialPage(t, r, nil)
	got := map[string]string{}
	for range 5 {
		o := <-outputs
		id, out, _ := strings.Cut(o, " ")
		if _, dup := got[id]; dup {
			t.Fatalf("call %s answered twice", id)
		}
		got[id] = out
	}
	for id, want := range map[string]string{"c-ok": `{\"ok\":true}`, "c-bad-args": "invalid-tool-arguments", "c-panic": "exec-threw", "c-junk": "exec-threw", "c-refused": "permission-denied"} {
		if !strings.Contains(got[id], want) {
			t.Errorf("%s answered %s; want %s", id, got[id], want)
		}
	}
	conn := fx.Conn(t, 0, bound)
	conn.WaitType(t, bound, "response.create", 1)
	p.frame("tool-result", "", 5)
	for _, c := range r.cat.Calls() {
		if strings.HasPrefix(c, "write_file {\"name\":") && !strings.Contains(c, `"content"`) {
			t.Fatalf("a malformed call reached the catalogue: %q", c)
		}
	}
	if n := len(r.cat.Calls()); n != 4 {
		t.Fatalf("the catalogue ran %d calls; want 4 (not the malformed one)", n)
	}
	if v := fx.Violations(); len(v) > 0 {
		t.Fatalf("violations %q", v)
	}
}

func TestToolChangesReachTheSession(t *testing.T) {
	t.Parallel()
	listFiles := tool.Declaration{Name: "list_files", Description: "List files", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	for _, provider := range []string{openai.Name, gemini.Name} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			fx := vendorfixture.Start(t, vendorfixture.Options{})
			r := startRelay(t, relayOpts{fx: fx, provider: provider, env: map[string]string{"OPENAI_API_KEY": fx.Key(), "GEMINI_API_KEY": fx.Key()}})
			p := dialPage(t, r, nil)
			p.frame("state", "ready", 1)
			r.cat.change(writeFile, listFiles)
			if provider == openai.Name {
				fr := fx.Conn(t, 0, bound).WaitType(t, bound, "session.update", 2)
				if !bytes.Contains(fr.Raw, []byte(`"name":"list_files"`)) {
					t.Fatalf("second session.update %s", fr.Raw)
				}
				return
			}
			n := p.frame("notice", "", 1)
			if !strings.Contains(n["text"].(string), "next session") {
				t.Fatalf("notice %v", n)
			}
		})
	}
}

func TestShutdownAndRevocationCloseSockets(t *testing.T) {
	t.Parallel()
	fx := vendorfixture.Start(t, vendorfixture.Options{})
	gate := server.NewGate()
	r := startRelay(t, relayOpts{fx: fx, gate: gate, provider: gemini.Name, env: map[string]string{"GEMINI_API_KEY": fx.Key()}})
	cookie := signIn(t, r, gate)
	p := dialPage(t, r, http.Header{"Cookie": {cookie}})
	p.frame("state", "ready", 1)
	req, _ := http.NewRequest("GET", r.url+"/", nil)
	req.Header.Set("Cookie", cookie)
	if n, ok, err := gate.Store().Revoke(gate.SessionID(req)); err != nil || !ok || n != 1 {
		t.Fatalf("Revoke closed %d sockets (%v); want the one /live socket", n, ok)
	}
	if f := p.frame("refused", "", 1); f["refused"] != string(refusal.SessionRevoked) {
		t.Fatalf("revoked: %v", f)
	}
	if code := p.closed(); code != websocket.StatusPolicyViolation {
		t.Fatalf("revoked: closed %d", code)
	}
	if _, resp, err := tryDial(t, r, http.Header{"Cookie": {cookie}}); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked session dialed /live: %v", err)
	}
	cookie = signIn(t, r, gate)
	q := dialPage(t, r, http.Header{"Cookie": {cookie}})
	q.frame("state", "ready", 1)
	r.h.Close()
	if code := q.closed(); code != websocket.StatusGoingAway {
		t.Fatalf("shutdown: closed %d", code)
	}
	late := dialPage(t, r, http.Header{"Cookie": {cookie}})
	if f := late.frame("refused", "", 1); f["refused"] != string(refusal.RelayShuttingDown) {
		t.Fatalf("after shutdown: %v", f)
	}
	if got := len(fx.Conns()); got != 2 {
		t.Fatalf("%d vendor connections; want 2", got)
	}
	for _, c := range fx.Conns() {
		c.Wait(t, bound, "the vendor connection to close", func(c *vendorfixture.Conn) bool { closed, _ := c.Closed(); return closed })
	}
}

// signIn redeems a gate ticket and returns the session cookie ("vb_session=...").
func signIn(t *testing.T, r *relay, gate *server.Gate) string {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(r.url + "/?" + server.BootstrapParam + "=" + newTicket(t, gate))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == gate.Cookie() {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no session cookie (%d)", resp.StatusCode)
	return ""
}

func do(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set(server.HostTokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func hostToken(t *testing.T, r *relay) string {
	b, err := os.ReadFile(filepath.Join(r.state.Path(), hoststate.HostTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestKeysRoute(t *testing.T) {
	t.Parallel()
	r := startRelay(t, relayOpts{env: map[string]string{"GEMINI_API_KEY": "AIza-from-the-environment-1"}})
	const key = "sk-stored-key-abcdef0123456789"
	if code, body := do(t, "PUT", r.url+"/api/keys", "", `{"provider":"openai","key":"`+key+`"}`); code != 403 || !strings.Contains(body, "host-token-required") {
		t.Fatalf("without the host token: %d %s", code, body)
	}
	tok := hostToken(t, r)
	code, body := do(t, "PUT", r.url+"/api/keys", tok, `{"provider":"openai","key":"`+key+`"}`)
	if code != 200 || strings.Contains(body, key) || !strings.Contains(body, `"keySource":"store"`) {
		t.Fatalf("store a key: %d %s", code, body)
	}
	info, err := os.Stat(filepath.Join(r.state.Path(), voice.KeysFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	if r.keys.Key(openai.Name) != key {
		t.Fatal("the stored key is not the one used")
	}
	for _, bad := range []string{"short", "has a space in it 123", "tab\there-0123456789"} {
		code, body := do(t, "PUT", r.url+"/api/keys", tok, `{"provider":"openai","key":`+string(mustJSON(bad))+`}`)
		if code != 400 || !strings.Contains(body, "live-key-invalid") || strings.Contains(body, bad) {
			t.Fatalf("key %q: %d %s", bad, code, body)
		}
	}
	if code, body := do(t, "PUT", r.url+"/api/keys", tok, `{"provider":"claude","key":"0123456789ab"}`); code != 400 || !strings.Contains(body, "live-provider-unknown") {
		t.Fatalf("a key for claude: %d %s", code, body)
	}
	code, body = do(t, "GET", r.url+"/api/agent-settings", "", "")
	if code != 200 || strings.Contains(body, key) || strings.Contains(body, "AIza-from-the-environment-1") {
		t.Fatalf("settings leak a key: %s", body)
	}
	var view struct {
		Providers []struct {
			Name, KeySource string
			KeyConfigured   bool
			Live            bool
			Why             string
		}
	}
	json.Unmarshal([]byte(body), &view)
	got := map[string]string{}
	for _, p := range view.Providers {
		got[p.Name] = p.KeySource
		if p.Name == voice.Claude && (p.Live || !strings.Contains(p.Why, "no live voice API")) {
			t.Fatalf("claude listed as %+v", p)
		}
	}
	if got["openai"] != "store" || got["gemini"] != "environment" {
		t.Fatalf("key sources %v", got)
	}
	if code, _ := do(t, "PUT", r.url+"/api/keys", tok, `{"provider":"openai","key":""}`); code != 200 || r.keys.Key(openai.Name) != "" {
		t.Fatalf("removing the key: %d", code)
	}
	if strings.Contains(r.log.String(), key) {
		t.Fatal("the key reached the log")
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func TestAgentSettingsRoute(t *testing.T) {
	t.Parallel()
	r := startRelay(t, relayOpts{})
	code, body := do(t, "GET", r.url+"/api/agent-settings", "", "")
	if code != 200 || !strings.Contains(body, `"settings":{"provider":"gemini","model":"models/gemini-3.8-live","voice":"Kore","thinking":""}`) {
		t.Fatalf("defaults: %d %s", code, body)
	}
	for _, tc := range []struct {
		body, rule string
	}{
		{`{"provider":"openai","model":"models/gemini-3.8-live"}`, "live-model-refused"},
		{`{"provider":"gemini","voice":"alloy"}`, "live-voice-refused"},
		{`{"provider":"gemini","model":"models/gemini-3.8-live-extended-thinking","thinking":"extreme"}`, "live-thinking-refused"},
		{`{"provider":"mistral"}`, "live-provider-unknown"},
		{`{"provider":"openai","temperature":1}`, "malformed-json"},
	} {
		if code, body := do(t, "PUT", r.url+"/api/agent-settings", "", tc.body); code != 400 || !strings.Contains(body, tc.rule) {
			t.Errorf("PUT %s: %d %s; want %s", tc.body, code, body, tc.rule)
		}
	}
	code, body = do(t, "PUT", r.url+"/api/agent-settings", "", `{"provider":"gemini","model":"models/gemini-3.8-thinking","voice":"Puck"}`)
	if code != 200 || !strings.Contains(body, `"settings":{"provider":"gemini","model":"models/gemini-3.8-live-extended-thinking","voice":"Puck","thinking":"low"}`) {
		t.Fatalf("legacy model: %d %s", code, body)
	}
	if code, _ := do(t, "PUT", r.url+"/api/agent-settings", "", `{"provider":"claude"}`); code != 200 {
		t.Fatalf("claude can be chosen (and says why it cannot talk): %d", code)
	}
	// Settings are kept: a relay started over the same state directory reads them.
	again := voice.NewSettings(voice.Providers(), r.state)
	if c := again.Current(); c.Provider != voice.Claude {
		t.Fatalf("after a restart: %+v", c)
	}
	if code, _ := do(t, "PUT", r.url+"/api/agent-settings", "", `{"provider":"openai","voice":"sage"}`); code != 200 {
		t.Fatal("openai")
	}
	// The next session uses them.
	p := dialPage(t, r, nil)
	if f := p.frame("refused", "", 1); !strings.Contains(f["why"].(string), "OpenAI") {
		t.Fatalf("the next session is not OpenAI's: %v", f)
	}
}

func TestConfiguredFollowsTheSettingsAndKeys(t *testing.T) {
	t.Parallel()
	r := startRelay(t, relayOpts{env: map[string]string{"GEMINI_API_KEY": "AIza-configured-0123456789"}})
	if !r.h.Configured() {
		t.Fatal("gemini with a key: not configured")
	}
	for _, provider := range []string{openai.Name, voice.Claude} {
		if _, err := r.set.Set(live.Choice{Provider: provider}); err != nil {
			t.Fatal(err)
		}
		if r.h.Configured() {
			t.Fatalf("%s without a key (or a live API) reads as configured", provider)
		}
	}
	if err := r.keys.Set(openai.Name, "sk-stored-0123456789"); err != nil {
		t.Fatal(err)
	}
	r.set.Set(live.Choice{Provider: openai.Name})
	if !r.h.Configured() {
		t.Fatal("openai with a stored key: not configured")
	}
}

// newTicket mints a ticket on gate or fails the test.
func newTicket(t testing.TB, gate *server.Gate) string {
	t.Helper()
	tk, err := gate.NewTicket()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
