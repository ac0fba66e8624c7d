package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/door/mcp"
)

// mintMCP runs `relay mcp-token NAME` and returns the bearer it printed.
func mintMCP(t testing.TB, stateDir, name string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run([]string{"mcp-token", "--extensions-dir", stateDir, name}, &out, &errOut); code != 0 {
		t.Fatalf("relay mcp-token: exit %d: %s", code, errOut.String())
	}
	bearer := strings.TrimSpace(out.String())
	if !strings.HasPrefix(bearer, "vbm_") || strings.Contains(errOut.String(), bearer) {
		t.Fatalf("relay mcp-token printed %q / %q", out.String(), errOut.String())
	}
	return bearer
}

type bearerRT struct{ bearer string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.bearer)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects an MCP client of the SDK to url's /mcp with bearer. changed receives a
// value at each notifications/tools/list_changed.
func mcpSession(t testing.TB, url, bearer string) (s *sdk.ClientSession, changed <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case ch <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{bearer}}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ch
}

// callMCP calls a tool and returns the result's text decoded, and whether it is an error.
func callMCP(t testing.TB, s *sdk.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tools/call %s: %d contents", name, len(res.Content))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &m); err != nil {
		t.Fatalf("tools/call %s: the text is not an object: %v", name, err)
	}
	return m, res.IsError
}

// machineRelay starts a relay with a machine environment on a fresh directory holding the root.
func machineRelay(t testing.TB) (url, stateDir, root string) {
	t.Helper()
	stateDir = filepath.Join(t.TempDir(), "state")
	url, _ = startServe(t, stateDir)
	bearerFile := pairBearerFile(t, stateDir, "box")
	root = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- envUntil(ctx, []string{"--relay", url, "--bearer-file", bearerFile, "--root", root}, io.Discard, io.Discard, nil)
	}()
	t.Cleanup(func() { cancel(); <-exit })
	waitMachine(t, url)
	return url, stateDir, root
}

// pageEvents subscribes to /api/events as the page does, so approvals have someone to ask, and
// returns the approval requests as they come.
func pageEvents(t *testing.T, url string) <-chan map[string]any {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/events: %v", err)
	}
	out := make(chan map[string]any, 16)
	hello := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		kind := ""
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "event: "); ok {
				kind = k
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				if kind == "hello" {
					close(hello)
				}
				if kind == "approval" {
					var m map[string]any
					json.Unmarshal([]byte(d), &m)
					out <- m
				}
			}
		}
	}()
	<-hello
	return out
}

func decide(t *testing.T, url, id string, approve bool) {
	t.Helper()
	b, _ := json.Marshal(map[string]bool{"approve": approve})
	resp, err := http.Post(url+"/api/approvals/"+id, "application/json", bytes.NewReader(b))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("deciding %s: %v", id, err)
	}
	resp.Body.Close()
}

// TestMCPOnAMachineRoot: an MCP client of the SDK lists the catalogue and calls the file tools on
// a paired machine's directory; a delete asks the page (naming the client) and follows its
// decision, and with no page open it is refused no-page at once.
func TestMCPOnAMachineRoot(t *testing.T) {
	t.Parallel()
	url, stateDir, root := machineRelay(t)
	s, _ := mcpSession(t, url, mintMCP(t, stateDir, "desktop"))
	ctx := context.Background()
	list, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"read_file", "write_file", "list_files", "delete_file", "edit_file", "grep_files", "undo_last_action", "call_extension"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if m, isErr := callMCP(t, s, "write_file", map[string]string{"name": "notes/a.txt", "content": "from MCP"}); isErr || m["path"] != "notes/a.txt" {
		t.Fatalf("write_file answered %v (error %v)", m, isErr)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes", "a.txt")); string(b) != "from MCP" {
		t.Fatalf("the directory holds %q", b)
	}
	if m, isErr := callMCP(t, s, "read_file", map[string]string{"name": "notes/a.txt"}); isErr || m["content"] != "from MCP" {
		t.Fatalf("read_file answered %v", m)
	}
	refusals := []struct {
		name string
		args any
		rule string
	}{
		{"read_file", map[string]string{"name": "../outside"}, "outside-root"},
		{"read_file", map[string]string{"name": ".env"}, "dotfile-refused"},
		{"read_file", map[string]string{}, "missing-argument"},
		{"delete_file", map[string]string{"name": "notes/a.txt"}, "no-page"}, // nobody to ask
		{"launch_mini_app", map[string]string{"name": "timer"}, "no-page"},   // a machine has no frames
	}
	for _, r := range refusals {
		if m, isErr := callMCP(t, s, r.name, r.args); !isErr || m["refused"] != r.rule || m["why"] == "" {
			t.Errorf("%s %v answered %v (error %v), want %s", r.name, r.args, m, isErr, r.rule)
		}
	}
	if _, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("a tool not listed answered %v; the protocol says a JSON-RPC error", err)
	}
	// Now a page listens: the delete asks it, naming the client, and follows the decision.
	asks := pageEvents(t, url)
	for _, approve := range []bool{false, true} {
		done := make(chan map[string]any, 1)
		go func() {
			m, _ := callMCP(t, s, "delete_file", map[string]string{"name": "notes/a.txt"})
			done <- m
		}()
		ask := <-asks
		if ask["client"] != "desktop" || !strings.Contains(ask["summary"].(string), `MCP client "desktop"`) {
			t.Fatalf("the approval does not name the client: %v", ask)
		}
		decide(t, url, ask["id"].(string), approve)
		m := <-done
		_, err := os.Stat(filepath.Join(root, "notes", "a.txt"))
		switch {
		case !approve && (m["refused"] != "approval-denied" || err != nil):
			t.Fatalf("a denied delete answered %v; the file: %v", m, err)
		case approve && (m["approval"] != "approved" || err == nil):
			t.Fatalf("an approved delete answered %v; the file: %v", m, err)
		}
	}
	if m, isErr := callMCP(t, s, "undo_last_action", map[string]string{}); isErr {
		t.Fatalf("undo answered %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes", "a.txt")); string(b) != "from MCP" {
		t.Fatalf("undo left %q", b)
	}
	// The filesystem tools, and an image read as the protocol's image content.
	os.WriteFile(filepath.Join(root, "pixel.txt"), pngPixel, 0o644)
	if m, _ := callMCP(t, s, "move_file", map[string]string{"from": "notes", "to": "moved"}); m["kind"] != "folder" {
		t.Errorf("move_file answered %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "moved", "a.txt")); string(b) != "from MCP" {
		t.Errorf("the moved folder holds %q", b)
	}
	if m, _ := callMCP(t, s, "undo_last_action", map[string]string{}); m["undone"] != "move" {
		t.Errorf("undoing move_file answered %v", m)
	}
	if m, _ := callMCP(t, s, "create_folder", map[string]string{"name": "made/here"}); m["created"] != true {
		t.Errorf("create_folder answered %v", m)
	}
	if st, err := os.Stat(filepath.Join(root, "made", "here")); err != nil || !st.IsDir() {
		t.Errorf("create_folder made %v, %v", st, err)
	}
	if m, _ := callMCP(t, s, "undo_last_action", map[string]string{}); m["undone"] != "mkdir" {
		t.Errorf("undoing create_folder answered %v", m)
	}
	if m, _ := callMCP(t, s, "file_info", map[string]string{"name": "notes"}); m["kind"] != "folder" {
		t.Errorf("file_info answered %v", m)
	}
	if m, _ := callMCP(t, s, "directory_tree", map[string]any{"depth": 2}); m["entries"] != 3.0 {
		t.Errorf("directory_tree answered %v", m)
	}
	if m, _ := callMCP(t, s, "read_files", map[string]any{"names": []string{"notes/a.txt", "nope.txt"}}); len(m["files"].([]any)) != 2 {
		t.Errorf("read_files answered %v", m)
	}
	if m, _ := callMCP(t, s, "edit_file", map[string]any{"name": "notes/a.txt", "oldTexts": []string{"from", "MCP"}, "newTexts": []string{"by", "a client"}, "dryRun": true}); m["dryRun"] != true || !strings.Contains(m["diff"].(string), "+by a client") {
		t.Errorf("a dry-run edit answered %v", m)
	}
	img, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "read_media_file", Arguments: map[string]string{"name": "pixel.txt"}})
	if err != nil || img.IsError || len(img.Content) != 2 {
		t.Fatalf("read_media_file: %+v, %v", img, err)
	}
	if ic, ok := img.Content[0].(*sdk.ImageContent); !ok || ic.MIMEType != "image/png" || !bytes.Equal(ic.Data, pngPixel) {
		t.Fatalf("read_media_file's first content is %#v", img.Content[0])
	}
	os.Remove(filepath.Join(root, "pixel.txt"))
}

// TestMCPResources: the workspace's files are resources; one is read as text, one as a blob, and
// a missing one is not found; paths complete from what was typed.
func TestMCPResources(t *testing.T) {
	t.Parallel()
	url, stateDir, root := machineRelay(t)
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	os.WriteFile(filepath.Join(root, "docs", "plan one.md"), []byte("# plan"), 0o644)
	os.WriteFile(filepath.Join(root, "pixel.bin"), []byte{0xff, 0xfe, 0x00, 0x01}, 0o644)
	os.WriteFile(filepath.Join(root, ".secret"), []byte("hidden"), 0o644)
	s, _ := mcpSession(t, url, mintMCP(t, stateDir, "agent"))
	ctx := context.Background()
	list, err := s.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list.CacheScope != "private" {
		t.Errorf("resources/list's cacheScope is %q, want private (the person's own files)", list.CacheScope)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	if want := []string{"voicebox://workspace/docs/plan%20one.md", "voicebox://workspace/pixel.bin"}; !slices.Equal(uris, want) {
		t.Fatalf("resources/list = %v, want %v", uris, want)
	}
	text, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "voicebox://workspace/docs/plan%20one.md"})
	if err != nil || text.Contents[0].Text != "# plan" || !strings.HasPrefix(text.Contents[0].MIMEType, "text/markdown") {
		t.Fatalf("reading the plan: %+v, %v", text, err)
	}
	blob, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "voicebox://workspace/pixel.bin"})
	if err != nil || !bytes.Equal(blob.Contents[0].Blob, []byte{0xff, 0xfe, 0x00, 0x01}) {
		t.Fatalf("reading the blob: %+v, %v", blob, err)
	}
	for _, c := range []struct {
		typed string
		want  []string
	}{{"", []string{"docs/", "pixel.bin"}}, {"do", []string{"docs/"}}, {"docs/p", []string{"docs/plan one.md"}}, {"docs/x", []string{}}, {"../", []string{}}} {
		got, err := s.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "voicebox://workspace/{+path}"}, Argument: sdk.CompleteParamsArgument{Name: "path", Value: c.typed}})
		if err != nil || !slices.Equal(got.Completion.Values, c.want) {
			t.Errorf("completing %q: %v, %v; want %v", c.typed, got, err, c.want)
		}
	}
	for _, uri := range []string{"voicebox://workspace/missing.txt", "voicebox://workspace/.secret", "voicebox://workspace/../x"} {
		if _, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("reading %s succeeded", uri)
		}
	}
}

// TestMCPListChanged: when the page's open mini-apps change, a connected client is sent
// notifications/tools/list_changed and lists the new tool. The page here is a /channel socket of
// the relay's own origin, as the worker's is.
func TestMCPListChanged(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, stateDir)
	s, changed := mcpSession(t, url, mintMCP(t, stateDir, "ide"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	page, _, err := websocket.Dial(ctx, strings.Replace(url, "http", "ws", 1)+"/channel", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {url}}})
	if err != nil {
		t.Fatal(err)
	}
	defer page.CloseNow()
	page.Write(ctx, websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"browser storage"}`))
	page.Write(ctx, websocket.MessageText, []byte(`{"type":"tools","tools":[{"name":"app_timer_start","description":"Start the timer","parameters":{"type":"object","properties":{"seconds":{"type":"integer"}},"required":["seconds"]}}]}`))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after a mini-app opened")
	}
	list, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Tools, func(tool *sdk.Tool) bool { return tool.Name == "app_timer_start" }) {
		t.Fatal("the mini-app's tool is not listed")
	}
	page.Write(ctx, websocket.MessageText, []byte(`{"type":"tools","tools":[]}`))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after the mini-app closed")
	}
}

// mcpPost sends one raw request to /mcp and returns the status and the body's refusal rule.
func mcpPost(t *testing.T, url string, header http.Header, host string, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Refused string `json:"refused"`
	}
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m.Refused
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestMCPWhoMayConnect: no bearer, an unknown one, a revoked one, a foreign Origin and a
// foreign Host are each refused with their rule; a revocation from the page's route closes the
// client's session at once.
func TestMCPWhoMayConnect(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, stateDir)
	live := mintMCP(t, stateDir, "desktop")
	revoked := mintMCP(t, stateDir, "old")
	if code := run([]string{"mcp-token", "--extensions-dir", stateDir, "--revoke", "old"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("mcp-token --revoke exited %d", code)
	}
	auth := func(b string) http.Header { return http.Header{"Authorization": {"Bearer " + b}} }
	cases := []struct {
		name   string
		header http.Header
		host   string
		status int
		rule   string
	}{
		{"no bearer", nil, "", 401, "bearer-missing"},
		{"not a bearer scheme", http.Header{"Authorization": {"Basic " + live}}, "", 401, "bearer-missing"},
		{"a bearer never minted", auth("vbm_" + strings.Repeat("0", 64)), "", 401, "bearer-refused"},
		{"a pairing's bearer", auth("vbx_" + strings.Repeat("0", 64)), "", 401, "bearer-refused"},
		{"a revoked bearer", auth(revoked), "", 401, "bearer-revoked"},
		{"a foreign Origin", http.Header{"Authorization": {"Bearer " + live}, "Origin": {"http://evil.example"}}, "", 403, "origin-refused"},
		{"a sandboxed frame", http.Header{"Authorization": {"Bearer " + live}, "Origin": {"null"}}, "", 403, "origin-refused"},
		{"a rebound Host", auth(live), "evil.example:80", 421, "host-refused"}, // internal/core/server's wall
		{"a live bearer", auth(live), "", 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if status, rule := mcpPost(t, url, c.header, c.host, strings.NewReader(initialize)); status != c.status || rule != c.rule {
				t.Fatalf("answered %d %q, want %d %q", status, rule, c.status, c.rule)
			}
		})
	}
	s, _ := mcpSession(t, url, live)
	req, _ := http.NewRequest(http.MethodDelete, url+"/api/mcp/clients/desktop", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoking from the page: %v %v", resp, err)
	}
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if out["sessionsClosed"] != 2.0 { // the raw initialize's, and s
		t.Fatalf("the revocation closed %v sessions", out["sessionsClosed"])
	}
	if _, err := s.ListTools(context.Background(), nil); err == nil {
		t.Fatal("a revoked client's session still answers")
	}
	if status, rule := mcpPost(t, url, auth(live), "", strings.NewReader(initialize)); status != 401 || rule != "bearer-revoked" {
		t.Fatalf("after revocation: %d %q", status, rule)
	}
}

// TestMCPClientRoutes: minting needs the host token and returns the bearer once; the list shows
// names and dates, never a bearer.
func TestMCPClientRoutes(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, stateDir)
	mint := func(token string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, url+"/api/mcp/clients", strings.NewReader(`{"name":"cli"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Voicebox-Host-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := mint("wrong"); code != 403 || m["refused"] != "host-token-required" {
		t.Fatalf("minting without the host token: %d %v", code, m)
	}
	code, m := mint(hostToken(t, stateDir))
	bearer, _ := m["bearer"].(string)
	if code != 200 || !strings.HasPrefix(bearer, "vbm_") {
		t.Fatalf("minting: %d %v", code, m)
	}
	resp, err := http.Get(url + "/api/mcp/clients")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"name":"cli"`) || strings.Contains(string(body), strings.TrimPrefix(bearer, "vbm_")) {
		t.Fatalf("the list says %s", body)
	}
	mcpSession(t, url, bearer) // the minted bearer works
}

// TestMCPStdioBridge drives `relay mcp`, the built binary, as a stdio MCP client does: it
// lists the tools, calls one, and reads a resource through the running relay.
func TestMCPStdioBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the relay binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "relay")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	url, stateDir, root := machineRelay(t)
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the machine"), 0o644)
	bearerFile := filepath.Join(t.TempDir(), "bearer")
	os.WriteFile(bearerFile, []byte(mintMCP(t, stateDir, "stdio")+"\n"), 0o600)
	cmd := exec.Command(bin, "mcp", "--relay", url, "--bearer-file", bearerFile)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "stdio-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v; stderr: %s", err, stderr.String())
	}
	defer s.Close()
	if s.InitializeResult().ServerInfo.Name != "voicebox" || !strings.Contains(s.InitializeResult().Instructions, "workspace") {
		t.Fatalf("initialize answered %+v", s.InitializeResult())
	}
	list, err := s.ListTools(ctx, nil)
	if err != nil || !slices.ContainsFunc(list.Tools, func(tool *sdk.Tool) bool { return tool.Name == "read_file" }) {
		t.Fatalf("tools/list over stdio: %v", err)
	}
	if m, isErr := callMCP(t, s, "read_file", map[string]string{"name": "hello.txt"}); isErr || m["content"] != "hello from the machine" {
		t.Fatalf("read_file over stdio: %v", m)
	}
	if m, isErr := callMCP(t, s, "read_file", map[string]string{"name": "../x"}); !isErr || m["refused"] != "outside-root" {
		t.Fatalf("a refusal over stdio: %v (error %v)", m, isErr)
	}
	res, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "voicebox://workspace/hello.txt"})
	if err != nil || res.Contents[0].Text != "hello from the machine" {
		t.Fatalf("resources/read over stdio: %+v, %v", res, err)
	}
	s.Close() // stdin closes; the bridge exits
	if strings.Contains(stderr.String(), "vbm_") {
		t.Fatal("the bridge logged its bearer")
	}
}

// TestMCPStdioBridgeRefused: a revoked bearer stops the bridge with the relay's rule.
func TestMCPStdioBridgeRefused(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, stateDir)
	bearerFile := filepath.Join(t.TempDir(), "bearer")
	os.WriteFile(bearerFile, []byte(mintMCP(t, stateDir, "gone")), 0o600)
	run([]string{"mcp-token", "--extensions-dir", stateDir, "--revoke", "gone"}, io.Discard, io.Discard)
	var stderr bytes.Buffer
	r, w := io.Pipe()
	defer w.Close()
	code := mcpUntil(context.Background(), []string{"--relay", url, "--bearer-file", bearerFile}, &sdk.IOTransport{Reader: r, Writer: nopWriteCloser{io.Discard}}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "bearer-revoked") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}

// pngPixel is a 1x1 PNG.
var pngPixel, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestMCPStdioBridgeReadsOnPastABadLine: a line that is not JSON, one longer than
// mcp.MaxStdioLineBytes and a batch each get a JSON-RPC error with id null, and the bridge
// answers the next message; the SDK's own stdio transport ended `relay mcp` at the first.
func TestMCPStdioBridgeReadsOnPastABadLine(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, stdout := startServe(t, stateDir)
	go io.Copy(io.Discard, stdout)
	bearerFile := filepath.Join(t.TempDir(), "bearer")
	os.WriteFile(bearerFile, []byte(mintMCP(t, stateDir, "lines")), 0o600)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- mcpUntil(context.Background(), []string{"--relay", url, "--bearer-file", bearerFile}, &mcp.LineTransport{In: inR, Out: outW}, &stderr)
		outW.Close()
	}()
	answers := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unreadable": sc.Text()}
			}
			if _, answer := m["id"]; answer || m["unreadable"] != nil {
				answers <- m // notifications carry no id
			}
		}
		close(answers)
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("writing to the bridge: %v; stderr: %s", err, stderr.String())
		}
	}
	next := func() map[string]any {
		t.Helper()
		select {
		case m, ok := <-answers:
			if !ok {
				t.Fatalf("the bridge ended; stderr: %s", stderr.String())
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer from the bridge; stderr: %s", stderr.String())
		}
		return nil
	}
	refused := func(what string, code float64, rule string) {
		t.Helper()
		m := next()
		e, _ := m["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if m["id"] != nil || e["code"] != code || data["refused"] != rule || data["why"] == "" {
			t.Fatalf("%s answered %v; want error %v, %s, id null", what, m, code, rule)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":`)
	refused("a line that is not JSON", -32700, "malformed-json")
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", mcp.MaxStdioLineBytes) + `"}}`)
	refused("a line past the bound", -32600, "body-too-large")
	send(`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`)
	refused("a batch", -32600, "malformed-call")
	send(`{"jsonrpc":"2.0","id":5,"method":42}`)
	refused("JSON that is no message", -32600, "malformed-call")
	send("")
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	m := next()
	if res, _ := m["result"].(map[string]any); m["id"] != float64(6) || res["tools"] == nil {
		t.Fatalf("tools/list after the bad lines answered %v", m)
	}
	inW.Close()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("the bridge exited %d; stderr: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not end with its input")
	}
}

// TestBridgeServesWhatMCPServes holds `relay mcp` and /mcp to one table (mcp.Served): every
// client request of the protocol, sent to both as a client sends it, has the same outcome on
// both (the same result, or the same JSON-RPC error code), and the methods /mcp answers are
// exactly the table's.
func TestBridgeServesWhatMCPServes(t *testing.T) {
	t.Parallel()
	// On lines (mcp.LineTransport, what `relay mcp` runs on) tools/call passes to the relay as
	// bytes; on any other transport the bridge's SDK server answers it.
	for _, over := range []string{"memory", "lines"} {
		t.Run(over, func(t *testing.T) {
			t.Parallel()
			bridgeServesWhatMCPServes(t, over == "lines")
		})
	}
}

func bridgeServesWhatMCPServes(t *testing.T, lines bool) {
	url, stateDir, root := machineRelay(t)
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello"), 0o644)
	direct, _ := mcpSession(t, url, mintMCP(t, stateDir, "direct"))

	var local, client sdk.Transport
	if lines {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		local, client = &mcp.LineTransport{In: inR, Out: outW}, &sdk.IOTransport{Reader: outR, Writer: inW}
		t.Cleanup(func() { inW.Close(); outW.Close() })
	} else {
		local, client = sdk.NewInMemoryTransports()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		ran <- (&mcp.Bridge{Endpoint: url + "/mcp", Bearer: mintMCP(t, stateDir, "bridged")}).Run(ctx, local)
	}()
	bridged, err := sdk.NewClient(&sdk.Implementation{Name: "stdio-client", Version: "1"}, nil).Connect(ctx, client, nil)
	if err != nil {
		t.Fatalf("connect to the bridge: %v", err)
	}
	defer func() { bridged.Close(); cancel(); <-ran }()

	capsOf := func(s *sdk.ClientSession) string {
		b, _ := json.Marshal(s.InitializeResult().Capabilities)
		return string(b)
	}
	if a, b := capsOf(direct), capsOf(bridged); a != b {
		t.Errorf("capabilities: /mcp %s, the bridge %s", a, b)
	}
	template := &sdk.CompleteReference{Type: "ref/resource", URI: mcp.ResourcePrefix + "{+path}"}
	requests := []struct {
		method string
		send   func(s *sdk.ClientSession) (any, error)
	}{
		{"ping", func(s *sdk.ClientSession) (any, error) { return nil, s.Ping(ctx, nil) }},
		{"tools/list", func(s *sdk.ClientSession) (any, error) { return s.ListTools(ctx, nil) }},
		{"tools/call", func(s *sdk.ClientSession) (any, error) {
			return s.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]string{"name": "hello.txt"}})
		}},
		{"tools/call", func(s *sdk.ClientSession) (any, error) {
			return s.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]string{"name": "../outside"}})
		}},
		{"tools/call", func(s *sdk.ClientSession) (any, error) {
			return s.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]string{}})
		}},
		{"resources/list", func(s *sdk.ClientSession) (any, error) { return s.ListResources(ctx, nil) }},
		{"resources/templates/list", func(s *sdk.ClientSession) (any, error) { return s.ListResourceTemplates(ctx, nil) }},
		{"resources/read", func(s *sdk.ClientSession) (any, error) {
			return s.ReadResource(ctx, &sdk.ReadResourceParams{URI: mcp.ResourcePrefix + "hello.txt"})
		}},
		{"resources/subscribe", func(s *sdk.ClientSession) (any, error) {
			return nil, s.Subscribe(ctx, &sdk.SubscribeParams{URI: mcp.ResourcePrefix + "hello.txt"})
		}},
		{"resources/unsubscribe", func(s *sdk.ClientSession) (any, error) {
			return nil, s.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: mcp.ResourcePrefix + "hello.txt"})
		}},
		{"prompts/list", func(s *sdk.ClientSession) (any, error) { return s.ListPrompts(ctx, nil) }},
		{"prompts/get", func(s *sdk.ClientSession) (any, error) { return s.GetPrompt(ctx, &sdk.GetPromptParams{Name: "any"}) }},
		{"completion/complete", func(s *sdk.ClientSession) (any, error) {
			return s.Complete(ctx, &sdk.CompleteParams{Ref: template, Argument: sdk.CompleteParamsArgument{Name: "path", Value: "he"}})
		}},
		{"logging/setLevel", func(s *sdk.ClientSession) (any, error) {
			return nil, s.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"})
		}},
	}
	code := func(err error) int64 {
		var werr *jsonrpc.Error
		switch {
		case err == nil:
			return 0
		case errors.As(err, &werr):
			return werr.Code
		}
		return -1 // not a JSON-RPC error
	}
	served := []string{"initialize"}
	for _, r := range requests {
		a, errA := r.send(direct)
		b, errB := r.send(bridged)
		if code(errA) != code(errB) {
			t.Errorf("%s: /mcp answered %v, the bridge %v", r.method, errA, errB)
			continue
		}
		if errA != nil {
			continue
		}
		served = append(served, r.method)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s: /mcp answered %s, the bridge %s", r.method, ja, jb)
		}
	}
	slices.Sort(served)
	served = slices.Compact(served)
	if want := mcp.ServedMethods(); !slices.Equal(served, want) {
		t.Errorf("/mcp answers %v, the table says %v", served, want)
	}
}
