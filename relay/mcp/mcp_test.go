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

	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/shared/miniapp"
)

// fakeCatalogue offers one tool and answers every call with what it was given.
type fakeCatalogue struct{}

func (fakeCatalogue) Declarations() []miniapp.FunctionDeclaration {
	return []miniapp.FunctionDeclaration{{Name: "echo", Description: "Echo", Parameters: json.RawMessage(`{"type":"object"}`)}}
}
func (fakeCatalogue) Call(_ context.Context, _ string, args json.RawMessage) json.RawMessage {
	return args
}
func (fakeCatalogue) OnChange(func()) func() { return func() {} }

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
