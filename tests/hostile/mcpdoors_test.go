//go:build !js

package hostile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// mcpSDK is the module that serves /mcp's JSON-RPC: its server's method table is the door's list
// of methods.
const mcpSDK = "github.com/modelcontextprotocol/go-sdk"

// mcpDoors are the JSON-RPC methods /mcp answers: the keys of the SDK's server method table
// (serverMethodInfos in its mcp/server.go), read from the source of the version the relay
// builds with, their names resolved through the SDK's constants.
func mcpDoors(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mcpSDK)
	cmd.Dir = harness.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", mcpSDK, err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "mcp")
	src, err := os.ReadFile(filepath.Join(dir, "server.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(src), "serverMethodInfos = map[string]methodInfo{")
	table, _, _ = strings.Cut(table, "\n}")
	if !ok {
		t.Fatalf("%s's mcp/server.go has no serverMethodInfos table: the scan in mcpdoors_test.go needs its new name", mcpSDK)
	}
	consts := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	constLine := regexp.MustCompile(`(?m)^\s*((?:method|notification)[A-Za-z]+)\s*=\s*"([^"]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f)
		for _, m := range constLine.FindAllStringSubmatch(string(b), -1) {
			consts[m[1]] = m[2]
		}
	}
	var doors []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+):`).FindAllStringSubmatch(table, -1) {
		name, ok := consts[m[1]]
		if !ok {
			t.Fatalf("the SDK's method %s has no constant the scan can read", m[1])
		}
		doors = append(doors, "socket /mcp method "+name)
	}
	if len(doors) < 5 {
		t.Fatalf("read %d methods from the SDK's table; it has more", len(doors))
	}
	return doors
}

// mcpPost posts body to /mcp with bearer and session ("" for none), and returns the status, the
// session the answer names and the answer's first 64 KiB.
func mcpPost(t *testing.T, r *harness.Relay, bearer, session, body string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpBound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp %.80s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil && ctx.Err() != nil {
		t.Fatalf("POST /mcp %.80s: no end to the answer within %v", body, mcpBound)
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// TestEveryMCPMethodRefusesMalformedParams: in an initialized session, each method the SDK serves
// at /mcp (mcpDoors) is called with params that are a string, a list, null, fields of every
// wrong type, and a 64 KB string, as a request and as a notification. Each request is answered
// with a JSON-RPC result or error (never a 5xx, never a hang); the session then lists its tools,
// and a new session is served.
func TestEveryMCPMethodRefusesMalformedParams(t *testing.T) {
	t.Parallel()
	r := harness.StartRelay(t)
	bearer := r.MintMCPBearer(t, "sweeper")
	code, session, body := mcpPost(t, r, bearer, "", mcpInit)
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize answered %d %q %.200s", code, session, body)
	}
	mcpPost(t, r, bearer, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	params := []string{`"x"`, `[]`, `null`, `7`,
		`{"name":5,"arguments":"x","uri":[],"level":{},"cursor":7,"ref":"x","argument":1,"progressToken":{},"requestId":[],"_meta":"x","capabilities":"x","protocolVersion":9}`,
		`{"name":"` + strings.Repeat("x", 64<<10) + `","uri":"` + strings.Repeat("y", 1<<10) + `"}`,
	}
	id := 100
	for _, door := range mcpDoors(t) {
		method := strings.TrimPrefix(door, "socket /mcp method ")
		for _, p := range params {
			id++
			code, _, body := mcpPost(t, r, bearer, session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p))
			if code >= 500 || (code == http.StatusOK && !strings.Contains(body, fmt.Sprintf(`"id":%d`, id))) {
				t.Errorf("%s(%.60s) answered %d %.300s", method, p, code, body)
			}
			code, _, body = mcpPost(t, r, bearer, session, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, p))
			if code >= 500 {
				t.Errorf("%s(%.60s) as a notification answered %d %.300s", method, p, code, body)
			}
		}
	}
	if code, _, body := mcpPost(t, r, bearer, session, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Fatalf("the session no longer lists its tools: %d %.300s", code, body)
	}
	if code, _, body := mcpPost(t, r, bearer, "", mcpInit); code != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
		t.Fatalf("a new session is no longer served: %d %.300s", code, body)
	}
	served(t, r)
}
