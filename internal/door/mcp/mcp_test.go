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

func (f fakeClients) LookupMCPClient(b string) (hoststate.MCPClient, bool, error) {
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
