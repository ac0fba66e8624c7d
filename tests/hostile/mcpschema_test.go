//go:build !js

package hostile

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// maxOfferedSchemaNodes is mcphost.MaxOfferedSchemaNodes (the tests' module does not build
// the relay's packages).
const maxOfferedSchemaNodes = 8192

// TestRemoteMCPArgumentsAreHeldToTheFullSchema: an admitted MCP server's tools carry schemas as
// servers write them, and hostile ones: a pattern and a $ref (the relay must offer the tool and
// hold a model's arguments to all of it on the relay, so arguments the server's schema refuses
// never reach it; before the fix the tool was not offered at all), a $ref to a document on a
// server the test watches (nothing may be fetched), a $ref bomb of 30 definitions each twice the
// next (2^30 schemas once resolved for the model) and a schema that refers to itself through
// anyOf (validation that branches at every level of the arguments). The hostile ones are not
// offered, each with its reason; nothing is fetched; a tool that waits for a person's approval
// refuses bad arguments before anyone is asked; the good call is served, then the relay.
func TestRemoteMCPArgumentsAreHeldToTheFullSchema(t *testing.T) {
	t.Parallel()
	var fetched atomic.Int64
	watched := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	t.Cleanup(watched.Close)

	var calls atomic.Int64
	var got atomic.Value
	handler := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.Add(1)
		got.Store(string(req.Params.Arguments))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "schemas", Version: "1"}, nil)
	// Read-only, so no page is needed to approve its calls: what decides is the schema.
	srv.AddTool(&mcp.Tool{Name: "ticket", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: map[string]any{"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema",
		"$defs":      map[string]any{"id": map[string]any{"type": "string", "pattern": "^T-[0-9]+$", "title": "Ticket"}},
		"properties": map[string]any{"id": map[string]any{"$ref": "#/$defs/id"}, "note": map[string]any{"type": "string", "default": ""}},
		"required":   []any{"id"}, "additionalProperties": false}}, handler)
	// Not read-only: its calls wait for a person's approval, which arguments its schema refuses
	// must never reach (no one is asked to approve a call that cannot run).
	srv.AddTool(&mcp.Tool{Name: "close", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"id": map[string]any{"type": "string", "pattern": "^T-[0-9]+$"}}, "required": []any{"id"}}}, handler)
	srv.AddTool(&mcp.Tool{Name: "far", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"x": map[string]any{"$ref": watched.URL + "/schema.json"}}}}, handler)
	defs := map[string]any{"a30": map[string]any{"type": "string"}}
	for i := 29; i >= 0; i-- {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/a%d", i+1)}
		defs[fmt.Sprintf("a%d", i)] = map[string]any{"allOf": []any{next, next}}
	}
	srv.AddTool(&mcp.Tool{Name: "bomb", InputSchema: map[string]any{"type": "object", "$defs": defs,
		"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/a0"}}}}, handler)
	self := map[string]any{"$ref": "#/$defs/n"}
	srv.AddTool(&mcp.Tool{Name: "loop", InputSchema: map[string]any{"type": "object",
		"$defs":      map[string]any{"n": map[string]any{"properties": map[string]any{"a": map[string]any{"anyOf": []any{self, self}}}}},
		"properties": map[string]any{"x": self}}}, handler)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	host := strings.TrimPrefix(ts.URL, "http://")

	relay := harness.StartRelay(t)
	admitRemoteMCP(t, relay, "schemas", fmt.Sprintf(`{"id":"schemas","name":"Schemas","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":100},"tools":[],"mcp":{"url":%q}}`, host, ts.URL))
	var e *mcpEntry
	waitFor(t, "the ticket tool offered", func() bool {
		e = admittedMCP(t, relay, "schemas")
		return e != nil && len(e.Tools) > 1
	})
	why := map[string]string{}
	for _, u := range e.MCP.Unavailable {
		why[u.Name] = u.Rule + ": " + u.Why
	}
	if len(e.Tools) != 2 || e.Tools[0].Name != "schemas__close" || e.Tools[1].Name != "schemas__ticket" {
		t.Fatalf("offered %+v, unavailable %v; want schemas__close and schemas__ticket", e.Tools, why)
	}
	for name, reason := range map[string]string{"far": "fetches no schema", "bomb": fmt.Sprintf("past %d JSON values", maxOfferedSchemaNodes), "loop": "refers to itself"} {
		if !strings.Contains(why[name], "tool-unavailable") || !strings.Contains(why[name], reason) {
			t.Errorf("%s is unavailable for %q, want tool-unavailable and %q", name, why[name], reason)
		}
	}
	if fetched.Load() != 0 {
		t.Fatalf("the relay fetched a schema %d times", fetched.Load())
	}

	model := modelClient(t, relay)
	for _, c := range []struct{ args, rule, at string }{
		{`{"id":"T-1; rm -rf /"}`, "invalid-argument", "/id"},
		{`{"id":"T-1","extra":true}`, "invalid-argument", "/"},
		{`{"note":"no id"}`, "missing-argument", "/"},
		{`{"id":7}`, "invalid-argument-type", "/id"},
	} {
		text, m := modelCall(t, model, "call_extension", map[string]any{"extension": "schemas", "name": "schemas__ticket", "arguments": c.args})
		if m["refused"] != c.rule || !strings.Contains(fmt.Sprint(m["why"]), c.at+":") {
			t.Errorf("%s answered %s, want %s at %s", c.args, text, c.rule, c.at)
		}
	}
	// No page is open: a call that waits for approval is refused no-page; one whose arguments
	// the schema refuses is refused for them first.
	if text, m := modelCall(t, model, "call_extension", map[string]any{"extension": "schemas", "name": "schemas__close", "arguments": `{"id":"all"}`}); m["refused"] != "invalid-argument" {
		t.Errorf("close with arguments its schema refuses answered %s, want invalid-argument before any approval", text)
	}
	if text, m := modelCall(t, model, "call_extension", map[string]any{"extension": "schemas", "name": "schemas__close", "arguments": `{"id":"T-9"}`}); m["refused"] != "no-page" {
		t.Errorf("close with good arguments answered %s, want no-page (it waits for a person)", text)
	}
	if calls.Load() != 0 {
		t.Fatalf("%d calls the server's schema refuses reached it", calls.Load())
	}
	if text, m := modelCall(t, model, "call_extension", map[string]any{"extension": "schemas", "name": "schemas__ticket", "arguments": `{"id":"T-42"}`}); m["text"] != "done" || calls.Load() != 1 || got.Load() != `{"id":"T-42"}` {
		t.Fatalf("the good call answered %s (%d calls, the server read %v)", text, calls.Load(), got.Load())
	}
	served(t, relay)
}
