//go:build !js

package tests

import (
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/relay/fleet/fleettest"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// startFleet starts n relay processes (bin/relay) on one NATS embedded in this test, as one
// fleet named prefix.
func startFleet(t *testing.T, n int, prefix string) []*harness.Relay {
	t.Helper()
	nats := fleettest.Start(t)
	relays := make([]*harness.Relay, n)
	for i := range relays {
		relays[i] = harness.StartRelay(t, "VOICEBOX_NATS="+nats.URL(), "VOICEBOX_NATS_PREFIX="+prefix)
	}
	return relays
}

// TestFleetRoutesToTheRealPage: the page in Chromium is the executor on relay A; a write made
// through relay B lands in its OPFS, and relay C reads it back through it; a newer page on B takes
// the slot from the page on A, which says so, and calls through A reach the page on B.
func TestFleetRoutesToTheRealPage(t *testing.T) {
	t.Parallel()
	relays := startFleet(t, 3, "e2e")
	a, b, c := relays[0], relays[1], relays[2]
	first := openExecutor(t, a)

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
