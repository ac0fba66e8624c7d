package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// testLeaseTTL is the fleet tests' lease bound, short so a dead relay's lease ends soon.
const testLeaseTTL = 2 * time.Second

// member is one relay of a test fleet.
type member struct {
	*Relay
	url, token string
	cancel     func()
	served     chan error
	killed     bool
	console    *lockedBuffer // what the relay printed on its console
}

// startMember starts a relay of the fleet on nats (prefix names the fleet) and stops it when the
// test ends, unless the test killed it first.
func startMember(t testing.TB, nats *fleettest.Server, prefix string, gated bool) *member {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	cfg := Config{Config: core.Config{Listener: ln, StateDir: filepath.Join(t.TempDir(), "state"), Public: public, Gated: gated, Console: &lockedBuffer{}},
		Fleet: fleet.Config{URL: nats.URL(), Prefix: prefix, LeaseTTL: testLeaseTTL}}
	r, err := New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(cfg.StateDir, hoststate.HostTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{Relay: r, url: r.URL(), token: strings.TrimSpace(string(tok)), cancel: cancel, served: make(chan error, 1), console: cfg.Console.(*lockedBuffer)}
	go func() { m.served <- r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if m.killed {
			return // kill waited for Serve
		}
		select {
		case err := <-m.served:
			if err != nil {
				t.Errorf("Serve after the shutdown: %v", err)
			}
		case <-time.After(patience):
			t.Error("Serve did not return after its context ended")
		}
	})
	return m
}

// kill ends the relay as a crash would for the others: its NATS connection drops without a word
// (its lease stays until it expires), then its sockets close.
func (m *member) kill(t testing.TB) {
	t.Helper()
	m.killed = true
	m.Fleet.Close()
	m.cancel()
	select {
	case <-m.served:
	case <-time.After(patience):
		t.Fatal("the killed relay did not stop")
	}
}

// do sends a request with the host token and returns the status and the JSON body.
func (m *member) do(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	if body == nil && method != http.MethodGet {
		body = struct{}{} // as the page and the CLI send: a JSON body with every state change
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, m.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.HostTokenHeader, m.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s answered %d %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// call runs tool through POST /api/root/call on this relay.
func (m *member) call(t testing.TB, tool string, args any) map[string]any {
	t.Helper()
	status, out := m.do(t, http.MethodPost, "/api/root/call", map[string]any{"tool": tool, "args": args})
	if status != http.StatusOK {
		t.Fatalf("POST /api/root/call %s on %s: %d %v", tool, m.url, status, out)
	}
	return out
}

func (m *member) root(t testing.TB) map[string]any {
	t.Helper()
	_, out := m.do(t, http.MethodGet, "/api/root", nil)
	return out
}

// goPage is a page in Go: /channel from the relay's own origin, a door over an executor.
type goPage = hubtest.Peer

// dialPage attaches a page executing with exec to m.
func dialPage(t testing.TB, m *member, exec channel.Executor, header http.Header) *goPage {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Origin", m.url)
	return hubtest.Serve(hubtest.Dial(t, m.url, header, patience), exec)
}

func memoryExecutor() channel.Executor { return executor.New(fsroot.NewMemory(), executor.Options{}) }

func ruleOf(m map[string]any) refusal.Rule {
	s, _ := m["refused"].(string)
	return refusal.Rule(s)
}

// observed returns the answer's observation, failing the test on a refusal.
func observed(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	o, ok := m["observed"].(map[string]any)
	if !ok {
		t.Fatalf("refused: %v", m)
	}
	return o
}

// connectedOn waits until m sees the fleet's executor connected.
func connectedOn(t testing.TB, m *member) {
	t.Helper()
	waitFor(t, "the executor connected as "+m.url+" sees it", func() bool { return m.root(t)["connected"] == true })
}

// TestFleetRoutesCallsToTheExecutorsRelay: a page attached to relay A executes the calls made
// through B and C, each answered once; what B writes, C reads; the root the page declared on A
// shows on every relay; with the page gone, B refuses no-page at once, as a relay alone does.
func TestFleetRoutesCallsToTheExecutorsRelay(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b, c := startMember(t, nats, "route", false), startMember(t, nats, "route", false), startMember(t, nats, "route", false)
	if got := b.call(t, "now", nil); ruleOf(got) != refusal.NoPage {
		t.Fatalf("with no executor anywhere: %v", got)
	}
	page := dialPage(t, a, memoryExecutor(), nil)
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))
	waitFor(t, "the root declared on A shown on C", func() bool { return c.root(t)["name"] == "Browser storage" })
	// Each relay learns of the page's lease on its own: B may hear it after C.
	connectedOn(t, b)
	observed(t, b.call(t, "write-file", map[string]any{"path": "notes.txt", "content": "written through B"}))
	got := observed(t, c.call(t, "read-file", map[string]any{"path": "notes.txt"}))
	if got["content"] != "written through B" {
		t.Fatalf("read through C: %v", got)
	}
	for range 20 { // every call one answer, the page's, whichever relay it came through
		for _, m := range []*member{a, b, c} {
			observed(t, m.call(t, "now", nil))
		}
	}
	page.WS.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the lease released when the page left", func() bool { return b.root(t)["connected"] == false })
	if got := b.call(t, "now", nil); ruleOf(got) != refusal.NoPage {
		t.Fatalf("after the page left: %v", got)
	}
}

// TestFleetTakeoverAcrossRelays: a page attaching to B takes the slot from the page on A, which
// is told "replaced" and closed 4001 (the page's "another tab took over"), and calls through A
// now reach the page on B.
func TestFleetTakeoverAcrossRelays(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "takeover", false), startMember(t, nats, "takeover", false)
	first := dialPage(t, a, memoryExecutor(), nil)
	connectedOn(t, b)
	second := dialPage(t, b, memoryExecutor(), nil)
	if code := first.End(t, patience); code != hub.CloseReplaced {
		t.Fatalf("the displaced page was closed %v, want %v", code, hub.CloseReplaced)
	}
	if !first.SawControl("replaced") {
		t.Fatal("the displaced page was not told it was replaced")
	}
	observed(t, a.call(t, "write-file", map[string]any{"path": "x.txt", "content": "to the second page"}))
	select {
	case c := <-second.Calls:
		if c.Tool != "write-file" {
			t.Fatalf("the second page got %s", c.Tool)
		}
	case <-time.After(patience):
		t.Fatal("the call through A did not reach the page on B")
	}
}

// TestFleetSessionsAndPairings: a session minted on A passes on B; a pairing made through A
// admits the machine on B; revoked through C, the machine's socket on B is closed
// bearer-refused.
func TestFleetSessionsAndPairings(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b, c := startMember(t, nats, "shared", true), startMember(t, nats, "shared", true), startMember(t, nats, "shared", true)

	status, minted := a.do(t, http.MethodPost, "/api/bootstrap", nil)
	if status != http.StatusOK {
		t.Fatalf("bootstrap on A: %d %v", status, minted)
	}
	ticket := minted["url"].(string)[strings.Index(minted["url"].(string), "bootstrap=")+len("bootstrap="):]
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(b.url + "/?bootstrap=" + ticket)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("redeeming A's ticket on B: %d", resp.StatusCode)
	}
	var cookie string
	for _, ck := range jar.Cookies(resp.Request.URL) {
		if ck.Name == b.Core.Gate.Cookie() {
			cookie = ck.Name + "=" + ck.Value
		}
	}
	for _, m := range []*member{a, b, c} {
		req, _ := http.NewRequest(http.MethodGet, m.url+"/api/root", nil)
		req.Header.Set("Cookie", cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the session minted on A, used on %s: %d", m.url, resp.StatusCode)
		}
	}
	if again, err := http.Get(c.url + "/?bootstrap=" + ticket); err != nil || again.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the spent ticket on C: %v %v", again.StatusCode, err)
	}

	status, paired := a.do(t, http.MethodPost, "/api/pair", map[string]any{"name": "build-box"})
	if status != http.StatusOK {
		t.Fatalf("pair on A: %d %v", status, paired)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.url, "http")+"/channel", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	hello, _ := json.Marshal(map[string]string{"type": "hello", "role": "environment", "bearer": paired["bearer"].(string)})
	ws.Write(ctx, websocket.MessageText, hello)
	waitFor(t, "the machine paired through A attached to B", func() bool { return c.root(t)["kind"] == hub.RootMachine })
	if status, out := c.do(t, http.MethodDelete, "/api/pair", map[string]any{"name": "build-box"}); status != http.StatusOK {
		t.Fatalf("revoke on C: %d %v", status, out)
	}
	var refused map[string]any
	for {
		_, frame, err := ws.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("the revoked machine's socket ended with %v", err)
			}
			break
		}
		var f map[string]any
		if json.Unmarshal(frame, &f) == nil && f["type"] == "refused" {
			refused = f
		}
	}
	if refused["refused"] != string(refusal.BearerRefused) {
		t.Fatalf("the revoked machine was told %v", refused)
	}
}

// TestFleetRelayKilledMidCall: the relay holding the page dies with a call of B's in flight,
// after the page wrote the file and before its answer left. B answers that call once,
// outcome-unknown; the page reconnects (to B, as through the load balancer) and takes the lease;
// C's calls reach it there, and the page's history shows the write landed.
func TestFleetRelayKilledMidCall(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b, c := startMember(t, nats, "kill", false), startMember(t, nats, "kill", false), startMember(t, nats, "kill", false)
	started, release := make(chan wire.Call, 1), make(chan struct{})
	defer close(release)
	root := fsroot.NewMemory()
	hist, err := executor.OpenHistory(context.Background(), root, executor.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mem := executor.New(root, executor.Options{History: hist}) // the page's workspace and history, which outlive its relay
	dialPage(t, a, channel.ExecutorFunc(func(ctx context.Context, call wire.Call) (json.RawMessage, error) {
		out, err := mem.Execute(ctx, call) // the write lands...
		started <- call
		select { // ...and its answer never leaves
		case <-release:
		case <-ctx.Done():
		}
		return out, err
	}), nil)
	connectedOn(t, b)
	answer := make(chan map[string]any, 2)
	go func() {
		answer <- b.call(t, "write-file", map[string]any{"path": "maybe.txt", "content": "did it land?"})
	}()
	select {
	case <-started:
	case <-time.After(patience):
		t.Fatal("the call through B never reached the page on A")
	}
	a.kill(t)
	var got map[string]any
	select {
	case got = <-answer:
	case <-time.After(patience):
		t.Fatal("the call in flight on the dead relay was never answered")
	}
	if ruleOf(got) != refusal.OutcomeUnknown {
		t.Fatalf("the call in flight on the dead relay: %v", got)
	}
	dialPage(t, b, mem, nil) // the page, reconnected through the load balancer
	waitFor(t, "C routing to the page now on B", func() bool {
		return c.call(t, "now", nil)["ok"] == true
	})
	// The person (or the caller) looks before trying again: the history says the write landed.
	history := observed(t, c.call(t, "list-history", nil))
	if !strings.Contains(fmt.Sprint(history), "maybe.txt") {
		t.Fatalf("the history does not show the write whose outcome was unknown: %v", history)
	}
	if got := observed(t, c.call(t, "read-file", map[string]any{"path": "maybe.txt"})); got["content"] != "did it land?" {
		t.Fatalf("read through C: %v", got)
	}
	select {
	case extra := <-answer:
		t.Fatalf("a second answer to one call: %v", extra)
	default:
	}
}

// TestFleetNATSStoppedAndRestarted: with NATS down, a call through B (whose executor is on A)
// is refused fleet-unavailable at once, and the page on A is still served through A; with NATS
// back, B routes again, by itself, and so it does after a NATS that comes back empty.
func TestFleetNATSStoppedAndRestarted(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "restart", false), startMember(t, nats, "restart", false)
	dialPage(t, a, memoryExecutor(), nil)
	connectedOn(t, b)
	observed(t, b.call(t, "now", nil))
	nats.Stop()
	waitFor(t, "B noticing NATS is gone", func() bool { return !b.Fleet.Connected() })
	if got := b.call(t, "now", nil); ruleOf(got) != refusal.FleetUnavailable {
		t.Fatalf("a routed call with NATS down: %v", got)
	}
	observed(t, a.call(t, "now", nil)) // the executor's own relay serves it without NATS
	nats.Restart()
	waitFor(t, "B routing again once NATS is back", func() bool { return b.call(t, "now", nil)["ok"] == true })
	nats.RestartEmpty() // a NATS that kept nothing: the buckets are made again, the lease taken again
	waitFor(t, "B routing again once an empty NATS is back", func() bool { return b.call(t, "now", nil)["ok"] == true })
}

// TestFleetEventsAndApprovals: with no page following any relay's /api/events, a delete through
// B is refused no-page at once; a page following /api/events on A sees a call made through B;
// a delete made through B waits for the person, whose decision, posted to A, lets it run.
func TestFleetEventsAndApprovals(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "events", false), startMember(t, nats, "events", false)
	page := dialPage(t, a, memoryExecutor(), nil)
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))
	waitFor(t, "the root declared on A shown on B", func() bool { return b.root(t)["kind"] == "opfs" })
	observed(t, a.call(t, "write-file", map[string]any{"path": "old.txt", "content": "bye"}))
	// Nobody follows any relay's event stream yet: nobody can approve, so the call is refused
	// no-page at once, as on a relay alone.
	if _, out := b.do(t, http.MethodPost, "/api/turn", map[string]any{"action": map[string]any{"verb": "delete_file", "name": "old.txt"}}); ruleOf(out) != refusal.NoPage {
		t.Fatalf("a delete through B with no page following the events anywhere: %v", out)
	}

	req, _ := http.NewRequest(http.MethodGet, a.url+"/api/events", nil)
	req.Header.Set("Origin", a.url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		kind := ""
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "event: "); ok {
				kind = k
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				events <- kind + " " + d
			}
		}
		close(events)
	}()
	turn := make(chan map[string]any, 1)
	var turned map[string]any // the turn's answer, once next has seen it
	next := func(kind string) string {
		t.Helper()
		answered := (<-chan map[string]any)(turn)
		if turned != nil {
			answered = nil
		}
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("the event stream ended before %s", kind)
				}
				if strings.HasPrefix(e, kind+" ") {
					return strings.TrimPrefix(e, kind+" ")
				}
			case turned = <-answered:
				answered = nil
			case <-time.After(patience):
				t.Fatalf("no %s event on A; the turn through B answered %v", kind, turned)
			}
		}
	}
	next("hello")
	go func() {
		_, out := b.do(t, http.MethodPost, "/api/turn", map[string]any{"action": map[string]any{"verb": "delete_file", "name": "old.txt"}})
		turn <- out
	}()
	var ap struct{ ID string }
	json.Unmarshal([]byte(next("approval")), &ap)
	if ap.ID == "" {
		t.Fatal("the approval event carried no id")
	}
	if status, out := a.do(t, http.MethodPost, "/api/approvals/"+ap.ID, map[string]any{"approve": true}); status != http.StatusOK {
		t.Fatalf("approving on A a request waiting on B: %d %v", status, out)
	}
	next("call")
	if turned == nil {
		select {
		case turned = <-turn:
		case <-time.After(patience):
			t.Fatal("the approved delete never finished")
		}
	}
	if turned["ok"] != true {
		t.Fatalf("the approved delete: %v", turned)
	}
	if got := a.call(t, "read-file", map[string]any{"path": "old.txt"}); ruleOf(got) == "" {
		t.Fatalf("the file is still there: %v", got)
	}
}

// TestFleetAgentSettingsAreShared: the voice settings chosen through one relay are the ones
// every relay's next session starts with.
func TestFleetAgentSettingsAreShared(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "settings", false), startMember(t, nats, "settings", false)
	if status, out := a.do(t, http.MethodPut, "/api/agent-settings", map[string]any{"provider": "openai", "voice": "verse"}); status != http.StatusOK {
		t.Fatalf("PUT on A: %d %v", status, out)
	}
	_, out := b.do(t, http.MethodGet, "/api/agent-settings", nil)
	settings, _ := out["settings"].(map[string]any)
	if settings["provider"] != "openai" || settings["voice"] != "verse" {
		t.Fatalf("B's settings: %v", out)
	}
}

// TestFleetThePagesOfferReachesEveryRelay: the mini-app tools the page on A offers are offered
// to the model on B too, and leave with the page.
func TestFleetThePagesOfferReachesEveryRelay(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "offer", false), startMember(t, nats, "offer", false)
	page := dialPage(t, a, memoryExecutor(), nil)
	appTool := miniapp.ModelName("app_timer", "start")
	decls, _ := json.Marshal([]tool.Declaration{{Name: appTool, Description: "Start the timer", Parameters: json.RawMessage(`{"type":"object"}`)}})
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"tools","tools":`+string(decls)+`}`))
	offered := func(m *member) bool {
		for _, d := range m.ExternalApps.Declarations() {
			if d.Name == appTool {
				return true
			}
		}
		return false
	}
	waitFor(t, "the page's tool offered on B", func() bool { return offered(b) })
	page.WS.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the tool gone from B with the page", func() bool { return !offered(b) })
}

// TestFleetRelayStartsWithoutNATS: a relay whose NATS is not up yet serves what needs no shared
// state, refuses what does fleet-unavailable (a pairing, 503), and joins when NATS comes.
func TestFleetRelayStartsWithoutNATS(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	nats.Stop()
	a := startMember(t, nats, "late", false)
	if status, out := a.do(t, http.MethodGet, "/api/health", nil); status != http.StatusOK {
		t.Fatalf("health without NATS: %d %v", status, out)
	}
	if status, out := a.do(t, http.MethodPost, "/api/pair", map[string]any{"name": "box"}); status != http.StatusServiceUnavailable || ruleOf(out) != refusal.FleetUnavailable {
		t.Fatalf("a pairing without NATS: %d %v", status, out)
	}
	nats.Restart()
	b := startMember(t, nats, "late", false)
	dialPage(t, b, memoryExecutor(), nil)
	waitFor(t, "A routing to the page on B once NATS came", func() bool { return a.call(t, "now", nil)["ok"] == true })
}

// TestFleetCallIDsOfTwoRelaysDoNotMix: the same callId asked at once on the page's relay and
// through another ("relay-1" is every relay's first) reaches the page as two calls, and each
// caller gets its own answer back under its own id.
func TestFleetCallIDsOfTwoRelaysDoNotMix(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "ids", false), startMember(t, nats, "ids", false)
	var arrived sync.WaitGroup
	arrived.Add(2)
	echo := channel.ExecutorFunc(func(ctx context.Context, call wire.Call) (json.RawMessage, error) {
		arrived.Done()
		arrived.Wait() // both calls are in flight before either is answered
		return call.Args, nil
	})
	dialPage(t, a, echo, nil)
	connectedOn(t, b)
	ask := func(m *member, who string) <-chan wire.Answer {
		out := make(chan wire.Answer, 1)
		go func() {
			out <- m.Hub.Ask(context.Background(), wire.Call{CallID: "same-1", Tool: "now", DescriptorID: executor.BuiltinDescriptor,
				Args: json.RawMessage(`{"who":"` + who + `"}`), BoundsEcho: json.RawMessage(`{}`)})
		}()
		return out
	}
	fromA, fromB := ask(a, "a"), ask(b, "b")
	for who, ch := range map[string]<-chan wire.Answer{"a": fromA, "b": fromB} {
		select {
		case ans := <-ch:
			if !ans.OK || ans.CallID != "same-1" || string(ans.Observed) != `{"who":"`+who+`"}` {
				t.Fatalf("the caller on %s got %+v", who, ans)
			}
		case <-time.After(patience):
			t.Fatalf("the caller on %s got no answer", who)
		}
	}
}

// TestFleetHammer: pages keep taking the slot from each other on two relays while callers on
// both ask without pause; of two pages attaching, one keeps the slot and the other is replaced. Every call gets one answer, the page's or a rule that names why
// (no-page while the slot moves, page-closed for a call its page left, outcome-unknown for one
// whose lease moved); once the churn stops, every relay routes to the last page.
func TestFleetHammer(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	ms := []*member{startMember(t, nats, "hammer", false), startMember(t, nats, "hammer", false)}
	allowed := map[refusal.Rule]bool{"": true, refusal.NoPage: true, refusal.PageClosed: true, refusal.OutcomeUnknown: true}
	stop := make(chan struct{})
	var callers sync.WaitGroup
	var answered atomic.Int64
	for g := range 8 {
		callers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a := ms[(g+i)%2].Hub.Ask(context.Background(), wire.Call{CallID: "h-" + strconv.Itoa(g) + "-" + strconv.Itoa(i), Tool: "now",
					DescriptorID: executor.BuiltinDescriptor, Args: json.RawMessage(`{}`), BoundsEcho: json.RawMessage(`{}`)})
				if !allowed[a.Refused] || a.CallID != "h-"+strconv.Itoa(g)+"-"+strconv.Itoa(i) {
					t.Errorf("a call answered %+v", a)
				}
				answered.Add(1)
			}
		})
	}
	var last *goPage
	lastAt := 0 // the relay last is on
	for i := range 12 {
		// Each new page on the other relay than the holder's: on the holder's own relay a new
		// page waits for its person's "Use this tab" (the hub's standby), which is not what this
		// hammers.
		at := 1 - lastAt
		if last == nil {
			at = 0
		}
		next := dialPage(t, ms[at], memoryExecutor(), nil)
		if last == nil {
			last = next
			continue
		}
		// One of the two is replaced: the newer one as a rule, but two relays writing the lease
		// at nearly the same moment are ordered by NATS, so either may win; never both, never
		// neither.
		select {
		case err := <-last.Ended:
			if code := websocket.CloseStatus(err); code != hub.CloseReplaced {
				t.Fatalf("page %d was closed %v, want replaced", i-1, code)
			}
			last, lastAt = next, at
		case err := <-next.Ended:
			if code := websocket.CloseStatus(err); code != hub.CloseReplaced {
				t.Fatalf("page %d was closed %v, want replaced", i, code)
			}
		case <-time.After(patience):
			close(stop)
			callers.Wait()
			t.Fatalf("neither page %d nor page %d was replaced", i-1, i)
		}
	}
	close(stop)
	callers.Wait()
	if answered.Load() == 0 {
		t.Fatal("no call was made")
	}
	for _, m := range ms {
		waitFor(t, "every relay routing to the last page", func() bool { return m.call(t, "now", nil)["ok"] == true })
	}
	select {
	case err := <-last.Ended:
		t.Fatalf("the last page was closed: %v", err)
	default:
	}
}

// signIn mints a bootstrap ticket through minter, redeems it through redeemer and returns the
// session's cookie header.
func signIn(t testing.TB, minter, redeemer *member) string {
	t.Helper()
	status, minted := minter.do(t, http.MethodPost, "/api/bootstrap", nil)
	if status != http.StatusOK {
		t.Fatalf("bootstrap: %d %v", status, minted)
	}
	ticket := minted["url"].(string)[strings.Index(minted["url"].(string), "bootstrap=")+len("bootstrap="):]
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(redeemer.url + "/?bootstrap=" + ticket)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range jar.Cookies(resp.Request.URL) {
		if ck.Name == redeemer.Core.Gate.Cookie() {
			return ck.Name + "=" + ck.Value
		}
	}
	t.Fatalf("redeeming the ticket on %s set no session cookie (%d)", redeemer.url, resp.StatusCode)
	return ""
}

// withCookie answers GET path on m with the session cookie: the status and the refusal's rule.
func withCookie(t testing.TB, m *member, path, cookie string) (int, refusal.Rule) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, m.url+path, nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, ruleOf(out)
}

// TestFleetAGatedPageWaitsOutNATS: with the shared sessions out of reach, a signed-in page whose
// session this relay never checked (it signed in through another) has its /channel closed "try
// again later" (1013, fleet-unavailable), never refused (which would make the page wait for its
// person), and it is admitted once NATS is back.
func TestFleetAGatedPageWaitsOutNATS(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "gatedwait", true), startMember(t, nats, "gatedwait", true)
	cookie := signIn(t, b, b)
	nats.Stop()
	waitFor(t, "A noticing NATS is gone", func() bool { return !a.Fleet.Connected() })
	p := dialPage(t, a, memoryExecutor(), http.Header{"Cookie": {cookie}})
	if code := p.End(t, patience); code != websocket.StatusTryAgainLater || p.SawControl("refused") {
		t.Fatalf("the page was closed %v (refused frame: %v), want 1013 and no refusal", code, p.SawControl("refused"))
	}
	nats.Restart()
	waitFor(t, "A back on NATS", func() bool { return a.Fleet.Connected() })
	dialPage(t, a, memoryExecutor(), http.Header{"Cookie": {cookie}})
	connectedOn(t, a)
}

// TestFleetAGatedPageKeepsWorkingWhileNATSIsAway: the page signed in through A and attached to
// it keeps working through A while NATS is away (fleet.SessionGrace): its requests pass, it
// reconnects its /channel, and its relay's calls reach it; a session A never checked is refused
// fleet-unavailable meanwhile; once NATS is back, a revocation through B ends the session on A.
func TestFleetAGatedPageKeepsWorkingWhileNATSIsAway(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "gatedkeep", true), startMember(t, nats, "gatedkeep", true)
	cookie := signIn(t, a, a)
	other := signIn(t, b, b)
	dialPage(t, a, memoryExecutor(), http.Header{"Cookie": {cookie}})
	connectedOn(t, a)
	if status, rule := withCookie(t, a, "/api/root", cookie); status != http.StatusOK {
		t.Fatalf("the page's request with NATS up: %d %s", status, rule)
	}

	nats.Stop()
	waitFor(t, "A noticing NATS is gone", func() bool { return !a.Fleet.Connected() })
	if status, rule := withCookie(t, a, "/api/root", cookie); status != http.StatusOK {
		t.Fatalf("the page's request to its own relay with NATS away: %d %s, want 200", status, rule)
	}
	again := dialPage(t, a, memoryExecutor(), http.Header{"Cookie": {cookie}}) // the page reloaded
	observed(t, a.call(t, "now", nil))
	select {
	case err := <-again.Ended:
		t.Fatalf("the page's /channel with NATS away ended: %v", err)
	default:
	}
	if status, rule := withCookie(t, a, "/api/root", other); status != http.StatusServiceUnavailable || rule != refusal.FleetUnavailable {
		t.Fatalf("a session A never checked, with NATS away: %d %s, want 503 fleet-unavailable", status, rule)
	}

	nats.Restart()
	waitFor(t, "A and B back on NATS", func() bool { return a.Fleet.Connected() && b.Fleet.Connected() })
	// JetStream may still be recovering its store once NATS accepts connections: the revocation
	// is refused fleet-unavailable (try again) until it has.
	waitFor(t, "revoking every session through B once NATS is back", func() bool {
		status, out := b.do(t, http.MethodDelete, "/api/sessions", nil)
		if status != http.StatusOK && ruleOf(out) != refusal.FleetUnavailable {
			t.Fatalf("revoking every session through B: %d %v", status, out)
		}
		return status == http.StatusOK
	})
	waitFor(t, "A refusing the session revoked through B", func() bool {
		status, _ := withCookie(t, a, "/api/root", cookie)
		return status == http.StatusUnauthorized
	})
}

// TestFleetAMachineWaitsOutNATS: with the shared pairings out of reach, a paired machine's hello
// is closed "try again later" (1013), never refused (which stops `relay env` for good); once NATS
// is back it is admitted.
func TestFleetAMachineWaitsOutNATS(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a := startMember(t, nats, "machinewait", false)
	status, paired := a.do(t, http.MethodPost, "/api/pair", map[string]any{"name": "box"})
	if status != http.StatusOK {
		t.Fatalf("pair: %d %v", status, paired)
	}
	hello, _ := json.Marshal(map[string]string{"type": "hello", "role": "environment", "bearer": paired["bearer"].(string)})
	dial := func() (*websocket.Conn, context.Context) {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		t.Cleanup(cancel)
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http")+"/channel", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.CloseNow() })
		ws.Write(ctx, websocket.MessageText, hello)
		return ws, ctx
	}
	nats.Stop()
	waitFor(t, "A noticing NATS is gone", func() bool { return !a.Fleet.Connected() })
	ws, ctx := dial()
	for {
		_, frame, err := ws.Read(ctx)
		if err != nil {
			if code := websocket.CloseStatus(err); code != websocket.StatusTryAgainLater {
				t.Fatalf("the machine was closed %v (%v), want 1013", code, err)
			}
			break
		}
		if strings.Contains(string(frame), `"refused"`) {
			t.Fatalf("the machine was refused: %s", frame)
		}
	}
	nats.Restart()
	waitFor(t, "A back on NATS", func() bool { return a.Fleet.Connected() })
	dial()
	waitFor(t, "the machine holding the root", func() bool { return a.root(t)["kind"] == hub.RootMachine })
}

// TestFleetRootEventsReachEveryRelay: a page following /api/events on B hears the root the page
// on A declares (the live panel that says where the tools act).
func TestFleetRootEventsReachEveryRelay(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "rootev", false), startMember(t, nats, "rootev", false)
	req, _ := http.NewRequest(http.MethodGet, b.url+"/api/events", nil)
	req.Header.Set("Origin", b.url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	page := dialPage(t, a, memoryExecutor(), nil)
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"handle","name":"Projects"}`))
	deadline := time.After(patience)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("B's event stream ended")
			}
			if strings.HasPrefix(l, "data: ") && strings.Contains(l, `"name":"Projects"`) {
				return
			}
		case <-deadline:
			t.Fatal("B's stream never heard the root declared on A")
		}
	}
}

// followEvents follows GET /api/events on m and returns its events, each "kind data", until
// the test ends.
func followEvents(t testing.TB, m *member) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.url+"/api/events", nil)
	req.Header.Set("Origin", m.url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		kind := ""
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "event: "); ok {
				kind = k
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				select {
				case events <- kind + " " + d:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return events
}

// nextEvent returns the data of the next event of kind, and every event before it.
func nextEvent(t testing.TB, events <-chan string, kind string) (data string, before []string) {
	t.Helper()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the event stream ended before %s (after %v)", kind, before)
			}
			if d, ok := strings.CutPrefix(e, kind+" "); ok {
				return d, before
			}
			before = append(before, e)
		case <-time.After(patience):
			t.Fatalf("no %s event (after %v)", kind, before)
		}
	}
}

// TestFleetAnApprovalEndsWhenItsRelayDies: a delete through B waits for the person, whose page
// follows A. B dies (its NATS connection drops without a word): the page on A is told once that
// the approval ended (approval-settled, outcome requester-gone), approving it then is refused
// 410 approval-requester-gone instead of 404, nothing was deleted, and A serves the next turn.
func TestFleetAnApprovalEndsWhenItsRelayDies(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "apgone", false), startMember(t, nats, "apgone", false)
	page := dialPage(t, a, memoryExecutor(), nil)
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))
	waitFor(t, "the root declared on A shown on B", func() bool { return b.root(t)["kind"] == "opfs" })
	observed(t, a.call(t, "write-file", map[string]any{"path": "keep.txt", "content": "still here"}))
	events := followEvents(t, a)
	nextEvent(t, events, "hello")
	turned := make(chan struct{})
	go func() {
		defer close(turned)
		body, _ := json.Marshal(map[string]any{"action": map[string]any{"verb": "delete_file", "name": "keep.txt"}})
		req, _ := http.NewRequest(http.MethodPost, b.url+"/api/turn", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(server.HostTokenHeader, b.token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close() // B dies first: its answer is an error or a shutdown's refusal
		}
	}()
	data, _ := nextEvent(t, events, "approval")
	var ap struct{ ID string }
	json.Unmarshal([]byte(data), &ap)
	if ap.ID == "" {
		t.Fatalf("the approval event carried no id: %s", data)
	}

	b.kill(t)
	for {
		data, _ := nextEvent(t, events, "approval-settled")
		var settled struct{ ID, Outcome string }
		json.Unmarshal([]byte(data), &settled)
		if settled.ID != ap.ID {
			continue
		}
		if settled.Outcome != fleet.RequesterGone {
			t.Fatalf("the approval of the dead relay settled %q, want %q", settled.Outcome, fleet.RequesterGone)
		}
		break
	}
	status, out := a.do(t, http.MethodPost, "/api/approvals/"+ap.ID, map[string]any{"approve": true})
	if status != http.StatusGone || ruleOf(out) != refusal.ApprovalRequesterGone {
		t.Fatalf("approving the dead relay's request on A: %d %v, want 410 approval-requester-gone", status, out)
	}
	select {
	case <-turned:
	case <-time.After(patience):
		t.Fatal("the turn through the dead relay never ended")
	}
	if got := observed(t, a.call(t, "read-file", map[string]any{"path": "keep.txt"})); got == nil {
		t.Fatal("the file is gone")
	}
	// The next turn through A is served, and the page heard of the dead relay's approval once.
	if status, out := a.do(t, http.MethodPost, "/api/turn", map[string]any{"action": map[string]any{"verb": "read_file", "name": "keep.txt"}}); status != http.StatusOK || out["ok"] != true {
		t.Fatalf("the next turn through A: %d %v", status, out)
	}
	_, before := nextEvent(t, events, "call")
	for _, e := range before {
		if strings.HasPrefix(e, "approval-settled ") && strings.Contains(e, ap.ID) {
			t.Fatalf("the page heard the approval end twice: %v", before)
		}
	}
}

// TestFleetAnOfferOfMarkupReachesEveryRelay: the page's offer is written to the fleet as the
// page sent it, without the six-byte escapes json.Marshal writes for <, > and &: 200 tools whose
// descriptions are 1,000 '<' each (about 220 KB as sent, 1.2 MB escaped, past what NATS takes in
// one message) reach B.
func TestFleetAnOfferOfMarkupReachesEveryRelay(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "markup", false), startMember(t, nats, "markup", false)
	page := dialPage(t, a, memoryExecutor(), nil)
	var decls []tool.Declaration
	for i := range 200 {
		decls = append(decls, tool.Declaration{Name: miniapp.ModelName("app_markup", fmt.Sprintf("t%03d", i)),
			Description: strings.Repeat("<", 1000), Parameters: json.RawMessage(`{"type":"object"}`)})
	}
	var frame bytes.Buffer
	enc := json.NewEncoder(&frame)
	enc.SetEscapeHTML(false)
	enc.Encode(struct {
		Type  string             `json:"type"`
		Tools []tool.Declaration `json:"tools"`
	}{"tools", decls})
	page.WS.Write(context.Background(), websocket.MessageText, bytes.TrimSpace(frame.Bytes()))
	last := decls[len(decls)-1].Name
	offered := func(m *member) bool {
		for _, d := range m.ExternalApps.Declarations() {
			if d.Name == last {
				return true
			}
		}
		return false
	}
	waitFor(t, "the page's tools offered on A", func() bool { return offered(a) })
	waitFor(t, "the page's tools offered on B", func() bool { return offered(b) })
}
