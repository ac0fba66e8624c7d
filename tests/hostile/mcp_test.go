//go:build !js

package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// The hostile cases of /mcp: a caller without a bearer, garbage, a flood of sessions, a body that
// stalls and one too large each get a named answer, and the door keeps serving the honest client.

// mcpBound is the hang guard of one answer in these cases.
const mcpBound = 30 * time.Second

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`

// rawMCP posts body to /mcp with bearer ("" for none) and returns the status and the body.
func rawMCP(t *testing.T, r *harness.Relay, bearer string, body io.Reader, length int64) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/mcp", body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if length >= 0 {
		req.ContentLength = length
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	client := http.DefaultClient
	if req.ContentLength > expectContinueBytes {
		req.Header.Set("Expect", "100-continue") // see sweepOne
		client = continueClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

func ruleOf(body string) string {
	var m struct {
		Refused string `json:"refused"`
	}
	json.Unmarshal([]byte(body), &m)
	return m.Refused
}

func TestMCPHostileCallers(t *testing.T) {
	t.Parallel()
	r := harness.StartRelay(t)
	bearer := r.MintMCPBearer(t, "honest")
	stillServes := func(t *testing.T) {
		t.Helper()
		if code, body := rawMCP(t, r, bearer, strings.NewReader(mcpInit), -1); code != 200 || !strings.Contains(body, `"serverInfo"`) {
			t.Fatalf("the door no longer serves an honest initialize: %d %s", code, body)
		}
	}
	t.Run("no bearer", func(t *testing.T) {
		if code, body := rawMCP(t, r, "", strings.NewReader(mcpInit), -1); code != 401 || ruleOf(body) != "bearer-missing" {
			t.Fatalf("answered %d %s", code, body)
		}
	})
	t.Run("garbage JSON", func(t *testing.T) {
		for _, junk := range []string{`{`, `[]`, `null`, `{"jsonrpc":"2.0","id":1,"method":42}`, "\x00\xff", strings.Repeat("[", 100000)} {
			code, body := rawMCP(t, r, bearer, strings.NewReader(junk), -1)
			if code < 400 || code >= 500 {
				t.Errorf("%.20q answered %d %.200s", junk, code, body)
			}
		}
		stillServes(t)
	})
	t.Run("an oversized call", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"name":"a.txt","content":"` + strings.Repeat("x", mcp.MaxBodyBytes) + `"}}}`
		if code, body := rawMCP(t, r, bearer, strings.NewReader(big), -1); code != 413 || ruleOf(body) != "body-too-large" {
			t.Fatalf("with its length: %d %.200s", code, body)
		}
		// Chunked, so the length is not known before the bytes come.
		if code, body := rawMCP(t, r, bearer, io.MultiReader(strings.NewReader(big)), 0); code != 413 || ruleOf(body) != "body-too-large" {
			t.Fatalf("chunked: %d %.200s", code, body)
		}
		stillServes(t)
	})
	t.Run("a stalled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(r.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\":", strings.TrimPrefix(r.URL, "http://"), bearer)
		conn.SetReadDeadline(time.Now().Add(mcp.BodyReadBound + mcpBound)) // the hang guard
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a stalled body: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 408 || ruleOf(string(b)) != "body-timeout" {
			t.Fatalf("answered %d %s", resp.StatusCode, b)
		}
		stillServes(t)
	})
	t.Run("a flood of sessions", func(t *testing.T) {
		flood := mcp.MaxSessions + 16
		codes := make([]int, flood)
		rules := make([]string, flood)
		var wg sync.WaitGroup
		for i := range flood {
			wg.Go(func() {
				code, body := rawMCP(t, r, bearer, strings.NewReader(mcpInit), -1)
				codes[i], rules[i] = code, ruleOf(body)
			})
		}
		wg.Wait()
		refused := 0
		for i, code := range codes {
			switch {
			case code == 503 && rules[i] == "too-many-sockets":
				refused++
			case code != 200:
				t.Errorf("session %d answered %d %s", i, code, rules[i])
			}
		}
		// Sessions opened by the earlier cases count too, so at least the flood's excess is refused.
		if refused < flood-mcp.MaxSessions {
			t.Fatalf("%d of %d sessions were refused; the bound is %d", refused, flood, mcp.MaxSessions)
		}
		if code, body := rawMCP(t, r, bearer, strings.NewReader(mcpInit), -1); code != 503 || ruleOf(body) != "too-many-sockets" {
			t.Fatalf("past the bound a new session answered %d %s", code, body)
		}
	})
}

// mcpRequest sends one request to /mcp with bearer and the session id ("" for none), and
// returns the status, the Content-Type and the body.
func mcpRequest(t *testing.T, r *harness.Relay, method, bearer, session, accept, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, r.URL+"/mcp", strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("Authorization", "Bearer "+bearer)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	client := &http.Client{Timeout: mcpBound}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s /mcp: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestMCPErrorsAreRefusalsNeverPlainText is issue 32's "also found": a client on a session
// another client opened, a revoked client, and requests the SDK's transport turns away were
// answered in plain text. Every error of /mcp is now a refusal {refused, why}, the way a missing
// bearer is; the session's own client is still served.
func TestMCPErrorsAreRefusalsNeverPlainText(t *testing.T) {
	t.Parallel()
	r := harness.StartRelay(t)
	alice, bob := r.MintMCPBearer(t, "alice"), r.MintMCPBearer(t, "bob")
	const both = "application/json, text/event-stream"
	open := func(bearer string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/mcp", strings.NewReader(mcpInit))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", both)
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode == 200 && id != "" {
			return id
		}
		t.Fatalf("initialize answered %d with no session", resp.StatusCode)
		return ""
	}
	aliceSession, bobSession := open(alice), open(bob)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	cases := []struct {
		name                          string
		method, bearer, session, body string
		accept                        string
		status                        int
		rule                          string
	}{
		{"bob on alice's session", http.MethodPost, bob, aliceSession, list, both, 403, "mcp-session-foreign"},
		{"bob's stream of alice's session", http.MethodGet, bob, aliceSession, "", "text/event-stream", 403, "mcp-session-foreign"},
		{"bob closing alice's session", http.MethodDelete, bob, aliceSession, "", both, 403, "mcp-session-foreign"},
		{"a session nobody opened", http.MethodPost, bob, "NOSUCHSESSION", list, both, 404, "mcp-session-unknown"},
		{"no event stream in Accept", http.MethodPost, bob, bobSession, list, "application/json", 400, "malformed-call"},
		{"a body that is no JSON-RPC", http.MethodPost, bob, bobSession, `{"jsonrpc":"2.0","id":3,"method":42}`, both, 400, "malformed-call"},
		{"a close that names no session", http.MethodDelete, bob, "", "", both, 400, "malformed-call"},
		{"a stream that names no session", http.MethodGet, bob, "", "", "text/event-stream", 400, "malformed-call"},
	}
	for _, c := range cases {
		status, ctype, body := mcpRequest(t, r, c.method, c.bearer, c.session, c.accept, c.body)
		if status != c.status || !strings.HasPrefix(ctype, "application/json") || ruleOf(body) != c.rule || !strings.Contains(body, `"why":"`) {
			t.Errorf("%s: %d %s %.300s; want %d %s as JSON", c.name, status, ctype, body, c.status, c.rule)
		}
	}
	// A revoked client on another's session, and on its own: a refusal each, never text.
	if out, err := exec.Command(filepath.Join(harness.RepoRoot(), "bin", "relay"), "mcp-token", "--extensions-dir", r.StateDir, "--revoke", "alice").CombinedOutput(); err != nil {
		t.Fatalf("revoking alice: %v %s", err, out)
	}
	for _, session := range []string{bobSession, aliceSession} {
		status, ctype, body := mcpRequest(t, r, http.MethodPost, alice, session, both, list)
		if status != 401 || !strings.HasPrefix(ctype, "application/json") || ruleOf(body) != "bearer-revoked" {
			t.Errorf("revoked alice on a session: %d %s %.300s", status, ctype, body)
		}
	}
	// A method the transport does not know is refused before JSON-RPC; inside JSON-RPC, an error
	// carries the refusal as its data.
	if status, ctype, body := mcpRequest(t, r, http.MethodPost, bob, bobSession, both, `{"jsonrpc":"2.0","id":7,"method":"no/such-method"}`); status != 400 || !strings.HasPrefix(ctype, "application/json") || ruleOf(body) != "malformed-call" {
		t.Errorf("a method nobody serves: %d %s %.300s", status, ctype, body)
	}
	status, _, body := mcpRequest(t, r, http.MethodPost, bob, bobSession, both, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	if status != 200 || !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, `"data":{"refused":"invalid-argument","why":"unknown tool`) {
		t.Errorf("a tool nobody offers: %d %.300s", status, body)
	}
	// The session's own client is served.
	if status, _, body := mcpRequest(t, r, http.MethodPost, bob, bobSession, both, list); status != 200 || !strings.Contains(body, `"tools"`) {
		t.Fatalf("bob on his own session: %d %.300s", status, body)
	}
}

// TestABadLineCannotEndTheStdioBridge is issue 32's "also found": one malformed line on its stdin
// ended `relay mcp`, so whatever could write to a client's pipe could cut it off from the relay.
// Now a line that is not JSON is answered with a JSON-RPC parse error (-32700, id null), a line
// past mcp.MaxStdioLineBytes and one that is no single message with an invalid-request error
// (-32600), each with data {refused, why}, and the bridge answers the next request.
func TestABadLineCannotEndTheStdioBridge(t *testing.T) {
	t.Parallel()
	r := harness.StartRelay(t)
	b := startStdioBridge(t, r)
	send, next := b.send, b.next
	send(mcpInit)
	if m := next("initialize"); m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct {
		what, line string
		code       float64
		rule       string
	}{
		{"a line that is not JSON", `{"jsonrpc":"2.0","id":2,"method":`, -32700, "malformed-json"},
		{"NUL bytes", "\x00\xff\x00", -32700, "malformed-json"},
		{"a line past the bound", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", mcp.MaxStdioLineBytes) + `"}}`, -32600, "body-too-large"},
		{"a batch", `[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, -32600, "malformed-call"},
		{"JSON that is no message", `{"jsonrpc":"2.0","id":5,"method":42}`, -32600, "malformed-call"},
	} {
		send(c.line)
		m := next(c.what)
		e, _ := m["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if m["id"] != nil || e["code"] != c.code || data["refused"] != c.rule || data["why"] == "" {
			t.Fatalf("%s answered %v; want error %v with %s, id null", c.what, m, c.code, c.rule)
		}
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	if m := next("tools/list"); m["id"] != float64(6) || m["result"] == nil {
		t.Fatalf("tools/list after the bad lines answered %v", m)
	}
	if strings.Contains(b.Stderr(), "vbm_") {
		t.Fatal("the bridge logged its bearer")
	}
}
