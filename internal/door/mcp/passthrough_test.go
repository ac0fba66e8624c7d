package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// fakeRelay is a relay's /mcp for the pass-through: each tools/call is answered on an event
// stream, a progress notification first, then its result once released (or at once when its
// arguments say "now"); notifications/cancelled are recorded.
type fakeRelay struct {
	release   chan struct{}
	mu        sync.Mutex
	cancelled []string
	headers   []http.Header
}

func (f *fakeRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m struct {
		ID     string          `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, &m)
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	switch {
	case m.Method == "notifications/cancelled":
		var p struct {
			RequestID string `json:"requestId"`
		}
		json.Unmarshal(m.Params, &p)
		f.mu.Lock()
		f.cancelled = append(f.cancelled, p.RequestID)
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	case strings.Contains(string(m.Params), "refuse"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"ok":false,"refused":"mcp-session-unknown","why":"gone"}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
	w.(http.Flusher).Flush()
	if strings.Contains(string(m.Params), "hangup") {
		return // the stream ends with no answer
	}
	if !strings.Contains(string(m.Params), "now") {
		select {
		case <-f.release:
		case <-r.Context().Done():
			return
		}
	}
	fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%q,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"read \\\"x\\\"\"}]}}\n\n", m.ID)
}

// passerOn is a passer on a fake relay, its lines to the client on a channel.
func passerOn(t *testing.T) (*passer, *fakeRelay, chan map[string]any) {
	f := &fakeRelay{release: make(chan struct{})}
	srv := httptest.NewServer(f)
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan map[string]any, 64)
	p := &passer{endpoint: srv.URL, session: "s1", protocol: "2025-06-18", http: srv.Client(),
		log: slog.New(slog.DiscardHandler), ctx: ctx, calls: map[string]*passedCall{}, idle: make(chan func()),
		write: func(b []byte) error {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("the client was sent a line that is not JSON: %s", b)
			}
			lines <- m
			return nil
		}}
	t.Cleanup(func() { cancel(); p.wg.Wait(); srv.Close() })
	return p, f, lines
}

func message(t *testing.T, line string) jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.DecodeMessage([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func nextLine(t *testing.T, lines chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m := <-lines:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing was written to the client")
	}
	return nil
}

func call(id, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"read_file","arguments":` + args + `}}`
}

// TestPasserPassesACallAsBytes: before an initialize the SDK's server answered with a result and
// then notifications/initialized nothing passes (the SDK's server answers, and refuses); after it, a call goes to the relay with the bridge's session and an id
// of the bridge's, and its answer comes back with the client's id, its result as the relay sent
// it, after the notification the relay sent first.
func TestPasserPassesACallAsBytes(t *testing.T) {
	p, f, lines := passerOn(t)
	if p.take(message(t, call(`1`, `{"now":1}`))) {
		t.Fatal("a call passed before the client initialized")
	}
	p.take(message(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if p.take(message(t, call(`2`, `{"now":1}`))) {
		t.Fatal("a call passed after notifications/initialized with no initialize before it")
	}
	if p.take(message(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)) {
		t.Fatal("initialize was kept from the SDK's server")
	}
	p.sent(message(t, `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"invalid params"}}`))
	p.take(message(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if p.take(message(t, call(`3`, `{"now":1}`))) {
		t.Fatal("a call passed after an initialize the SDK's server refused")
	}
	p.sent(message(t, `{"jsonrpc":"2.0","id":0,"result":{}}`))
	if p.take(message(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)) {
		t.Fatal("notifications/initialized was kept from the SDK's server")
	}
	if !p.take(message(t, call(`"a"`, `{"now":1}`))) {
		t.Fatal("a call did not pass once the client initialized")
	}
	if m := nextLine(t, lines); m["method"] != "notifications/progress" {
		t.Fatalf("first came %v, not the relay's notification", m)
	}
	m := nextLine(t, lines)
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if m["id"] != "a" || len(content) != 1 || content[0].(map[string]any)["text"] != `read "x"` {
		t.Fatalf("the answer was %v", m)
	}
	h := f.headers[0]
	if h.Get("Mcp-Session-Id") != "s1" || h.Get("Mcp-Protocol-Version") != "2025-06-18" {
		t.Fatalf("the relay was asked with %v", h)
	}
}

// TestPasserAnswersEachIdOnce: an id in use is refused as the SDK refuses it (id null), past
// MaxBridgedCalls a call is answered too-many-calls, a cancelled call is answered once with an
// error and the relay is told, and a refused POST or a stream that ends early is an error.
func TestPasserAnswersEachIdOnce(t *testing.T) {
	p, f, lines := passerOn(t)
	p.take(message(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	p.sent(message(t, `{"jsonrpc":"2.0","id":0,"result":{}}`))
	p.take(message(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	for i := range MaxBridgedCalls {
		p.take(message(t, call(fmt.Sprint(i), `{}`)))
	}
	for range MaxBridgedCalls {
		if m := nextLine(t, lines); m["method"] != "notifications/progress" {
			t.Fatalf("a held call wrote %v", m)
		}
	}
	p.take(message(t, call(`0`, `{}`)))
	m := nextLine(t, lines)
	e, _ := m["error"].(map[string]any)
	if data, _ := e["data"].(map[string]any); m["id"] != nil || e["code"] != float64(-32600) || data["refused"] != "malformed-call" {
		t.Fatalf("an id in use answered %v", m)
	}
	p.take(message(t, call(`"over"`, `{}`)))
	m = nextLine(t, lines)
	res, _ := m["result"].(map[string]any)
	if content, _ := res["content"].([]any); m["id"] != "over" || res["isError"] != true || !strings.Contains(fmt.Sprint(content), "too-many-calls") {
		t.Fatalf("a call past the bound answered %v", m)
	}
	p.take(message(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`))
	m = nextLine(t, lines)
	e, _ = m["error"].(map[string]any)
	if m["id"] != float64(3) || e == nil {
		t.Fatalf("a cancelled call answered %v", m)
	}
	close(f.release) // every other held call answers now, each once
	seen := map[any]int{}
	for range MaxBridgedCalls - 1 {
		m := nextLine(t, lines)
		seen[m["id"]]++
		if m["result"] == nil {
			t.Fatalf("a released call answered %v", m)
		}
	}
	for id, n := range seen {
		if n != 1 || id == float64(3) {
			t.Fatalf("answers per id: %v", seen)
		}
	}
	f.mu.Lock()
	if len(f.cancelled) != 1 || !strings.HasPrefix(f.cancelled[0], "relay-mcp-") {
		t.Fatalf("the relay was told of cancellations %v", f.cancelled)
	}
	f.mu.Unlock()
	p.take(message(t, call(`"r"`, `{"refuse":1}`)))
	m = nextLine(t, lines)
	e, _ = m["error"].(map[string]any)
	if data, _ := e["data"].(map[string]any); m["id"] != "r" || data["refused"] != "mcp-session-unknown" {
		t.Fatalf("a refused POST answered %v", m)
	}
	p.take(message(t, call(`"h"`, `{"hangup":1}`)))
	nextLine(t, lines) // the notification
	m = nextLine(t, lines)
	e, _ = m["error"].(map[string]any)
	if data, _ := e["data"].(map[string]any); m["id"] != "h" || data["refused"] != "internal-error" {
		t.Fatalf("a stream that ended early answered %v", m)
	}
	select {
	case m := <-lines:
		t.Fatalf("one more line: %v", m)
	default:
	}
}

// TestDecodeMessageReadsLinesAsTheSDKDoes: the bridge's own reading of a line gives the message
// the SDK's jsonrpc.DecodeMessage gives, and refuses what it refuses.
func TestDecodeMessageReadsLinesAsTheSDKDoes(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"name":"a.md"}}}`,
		`{"jsonrpc":"2.0","id":"x\"y","method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"result":{"a":[1,2]}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"m","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":3,"error":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":5}`,
		`{"jsonrpc":"1.0","id":3,"method":"ping"}`,
		`{"id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":3,"error":"x"}`,
		`7`,
	} {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, gotErr := decodeMessage([]byte(line))
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%s: the SDK says %v, the bridge %v", line, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		w, _ := jsonrpc.EncodeMessage(want)
		g, _ := jsonrpc.EncodeMessage(got)
		if string(w) != string(g) {
			t.Errorf("%s: the SDK reads %s, the bridge %s", line, w, g)
		}
	}
}

// TestAnswerOfKeepsTheClientsLineOneLine: the relay's answer to a passed call becomes its
// result or error member as it came, on one line even when the event's data spanned several
// (joined by a newline, which would end the client's line early); a notification is passed on,
// and an answer that is no JSON-RPC message, or has neither result nor error, is an error.
func TestAnswerOfKeepsTheClientsLineOneLine(t *testing.T) {
	p, _, lines := passerOn(t)
	c := &passedCall{wire: "relay-mcp-1"}
	for _, tc := range []struct{ data, member string }{
		{`{"jsonrpc":"2.0","id":"relay-mcp-1","result":{"content":[{"type":"text","text":"a\nb"}]}}`, `"result":{"content":[{"type":"text","text":"a\nb"}]}`},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"relay-mcp-1\",\n\"result\":{\"content\":\n[{\"type\":\"text\",\"text\":\"x\"}]}}", `"result":{"content":[{"type":"text","text":"x"}]}`},
		{`{"jsonrpc":"2.0","id":"relay-mcp-1","error":{"code":-32603,"message":"no"}}`, `"error":{"code":-32603,"message":"no"}`},
	} {
		if got := string(p.answerOf(c, []byte(tc.data), false)); got != tc.member {
			t.Errorf("the answer %q gave the member %s, want %s", tc.data, got, tc.member)
		}
	}
	for _, data := range []string{`{"jsonrpc":"2.0","id":"relay-mcp-1"}`, `{"jsonrpc":"2.0","id":"relay-mcp-1","result":{"a":`, `not json`} {
		if got := string(p.answerOf(c, []byte(data), false)); !strings.HasPrefix(got, `"error":`) || !strings.Contains(got, "internal-error") {
			t.Errorf("the answer %q gave %s, want an internal-error", data, got)
		}
	}
	if got := p.answerOf(c, []byte("{\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}"), false); got != nil {
		t.Errorf("a notification was taken for the answer: %s", got)
	}
	if m := nextLine(t, lines); m["method"] != "notifications/progress" {
		t.Errorf("the notification was passed on as %v", m)
	}
	if got := p.answerOf(c, []byte(`{"jsonrpc":"2.0","id":"relay-mcp-9","result":{}}`), false); got != nil {
		t.Errorf("an answer to another id was taken for this call's: %s", got)
	}
}

// TestTheBridgeKeepsAConnectionForEachCall: MaxBridgedCalls calls at once, answered, then as
// many again, reach the relay on the connections of the first (net/http keeps 2 a host: the
// others were closed and dialled again), and ask for no gzip.
func TestTheBridgeKeepsAConnectionForEachCall(t *testing.T) {
	f := &fakeRelay{release: make(chan struct{})}
	srv := httptest.NewUnstartedServer(f)
	var dials atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	toRelay := relayTransport()
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan map[string]any, 4*MaxBridgedCalls)
	p := &passer{endpoint: srv.URL, session: "s1", protocol: "2025-06-18", http: &http.Client{Transport: toRelay},
		log: slog.New(slog.DiscardHandler), ctx: ctx, calls: map[string]*passedCall{}, idle: make(chan func()), ready: true,
		write: func(b []byte) error {
			var m map[string]any
			json.Unmarshal(b, &m)
			lines <- m
			return nil
		}}
	t.Cleanup(func() { cancel(); p.wg.Wait(); toRelay.CloseIdleConnections(); srv.Close() })
	for round := range 2 {
		for i := range MaxBridgedCalls {
			if !p.take(message(t, call(fmt.Sprint(round*100+i), `{"wait":1}`))) {
				t.Fatal("a call was not passed")
			}
		}
		for range MaxBridgedCalls { // each call's progress: all are at the relay at once
			nextLine(t, lines)
		}
		for range MaxBridgedCalls {
			f.release <- struct{}{}
		}
		for range MaxBridgedCalls {
			nextLine(t, lines)
		}
		p.wg.Wait() // each stream read to its end, its connection back in the pool
	}
	if n := dials.Load(); n != MaxBridgedCalls {
		t.Errorf("%d connections were dialled for two rounds of %d calls at once; want %d, each kept", n, MaxBridgedCalls, MaxBridgedCalls)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.headers {
		if h.Get("Accept-Encoding") != "" {
			t.Fatalf("the bridge asked for %q", h.Get("Accept-Encoding"))
		}
	}
}
