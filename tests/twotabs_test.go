//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestTwoTabsOfOneOriginShareTheWorkspacesFiles: two tabs of one relay's origin open the same
// browser storage, each in a worker of its own, and a worker's sync access handle locks its file
// against every other context. The tab holding the workspace keeps handles open on the files its
// tools read and on the audit log it appends to; the other tab (waiting, its Files panel still
// its person's) must still write and delete those files, its audit records must land in the one
// log, and after "Use this tab" the new holder's tools must write, delete and move what the
// old holder read. Every call answers once and no write is lost.
func TestTwoTabsOfOneOriginShareTheWorkspacesFiles(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	first := openExecutor(t, relay)
	second := harness.NewTab(t)
	openWorkspace(t, second, relay.URL)
	harness.WaitFor[bool](second, `document.querySelector('#channel').dataset.state === 'replaced' && !document.querySelector('#channel-resume').hidden`, channelBound)

	tool := func(name string, args map[string]string) {
		t.Helper()
		if a := relay.Call(t, name, args); !a.OK {
			t.Fatalf("%s %v: %s", name, args, a.Raw)
		}
	}
	type answer struct {
		OK      bool   `json:"ok"`
		Refused string `json:"refused"`
		Why     string `json:"why"`
	}
	ui := func(tab *harness.Tab, who, method, args string) {
		t.Helper()
		if got := harness.Eval[answer](tab, fmt.Sprintf(`voicebox.call(%q, %s)`, method, args)); !got.OK {
			t.Errorf("%s: %s %s answered %+v", who, method, args, got)
		}
	}
	read := func(tab *harness.Tab, path string) string {
		t.Helper()
		var got struct {
			OK    bool `json:"ok"`
			Value struct {
				Text string `json:"text"`
			} `json:"value"`
		}
		raw := harness.Eval[json.RawMessage](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q})`, path))
		if json.Unmarshal(raw, &got) != nil || !got.OK {
			t.Fatalf("read %s: %s", path, raw)
		}
		return got.Value.Text
	}

	// The holder's tools write and read: its pool keeps the files' handles open, and its audit
	// log's segment once the log has taken the records.
	for _, f := range []string{"held.txt", "gone.txt", "moved.txt"} {
		tool("write-file", map[string]string{"path": f, "content": "from the first tab's tools"})
		tool("read-file", map[string]string{"path": f})
	}
	waitAudit(t, first, `"path":"moved.txt"`)

	// The waiting tab's person writes and deletes what the holder's tools read.
	ui(second, "the waiting tab", "files.write", `{path: 'held.txt', content: 'from the second tab'}`)
	ui(second, "the waiting tab", "files.delete", `{path: 'gone.txt'}`)
	ui(second, "the waiting tab", "files.write", `{path: 'by-second.txt', content: 'new'}`)
	if got := read(first, "held.txt"); got != "from the second tab" {
		t.Errorf("the first tab reads held.txt as %q after the second wrote it", got)
	}
	// Their records reach the one audit log, which the holder appends to as well.
	waitAudit(t, second, `"path":"by-second.txt"`)
	tool("read-file", map[string]string{"path": "held.txt"})
	waitAudit(t, first, `"path":"gone.txt"`)

	// A download in the waiting tab reads a file the holder holds.
	tool("read-file", map[string]string{"path": "held.txt"})
	ui(second, "the waiting tab", "files.download", `{path: 'held.txt'}`)

	// The waiting tab takes over; the old holder's person reads (its pool keeps the handles),
	// and the new holder's tools write, move and delete those files.
	harness.Eval[bool](second, `(document.querySelector('#channel-resume').click(), true)`)
	harness.WaitFor[bool](second, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	harness.WaitFor[bool](first, `document.querySelector('#channel').dataset.state === 'replaced'`, channelBound)
	read(first, "held.txt")
	read(first, "moved.txt")
	read(first, "by-second.txt")
	tool("write-file", map[string]string{"path": "held.txt", "content": "from the second tab's tools"})
	tool("move-file", map[string]string{"path": "moved.txt", "to": "moved-again.txt"})
	tool("delete-file", map[string]string{"path": "by-second.txt"})
	if got := read(first, "held.txt"); got != "from the second tab's tools" {
		t.Errorf("the first tab reads held.txt as %q after the second's tools wrote it", got)
	}
	waitAudit(t, first, `"path":"by-second.txt","ok":true`)
	ui(first, "the old holder", "files.write", `{path: 'after.txt', content: 'x'}`)
	waitAudit(t, second, `"path":"after.txt"`)
	if lines := strings.Count(auditText(t, first), "\n"); lines < 12 {
		t.Errorf("the audit log holds %d records, want at least 12", lines)
	}
}

// auditScript is a script whose value is every audit record of the origin's browser-storage
// workspace, read on the tab's main thread (a File snapshot, which no other context's lock
// stops), or null when a segment changed while it was read: a snapshot of a file a worker
// appends to meanwhile throws NotReadableError, and the caller reads again.
const auditScript = `(async () => {
	let d = await navigator.storage.getDirectory();
	for (const n of ['workspace', '.voicebox', 'audit']) d = await d.getDirectoryHandle(n);
	const names = [];
	for await (const [n] of d.entries()) if (n.endsWith('.jsonl')) names.push(n);
	let out = '';
	try {
		for (const n of names.sort()) out += await (await (await d.getFileHandle(n)).getFile()).text();
	} catch (e) {
		if (e.name === 'NotReadableError') return null;
		throw e;
	}
	return out;
})()`

// auditText is every audit record of the origin's browser-storage workspace.
func auditText(t *testing.T, tab *harness.Tab) string {
	t.Helper()
	return harness.WaitFor[string](tab, auditScript, channelBound) // null (or empty) is waited past
}

// waitAudit waits until the audit log holds a record with want.
func waitAudit(t *testing.T, tab *harness.Tab, want string) {
	t.Helper()
	harness.WaitFor[bool](tab, fmt.Sprintf(`(async () => ((await %s) ?? '').includes(%q))()`, auditScript, want), channelBound)
}
