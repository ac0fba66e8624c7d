//go:build !js

package tests

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestThePageTakesTheRootFromTheWorkspaceAndGivesItBack: with VOICEBOX_WORKSPACE the relay
// serves the folder as a machine root; a page opened on it waits, as it waits for any executor
// that holds the root, and takes it when its person presses "Use this tab", so the tools act in
// the tab; when the tab closes, the workspace takes the root back by itself and the tools act on
// the folder again.
func TestThePageTakesTheRootFromTheWorkspaceAndGivesItBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	relay := harness.StartRelay(t, "VOICEBOX_WORKSPACE="+dir)
	var root struct {
		Kind, Name string
		Connected  bool
	}
	holds := func(kind, name string) {
		t.Helper()
		for deadline := time.Now().Add(channelBound); ; time.Sleep(20 * time.Millisecond) {
			getJSON(t, relay.URL+"/api/root", &root)
			if root.Kind == kind && root.Connected && (name == "" || root.Name == name) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/api/root = %+v, want %s %q connected", root, kind, name)
			}
		}
	}
	workspace := "workspace " + filepath.Base(dir)
	holds("machine", workspace)
	if a := relay.Call(t, "write-file", map[string]string{"path": "before.txt", "content": "folder"}); !a.OK {
		t.Fatalf("write to the workspace: %s", a.Raw)
	}

	// A page opened while the workspace holds the root waits, as for any machine, until its
	// person presses "Use this tab".
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'replaced' && !document.querySelector('#channel-resume').hidden`, channelBound)
	harness.Eval[bool](tab, `(document.querySelector('#channel-resume').click(), true)`)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	holds("opfs", "")
	if a := relay.Call(t, "write-file", map[string]string{"path": "in-the-tab.txt", "content": "tab"}); !a.OK {
		t.Fatalf("write with the page holding the root: %s", a.Raw)
	}
	if _, err := os.Stat(filepath.Join(dir, "in-the-tab.txt")); err == nil {
		t.Fatal("the page's write landed in the workspace folder")
	}

	tab.Close()
	holds("machine", workspace)
	if a := relay.Call(t, "write-file", map[string]string{"path": "after.txt", "content": "folder again"}); !a.OK {
		t.Fatalf("write after the page left: %s", a.Raw)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "after.txt")); err != nil || string(b) != "folder again" {
		t.Fatalf("the workspace's after.txt: %q, %v", b, err)
	}
}
