package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/door/mcp"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// bearerTransport sends every request with an MCP client's bearer.
type bearerTransport struct{ bearer string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.bearer)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpStatus sends an MCP initialize to m's /mcp with bearer and returns the status and, for a
// refusal, its rule.
func mcpStatus(t testing.TB, m *member, bearer string) (int, refusal.Rule) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, m.url+mcp.Path, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rule refusal.Rule
	if resp.StatusCode != http.StatusOK {
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		rule = ruleOf(body)
	}
	return resp.StatusCode, rule
}

// TestFleetMCPBearers: a bearer minted through A opens /mcp on B, whose client's tool calls reach
// the page on C; revoked through C, B refuses it bearer-revoked at its next request; with NATS
// away, B answers 503 fleet-unavailable (never "refused for good"), and admits it again once
// NATS is back.
func TestFleetMCPBearers(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b, c := startMember(t, nats, "mcp", false), startMember(t, nats, "mcp", false), startMember(t, nats, "mcp", false)
	status, out := a.do(t, http.MethodPost, "/api/mcp/clients", map[string]any{"name": "desktop"})
	bearer, _ := out["bearer"].(string)
	if status != http.StatusOK || bearer == "" {
		t.Fatalf("minting through A: %d %v", status, out)
	}
	if _, list := c.do(t, http.MethodGet, "/api/mcp/clients", nil); !strings.Contains(fmt.Sprint(list["clients"]), "desktop") {
		t.Fatalf("C's list of MCP clients: %v", list)
	}
	if status, rule := mcpStatus(t, b, bearer); status != http.StatusOK {
		t.Fatalf("the bearer at B's /mcp: %d %s", status, rule)
	}

	page := dialPage(t, c, memoryExecutor(), nil)
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))
	waitFor(t, "the root declared on C shown on B", func() bool { return b.root(t)["name"] == "Browser storage" })
	client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	s, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: b.url + mcp.Path,
		HTTPClient: &http.Client{Transport: bearerTransport{bearer}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"name": "from-mcp.txt", "content": "through B"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file through B's /mcp: %v %+v", err, res.Content[0])
	}
	if got := observed(t, a.call(t, "read-file", map[string]any{"path": "from-mcp.txt"})); got["content"] != "through B" {
		t.Fatalf("the page on C did not write it: %v", got)
	}

	if status, out := c.do(t, http.MethodDelete, "/api/mcp/clients/desktop", nil); status != http.StatusOK {
		t.Fatalf("revoking through C: %d %v", status, out)
	}
	if status, rule := mcpStatus(t, b, bearer); status != http.StatusUnauthorized || rule != refusal.BearerRevoked {
		t.Fatalf("the revoked bearer at B: %d %s", status, rule)
	}

	status, out = b.do(t, http.MethodPost, "/api/mcp/clients", map[string]any{"name": "agent"})
	again, _ := out["bearer"].(string)
	if status != http.StatusOK {
		t.Fatalf("minting through B: %d %v", status, out)
	}
	nats.Stop()
	waitFor(t, "A noticing NATS is gone", func() bool { return !a.Fleet.Connected() })
	if status, rule := mcpStatus(t, a, again); status != http.StatusServiceUnavailable || rule != refusal.FleetUnavailable {
		t.Fatalf("a bearer at A with NATS away: %d %s", status, rule)
	}
	if status, out := a.do(t, http.MethodGet, "/api/mcp/clients", nil); status != http.StatusServiceUnavailable || ruleOf(out) != refusal.FleetUnavailable {
		t.Fatalf("listing with NATS away: %d %v", status, out)
	}
	nats.Restart()
	waitFor(t, "A admitting the bearer once NATS is back", func() bool {
		status, _ := mcpStatus(t, a, again)
		return status == http.StatusOK
	})
}
