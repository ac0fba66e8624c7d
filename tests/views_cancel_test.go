//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestAStoppedViewsCallsStop: a view written with @modelcontextprotocol/ext-apps (pinned) calls a
// tool that waits for the person's approval (delete_file), then stops waiting for it: the SDK
// sends notifications/cancelled, and the request for approval goes with nothing done (the file
// is still there). Its next call is served. A call still waiting when the view is closed goes too:
// no approval outlives the view that asked.
func TestAStoppedViewsCallsStop(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	harness.Eval[bool](tab, `voicebox.must('files.write', {path: 'keep.txt', content: 'kept'}).then(() => true)`)
	content, _ := json.Marshal(extAppsPage(t, "guests/mcp-apps-cancel.html"))
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: 'cancel-view.html', content: %s}).then(() => true)`, content))
	id := harness.Eval[string](tab, `voicebox.miniApps.launch({path: 'cancel-view.html'}).then(r => r.appId)`)
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.initialized`, id), readyBound)
	click := func(button string) {
		t.Helper()
		harness.EvalInFrame[bool](tab, "about:srcdoc", fmt.Sprintf(`(document.getElementById(%q).click(), true)`, button))
	}
	outcome := func(i int) string {
		t.Helper()
		return harness.EvalInFrame[string](tab, "about:srcdoc", fmt.Sprintf(`(document.querySelectorAll('#outcomes li')[%d] || {}).textContent || ''`, i))
	}
	noApprovals := `fetch('/api/approvals').then(r => r.json()).then(j => j.ok && j.approvals.length === 0 && !document.querySelector('#approvals li.approval'))`

	// The view stops waiting: the approval goes, nothing is done.
	click("delete")
	if summary := pendingApproval(t, tab); !strings.Contains(summary, "keep.txt") {
		t.Fatalf("the view's call asks %q", summary)
	}
	click("stop")
	harness.WaitFor[bool](tab, noApprovals, readyBound)
	if n := harness.Eval[int](tab, fmt.Sprintf(`voicebox.miniApps.stats(%q).mcp.cancelled`, id)); n != 1 {
		t.Fatalf("the page stopped %d of the view's calls, want 1", n)
	}
	if got := outcome(0); !strings.HasPrefix(got, "rejected") {
		t.Fatalf("the cancelled call ended %q in the view", got)
	}
	if b, ok := fileBytes(t, tab, "keep.txt"); !ok || string(b) != "kept" {
		t.Fatalf("after the cancelled delete keep.txt is %q (%v)", b, ok)
	}

	// Its next call is served.
	click("list")
	got := outcome(1)
	for deadline := time.Now().Add(readyBound); time.Now().Before(deadline) && (got == "" || got == "waiting"); time.Sleep(50 * time.Millisecond) {
		got = outcome(1)
	}
	if got != "answered" {
		t.Fatalf("the view's next call ended %q", got)
	}

	// A call still waiting when the view closes goes with it.
	click("delete")
	if summary := pendingApproval(t, tab); !strings.Contains(summary, "keep.txt") {
		t.Fatalf("the view's second delete asks %q", summary)
	}
	harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.miniApps.close(%q), true)`, id))
	harness.WaitFor[bool](tab, noApprovals, readyBound)
	if b, ok := fileBytes(t, tab, "keep.txt"); !ok || string(b) != "kept" {
		t.Fatalf("after the closed view's delete keep.txt is %q (%v)", b, ok)
	}
}
