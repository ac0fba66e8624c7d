//go:build !js

package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// turnBound is the hang guard of one typed turn (a delete waits for the test to approve it).
const turnBound = 30 * time.Second

// typed types a command into the assistant's box as a person would, and waits for the turn to
// be shown; it returns the turn's state ("ok" or "refused") and its result as shown.
func typed(t *testing.T, tab *harness.Tab, command string) (state, result string) {
	t.Helper()
	text, _ := json.Marshal(command)
	n := harness.Eval[int](tab, fmt.Sprintf(`(() => {
		const input = document.querySelector('#command');
		input.value = %s;
		document.querySelector('#command-form button[type="submit"]').click();
		return document.querySelectorAll('#turns li').length;
	})()`, text))
	if n == 0 {
		t.Fatalf("typing %q showed no turn", command)
	}
	return lastTurn(t, tab)
}

// lastTurn waits until the newest turn is settled and returns its state and result: the words
// shown, then the JSON behind its Details.
func lastTurn(t *testing.T, tab *harness.Tab) (state, result string) {
	t.Helper()
	got := harness.WaitFor[[]string](tab, `(() => {
		const li = document.querySelector('#turns li');
		if (!li || li.dataset.state === 'pending') return null;
		const r = li.querySelector('.result');
		const j = li.querySelector('.result-json');
		return [li.dataset.state, (r ? r.textContent : '') + '\n' + (j ? j.textContent : '')];
	})()`, turnBound)
	return got[0], got[1]
}

// pendingApproval waits for the page to show an approval request and returns its summary.
// undecidedApproval is a JavaScript expression for the first approval row the person has not
// decided: a row whose button was just pressed stays, its buttons disabled, until the relay
// answers the page, which may be after the asker has its answer and asks again.
const undecidedApproval = `[...document.querySelectorAll('#approvals li.approval')].find((li) => !li.querySelector('button.approve').disabled)`

// pendingApproval waits for an undecided approval on the page and returns its summary.
func pendingApproval(t *testing.T, tab *harness.Tab) string {
	t.Helper()
	return harness.WaitFor[string](tab, `(() => { const a = `+undecidedApproval+`;
		return a && !document.querySelector('#approvals').hidden && /s left/.test(a.querySelector('.deadline').textContent) && a.querySelector('.summary').textContent; })()`, turnBound)
}

// clickApproval presses button (approve or deny) of the first undecided approval.
func clickApproval(t *testing.T, tab *harness.Tab, button string) {
	t.Helper()
	harness.Eval[bool](tab, fmt.Sprintf(`(`+undecidedApproval+`.querySelector('button.%s').click(), true)`, button))
}

// fileBytes reads a workspace file through the page's worker, byte for byte (base64).
func fileBytes(t *testing.T, tab *harness.Tab, name string) ([]byte, bool) {
	t.Helper()
	got := harness.Eval[[]string](tab, fmt.Sprintf(`voicebox.call('files.download', {path: %q}).then(a => a.ok
		? ['ok', btoa(String.fromCharCode(...new Uint8Array(a.value.bytes)))] : [a.refused, ''])`, name))
	if got[0] != "ok" {
		return nil, false
	}
	var b []byte
	json.Unmarshal([]byte(`"`+got[1]+`"`), &b)
	return b, true
}

func TestTypedCommandsCreateEditListDeleteAndUndo(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	if mode := harness.WaitFor[string](tab, `document.querySelector('#assistant-mode').dataset.mode`, readyBound); mode != "offline" {
		t.Fatalf("with no vendor key the page shows mode %q", mode)
	}
	if label := harness.Eval[string](tab, `document.querySelector('#assistant-mode').textContent`); label != "typed commands" {
		t.Fatalf("the mode label reads %q", label)
	}

	const content = "buy milk — 2 ℓ"
	if state, res := typed(t, tab, "write todo.txt: "+content); state != "ok" || !strings.Contains(res, `"created": true`) {
		t.Fatalf("write answered %s %s", state, res)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="todo.txt"]') !== null`, turnBound)
	if state, res := typed(t, tab, `in todo.txt replace "milk" with "oat milk"`); state != "ok" || !strings.Contains(res, `"line": 1`) {
		t.Fatalf("edit answered %s %s", state, res)
	}
	if state, res := typed(t, tab, "list files"); state != "ok" || !strings.Contains(res, `"path": "todo.txt"`) {
		t.Fatalf("list answered %s %s", state, res)
	}
	if state, res := typed(t, tab, "read todo.txt"); state != "ok" || !strings.Contains(res, "buy oat milk — 2 ℓ") {
		t.Fatalf("read answered %s %s", state, res)
	}
	edited, _ := fileBytes(t, tab, "todo.txt")

	// A denied delete leaves the file.
	typedAsync(t, tab, "delete todo.txt")
	if summary := pendingApproval(t, tab); !strings.Contains(summary, "todo.txt") {
		t.Fatalf("the approval asks %q", summary)
	}
	tab.Screenshot("assistant-approval")
	clickApproval(t, tab, "deny")
	if state, res := lastTurn(t, tab); state != "refused" || !strings.Contains(res, "approval-denied") {
		t.Fatalf("the denied delete answered %s %s", state, res)
	}
	if b, ok := fileBytes(t, tab, "todo.txt"); !ok || !bytes.Equal(b, edited) {
		t.Fatalf("after a denied delete todo.txt holds %q (present %v)", b, ok)
	}

	// An approved delete removes it; Undo brings it back byte for byte.
	typedAsync(t, tab, "delete todo.txt")
	pendingApproval(t, tab)
	clickApproval(t, tab, "approve")
	if state, res := lastTurn(t, tab); state != "ok" || !strings.Contains(res, `"approval": "approved"`) {
		t.Fatalf("the approved delete answered %s %s", state, res)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#approvals').hidden`, turnBound)
	if _, ok := fileBytes(t, tab, "todo.txt"); ok {
		t.Fatal("todo.txt is still there after the approved delete")
	}
	// The History panel's Undo takes back the newest change, whoever made it.
	harness.Eval[bool](tab, `(document.querySelector('#undo').click(), true)`)
	if note := harness.WaitFor[string](tab, `document.querySelector('#history-note').textContent`, turnBound); !strings.Contains(note, "Undone: The assistant deleted todo.txt") {
		t.Fatalf("undo says %q", note)
	}
	if b, ok := fileBytes(t, tab, "todo.txt"); !ok || !bytes.Equal(b, edited) {
		t.Fatalf("after undo todo.txt holds %q, want %q", b, edited)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="todo.txt"]') !== null`, turnBound)
	// Undo again takes back the edit, then the write; then there is nothing left.
	typed(t, tab, "undo")
	if b, _ := fileBytes(t, tab, "todo.txt"); string(b) != content {
		t.Fatalf("after the second undo todo.txt holds %q", b)
	}
	typed(t, tab, "undo")
	if _, ok := fileBytes(t, tab, "todo.txt"); ok {
		t.Fatal("undoing the write that created todo.txt left it")
	}
	if state, res := typed(t, tab, "undo"); state != "refused" || !strings.Contains(res, "nothing-to-undo") {
		t.Fatalf("a fourth undo answered %s %s", state, res)
	}

	// What the resolver does not understand gets help.
	harness.Eval[bool](tab, `(document.querySelector('#command').value = 'sing me a song', document.querySelector('#command-form button[type="submit"]').click(), true)`)
	if help := harness.WaitFor[string](tab, `(() => { const h = document.querySelector('#turns li .help'); return h && h.textContent; })()`, turnBound); !strings.Contains(help, "write todo.txt: buy milk") {
		t.Fatalf("the help reads %q", help)
	}

	// Mini-apps: "open timer" opens its frame in the page, and its tools join the catalogue.
	if state, res := typed(t, tab, "open timer"); state != "ok" || !strings.Contains(res, `"launched": true`) {
		t.Fatalf("open timer answered %s %s", state, res)
	}
	harness.WaitFor[bool](tab, `document.querySelector('.app-card[data-app-id="app_timer"] iframe.bridge') !== null`, turnBound)
	deadline := time.Now().Add(turnBound)
	for {
		var status struct{ Tools []string }
		getJSON(t, relay.URL+"/api/assistant", &status)
		if strings.Contains(strings.Join(status.Tools, " "), "__start") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timer's tools never reached the catalogue: %v", status.Tools)
		}
		time.Sleep(50 * time.Millisecond)
	}
	html := `<!doctype html><title>Counter</title><p id=n>0</p><script>webMcp.registerTool({name:'add',description:'Add one',execute:()=>++n.textContent});</script>`
	if state, res := typed(t, tab, "create app Counter: "+html); state != "ok" || !strings.Contains(res, `"path": "counter.html"`) {
		t.Fatalf("create app answered %s %s", state, res)
	}
	harness.WaitFor[bool](tab, `voicebox.miniApps.tools('page_counter').length === 1`, turnBound)
	if b, _ := fileBytes(t, tab, "counter.html"); string(b) != html {
		t.Fatalf("counter.html holds %q", b)
	}
}

// typedAsync types a command without waiting for its turn (a delete waits for approval).
func typedAsync(t *testing.T, tab *harness.Tab, command string) {
	t.Helper()
	text, _ := json.Marshal(command)
	harness.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('#command').value = %s, document.querySelector('#command-form button[type="submit"]').click(), true)`, text))
}

// TestApprovalReachesThePageWhileAMachineHoldsTheRoot pairs a machine environment: it takes the
// root from the page, yet a delete typed in the page is approved in the page and happens on the
// machine's disk, and undo puts it back there.
func TestApprovalReachesThePageWhileAMachineHoldsTheRoot(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	bin := filepath.Join(harness.RepoRoot(), "bin", "relay")
	pair := exec.Command(bin, "pair", "--state-dir", relay.StateDir, "box")
	bearer, err := pair.Output()
	if err != nil {
		t.Fatalf("relay pair: %v", err)
	}
	bearerFile := filepath.Join(t.TempDir(), "bearer")
	os.WriteFile(bearerFile, bearer, 0o600)
	dir := t.TempDir()
	want := []byte("machine notes\n\x00\x01\xfe")
	os.WriteFile(filepath.Join(dir, "notes.bin"), want, 0o644)
	env := exec.Command(bin, "env", "--relay", relay.URL, "--bearer-file", bearerFile, "--root", dir)
	if err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { env.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			env.Process.Kill()
			<-done
		}
	})
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'replaced'`, channelBound)

	typedAsync(t, tab, "delete notes.bin")
	pendingApproval(t, tab)
	clickApproval(t, tab, "approve")
	if state, res := lastTurn(t, tab); state != "ok" || !strings.Contains(res, `"deleted": true`) {
		t.Fatalf("the delete answered %s %s", state, res)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.bin")); !os.IsNotExist(err) {
		t.Fatalf("notes.bin is still on the machine: %v", err)
	}
	// Undo asks the machine, which holds the workspace, through the assistant.
	harness.Eval[bool](tab, `(document.querySelector('#undo').click(), true)`)
	if note := harness.WaitFor[string](tab, `document.querySelector('#history-note').textContent`, turnBound); !strings.Contains(note, "Undone on the machine") {
		t.Fatalf("undo says %q", note)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.bin")); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("after undo the machine holds %q, %v", b, err)
	}
	// Mini-apps live in the page, which does not hold the root now.
	if state, res := typed(t, tab, "open timer"); state != "refused" || !strings.Contains(res, "no-page") {
		t.Fatalf("open timer with a machine root answered %s %s", state, res)
	}
}
