//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// mcpBound is the hang guard of one MCP request in these tests (a delete waits for a click).
const mcpBound = 30 * time.Second

type withBearer struct{ bearer string }

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.bearer)
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP connects an MCP client of the official SDK to the relay's /mcp as the client name;
// changed receives a value at each notifications/tools/list_changed.
func connectMCP(t testing.TB, r *harness.Relay, name string) (s *sdk.ClientSession, changed <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case ch <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), mcpBound)
	defer cancel()
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: r.URL + "/mcp",
		HTTPClient: &http.Client{Transport: withBearer{r.MintMCPBearer(t, name)}}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ch
}

// mcpCall calls a tool and returns its text decoded and whether the result is an error.
func mcpCall(t testing.TB, s *sdk.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpBound)
	defer cancel()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &m); err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return m, res.IsError
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func mcpToolNames(t testing.TB, s *sdk.ClientSession) []string {
	t.Helper()
	list, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// mcpToolsListed lists s's tools until, for each suffix, one tool's name ends with "__"+suffix,
// and returns those names by suffix. The relay hears of a mini-app's tools from the page after
// the page has them, one report at a time, and tells its clients tools/list_changed after each
// change (changed, from connectMCP): a listing that misses one waits for the next notification.
func mcpToolsListed(t testing.TB, s *sdk.ClientSession, changed <-chan struct{}, suffixes ...string) map[string]string {
	t.Helper()
	deadline := time.After(mcpBound)
	for {
		names := mcpToolNames(t, s)
		found := map[string]string{}
		for _, n := range names {
			for _, suffix := range suffixes {
				if strings.HasSuffix(n, "__"+suffix) {
					found[suffix] = n
				}
			}
		}
		if len(found) == len(suffixes) {
			return found
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the tools %v are not listed within %v: %v", suffixes, mcpBound, names)
		}
	}
}

// TestMCPOnThePagesOPFS: an MCP client of the SDK works in the page's OPFS through /mcp. It lists
// the tools and writes and reads a file; a delete asks the person in the page, whose prompt names
// the client, and follows a click on Deny, then on Approve; when a mini-app opens the client is
// sent tools/list_changed and lists the app's tools; the page's transcript shows the client's
// calls, and its MCP clients list revokes one; with the page closed a delete is refused no-page
// at once.
func TestMCPOnThePagesOPFS(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	s, changed := connectMCP(t, relay, "desktop")
	names := mcpToolNames(t, s)
	for _, want := range []string{"read_file", "write_file", "delete_file", "launch_mini_app", "undo_last_action"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	const content = "written by an MCP client ✓"
	if m, isErr := mcpCall(t, s, "write_file", map[string]string{"name": "mcp/note.txt", "content": content}); isErr {
		t.Fatalf("write_file answered %v", m)
	}
	if b, ok := fileBytes(t, tab, "mcp/note.txt"); !ok || string(b) != content {
		t.Fatalf("OPFS holds %q", b)
	}
	if m, _ := mcpCall(t, s, "read_file", map[string]string{"name": "mcp/note.txt"}); m["content"] != content {
		t.Fatalf("read_file answered %v", m)
	}

	// The filesystem tools run in the page's worker on OPFS as on a machine.
	const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	if a := relay.Call(t, "write-file", map[string]string{"path": "mcp/pixel.dat", "content": pixel, "encoding": "base64"}); !a.OK {
		t.Fatalf("write-file: %s", a.Raw)
	}
	if m, _ := mcpCall(t, s, "file_info", map[string]string{"name": "mcp/note.txt"}); m["kind"] != "file" || m["size"] != float64(len(content)) {
		t.Errorf("file_info answered %v", m)
	}
	if m, _ := mcpCall(t, s, "directory_tree", map[string]any{}); !strings.Contains(jsonText(m["tree"]), `"name":"pixel.dat"`) {
		t.Errorf("directory_tree answered %v", m)
	}
	if m, _ := mcpCall(t, s, "edit_file", map[string]any{"name": "mcp/note.txt", "oldText": "MCP", "newText": "SDK", "dryRun": true}); m["dryRun"] != true || !strings.Contains(m["diff"].(string), "+written by an SDK client") {
		t.Errorf("a dry-run edit answered %v", m)
	}
	if m, _ := mcpCall(t, s, "read_file", map[string]any{"name": "mcp/note.txt", "tail": 1}); m["content"] != content {
		t.Errorf("read_file tail answered %v", m)
	}
	if m, isErr := mcpCall(t, s, "create_folder", map[string]string{"name": "mcp/made/here"}); isErr || m["created"] != true || m["undoable"] != true {
		t.Errorf("create_folder in OPFS answered %v", m)
	}
	if m, isErr := mcpCall(t, s, "move_file", map[string]string{"from": "mcp/pixel.dat", "to": "pixel.dat"}); isErr || m["kind"] != "file" {
		t.Errorf("moving a file in OPFS answered %v", m)
	}
	if m, isErr := mcpCall(t, s, "move_file", map[string]string{"from": "mcp", "to": "moved"}); !isErr || m["refused"] != "move-unsupported" {
		t.Errorf("moving a folder in OPFS answered %v; the browser cannot move folders", m)
	}
	// The page's History panel says both in words, as the assistant's (the refused move is not
	// there).
	harness.WaitFor[bool](tab, `(() => {
		const said = [...document.querySelectorAll('#history-list li .who-assistant')].map((s) => s.textContent);
		return said[0] === 'The assistant moved mcp/pixel.dat to pixel.dat' && said[1] === 'The assistant made the folder mcp/made/here';
	})()`, mcpBound)
	if m, _ := mcpCall(t, s, "undo_last_action", map[string]string{}); m["undone"] != "move" {
		t.Errorf("undoing the move answered %v", m)
	}
	img, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_media_file", Arguments: map[string]string{"name": "mcp/pixel.dat"}})
	if err != nil || img.IsError {
		t.Fatalf("read_media_file: %+v %v", img, err)
	}
	if ic, ok := img.Content[0].(*sdk.ImageContent); !ok || ic.MIMEType != "image/png" {
		t.Fatalf("read_media_file answered %#v", img.Content[0])
	}

	for _, button := range []string{"deny", "approve"} {
		answer := make(chan map[string]any, 1)
		go func() {
			m, _ := mcpCall(t, s, "delete_file", map[string]string{"name": "mcp/note.txt"})
			answer <- m
		}()
		if summary := pendingApproval(t, tab); !strings.Contains(summary, `MCP client "desktop"`) || !strings.Contains(summary, "mcp/note.txt") {
			t.Fatalf("the page asks %q", summary)
		}
		clickApproval(t, tab, button)
		m := <-answer
		_, there := fileBytes(t, tab, "mcp/note.txt")
		if button == "deny" && (m["refused"] != "approval-denied" || !there) {
			t.Fatalf("a denied delete answered %v; the file is there: %v", m, there)
		}
		if button == "approve" && (m["approval"] != "approved" || there) {
			t.Fatalf("an approved delete answered %v; the file is there: %v", m, there)
		}
	}

	for len(changed) > 0 {
		<-changed
	}
	launchApp(t, tab, `{name: 'timer'}`, 1)
	select {
	case <-changed:
	case <-time.After(mcpBound):
		t.Fatal("no tools/list_changed after the timer opened")
	}
	mcpToolsListed(t, s, changed, "start_timer")

	// The page shows the client's calls in its transcript, and lists the clients with Revoke.
	harness.WaitFor[bool](tab, `[...document.querySelectorAll('#turns li[data-turn="mcp"]')].some(li => li.querySelector('.badge').textContent === 'MCP client' && li.querySelector('.said').textContent.endsWith('(desktop)'))`, mcpBound)
	spare, _ := connectMCP(t, relay, "spare")
	harness.Eval[bool](tab, `voicebox.mcpClients.reload().then(() => true)`)
	harness.WaitFor[bool](tab, `document.querySelector('#mcp-clients li[data-name="spare"] button.revoke') !== null`, mcpBound)
	harness.Eval[bool](tab, `(document.querySelector('#mcp-clients li[data-name="spare"] button.revoke').click(), true)`)
	harness.WaitFor[bool](tab, `document.querySelector('#confirm-dialog').open`, mcpBound)
	harness.Eval[bool](tab, `(document.querySelector('#confirm-ok').click(), true)`)
	harness.WaitFor[bool](tab, `document.querySelector('#mcp-clients li[data-name="spare"]') === null && document.querySelector('#mcp-clients li[data-name="desktop"]') !== null`, mcpBound)
	if _, err := spare.ListTools(context.Background(), nil); err == nil {
		t.Fatal("a client revoked in the page still gets answers")
	}

	mcpCall(t, s, "write_file", map[string]string{"name": "keep.txt", "content": "k"})
	tab.Close()
	deadline := time.Now().Add(mcpBound)
	for {
		var root struct{ Connected bool }
		getJSON(t, relay.URL+"/api/root", &root)
		if !root.Connected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the closed page still holds the root")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The approval would wait a minute for someone; mcpBound (half that) fails a wait.
	if m, isErr := mcpCall(t, s, "delete_file", map[string]string{"name": "keep.txt"}); !isErr || m["refused"] != "no-page" {
		t.Fatalf("with no page a delete answered %v", m)
	}
}
