package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// TestFleetAPageTurnsOutcomeReachesItsPage: the page follows A's event stream and sends a delete
// through B with Prefer: respond-async: B answers 202 with the pending handle at once, the
// decision posted to A lets it run on B, and its outcome reaches the page on A as one turn event.
func TestFleetAPageTurnsOutcomeReachesItsPage(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "turns", false), startMember(t, nats, "turns", false)
	page := dialPage(t, a, memoryExecutor(), nil)
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))
	waitFor(t, "the root declared on A shown on B", func() bool { return b.root(t)["kind"] == "opfs" })
	observed(t, a.call(t, "write-file", map[string]any{"path": "old.txt", "content": "bye"}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/api/events", nil)
	req.Header.Set("Origin", a.url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan [2]string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		kind := ""
		for sc.Scan() {
			if k, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				kind = k
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- [2]string{kind, d}
			}
		}
	}()
	next := func(kind string) map[string]any {
		t.Helper()
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("the event stream ended before %s", kind)
				}
				if e[0] == kind {
					var m map[string]any
					json.Unmarshal([]byte(e[1]), &m)
					return m
				}
			case <-time.After(patience):
				t.Fatalf("no %s event on A", kind)
			}
		}
	}
	next("hello")
	waitFor(t, "B seeing the page follow A", func() bool { return b.Events != nil && b.Events.Watched() })

	raw, _ := json.Marshal(map[string]any{"action": map[string]any{"verb": "delete_file", "name": "old.txt"}})
	post, _ := http.NewRequest(http.MethodPost, b.url+"/api/turn", bytes.NewReader(raw))
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set(server.HostTokenHeader, b.token)
	post.Header.Set("Prefer", "respond-async")
	client := http.Client{Timeout: patience}
	answer, err := client.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	var pending map[string]any
	json.NewDecoder(answer.Body).Decode(&pending)
	answer.Body.Close()
	handle, _ := pending["pending"].(map[string]any)
	if answer.StatusCode != http.StatusAccepted || handle == nil || handle["id"] == "" {
		t.Fatalf("the delete through B answered %d %v", answer.StatusCode, pending)
	}
	if status, out := a.do(t, http.MethodPost, "/api/approvals/"+handle["id"].(string), map[string]any{"approve": true}); status != http.StatusOK {
		t.Fatalf("approving on A a request waiting on B: %d %v", status, out)
	}
	out := next("turn")
	if res, _ := out["result"].(map[string]any); out["turnId"] != pending["turnId"] || out["ok"] != true || res["approval"] != "approved" {
		t.Fatalf("the turn event on A: %v (the handle %v)", out, pending)
	}
	if got := a.call(t, "read-file", map[string]any{"path": "old.txt"}); ruleOf(got) == "" {
		t.Fatalf("the file is still there: %v", got)
	}
}
