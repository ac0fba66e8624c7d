package extensionhost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/mcphost"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// mcpServer is a go-sdk MCP server on loopback over Streamable HTTP, with the tools the tests call.
type mcpServer struct {
	srv   *mcp.Server
	ts    *httptest.Server
	calls atomic.Int64 // tools/call requests that reached a handler
	auth  atomic.Value // the last Authorization header seen
}

func newMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	s := &mcpServer{srv: mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)}
	s.srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes text, with a pixel.", InputSchema: map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"properties": map[string]any{"text": map[string]any{"type": "string", "maxLength": 100}}, "required": []string{"text"}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.calls.Add(1)
			var args struct{ Text string }
			json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + args.Text}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}}, nil
		})
	s.srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.calls.Add(1)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the disk is full"}}}, nil
	})
	s.srv.AddTool(&mcp.Tool{Name: "huge", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 1<<20)}}}, nil
	})
	// A schema outside the subset, as MCP servers write them: a pattern, a default, a $ref.
	s.srv.AddTool(&mcp.Tool{Name: "wide", InputSchema: map[string]any{"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema",
		"$defs":      map[string]any{"q": map[string]any{"type": "string", "pattern": "^a", "title": "Q"}},
		"properties": map[string]any{"q": map[string]any{"$ref": "#/$defs/q", "default": "a"}}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.calls.Add(1)
			return &mcp.CallToolResult{}, nil
		})
	// A schema that refers to another document: nothing is fetched, so it cannot be offered.
	s.srv.AddTool(&mcp.Tool{Name: "far", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"q": map[string]any{"$ref": "http://127.0.0.1:9/schema.json"}}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.calls.Add(1)
			return &mcp.CallToolResult{}, nil
		})
	// A tool with an MCP Apps view, and its ui:// resource.
	s.srv.AddTool(&mcp.Tool{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://show/view.html"}}, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shown"}}}, nil
		})
	s.srv.AddResource(&mcp.Resource{URI: "ui://show/view.html", Name: "view", MIMEType: mcphost.ViewMIMEType},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: mcphost.ViewMIMEType, Text: "<!doctype html><p>view</p>"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
	s.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.ts.Close)
	return s
}

func (s *mcpServer) host() string { u, _ := url.Parse(s.ts.URL); return u.Host }

// mcpDescriptor is a remote MCP descriptor of the server at endpoint, with bounds.
func mcpDescriptor(id, host, endpoint string, maxRequests int, extra string) string {
	return fmt.Sprintf(`{"id":%q,"name":"Remote","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":%d%s},"tools":[],"mcp":{"url":%q}}`,
		id, host, maxRequests, extra, endpoint)
}

// waitFor polls the listing until cond holds; a session that never gets there fails the test
// after a generous bound (the bound is no assertion of speed).
func (f *fixture) waitFor(what string, cond func(Listing) bool) Listing {
	f.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if l := f.g.ListExtensions(); cond(l) {
			return l
		}
	}
	l := f.g.ListExtensions()
	b, _ := json.Marshal(l.Admitted)
	p, _ := json.Marshal(l.Pending)
	f.t.Fatalf("never: %s\nadmitted %s\npending %s", what, b, p)
	return l
}

func admittedEntry(l Listing, id string) *Entry {
	for i := range l.Admitted {
		if l.Admitted[i].ID == id {
			return &l.Admitted[i]
		}
	}
	return nil
}

func pendingTools(l Listing, id string) []string {
	for _, e := range l.Pending {
		if e.ID == id && e.Plan != nil && e.Plan.MCP != nil {
			return e.Plan.MCP.Tools
		}
	}
	return nil
}

func offered(e *Entry) []string {
	var names []string
	if e != nil {
		for _, t := range e.Tools {
			names = append(names, t.Name)
		}
	}
	return names
}

// admitPending admits the waiting proposal id with the host token.
func (f *fixture) admitPending(id string) {
	f.t.Helper()
	if code, _, body := f.do("POST", "/api/extensions/admit", "tok", `{"id":"`+id+`","decision":"admit","confirm":true}`); code != 200 {
		f.t.Fatalf("admit %s: %d %s", id, code, body)
	}
}

// TestRemoteMCPExtension: a go-sdk server admitted as a remote MCP extension. The first admission
// lists the server's tools and stages them as a new plan; once that is admitted the tools reach
// the model named id__tool, a schema that refers outside itself is listed unavailable with its
// reason, one outside the subset is offered with its $refs resolved, arguments are validated
// against the full schema before the call, results are mapped (text, images as media, isError as
// a refusal), a tool the server adds waits for a new admission, and one it removes vanishes.
func TestRemoteMCPExtension(t *testing.T) {
	t.Parallel()
	s := newMCPServer(t)
	f := newFixture(t)
	t.Cleanup(f.g.Close)
	f.admit(mcpDescriptor("remote", s.host(), s.ts.URL, 100, ""))

	// The listing is read until the session's own view of the tools is there too: a listing
	// between a session's connection and its tools/list shows it connected with no tools yet.
	l := f.waitFor("the server's tools staged as a new plan", func(l Listing) bool {
		e := admittedEntry(l, "remote")
		return len(pendingTools(l, "remote")) > 0 && e != nil && e.MCP != nil && len(e.MCP.Unavailable) > 0
	})
	if got, want := pendingTools(l, "remote"), []string{"remote__echo", "remote__fail", "remote__huge", "remote__show", "remote__wide"}; !slices.Equal(got, want) {
		t.Fatalf("the new plan admits %v, want %v (far refers outside its schema)", got, want)
	}
	e := admittedEntry(l, "remote")
	if e == nil || len(e.Tools) != 0 || e.MCP == nil || !e.MCP.Connected {
		t.Fatalf("before the second admission: %+v", e)
	}
	reasons := map[string]string{}
	for _, u := range e.MCP.Unavailable {
		reasons[u.Name] = string(u.Rule) + ": " + u.Why
	}
	if !strings.Contains(reasons["far"], "tool-unavailable") || !strings.Contains(reasons["far"], "fetches no schema") || !strings.Contains(reasons["echo"], "admit the new plan") {
		t.Fatalf("unavailable: %v", reasons)
	}
	if m := f.call("remote", "remote__echo", `{"text":"hi"}`); m["refused"] != string(refusal.ToolUnavailable) || s.calls.Load() != 0 {
		t.Fatalf("a tool not yet admitted: %v (%d calls reached the server)", m, s.calls.Load())
	}

	f.admitPending("remote")
	l = f.waitFor("five tools offered", func(l Listing) bool { return len(offered(admittedEntry(l, "remote"))) == 5 })
	for _, tool := range admittedEntry(l, "remote").Tools {
		if tool.Name == "remote__wide" {
			// The model is offered the schema with its $ref resolved and its annotations kept.
			want := `{"properties":{"q":{"default":"a","pattern":"^a","title":"Q","type":"string"}},"type":"object"}`
			if string(tool.Params) != want || !strings.Contains(tool.SchemaNote, "$ref resolved") {
				t.Fatalf("wide is offered %s (%q), want %s", tool.Params, tool.SchemaNote, want)
			}
		}
		if want := map[bool]string{true: "ui://show/view.html"}[tool.Name == "remote__show"]; tool.View != want {
			t.Fatalf("%s has view %q, want %q", tool.Name, tool.View, want)
		}
	}
	code, m, body := f.do("POST", "/api/extensions/view", "", `{"extension":"remote","tool":"remote__show"}`)
	if view, _ := m["view"].(map[string]any); code != 200 || view["html"] != "<!doctype html><p>view</p>" || view["serverTool"] != "show" {
		t.Fatalf("the view: %d %s", code, body)
	}
	if code, m, _ := f.do("POST", "/api/extensions/view", "", `{"extension":"remote","tool":"remote__echo"}`); code != 404 || m["refused"] != string(refusal.NotFound) {
		t.Fatalf("a tool without a view: %d %v", code, m)
	}

	for _, c := range []struct {
		name, tool, args string
		want             refusal.Rule
	}{
		{"missing argument", "remote__echo", `{}`, refusal.MissingArgument},
		{"wrong type", "remote__echo", `{"text":5}`, refusal.InvalidArgumentType},
		{"too long", "remote__echo", `{"text":"` + strings.Repeat("a", 101) + `"}`, refusal.InvalidArgumentLength},
		{"undeclared key", "remote__fail", `{"x":1}`, ""}, // fail declares no properties and allows any: it reaches the server
		{"pattern", "remote__wide", `{"q":"b"}`, refusal.InvalidArgument},
		{"pattern's type", "remote__wide", `{"q":1}`, refusal.InvalidArgumentType},
		{"refers outside", "remote__far", `{"q":"a"}`, refusal.ToolUnavailable},
		{"no prefix", "echo", `{"text":"hi"}`, refusal.UnknownTool},
		{"another's prefix", "other__echo", `{"text":"hi"}`, refusal.UnknownTool},
	} {
		if c.want == "" {
			continue
		}
		if m := f.call("remote", c.tool, c.args); m["refused"] != string(c.want) {
			t.Errorf("%s: %v, want %s", c.name, m, c.want)
		}
	}
	if n := s.calls.Load(); n != 0 {
		t.Fatalf("%d refused calls reached the server", n)
	}
	if m := f.call("remote", "remote__wide", `{"q":"abc"}`); m["ok"] != true || s.calls.Load() != 1 {
		t.Fatalf("wide with a matching q: %v (%d calls)", m, s.calls.Load())
	}
	m = f.call("remote", "remote__echo", `{"text":"hi"}`)
	obs, _ := m["observed"].(map[string]any)
	media, _ := obs["media"].([]any)
	if m["ok"] != true || obs["text"] != "echo: hi" || len(media) != 1 || media[0].(map[string]any)["kind"] != "image" || obs["tool"] != "echo" {
		t.Fatalf("echo: %v", m)
	}
	if m := f.call("remote", "remote__fail", `{}`); m["refused"] != string(refusal.MCPToolError) || !strings.Contains(fmt.Sprint(m["why"]), "the disk is full") {
		t.Fatalf("isError: %v", m)
	}

	// The server adds a tool: it waits for a new plan. Then it removes one: that one vanishes.
	s.srv.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
	})
	l = f.waitFor("the added tool staged", func(l Listing) bool { return slices.Contains(pendingTools(l, "remote"), "remote__late") })
	if got := offered(admittedEntry(l, "remote")); slices.Contains(got, "remote__late") {
		t.Fatalf("an added tool was offered before its admission: %v", got)
	}
	if m := f.call("remote", "remote__late", `{}`); m["refused"] != string(refusal.ToolUnavailable) {
		t.Fatalf("a pending tool: %v", m)
	}
	f.admitPending("remote")
	f.waitFor("the added tool offered", func(l Listing) bool { return slices.Contains(offered(admittedEntry(l, "remote")), "remote__late") })
	if m := f.call("remote", "remote__late", `{}`); m["ok"] != true {
		t.Fatalf("late after its admission: %v", m)
	}
	s.srv.RemoveTools("fail")
	f.waitFor("the removed tool gone", func(l Listing) bool {
		return !slices.Contains(offered(admittedEntry(l, "remote")), "remote__fail")
	})
	if m := f.call("remote", "remote__fail", `{}`); m["refused"] != string(refusal.UnknownTool) {
		t.Fatalf("a removed tool: %v", m)
	}
	if !strings.Contains(f.audit(), `"primitive":"mcp"`) {
		t.Fatal("the calls are not audited")
	}
}

// TestRemoteMCPBounds: the session is held to the mediated fetch's bounds: the budget, the
// response bound, a redirect off the plan's hosts, a host outside the plan at the gate, the
// declared secret (and only it), and revocation ending the session.
func TestRemoteMCPBounds(t *testing.T) {
	t.Parallel()
	s := newMCPServer(t)

	t.Run("host outside the plan", func(t *testing.T) {
		f := newFixture(t)
		code, m, _ := f.do("POST", "/api/extensions/sideload", "", mcpDescriptor("far", "elsewhere.example", s.ts.URL, 10, ""))
		if code == 200 || m["refused"] != string(refusal.UnderDeclared) {
			t.Fatalf("a server outside bounds.hosts: %d %v", code, m)
		}
	})

	t.Run("redirect off the hosts", func(t *testing.T) {
		f := newFixture(t)
		t.Cleanup(f.g.Close)
		away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, s.ts.URL, http.StatusTemporaryRedirect)
		}))
		t.Cleanup(away.Close)
		host := strings.TrimPrefix(away.URL, "http://")
		f.admit(mcpDescriptor("hop", host, away.URL, 10, ""))
		l := f.waitFor("the session refused", func(l Listing) bool {
			e := admittedEntry(l, "hop")
			return e != nil && e.MCP != nil && e.MCP.Refused != ""
		})
		if e := admittedEntry(l, "hop"); e.MCP.Refused != refusal.RedirectHostNotAllowed {
			t.Fatalf("a redirect off the hosts: %+v", e.MCP)
		}
	})

	t.Run("budget and response bound", func(t *testing.T) {
		f := newFixture(t)
		t.Cleanup(f.g.Close)
		f.admit(mcpDescriptor("small", s.host(), s.ts.URL, 12, `,"maxBytes":65536`))
		f.waitFor("the plan staged", func(l Listing) bool { return len(pendingTools(l, "small")) > 0 })
		f.admitPending("small")
		f.waitFor("tools offered", func(l Listing) bool { return len(offered(admittedEntry(l, "small"))) > 0 })
		if m := f.call("small", "small__huge", `{}`); m["refused"] != string(refusal.ToolOutputOverBudget) {
			t.Fatalf("a 1 MiB answer with maxBytes 64 KiB: %v", m)
		}
		var last map[string]any
		for range 13 {
			if last = f.call("small", "small__echo", `{"text":"x"}`); last["refused"] == string(refusal.BudgetExhausted) {
				break
			}
		}
		if last["refused"] != string(refusal.BudgetExhausted) {
			t.Fatalf("12 requests never ran out: %v", last)
		}
	})

	t.Run("secret", func(t *testing.T) {
		f := newFixture(t)
		t.Cleanup(f.g.Close)
		f.g.Fetcher.Getenv = func(k string) string {
			if k == "REMOTE_TOKEN" {
				return "s3cret"
			}
			return ""
		}
		secret := fmt.Sprintf(`,"secrets":[{"name":"REMOTE_TOKEN","header":"Authorization","prefix":"Bearer ","hosts":[%q]}]`, s.host())
		raw := mcpDescriptor("keyed", s.host(), s.ts.URL, 20, secret)
		d, _ := extensions.Parse([]byte(raw))
		plan := extensions.Disclose(d, extensions.Machine, []byte(raw))
		if !strings.Contains(strings.Join(plan.Summary, "\n"), "$REMOTE_TOKEN in Authorization") || !strings.Contains(strings.Join(plan.Summary, "\n"), s.ts.URL) {
			t.Fatalf("the plan does not say the secret and the server: %q", plan.Summary)
		}
		f.admit(raw)
		f.waitFor("the plan staged", func(l Listing) bool { return len(pendingTools(l, "keyed")) > 0 })
		if got, _ := s.auth.Load().(string); got != "Bearer s3cret" {
			t.Fatalf("the server saw Authorization %q", got)
		}
		if strings.Contains(f.audit(), "s3cret") || strings.Contains(f.logs.String(), "s3cret") {
			t.Fatal("the secret's value reached the audit or the log")
		}
		// Revoked: the session ends and calls are not-admitted.
		if code, _, body := f.do("POST", "/api/extensions/revoke", "", `{"id":"keyed"}`); code != 200 {
			t.Fatalf("revoke: %d %s", code, body)
		}
		if m := f.call("keyed", "keyed__echo", `{"text":"x"}`); m["refused"] != string(refusal.NotAdmitted) {
			t.Fatalf("after revocation: %v", m)
		}
	})
}

// audit returns the audit log's text.
func (f *fixture) audit() string {
	f.t.Helper()
	b, _ := os.ReadFile(filepath.Join(f.dir, AuditFile))
	return string(b)
}

// lyingServer is an MCP server written by hand (JSON-RPC over plain HTTP, no session), so it can
// say what no SDK server would: tools lists what it likes, and tools/call answers as call does.
func lyingServer(t *testing.T, tools []map[string]any, call func(w http.ResponseWriter, r *http.Request, id json.RawMessage)) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "liar", "version": "1"}}
		case "tools/list":
			result = map[string]any{"tools": tools}
		case "tools/call":
			call(w, r, req.ID)
			return
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, req.ID)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestRemoteMCPHostileServers: a server that lies in tools/list (a name twice, a name with a
// control character, a schema that is no object, more tools than a descriptor admits), and one
// whose answers never end, slowly or fast: each is read within its bounds and named.
func TestRemoteMCPHostileServers(t *testing.T) {
	t.Parallel()
	object := map[string]any{"type": "object"}
	tools := []map[string]any{
		{"name": "echo", "inputSchema": object},
		{"name": "echo", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}},
		{"name": "bad\nname", "inputSchema": object},
		{"name": "scalar", "inputSchema": map[string]any{"type": "string"}},
		{"name": "slow", "inputSchema": object},
		{"name": "flood", "inputSchema": object},
	}
	for i := range 100 {
		tools = append(tools, map[string]any{"name": fmt.Sprintf("t%03d", i), "inputSchema": object})
	}
	// Every call answers an event stream that never ends: slowly at the plain address, in 8 KiB
	// comments as fast as it can at ?fast.
	ts := lyingServer(t, tools, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		flusher := w.(http.Flusher)
		chunk := []byte(": " + strings.Repeat("x", 8192) + "\n\n")
		for i := 0; r.Context().Err() == nil && i < 100000; i++ {
			if strings.Contains(r.URL.RawQuery, "fast") {
				w.Write(chunk)
			} else {
				w.Write([]byte(": still here\n\n"))
				time.Sleep(20 * time.Millisecond)
			}
			flusher.Flush()
		}
	})
	u, _ := url.Parse(ts.URL)

	f := newFixture(t)
	t.Cleanup(f.g.Close)
	f.g.Fetcher.RequestTimeout = 500 * time.Millisecond
	f.admit(mcpDescriptor("liar", u.Host, ts.URL+"/mcp", 200, `,"maxBytes":65536`))
	l := f.waitFor("the listing staged", func(l Listing) bool { return len(pendingTools(l, "liar")) > 0 })
	planned := pendingTools(l, "liar")
	if len(planned) > extensions.MaxMCPTools || slices.Index(planned, "liar__echo") != 0 || slices.Contains(planned[1:], "liar__echo") {
		t.Fatalf("the plan admits %d tools: %v", len(planned), planned)
	}
	reasons := map[string]string{}
	for _, x := range admittedEntry(l, "liar").MCP.Unavailable {
		reasons[x.Name] = x.Why
	}
	if !strings.Contains(reasons[`bad\u{000A}name`], string(refusal.InvalidName)) || !strings.Contains(reasons["scalar"], "not an object schema") {
		t.Fatalf("unavailable: %v", reasons)
	}
	f.admitPending("liar")
	f.waitFor("the tools offered", func(l Listing) bool { return len(offered(admittedEntry(l, "liar"))) > 0 })
	if m := f.call("liar", "liar__slow", `{}`); m["refused"] != string(refusal.FetchTimeout) {
		t.Fatalf("an answer that never ends: %v", m)
	}

	// The same server at an address whose answers flood: cut at maxBytes.
	f2 := newFixture(t)
	t.Cleanup(f2.g.Close)
	f2.admit(mcpDescriptor("flood", u.Host, ts.URL+"/mcp?fast", 200, `,"maxBytes":65536`))
	f2.waitFor("the listing staged", func(l Listing) bool { return len(pendingTools(l, "flood")) > 0 })
	f2.admitPending("flood")
	f2.waitFor("the tools offered", func(l Listing) bool { return len(offered(admittedEntry(l, "flood"))) > 0 })
	if m := f2.call("flood", "flood__flood", `{}`); m["refused"] != string(refusal.ToolOutputOverBudget) {
		t.Fatalf("an answer that floods: %v", m)
	}
}

// TestRemoteMCPSessionComesBack: a server that is down when the extension is admitted, and one
// that restarts and forgets the session: a later call makes the session again (no more often than
// the retry interval), and the calls after it are answered.
func TestRemoteMCPSessionComesBack(t *testing.T) {
	t.Parallel()
	s := newMCPServer(t)
	var current atomic.Pointer[http.Handler]
	down := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }))
	current.Store(&down)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	serve := func() { // a fresh handler: the server as if it had restarted, knowing no session
		h := http.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil))
		current.Store(&h)
	}
	u, _ := url.Parse(ts.URL)

	f := newFixture(t)
	t.Cleanup(f.g.Close)
	f.g.MCPRetryInterval = time.Millisecond
	f.admit(mcpDescriptor("back", u.Host, ts.URL, 100, ""))
	l := f.waitFor("the session refused", func(l Listing) bool {
		e := admittedEntry(l, "back")
		return e != nil && e.MCP != nil && e.MCP.Refused != ""
	})
	if e := admittedEntry(l, "back"); e.MCP.Connected {
		t.Fatalf("connected to a server that is down: %+v", e.MCP)
	}
	serve()
	if m := f.call("back", "back__echo", `{"text":"x"}`); m["refused"] != string(refusal.ToolUnavailable) {
		t.Fatalf("the first call after the server came up: %v", m)
	}
	f.waitFor("the tools staged", func(l Listing) bool { return len(pendingTools(l, "back")) > 0 })
	f.admitPending("back")
	f.waitFor("the tools offered", func(l Listing) bool { return len(offered(admittedEntry(l, "back"))) > 0 })
	if m := f.call("back", "back__echo", `{"text":"x"}`); m["ok"] != true {
		t.Fatalf("a call on the session: %v", m)
	}
	serve()
	if m := f.call("back", "back__echo", `{"text":"y"}`); m["refused"] != string(refusal.MCPUnreachable) {
		t.Fatalf("a call the restarted server does not know the session of: %v", m)
	}
	if m := f.call("back", "back__echo", `{"text":"z"}`); m["ok"] != true {
		t.Fatalf("the call after: %v", m)
	}
}
