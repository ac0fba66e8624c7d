//go:build !js

package chaos

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestARelayStoppingAnswersTheCallsWaitingForApproval: an MCP client's delete waits for the
// person's approval when the relay is told to stop (SIGTERM). The relay settles the approval (the
// call is answered approval-timed-out: the relay is shutting down, nothing was done) and exits
// cleanly within its shutdown grace; the file is still there. The MCP door's Close waits for its
// calls in flight, and it used to run before the approvals were settled, so the relay waited for
// the approval's own deadline and was killed.
func TestARelayStoppingAnswersTheCallsWaitingForApproval(t *testing.T) {
	relay := harness.StartRelay(t)
	tab := openPage(t, relay)
	allowRelayDown(tab)
	if !harness.Eval[bool](tab, `voicebox.call('files.write', {path: 'kept.txt', content: 'still here'}).then(a => a.ok)`) {
		t.Fatal("writing kept.txt failed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
	defer cancel()
	client, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: relay.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer(relay.MintMCPBearer(t, "desktop"))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := client.CallTool(ctx, &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]string{"name": "kept.txt"}})
		answered <- answer{res, err}
	}()
	harness.WaitFor[bool](tab, `document.querySelector('#approvals li.approval') !== null`, patience)

	relay.Stop(t) // fails the test unless the relay exits 0 within the harness's bound

	var got answer
	select {
	case got = <-answered:
	case <-ctx.Done():
		t.Fatal("the delete waiting for approval was never answered")
	}
	if got.err != nil || got.res == nil || !got.res.IsError || len(got.res.Content) != 1 {
		t.Fatalf("the delete waiting for approval was answered %+v (err %v); want the tool's refusal", got.res, got.err)
	}
	text, _ := json.Marshal(got.res.Content[0])
	if !strings.Contains(string(text), "approval-timed-out") || !strings.Contains(string(text), "shutting down") {
		t.Errorf("the delete was answered %s; want approval-timed-out, the relay shutting down", text)
	}
	if kept := harness.Eval[string](tab, `voicebox.call('files.read', {path: 'kept.txt'}).then(a => a.ok ? a.value.text : a.refused)`); kept != "still here" {
		t.Errorf("kept.txt reads %q after the stop; nothing was to be done", kept)
	}
}
