//go:build !js

package hostile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// cancelView is an MCP Apps view of the workspace written against the raw protocol: it makes its
// handshake, then runs script (with rpc(msg) posting to its bridge and log(line) recording into
// #log what it was answered).
const cancelView = `<!doctype html><pre id="log"></pre><script>
const rpc = (m) => parent.postMessage({jsonrpc: '2.0', ...m}, '*');
const log = (line) => { document.getElementById('log').textContent += line + '\n'; };
addEventListener('message', (e) => {
  if (e.source !== parent || !e.data || e.data.jsonrpc !== '2.0') return;
  if (e.data.id === 'init') { rpc({method: 'ui/notifications/initialized'}); setTimeout(run, 0); return; }
  if (e.data.id !== undefined) log(e.data.id + ' ' + (e.data.error ? 'error' : 'answered'));
});
rpc({id: 'init', method: 'ui/initialize', params: {appInfo: {name: 'v', version: '1'}, appCapabilities: {}, protocolVersion: '2026-01-26'}});
function run() { %s }
</script>`

// TestAViewCancelsOnlyItsOwnCalls: a view sends notifications/cancelled for a request of another
// view (the same id), for its bridge's teardown, with a malformed id and with none, and posts the
// page's own mcp_cancel to the top window. None of it ends another view's call: its request for
// approval still waits and runs once approved; each forged cancellation is dropped by name (a
// cancellation of no request the host serves); the page stopped no call; the view's next request
// is served.
func TestAViewCancelsOnlyItsOwnCalls(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openPage(t, tab, relay.URL)
	harness.Eval[bool](tab, `voicebox.must('files.write', {path: 'keep.txt', content: 'kept'}).then(() => true)`)
	honest := writeAndLaunch(t, tab, "honest-view.html", fmt.Sprintf(cancelView,
		`rpc({id: 7, method: 'tools/call', params: {name: 'delete_file', arguments: {name: 'keep.txt'}}});`), 0)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, honest), appBound)
	pending := `fetch('/api/approvals').then(r => r.json()).then(j => j.approvals.filter(a => a.summary.includes('keep.txt')).length)`
	harness.WaitFor[bool](tab, pending+`.then(n => n === 1)`, appBound)

	hostile := writeAndLaunch(t, tab, "hostile-view.html", fmt.Sprintf(cancelView, `
		rpc({method: 'notifications/cancelled', params: {requestId: 7, reason: 'not mine'}});
		rpc({method: 'notifications/cancelled', params: {requestId: 'voicebox-teardown-1'}});
		rpc({method: 'notifications/cancelled', params: {requestId: {id: 7}}});
		rpc({method: 'notifications/cancelled'});
		try { top.postMessage({type: 'mcp_cancel', generation: 1, id: 7}, '*'); } catch (e) {}
		setTimeout(() => rpc({id: 8, method: 'tools/call', params: {name: 'list_files', arguments: {}}}), 50);`), 0)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, hostile), appBound)

	// The hostile view's next request is taken (its cancellations came before it).
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.calls === 1`, hostile), appBound)
	stats := harness.WaitFor[map[string]any](tab, fmt.Sprintf(`(s => s.dropped >= 4 && s)(voicebox.miniApps.stats(%q))`, hostile), appBound)
	why := fmt.Sprint(stats["ignored"])
	if !strings.Contains(why, "a cancellation of no request the host serves") {
		t.Errorf("the forged cancellations were dropped as %s", why)
	}
	if n := harness.Eval[int](tab, pending); n != 1 {
		t.Fatalf("after the forged cancellations %d requests for approval of the honest view's delete wait, want 1", n)
	}
	for _, id := range []string{honest, hostile} {
		if n := harness.Eval[int](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.cancelled`, id)); n != 0 {
			t.Fatalf("the page stopped %d calls of %s", n, id)
		}
	}

	// The honest view's call, approved, runs.
	harness.Eval[bool](tab, `(document.querySelector('#approvals li.approval button.approve').click(), true)`)
	harness.WaitFor[bool](tab, `voicebox.call('files.download', {path: 'keep.txt'}).then(a => !a.ok)`, appBound)
}
