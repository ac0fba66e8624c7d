//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// malformedParams are params no MCP method takes: a list (the JSON-RPC positional form), a
// string, a number, and an object whose every field has a wrong type.
var malformedParams = []string{`["read_file"]`, `[]`, `"x"`, `7`,
	`{"name":5,"arguments":"x","uri":[],"level":{},"cursor":7,"ref":"x","argument":1,"progressToken":{},"requestId":[],"capabilities":"x","protocolVersion":9}`,
}

// jsonRPCAnswer is the JSON-RPC message of an answer of /mcp: the body itself, or the data of
// its first server-sent event.
func jsonRPCAnswer(body string) map[string]any {
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data:"); ok {
			body = data
			break
		}
	}
	var m map[string]any
	json.Unmarshal([]byte(strings.TrimSpace(body)), &m)
	return m
}

// namedRefusal reports whether the JSON-RPC error of m carries data {refused, why}: a rule id and
// a sentence.
func namedRefusal(m map[string]any) bool {
	e, _ := m["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	rule, _ := d["refused"].(string)
	why, _ := d["why"].(string)
	return rule != "" && why != ""
}

// TestMCPParamsOfTheWrongShapeAreNamedRefusals: the SDK decodes a request's params before any
// handler of Voicebox runs, and refused params of the wrong shape (a tools/call whose params are
// a JSON array) with a bare -32602 and no {refused, why}. Every method /mcp serves (mcpDoors) is
// called with each of malformedParams in an initialized session: every JSON-RPC error it answers
// carries data {refused, why}, as every other refusal of /mcp does; the session then reads a
// file. The same through `relay mcp`, whose tools/call lines pass to the relay as bytes: a call
// whose params are a list, or whose name is a number, is answered -32602 with data {refused:
// invalid-argument}, with the client's id, and the next read is served.
func TestMCPParamsOfTheWrongShapeAreNamedRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("the notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := harness.StartRelay(t, "VOICEBOX_WORKSPACE="+dir)
	waitFor(t, "the workspace to hold the root", func() bool { return rootKind(t, r) == "machine" })
	bearer := r.MintMCPBearer(t, "shapes")
	code, session, body := mcpPost(t, r, bearer, "", mcpInit)
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize answered %d %q %.200s", code, session, body)
	}
	mcpPost(t, r, bearer, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id, errors := 100, 0
	for _, door := range mcpDoors(t) {
		method := strings.TrimPrefix(door, "socket /mcp method ")
		for _, p := range malformedParams {
			id++
			_, _, body := mcpPost(t, r, bearer, session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p))
			m := jsonRPCAnswer(body)
			if m["error"] == nil {
				continue // a method that takes no params may answer
			}
			errors++
			if !namedRefusal(m) {
				t.Errorf("/mcp %s(%.40s) answered an error with no {refused, why}: %.300s", method, p, body)
			}
		}
	}
	if errors < len(malformedParams) {
		t.Fatalf("only %d of the calls were refused: the attack did not land", errors)
	}
	read := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"read_file","arguments":{"name":"notes.md"}}}`
	}
	if _, _, body := mcpPost(t, r, bearer, session, read("1")); !strings.Contains(body, "the notes") {
		t.Fatalf("the session no longer reads: %.300s", body)
	}

	b := startStdioBridge(t, r)
	b.send(mcpInit)
	if m := b.next("initialize"); m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	b.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, p := range []string{`["read_file"]`, `{"name":5}`} {
		b.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"odd%d","method":"tools/call","params":%s}`, i, p))
		m := b.next("tools/call with params " + p)
		e, _ := m["error"].(map[string]any)
		d, _ := e["data"].(map[string]any)
		if m["id"] != fmt.Sprintf("odd%d", i) || e["code"] != float64(-32602) || !namedRefusal(m) || d["refused"] != "invalid-argument" {
			t.Errorf("relay mcp: tools/call with params %s answered %v", p, m)
		}
	}
	b.send(read("7"))
	if m := b.next("a read"); m["id"] != float64(7) || !strings.Contains(mustJSON(m), "the notes") {
		t.Fatalf("relay mcp: the read after them answered %v", m)
	}
}
