//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// everythingServer is where ./build.sh test installs the pinned MCP reference server
// (tools/mcp-everything/package.json).
var everythingServer = filepath.Join(harness.RepoRoot(), ".cache", "mcp-everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")

// everythingTools are the tools @modelcontextprotocol/server-everything 2026.8.31 lists to a
// client that offers neither sampling nor elicitation (the relay's session), each with arguments
// a model would send and what its answer holds. Their schemas use default, format and a draft-07
// $schema, which the subset of mini-app tools refuses. One is offered but cannot run yet:
// simulate-research-query runs only as a task (execution.taskSupport "required", MCP's tasks),
// which the relay's MCP client (the Go SDK's) does not send; its answer says so, and refused
// names the rule.
var everythingTools = []struct {
	name, args, want, refused string
}{
	{"echo", `{"message":"hello"}`, "hello", ""},
	{"get-annotated-message", `{"messageType":"success","includeImage":true}`, `"kind":"image"`, ""},
	{"get-env", `{}`, "PATH", ""},
	{"get-resource-links", `{"count":2}`, "resource: ", ""},
	{"get-resource-reference", `{"resourceId":2,"resourceType":"Text"}`, "2", ""},
	{"get-structured-content", `{"location":"Chicago"}`, `"structuredContent"`, ""},
	{"get-sum", `{"a":2,"b":40}`, "42", ""},
	{"get-tiny-image", `{}`, `"kind":"image"`, ""},
	{"gzip-file-as-resource", `{"data":"data:text/plain;base64,aGVsbG8gd29ybGQ=","name":"hello.txt.gz","outputType":"resource"}`, `"ok":true`, ""},
	{"toggle-simulated-logging", `{}`, "logging", ""},
	{"toggle-subscriber-updates", `{}`, "pdates", ""},
	{"trigger-long-running-operation", `{"duration":1,"steps":2}`, "ompleted", ""},
	{"get-roots-list", `{}`, `"ok":true`, ""},
	{"simulate-research-query", `{"topic":"JSON Schema"}`, "requires task augmentation", "mcp-tool-error"},
}

// startEverythingServer starts the MCP reference server from npm on a loopback port over
// Streamable HTTP and returns its host:port; it is stopped (by its PID) when the test ends.
func startEverythingServer(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(everythingServer); err != nil {
		t.Fatalf("the MCP reference server is not installed (%v): ./build.sh test installs it into .cache/mcp-everything", err)
	}
	return startListeningNode(t, "the MCP reference server", true, readyBound, everythingServer, "streamableHttp")
}

// TestRealMCPReferenceServerAllToolsUsable: @modelcontextprotocol/server-everything (pinned),
// admitted as a remote MCP extension, has every tool it lists offered to the model, each with a
// schema the model can use, and each called through the relay with a model's arguments answers;
// arguments its full schema refuses (a string where it declares a number) never leave the relay.
func TestRealMCPReferenceServerAllToolsUsable(t *testing.T) {
	t.Parallel()
	host := startEverythingServer(t)
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	raw := fmt.Sprintf(`{"id":"every","name":"Everything","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":400},"tools":[],"mcp":{"url":"http://%s/mcp"}}`, host, host)
	tools := admitRemote(t, relay, token, raw, "every")

	var want []string
	for _, c := range everythingTools {
		want = append(want, "every__"+c.name)
	}
	slices.Sort(want)
	slices.Sort(tools)
	if !slices.Equal(tools, want) {
		b, _ := json.Marshal(getListing(t, relay.URL))
		t.Fatalf("the plan admits %d tools %v, want the %d the server lists %v\n%s", len(tools), tools, len(want), want, b)
	}
	// What the model is offered of each: an object schema, the server's $schema left out.
	l := getListing(t, relay.URL)
	for _, a := range l["admitted"].([]any) {
		e := a.(map[string]any)
		if e["id"] != "every" {
			continue
		}
		for _, x := range e["tools"].([]any) {
			tool := x.(map[string]any)
			params, _ := tool["params"].(map[string]any)
			if params["type"] != "object" || params["$schema"] != nil {
				t.Errorf("%s is offered the schema %v", tool["name"], tool["params"])
			}
		}
	}

	usable := 0
	for _, c := range everythingTools {
		body := fmt.Sprintf(`{"extension":"every","tool":"every__%s","args":%s}`, c.name, c.args)
		m := postAPI(t, relay.URL, "/api/extensions/call", token, body)
		b, _ := json.Marshal(m)
		switch {
		case c.refused != "":
			if m["refused"] != c.refused || !strings.Contains(string(b), c.want) {
				t.Errorf("%s%s answered %s, want %s and %q in it", c.name, c.args, clip(string(b)), c.refused, c.want)
			}
		case m["ok"] != true || !strings.Contains(string(b), c.want):
			t.Errorf("%s%s answered %s, want ok and %q in it", c.name, c.args, clip(string(b)), c.want)
		default:
			usable++
		}
	}
	t.Logf("server-everything: %d of %d tools usable through the relay", usable, len(everythingTools))

	// Arguments the server's full schema refuses are refused on the relay, named; the next good
	// call is served.
	if m := postAPI(t, relay.URL, "/api/extensions/call", token, `{"extension":"every","tool":"every__get-sum","args":{"a":"2","b":40}}`); m["refused"] != "invalid-argument-type" || !strings.Contains(fmt.Sprint(m["why"]), "/a") {
		t.Fatalf("a string for a number: %v", m)
	}
	if m := postAPI(t, relay.URL, "/api/extensions/call", token, `{"extension":"every","tool":"every__get-resource-links","args":{"count":11}}`); m["refused"] != "invalid-argument-range" {
		t.Fatalf("a count over its maximum: %v", m)
	}
	if m := postAPI(t, relay.URL, "/api/extensions/call", token, `{"extension":"every","tool":"every__get-sum","args":{"a":1,"b":1}}`); m["ok"] != true {
		t.Fatalf("the next good call: %v", m)
	}
}
