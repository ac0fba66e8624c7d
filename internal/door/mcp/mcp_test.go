package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// fakeCatalogue offers one tool and answers every call with what it was given.
type fakeCatalogue struct{}

func (fakeCatalogue) Declarations() []tool.Declaration {
	return []tool.Declaration{{Name: "echo", Description: "Echo", Parameters: json.RawMessage(`{"type":"object"}`)}}
}
func (fakeCatalogue) Call(_ context.Context, _ string, args json.RawMessage) json.RawMessage {
	return args
}
func (fakeCatalogue) OnChange(func()) func() { return func() {} }
func (fakeCatalogue) Instruction() string    { return "" }

type fakeClients map[string]hoststate.MCPClient

func (f fakeClients) Lookup(b string) (hoststate.MCPClient, bool, error) {
	c, ok := f[b]
	return c, ok, nil
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestSessionsAreBounded floods the door with initializes from many goroutines: exactly
// MaxSessions open, the rest are refused too-many-sockets.
func TestSessionsAreBounded(t *testing.T) {
	t.Parallel()
	h := New(Options{Catalogue: fakeCatalogue{}, Clients: fakeClients{"vbm_a": {Name: "a"}}})
	defer h.Close()
	ts := httptest.NewServer(h)
	defer ts.Close()
	flood := MaxSessions + 20
	codes := make([]int, flood)
	var wg sync.WaitGroup
	for i := range flood {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer vbm_a")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == 200 {
			ok++
		}
	}
	n := 0
	for range h.server.Sessions() {
		n++
	}
	if ok != MaxSessions || n != MaxSessions {
		t.Fatalf("%d sessions answered 200, %d are open; the bound is %d", ok, n, MaxSessions)
	}
}

// blockingCatalogue answers every call once release is closed.
type blockingCatalogue struct {
	fakeCatalogue
	started chan struct{}
	release chan struct{}
}

func (b blockingCatalogue) Call(ctx context.Context, _ string, args json.RawMessage) json.RawMessage {
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return args
}

// TestCallsPerClientAreBounded: a client with MaxCallsPerClient calls running gets the next one
// refused too-many-calls as a tool result, at once; another client is not held back by it.
func TestCallsPerClientAreBounded(t *testing.T) {
	t.Parallel()
	cat := blockingCatalogue{started: make(chan struct{}, MaxCallsPerClient+2), release: make(chan struct{})}
	h := New(Options{Catalogue: cat, Clients: fakeClients{"vbm_a": {Name: "a"}, "vbm_b": {Name: "b"}}})
	ts := httptest.NewServer(h)
	// Cleanups run last first: the clients' sessions, then the handler's, then the server, which
	// waits for their streams to end.
	t.Cleanup(ts.Close)
	t.Cleanup(h.Close)
	connect := func(bearer string) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
		s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearerTransport{bearer: bearer, next: http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := connect("vbm_a"), connect("vbm_b")
	var wg sync.WaitGroup
	for range MaxCallsPerClient {
		wg.Go(func() { a.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{}}) })
	}
	for range MaxCallsPerClient {
		<-cat.started
	}
	res, err := a.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"refused":"too-many-calls"`) {
		t.Fatalf("one call past the bound answered %+v, %v", res, err)
	}
	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		r, _ := b.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"x": 1}})
		done <- r
	}()
	<-cat.started // the other client's call reached the catalogue
	close(cat.release)
	if r := <-done; r == nil || r.IsError {
		t.Fatalf("the other client's call answered %+v", r)
	}
	wg.Wait()
}

// TestToolResultsAsMade: a tool whose answer is an MCP tool result (as a WebMCP tool of a
// mini-app returns one) reaches the client as it was made: its content items, structuredContent
// and isError, not wrapped as JSON text; any other answer is still the text of its JSON.
func TestToolResultsAsMade(t *testing.T) {
	t.Parallel()
	h := New(Options{Catalogue: fakeCatalogue{}, Clients: fakeClients{"vbm_a": {Name: "a"}}})
	defer h.Close()
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer{"vbm_a"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call := func(args string) *sdk.CallToolResult {
		t.Helper()
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("tools/call %s: %v", args, err)
		}
		return res
	}
	made := call(`{"content":[{"type":"text","text":"sunny"},{"type":"image","data":"iVBORw==","mimeType":"image/png"}],"structuredContent":{"temp":21}}`)
	if len(made.Content) != 2 || made.IsError {
		t.Fatalf("a made result came back as %+v", made)
	}
	if text, ok := made.Content[0].(*sdk.TextContent); !ok || text.Text != "sunny" {
		t.Fatalf("its first item is %#v", made.Content[0])
	}
	if img, ok := made.Content[1].(*sdk.ImageContent); !ok || img.MIMEType != "image/png" {
		t.Fatalf("its second item is %#v", made.Content[1])
	}
	if sc, _ := json.Marshal(made.StructuredContent); string(sc) != `{"temp":21}` {
		t.Fatalf("its structuredContent is %s", sc)
	}
	failed := call(`{"content":[{"type":"text","text":"no such city"}],"isError":true}`)
	if !failed.IsError || len(failed.Content) != 1 || failed.Content[0].(*sdk.TextContent).Text != "no such city" {
		t.Fatalf("an error result came back as %+v", failed)
	}
	plain := call(`{"content":"a file's text","path":"a.txt"}`)
	if text, ok := plain.Content[0].(*sdk.TextContent); !ok || len(plain.Content) != 1 || text.Text != `{"content":"a file's text","path":"a.txt"}` {
		t.Fatalf("an observation that is no MCP result came back as %+v", plain)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestACallsAnswerEndsItsStream: the answer to a POST's one call is the whole response, sent
// with its Content-Length rather than chunked, so a client has the answer and the stream's end
// in the same bytes and is not woken again for a chunked end; ids of every kind (a string with
// the characters an HTML-escaping encoder would change among them) are answered the same way, and
// a notification's POST is still 202 with no body. The answer is the JSON-RPC message as
// application/json, not an event stream (fails before JSONResponse: text/event-stream).
func TestACallsAnswerEndsItsStream(t *testing.T) {
	t.Parallel()
	h := New(Options{Catalogue: fakeCatalogue{}, Clients: fakeClients{"vbm_a": {Name: "a"}}})
	defer h.Close()
	ts := httptest.NewServer(h)
	defer ts.Close()
	post := func(session, body string) (*http.Response, string) {
		t.Helper()
		return postAs(t, ts.URL, "vbm_a", "2025-06-18", session, body)
	}
	resp, _ := post("", initBody)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp, _ := post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted || resp.ContentLength > 0 {
		t.Fatalf("notifications/initialized answered %s with %d bytes", resp.Status, resp.ContentLength)
	}
	for _, id := range []string{`7`, `"a-b"`, `"<&>"`, `1e0`} {
		resp, body := post(session, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"x":"`+strings.Repeat("y", 5000)+`"}}}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result":`) || !strings.Contains(body, strings.Repeat("y", 5000)) {
			t.Fatalf("id %s: %s %.300s", id, resp.Status, body)
		}
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 {
			t.Errorf("id %s: the answer came chunked (%v, Content-Length %d), not as the whole response of %d bytes", id, resp.TransferEncoding, resp.ContentLength, len(body))
		}
		// The answer is the JSON-RPC message itself (StreamableHTTPOptions.JSONResponse), not an
		// event of a stream the client parses line by line.
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		want := strings.Replace(id, "1e0", "1", 1) // as the SDK encodes a number id
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" || json.Unmarshal([]byte(body), &msg) != nil || string(msg.ID) != want {
			t.Errorf("id %s: answered as %q, %.100s; want the one JSON-RPC message of that id as application/json", id, ct, body)
		}
	}
	// An error answer (an unknown tool's) ends its stream the same way, its data the refusal.
	resp, body := post(session, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	if !strings.Contains(body, `"error":`) || !strings.Contains(body, `"refused":"`) || resp.ContentLength != int64(len(body)) {
		t.Fatalf("an unknown tool answered %s, Content-Length %d: %.300s", resp.Status, resp.ContentLength, body)
	}
}

// TestNoLogNotificationsWhateverTheLevel holds docs/mcp.md to what /mcp does: it advertises no
// logging capability, and a client that set the lowest level with logging/setLevel gets no
// notifications/message for a call (the protocol's logging is deprecated; the relay's own log
// has the line).
func TestNoLogNotificationsWhateverTheLevel(t *testing.T) {
	t.Parallel()
	h := New(Options{Catalogue: fakeCatalogue{}, Clients: fakeClients{"vbm_a": {Name: "a"}}})
	defer h.Close()
	ts := httptest.NewServer(h)
	defer ts.Close()
	var mu sync.Mutex
	var logged []string
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, string(req.Params.Level))
		},
	})
	ctx := t.Context()
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer{"vbm_a"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if caps := s.InitializeResult().Capabilities; caps.Logging != nil {
		t.Fatalf("/mcp advertises logging %+v", caps.Logging)
	}
	if err := s.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	for range 3 {
		if res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]string{"a": "b"}}); err != nil || res.IsError {
			t.Fatalf("echo: %+v, %v", res, err)
		}
	}
	if err := s.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) > 0 {
		t.Fatalf("the client was sent log notifications at levels %v", logged)
	}
}

// postAs posts body to the /mcp at url with bearer, in session (none when "") at protocol
// version, and returns the response and its whole body.
func postAs(t *testing.T, url, bearer, version, session, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
