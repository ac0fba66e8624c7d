//go:build !js

package tests

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// balancer is a load balancer in front of a fleet: every request and WebSocket goes to the
// relay it points at now, with the Host and Origin the browser sent.
type balancer struct {
	URL string
	mu  sync.Mutex
	to  *url.URL
}

func startBalancer(t *testing.T) *balancer {
	t.Helper()
	lb := &balancer{}
	proxy := &httputil.ReverseProxy{ErrorLog: log.New(io.Discard, "", 0), Rewrite: func(r *httputil.ProxyRequest) {
		lb.mu.Lock()
		to := lb.to
		lb.mu.Unlock()
		r.SetURL(to)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	lb.URL = srv.URL
	return lb
}

// sendTo makes the balancer send everything to relay from now on.
func (lb *balancer) sendTo(relay *harness.Relay) {
	u, _ := url.Parse(relay.URL)
	lb.mu.Lock()
	lb.to = u
	lb.mu.Unlock()
}

// TestFleetThePageMovesWhenItsRelayDies: the page, opened through a load balancer, is the
// executor on relay A; A is killed (SIGKILL), the balancer sends the page to B, and the page
// reconnects there by itself and takes the slot: calls through C reach it, and the file written
// before the crash is still in its OPFS.
func TestFleetThePageMovesWhenItsRelayDies(t *testing.T) {
	t.Parallel()
	lb := startBalancer(t)
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "crash", Relays: 3, Args: []string{"--origin", lb.URL}})
	a, b, c := fleet.Relays[0], fleet.Relays[1], fleet.Relays[2]
	lb.sendTo(a)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, lb.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	if ans := c.Call(t, "write-file", map[string]string{"path": "before.txt", "content": "written before the crash"}); !ans.OK {
		t.Fatalf("write-file through C answered %s", ans.Raw)
	}
	// What a crash looks like to the page: its socket and event stream cut mid-way, and attempts
	// that fail while the balancer still sends to A. The page recovers from each by itself.
	tab.Allow(`WebSocket connection to .*/channel' failed|ERR_INCOMPLETE_CHUNKED_ENCODING|/api/events|ERR_EMPTY_RESPONSE|502`)
	lb.sendTo(b)
	a.Kill(t)
	var read struct {
		Content string `json:"content"`
	}
	deadline := time.Now().Add(channelBound)
	for {
		ans := c.Call(t, "read-file", map[string]string{"path": "before.txt"})
		if ans.OK && json.Unmarshal(ans.Observed, &read) == nil && read.Content == "written before the crash" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never took the slot on B; the last call through C answered %s", ans.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var root struct {
		Connected bool `json:"connected"`
	}
	getJSON(t, b.URL+"/api/root", &root)
	if !root.Connected {
		t.Fatal("B does not hold the page")
	}
}

// TestFleetRoutesToTheRealPage: the page in Chromium is the executor on relay A; a write made
// through relay B lands in its OPFS, and relay C reads it back through it; a newer page on B takes
// the slot from the page on A, which says so, and calls through A reach the page on B.
func TestFleetRoutesToTheRealPage(t *testing.T) {
	t.Parallel()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "e2e", Relays: 3})
	a, b, c := fleet.Relays[0], fleet.Relays[1], fleet.Relays[2]
	// B and C hear of the lease A took by a watch, a moment after the page on A is connected.
	first := fleet.OpenPage(a)

	content := "written through relay B, executed by the page on relay A ✓"
	if ans := b.Call(t, "write-file", map[string]string{"path": "fleet/note.txt", "content": content}); !ans.OK {
		t.Fatalf("write-file through B answered %s", ans.Raw)
	}
	ans := c.Call(t, "read-file", map[string]string{"path": "fleet/note.txt"})
	var read struct {
		Content string `json:"content"`
	}
	if !ans.OK || json.Unmarshal(ans.Observed, &read) != nil || read.Content != content {
		t.Fatalf("read-file through C answered %s", ans.Raw)
	}
	type view struct {
		OK    bool `json:"ok"`
		Value struct {
			Text string `json:"text"`
		} `json:"value"`
	}
	if v := harness.Eval[view](first, `voicebox.call('files.read', {path: 'fleet/note.txt'})`); !v.OK || v.Value.Text != content {
		t.Fatalf("the page on A reads %+v", v)
	}
	if ans := c.Call(t, "read-file", map[string]string{"path": "../../etc/passwd"}); ans.OK || ans.Refused != "outside-root" {
		t.Fatalf("an escaping read through C answered %s", ans.Raw)
	}

	second := openExecutor(t, b)
	harness.WaitFor[bool](first, `document.querySelector('#channel').dataset.state === 'replaced' && !document.querySelector('#channel-resume').hidden`, channelBound)
	if ans := a.Call(t, "write-file", map[string]string{"path": "to-b.txt", "content": "through A"}); !ans.OK {
		t.Fatalf("a call through A after the takeover answered %s", ans.Raw)
	}
	if v := harness.Eval[view](second, `voicebox.call('files.read', {path: 'to-b.txt'})`); !v.OK || v.Value.Text != "through A" {
		t.Fatalf("the page on B reads %+v", v)
	}
}
