//go:build !js

package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/relay/mcp"
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
	resp, err := http.DefaultClient.Do(req)
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
