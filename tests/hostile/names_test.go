//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// Review item 9 (issue 32): bidi controls, zero-width characters, CR, LF and ESC passed the name
// checks, so "\u200b.voicebox" showed as the hidden history folder, "\u202egnp.exe" showed as
// "exe.png", and an MCP tool name with U+202E read reversed in the admission plan. Every door
// that takes a name a person reads now refuses them with invalid-name, naming the character and
// its index (internal/shared/names).

// wantInvalidName fails t unless refused is invalid-name and why names char and index.
func wantInvalidName(t testing.TB, what, refused, why, char string, index int) {
	t.Helper()
	if refused != "invalid-name" || !strings.Contains(why, char) || !strings.Contains(why, fmt.Sprintf("at index %d", index)) {
		t.Errorf("%s answered %q: %q; want invalid-name naming %s at index %d", what, refused, why, char, index)
	}
}

// TestLookalikeFileNamesAreRefusedInvalidName: through POST /api/root/call to a paired machine,
// writing "\u200b.voicebox/x" (a folder that lists as .voicebox) and "\u202egnp.exe" (a file
// that lists as exe.png), making such a folder and moving a file to such a name are refused
// invalid-name with the character and its index; nothing is created; a file another program
// stored under such a name is still read and listed, so a person can clean it up; and the next
// write is served.
func TestLookalikeFileNamesAreRefusedInvalidName(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("notes"), 0o644)
	os.WriteFile(filepath.Join(dir, "old\u202etxt.md"), []byte("stored before"), 0o644)
	harness.StartMachine(t, relay, "box", dir)
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(t, relay) == "machine" })

	for _, c := range []struct {
		tool  string
		args  map[string]string
		char  string
		index int
	}{
		{"write-file", map[string]string{"path": "\u200b.voicebox/x", "content": "x"}, "U+200B", 0},
		{"write-file", map[string]string{"path": "\u202egnp.exe", "content": "MZ"}, "U+202E", 0},
		{"write-file", map[string]string{"path": "docs/a\u2066b\r\n.md", "content": "x"}, "U+2066", 6},
		{"write-file", map[string]string{"path": "log\x1b[2J.txt", "content": "x"}, "U+001B", 3},
		{"create-folder", map[string]string{"path": "\u200b.voicebox"}, "U+200B", 0},
		{"move-file", map[string]string{"path": "notes.txt", "to": "\u202egnp.exe"}, "U+202E", 0},
	} {
		a := relay.Call(t, c.tool, c.args)
		wantInvalidName(t, fmt.Sprintf("%s %+q", c.tool, c.args), a.Refused, a.Why, c.char, c.index)
	}
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		if e.Name() != ".voicebox" { // the machine's own records: its audit log of these calls
			got = append(got, e.Name())
		}
	}
	if strings.Join(got, ",") != "notes.txt,old\u202etxt.md" {
		t.Errorf("the machine's folder holds %+q; want only what was there", got)
	}

	if a := relay.Call(t, "read-file", map[string]string{"path": "old\u202etxt.md"}); !a.OK || !strings.Contains(string(a.Observed), "stored before") {
		t.Errorf("a file stored before the rule could not be read: %s", a.Raw)
	}
	var list struct {
		Entries []struct{ Name, Shown string }
	}
	if a := relay.Call(t, "list-files", map[string]string{"dir": ""}); !a.OK || json.Unmarshal(a.Observed, &list) != nil {
		t.Errorf("list-files answered %s", a.Raw)
	}
	shown := map[string]string{}
	for _, e := range list.Entries {
		shown[e.Name] = e.Shown
	}
	if shown["old\u202etxt.md"] != `old\u{202E}txt.md` || shown["notes.txt"] != "" {
		t.Errorf("the listing shows %+q; want the stored lookalike escaped beside its name, and notes.txt as it is", shown)
	}
	if a := relay.Call(t, "write-file", map[string]string{"path": "exe.png", "content": "x"}); !a.OK {
		t.Fatalf("the next write answered %s", a.Raw)
	}
	served(t, relay)
}

// TestALookalikeMCPToolNameIsNeverOffered: a remote MCP server lists a tool whose name holds
// U+202E beside a plain one. The plain one is staged for the person to admit; the other is
// offered as tool-unavailable with the invalid-name reason (the character and its index), never
// enters a plan, and the relay serves the next request.
func TestALookalikeMCPToolNameIsNeverOffered(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "lookalike", Version: "1"}, nil)
	for _, name := range []string{"echo", "read\u202etxt.eteled"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
			})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	host := strings.TrimPrefix(ts.URL, "http://")

	relay := harness.StartRelay(t)
	desc := fmt.Sprintf(`{"id":"lookalike","name":"Lookalike","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":100},"tools":[],"mcp":{"url":%q}}`, host, ts.URL)
	if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(desc), false); r.status != http.StatusOK {
		t.Fatalf("sideload: %d %s", r.status, r.body)
	}
	admit := map[string]any{"id": "lookalike", "decision": "admit", "confirm": true}
	if r := postJSON(t, relay, "/api/extensions/admit", admit, true); r.status != http.StatusOK {
		t.Fatalf("admit: %d %s", r.status, r.body)
	}
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}
	var listing struct {
		Extensions struct {
			Admitted []struct {
				ID  string `json:"id"`
				MCP *struct {
					Unavailable []struct{ Name, Refused, Why string } `json:"unavailable"`
				} `json:"mcp"`
			} `json:"admitted"`
			Pending []struct {
				ID   string `json:"id"`
				Plan *struct {
					MCP *struct{ Tools []string } `json:"mcp"`
				} `json:"plan"`
			} `json:"pending"`
		}
	}
	var body string
	waitFor(t, "the server's tools listed and staged", func() bool {
		body = send(t, nil, http.MethodGet, relay.URL+"/api/extensions", token, "").body
		return strings.Contains(body, `"lookalike__echo"`) && strings.Contains(body, `"unavailable":[{`)
	})
	if err := json.Unmarshal([]byte(body), &listing); err != nil {
		t.Fatalf("the listing: %v", err)
	}
	found := false
	for _, e := range listing.Extensions.Admitted {
		if e.ID != "lookalike" || e.MCP == nil {
			continue
		}
		for _, u := range e.MCP.Unavailable {
			if strings.HasPrefix(u.Name, "read") {
				found = true
				if u.Name != `read\u{202E}txt.eteled` {
					t.Errorf("the unavailable tool is listed as %+q; want its U+202E shown escaped", u.Name)
				}
				if u.Refused != "tool-unavailable" || !strings.Contains(u.Why, "invalid-name") {
					t.Errorf("the lookalike tool is unavailable as %q: %q; want tool-unavailable for invalid-name", u.Refused, u.Why)
				}
				wantInvalidName(t, "the listing", "invalid-name", u.Why, "U+202E", 4)
			}
		}
	}
	if !found {
		t.Errorf("the lookalike tool is not listed as unavailable: %s", body)
	}
	for _, p := range listing.Extensions.Pending {
		if p.ID == "lookalike" && p.Plan != nil && p.Plan.MCP != nil {
			for _, tool := range p.Plan.MCP.Tools {
				if strings.ContainsRune(tool, '\u202e') {
					t.Errorf("the plan a person would admit holds %+q", tool)
				}
			}
		}
	}
	served(t, relay)
}

// TestLookalikeDescriptorNamesAreRefusedAtTheGate: a descriptor whose id holds a zero-width
// space (it reads as an admitted extension's), or whose name or tool name holds a bidi override,
// is refused invalid-name when it is offered, with the character and its index; nothing is
// staged, and a clean descriptor is taken next.
func TestLookalikeDescriptorNamesAreRefusedAtTheGate(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	desc := func(id, name, tool string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"id": id, "name": name, "capabilities": []string{"clock"}, "bounds": map[string]any{},
			"tools": []any{map[string]any{"name": tool, "primitive": "now"}}})
		return b
	}
	for _, c := range []struct {
		what, id, name, tool, char string
		index                      int
	}{
		{"a zero-width id", "\u200bclock", "Clock", "now", "U+200B", 0},
		{"a reversed name", "clock", "Clock \u202ekcolc", "now", "U+202E", 6},
		{"a reversed tool name", "clock", "Clock", "now\u202e", "U+202E", 3},
		{"an escape in the name", "clock", "Clock\x1b]0;owned\x07", "now", "U+001B", 5},
	} {
		r := postJSON(t, relay, "/api/extensions/sideload", desc(c.id, c.name, c.tool), false)
		refused, _ := r.m["refused"].(string)
		why, _ := r.m["why"].(string)
		if r.status == http.StatusOK {
			t.Errorf("%s was taken: %s", c.what, r.body)
			continue
		}
		wantInvalidName(t, c.what, refused, why, c.char, c.index)
	}
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}
	if l := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", token, "").body; strings.Contains(l, `"clock"`) {
		t.Errorf("a refused descriptor was staged: %s", l)
	}
	if r := postJSON(t, relay, "/api/extensions/sideload", desc("clock", "Clock", "now"), false); r.status != http.StatusOK {
		t.Fatalf("the clean descriptor: %d %s", r.status, r.body)
	}
	served(t, relay)
}

// TestLookalikeClientNamesAreRefused: an MCP client or a machine named with a bidi override or
// a zero-width space (it would read as another client in the host's list) is refused
// invalid-name with the character and its index, and a clean name is minted next.
func TestLookalikeClientNamesAreRefused(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for _, c := range []struct {
		path, name, char string
		index            int
	}{
		{"/api/mcp/clients", "claude\u202e", "U+202E", 6},
		{"/api/pair", "\u200bbox", "U+200B", 0},
	} {
		r := postJSON(t, relay, c.path, map[string]string{"name": c.name}, true)
		refused, _ := r.m["refused"].(string)
		why, _ := r.m["why"].(string)
		wantInvalidName(t, c.path, refused, why, c.char, c.index)
	}
	if r := postJSON(t, relay, "/api/mcp/clients", map[string]string{"name": "claude"}, true); r.status != http.StatusOK {
		t.Fatalf("the clean name: %d %s", r.status, r.body)
	}
	served(t, relay)
}

// TestLookalikeNamesAreRefusedInThePage: in the page (the browser's storage, the worker's
// registry and shelf), writing "\u202egnp.exe" or "\u200b.voicebox/x", registering a mini-app
// tool whose name holds U+202E (as a host message that skipped the bridge's check would), and
// saving an app to the shelf under a title with U+202E are each refused invalid-name with the
// character and its index; the app's own tool and the file list keep working.
func TestLookalikeNamesAreRefusedInThePage(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openPage(t, tab, relay.URL)
	id := writeAndLaunch(t, tab, "timer.html", `<!doctype html><title>Timer</title><script>
webMcp.registerTool({name: 'ping', description: 'answers pong', execute: () => 'pong'});
</script>`, 1)

	for _, c := range []struct {
		what, call, char string
		index            int
	}{
		{"a reversed file name", `voicebox.call('files.write', {path: '\u202egnp.exe', content: 'MZ'})`, "U+202E", 0},
		{"a hidden history folder", `voicebox.call('files.write', {path: '\u200b.voicebox/x', content: 'x'})`, "U+200B", 0},
		{"a folder with a line feed", `voicebox.call('files.mkdir', {path: 'a\nb'})`, "U+000A", 1},
		{"a reversed tool name", fmt.Sprintf(`voicebox.call('miniapps.register', {appId: %q, tool: {name: 'get\u202etxt.eteled', description: 'reads'}})`, id), "U+202E", 3},
		{"a reversed title", `voicebox.call('miniapps.save', {name: 'timer.html', title: 'Timer \u202erenmit'})`, "U+202E", 6},
	} {
		a := harness.Eval[answer](tab, c.call)
		wantInvalidName(t, c.what, a.Refused, a.Why, c.char, c.index)
	}
	// A file another program stored under such a name is listed with the character escaped, and
	// read by its name.
	harness.Eval[bool](tab, `(async () => {
		const ws = await (await navigator.storage.getDirectory()).getDirectoryHandle('workspace');
		const w = await (await ws.getFileHandle('\u202eold.txt', {create: true})).createWritable();
		await w.write('stored before');
		await w.close();
		return true;
	})()`)
	harness.Eval[bool](tab, `voicebox.must('files.write', {path: 'after.txt', content: 'x'}).then(() => true)`)
	harness.WaitFor[bool](tab, `[...document.querySelectorAll('#file-list li')].some(li => li.dataset.path === '\u202eold.txt' &&
		li.querySelector('.name').textContent === '\\u{202E}old.txt')`, appBound)
	if a := harness.Eval[answer](tab, `voicebox.call('files.read', {path: '\u202eold.txt'})`); !a.OK || !strings.Contains(string(a.Value), "stored before") {
		t.Errorf("the stored lookalike could not be read: %+v", a)
	}
	listed := harness.Eval[string](tab, `voicebox.call('files.list', {dir: ''}).then(a => JSON.stringify(a))`)
	if !strings.Contains(listed, `"ok":true`) || !strings.Contains(listed, "timer.html") || strings.Contains(listed, "\u200b") || strings.Contains(listed, "gnp.exe") {
		t.Errorf("the workspace lists %+q", listed)
	}
	if tools := workerTools(tab, id); len(tools) != 1 || tools[0] != "ping" {
		t.Errorf("the app's tools are %v; want ping alone", tools)
	}
	if a := callTool(tab, id, "ping", `{}`); !a.OK || !strings.Contains(string(a.Value), "pong") {
		t.Fatalf("the app's own tool answered %+v", a)
	}
	served(t, relay)
}
