package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
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
	// A page whose stream opens on A meanwhile is not told the turn is lost: A's hello is a
	// fleet's, of another instance than the turn's (public/turns.js waits on); B's names it.
	if h := helloOf(t, a); h["fleet"] != true || h["instance"] == pending["instance"] || pending["instance"] == nil {
		t.Fatalf("A's hello (fleet %v, instance %v) while B holds turn %v of instance %v", h["fleet"], h["instance"], pending["turnId"], pending["instance"])
	}
	if h := helloOf(t, b); h["instance"] != pending["instance"] || !slices.Contains(h["turns"].([]any), pending["turnId"]) {
		t.Fatalf("B's hello (instance %v, turns %v) does not name its turn %v", h["instance"], h["turns"], pending["turnId"])
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

// helloOf opens an event stream on m and returns its hello.
func helloOf(t *testing.T, m *member) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.url+"/api/events", nil)
	req.Header.Set("Origin", m.url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var hello map[string]any
			json.Unmarshal([]byte(d), &hello)
			return hello
		}
	}
	t.Fatalf("no hello on %s: %v", m.url, sc.Err())
	return nil
}

// TestTheHelloListsTheFleetsLiveRuns: a relay's hello lists no runs within a lease TTL of joining
// (it may not have heard every relay yet), then both relays' runs; once B crashes (its NATS
// connection drops without a word) A's hello lists A's run alone, so a page greeted then knows a
// turn B took is lost.
func TestTheHelloListsTheFleetsLiveRuns(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a := startMember(t, nats, "liveruns", false)
	if runs, ok := helloOf(t, a)["runs"]; ok {
		t.Fatalf("a relay that just joined lists the fleet's runs: %v", runs)
	}
	b := startMember(t, nats, "liveruns", false)
	instA, instB := a.Core.Tools.Instance(), b.Core.Tools.Instance()
	both := []string{instA, instB}
	slices.Sort(both)
	runsOf := func(m *member) []string {
		var runs []string
		list, _ := helloOf(t, m)["runs"].([]any)
		for _, r := range list {
			s, _ := r.(string)
			runs = append(runs, s)
		}
		return runs
	}
	waitFor(t, "A's hello listing both runs", func() bool { return slices.Equal(runsOf(a), both) })
	waitFor(t, "B's hello listing both runs", func() bool { return slices.Equal(runsOf(b), both) })
	b.kill(t)
	waitFor(t, "A's hello listing its own run alone", func() bool { return slices.Equal(runsOf(a), []string{instA}) })
}
