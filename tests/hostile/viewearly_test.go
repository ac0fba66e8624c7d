//go:build !js

package hostile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// maxEarlyViewRequests is the bridge's MAX_EARLY_VIEW_REQUESTS (public/mini-app-bridge.js).
const maxEarlyViewRequests = 8

// earlyView is an MCP Apps view written against the raw protocol that asks before its handshake
// ends, as example views on a timer do: it sends maxEarlyViewRequests+1 tools/call (ids 1 to 9)
// before ui/initialize, then makes its handshake, and once initialized one more (id 10). #log
// records each answer, in the order they came.
const earlyView = `<!doctype html><pre id="log"></pre><script>
const rpc = (m) => parent.postMessage({jsonrpc: '2.0', ...m}, '*');
const log = (line) => { document.getElementById('log').textContent += line + '\n'; };
addEventListener('message', (e) => {
  if (e.source !== parent || !e.data || e.data.jsonrpc !== '2.0') return;
  if (e.data.id === 'init') {
    rpc({method: 'ui/notifications/initialized'});
    setTimeout(() => rpc({id: 10, method: 'tools/call', params: {name: 'list_files', arguments: {}}}), 0);
    return;
  }
  if (e.data.id !== undefined) log(e.data.id + ' ' + (e.data.error ? 'error ' + e.data.error.code + ' ' + e.data.error.message : 'answered'));
});
for (let i = 1; i <= %d; i++) rpc({id: i, method: 'tools/call', params: {name: 'list_files', arguments: {}}});
rpc({id: 'init', method: 'ui/initialize', params: {appInfo: {name: 'v', version: '1'}, appCapabilities: {}, protocolVersion: '2026-01-26'}});
</script>`

// TestAViewsEarlyRequestsWaitForItsHandshake: the requests a view makes before it says
// ui/notifications/initialized are held by its bridge and served once it does, at most
// maxEarlyViewRequests of them: one more is refused at once (-32600, naming the bound) and never
// reaches the page; the held ones are answered after the handshake, and the view's
// next request is served.
func TestAViewsEarlyRequestsWaitForItsHandshake(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openPage(t, tab, relay.URL)
	id := writeAndLaunch(t, tab, "early-view.html", fmt.Sprintf(earlyView, maxEarlyViewRequests+1), 0)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, id), appBound)
	var lines []string
	for deadline := time.Now().Add(appBound); time.Now().Before(deadline) && len(lines) < maxEarlyViewRequests+2; time.Sleep(50 * time.Millisecond) {
		if text := strings.TrimSpace(harness.EvalInFrame[string](tab, "about:srcdoc", `document.getElementById('log').textContent`)); text != "" {
			lines = strings.Split(text, "\n")
		}
	}
	if len(lines) != maxEarlyViewRequests+2 {
		t.Fatalf("the view was answered %d times, want %d: %q", len(lines), maxEarlyViewRequests+2, lines)
	}
	// The request past the bound is refused first, at once; the held ones follow, in order.
	if want := fmt.Sprintf("%d error -32600 tools/call before ui/notifications/initialized, past the %d requests held until then", maxEarlyViewRequests+1, maxEarlyViewRequests); lines[0] != want {
		t.Fatalf("the first answer is %q, want %q (all: %q)", lines[0], want, lines)
	}
	// The held ones and the next are each answered once (the page serves them side by side, so
	// their answers come in any order).
	want := []string{"10 answered"}
	for i := 1; i <= maxEarlyViewRequests; i++ {
		want = append(want, fmt.Sprintf("%d answered", i))
	}
	got := slices.Clone(lines[1:])
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the held requests and the next were answered %q, want %q", got, want)
	}
	if n := harness.Eval[int](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.calls`, id)); n != maxEarlyViewRequests+1 {
		t.Fatalf("the page served %d of the view's requests, want %d (the refused one never reached it)", n, maxEarlyViewRequests+1)
	}
}
