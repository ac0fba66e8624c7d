//go:build !js

package tests

// The page as people use it (issue 24): each numbered problem found by trying the page as a new
// user would is a test here that fails on the page before it was fixed. Problem 4 (layout) is
// TestLayoutFitsFrom360 and TestWhatAnActionOpensIsShown, problem 7 (the Talk panel without a
// key) TestWithoutAKeyTheTalkPanelSaysSoOnce in live_test.go.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// useBound bounds one step a person takes in these tests (a dialog to open, a list to show).
const useBound = 20 * time.Second

// put writes a file of the page's workspace through its worker (as the person's change).
func put(t *testing.T, tab *harness.Tab, name, content string) {
	t.Helper()
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: %q, content: %q}).then(() => true)`, name, content))
}

// content reads a file of the page's workspace as text, or returns ok false when it is absent.
func content(t *testing.T, tab *harness.Tab, name string) (string, bool) {
	t.Helper()
	b, ok := fileBytes(t, tab, name)
	return string(b), ok
}

// click clicks what selector names in the page, as a mouse would.
func click(t *testing.T, tab *harness.Tab, selector string) {
	t.Helper()
	// A click waits for what it clicks to be visible: bounded, so one that never shows fails
	// here rather than at the test's deadline.
	ctx, cancel := context.WithTimeout(tab.Ctx, useBound)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(selector))); err != nil {
		t.Fatalf("click %s: %v", selector, err)
	}
}

// pressEnabled clicks the button selector names once it is there and enabled (Undo, for one,
// is disabled while the history is read again), in one step in the page.
func pressEnabled(t *testing.T, tab *harness.Tab, selector string) {
	t.Helper()
	harness.WaitFor[bool](tab, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e || e.disabled) return false; e.click(); return true; })()`, selector), useBound)
}

// press clicks what selector names once it is there, in one step in the page (a list that is
// drawn again between finding and clicking cannot make it miss).
func press(t *testing.T, tab *harness.Tab, selector string) {
	t.Helper()
	harness.WaitFor[bool](tab, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, selector), useBound)
}

// keys types text into what has focus, as a keyboard would (kb.Enter, kb.Escape and so on too).
func keys(t *testing.T, tab *harness.Tab, text string) {
	t.Helper()
	if _, err := chromedp.Run(tab.Ctx, chromedp.KeyEvent(text)); err != nil {
		t.Fatalf("type %q: %v", text, err)
	}
}

// choice waits for the page's choice dialog and returns its title.
func choice(t *testing.T, tab *harness.Tab) string {
	t.Helper()
	return harness.WaitFor[string](tab, `document.querySelector('#choice-dialog').open && document.querySelector('#choice-title').textContent`, useBound)
}

// choose presses the choice dialog's button whose value is value.
func choose(t *testing.T, tab *harness.Tab, value string) {
	t.Helper()
	click(t, tab, fmt.Sprintf(`#choice-buttons button[value=%q]`, value))
	harness.WaitFor[bool](tab, `!document.querySelector('#choice-dialog').open`, useBound)
}

// historyNote waits for the History panel to say something containing want.
func historyNote(t *testing.T, tab *harness.Tab, want string) {
	t.Helper()
	harness.WaitFor[bool](tab, fmt.Sprintf(`document.querySelector('#history-note').textContent.includes(%q)`, want), useBound)
}

// TestNoWriteLosesData is problem 1: "New file" with the name of an existing file emptied it,
// an upload replaced a file of the same name without asking, and the file browser's writes had
// no undo. Now a new file never replaces one, an upload onto a taken name asks, and Undo and
// Redo take back the person's writes (save, delete, rename) as well as the assistant's.
func TestNoWriteLosesData(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li.empty') !== null`, useBound)
	put(t, tab, "notes.txt", "keep me")
	click(t, tab, "#refresh")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="notes.txt"]') !== null`, useBound)

	// New file with a taken name: nothing is replaced; the person may open the file instead.
	click(t, tab, "#new-file")
	harness.WaitFor[bool](tab, `document.querySelector('#name-dialog').open`, useBound)
	harness.Eval[bool](tab, `(document.querySelector('#name-input').value = 'notes.txt', true)`)
	click(t, tab, "#name-ok")
	if title := choice(t, tab); title != "That file exists" {
		t.Fatalf("a new file onto notes.txt asked %q", title)
	}
	if got, _ := content(t, tab, "notes.txt"); got != "keep me" {
		t.Fatalf("after New file notes.txt holds %q", got)
	}
	choose(t, tab, "open")
	harness.WaitFor[bool](tab, `document.querySelector('#viewer-title').textContent === 'notes.txt' && document.querySelector('#editor').value === 'keep me'`, useBound)

	// Uploads onto taken names ask: keep both, then skip for all the others.
	// upload drops files (name, content, name, content, ...) on the Files panel, in order.
	upload := func(files ...string) {
		t.Helper()
		var js strings.Builder
		js.WriteString(`(() => { const dt = new DataTransfer();`)
		for i := 0; i < len(files); i += 2 {
			fmt.Fprintf(&js, `dt.items.add(new File([%q], %q));`, files[i+1], files[i])
		}
		js.WriteString(`const panel = document.querySelector('#files');
			panel.dispatchEvent(new DragEvent('dragover', {dataTransfer: dt, bubbles: true, cancelable: true}));
			panel.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
			return true; })()`)
		harness.Eval[bool](tab, js.String())
	}
	upload("notes.txt", "uploaded")
	if title := choice(t, tab); title != "A file of that name exists" {
		t.Fatalf("an upload onto notes.txt asked %q", title)
	}
	choose(t, tab, "both")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="notes (2).txt"]') !== null`, useBound)
	if got, _ := content(t, tab, "notes (2).txt"); got != "uploaded" {
		t.Fatalf("the upload kept beside holds %q", got)
	}
	if got, _ := content(t, tab, "notes.txt"); got != "keep me" {
		t.Fatalf("after keep both notes.txt holds %q", got)
	}
	// Two taken names and a free one: one question, "skip" for all, and the free one uploads.
	harness.Eval[bool](tab, `(() => {
		window.__asked = 0;
		const show = HTMLDialogElement.prototype.showModal;
		HTMLDialogElement.prototype.showModal = function () { window.__asked++; return show.call(this); };
		return true;
	})()`)
	upload("notes.txt", "again", "notes (2).txt", "again", "fresh.txt", "fresh")
	choice(t, tab)
	harness.Eval[bool](tab, `(document.querySelector('#choice-all').checked = true, true)`)
	choose(t, tab, "skip")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="fresh.txt"]') !== null`, useBound)
	if asked := harness.Eval[int](tab, `window.__asked`); asked != 1 {
		t.Fatalf("two taken names asked %d times, want once (for all)", asked)
	}
	if got, _ := content(t, tab, "notes (2).txt"); got != "uploaded" {
		t.Fatalf("after skip for all notes (2).txt holds %q", got)
	}
	if got, _ := content(t, tab, "notes.txt"); got != "keep me" {
		t.Fatalf("after skip notes.txt holds %q", got)
	}

	// The person's save is in the history: Undo takes it back, Redo puts it again.
	harness.Eval[bool](tab, `(() => { const ed = document.querySelector('#editor'); ed.value = 'edited by me'; ed.dispatchEvent(new Event('input')); return true; })()`)
	pressEnabled(t, tab, "#save")
	harness.WaitFor[bool](tab, `document.querySelector('#unsaved').hidden`, useBound)
	harness.WaitFor[bool](tab, `(document.querySelector('#history-list li') || {}).textContent?.startsWith('You wrote notes.txt')`, useBound)
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You wrote notes.txt")
	if got, _ := content(t, tab, "notes.txt"); got != "keep me" {
		t.Fatalf("after undoing the save notes.txt holds %q", got)
	}
	// The editor shows the file as the undo left it, not the text it no longer holds.
	harness.WaitFor[bool](tab, `document.querySelector('#editor').value === 'keep me'`, useBound)
	harness.WaitFor[bool](tab, `!document.querySelector('#redo').disabled`, useBound)
	pressEnabled(t, tab, "#redo")
	historyNote(t, tab, "Redone: You wrote notes.txt")
	if got, _ := content(t, tab, "notes.txt"); got != "edited by me" {
		t.Fatalf("after redo notes.txt holds %q", got)
	}

	// Delete and rename from the file browser are undone too.
	press(t, tab, `#file-list li[data-path="notes (2).txt"] .remove`)
	harness.WaitFor[bool](tab, `document.querySelector('#confirm-dialog').open`, useBound)
	click(t, tab, "#confirm-ok")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="notes (2).txt"]') === null`, useBound)
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You deleted notes (2).txt")
	if got, _ := content(t, tab, "notes (2).txt"); got != "uploaded" {
		t.Fatalf("after undoing the delete notes (2).txt holds %q", got)
	}
	press(t, tab, `#file-list li[data-path="notes.txt"] .rename`)
	harness.WaitFor[bool](tab, `document.querySelector('#name-dialog').open`, useBound)
	harness.Eval[bool](tab, `(document.querySelector('#name-input').value = 'done/notes.txt', true)`)
	click(t, tab, "#name-ok")
	harness.WaitFor[bool](tab, `document.querySelector('#viewer-title').textContent === 'done/notes.txt'`, useBound)
	if _, ok := content(t, tab, "notes.txt"); ok {
		t.Fatal("after the rename notes.txt is still there")
	}
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You moved notes.txt to done/notes.txt")
	if got, _ := content(t, tab, "notes.txt"); got != "edited by me" {
		t.Fatalf("after undoing the rename notes.txt holds %q", got)
	}
}

// TestAnUndoConflictIsResolvedAndTheHistoryMovesOn is problem 2: after one undo met a conflict,
// every later press of Undo answered undo-conflict, for good. Now the conflict shows both
// versions and the person chooses; the history then goes on to the change before.
func TestAnUndoConflictIsResolvedAndTheHistoryMovesOn(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li.empty') !== null`, useBound)
	put(t, tab, "b.txt", "the person's")
	typed(t, tab, "write a.txt: v1")
	typed(t, tab, "write a.txt: v2")
	// Another program changes a.txt behind the history's back (the page's own OPFS, written from
	// its main thread, as an editor on a granted folder would).
	harness.Eval[bool](tab, `(async () => {
		const ws = await (await navigator.storage.getDirectory()).getDirectoryHandle('workspace');
		const w = await (await ws.getFileHandle('a.txt')).createWritable();
		await w.write('theirs');
		await w.close();
		return true;
	})()`)

	pressEnabled(t, tab, "#undo")
	harness.WaitFor[bool](tab, `!document.querySelector('#history-conflict').hidden`, useBound)
	versions := harness.Eval[[]string](tab, `[document.querySelector('#conflict-current').textContent, document.querySelector('#conflict-earlier').textContent]`)
	if versions[0] != "theirs" || versions[1] != "v1" {
		t.Fatalf("the conflict shows current %q and earlier %q", versions[0], versions[1])
	}
	if focused := harness.Eval[string](tab, `document.activeElement.dataset.resolve || ''`); focused != "keep-current" {
		t.Fatalf("focus is on %q, want the conflict's first choice", focused)
	}
	if os.Getenv(docsScreenshots) != "" {
		tab.Viewport(1280, 860)
		harness.Eval[bool](tab, `(document.querySelector('#history').scrollIntoView({block: 'start'}), true)`)
		tab.ScreenshotTo(filepath.Join(harness.RepoRoot(), "docs", "screens", "history-conflict.png"))
	}
	click(t, tab, `#conflict-choices button[data-resolve="keep-both"]`)
	historyNote(t, tab, "Kept both: the earlier version is now a (earlier).txt")
	if got, _ := content(t, tab, "a (earlier).txt"); got != "v1" {
		t.Fatalf("the earlier version kept beside holds %q", got)
	}
	if got, _ := content(t, tab, "a.txt"); got != "theirs" {
		t.Fatalf("after keep both a.txt holds %q", got)
	}
	// Keeping both was a change of its own; then the history reaches the assistant's first
	// write, which meets the same later change: keep the current version and go on.
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You wrote a (earlier).txt")
	pressEnabled(t, tab, "#undo")
	harness.WaitFor[bool](tab, `!document.querySelector('#history-conflict').hidden && document.querySelector('#conflict-earlier').textContent === '(no file)'`, useBound)
	click(t, tab, `#conflict-choices button[data-resolve="keep-current"]`)
	historyNote(t, tab, "Kept the current version")
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You wrote b.txt")
	if _, ok := content(t, tab, "b.txt"); ok {
		t.Fatal("the undo past the conflict did not reach b.txt")
	}
	if got, _ := content(t, tab, "a.txt"); got != "theirs" {
		t.Fatalf("at the end a.txt holds %q", got)
	}
}

// TestDialogsAndTheEditorTakeTheKeyboard is problem 3: Enter cancelled the New file dialog, the
// editor had no Ctrl/Cmd+S and no unsaved marker, and closing it lost edits without a word.
func TestDialogsAndTheEditorTakeTheKeyboard(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `!document.querySelector('#new-file').disabled`, useBound)

	// Enter confirms: the file is made and the editor takes focus.
	click(t, tab, "#new-file")
	harness.WaitFor[bool](tab, `document.querySelector('#name-dialog').open && document.activeElement === document.querySelector('#name-input')`, useBound)
	keys(t, tab, "plan.md")
	keys(t, tab, kb.Enter)
	harness.WaitFor[bool](tab, `document.querySelector('#viewer-title').textContent === 'plan.md' && document.activeElement === document.querySelector('#editor')`, useBound)
	if _, ok := content(t, tab, "plan.md"); !ok {
		t.Fatal("Enter in the New file dialog made no file")
	}
	// Escape cancels: no folder is made.
	click(t, tab, "#new-folder")
	harness.WaitFor[bool](tab, `document.querySelector('#name-dialog').open`, useBound)
	keys(t, tab, "never")
	keys(t, tab, kb.Escape)
	harness.WaitFor[bool](tab, `!document.querySelector('#name-dialog').open`, useBound)
	if harness.Eval[bool](tab, `!!document.querySelector('#file-list li[data-path="never"]')`) {
		t.Fatal("Escape in the New folder dialog made the folder")
	}

	// Typing marks the file unsaved; Ctrl+S saves it. The editor is focused in the page, in one
	// step: a click lands where the editor was when its box was read, and the file list drawn
	// again for the new file can move it in between (the keys then went nowhere, under load).
	harness.WaitFor[bool](tab, `(() => { const e = document.querySelector('#editor'); if (e.disabled) return false; e.focus(); return document.activeElement === e; })()`, useBound)
	keys(t, tab, "# Plan")
	harness.WaitFor[bool](tab, `!document.querySelector('#unsaved').hidden`, useBound)
	if _, err := chromedp.Run(tab.Ctx, chromedp.KeyEvent("s", chromedp.KeyModifiers(chromedp.ModifierCtrl))); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#unsaved').hidden`, useBound)
	if got, _ := content(t, tab, "plan.md"); got != "# Plan" {
		t.Fatalf("after Ctrl+S plan.md holds %q", got)
	}

	// Leaving unsaved edits asks; Escape keeps editing, and Discard drops them.
	keys(t, tab, " more")
	pressEnabled(t, tab, "#close-file")
	if title := choice(t, tab); title != "Unsaved changes" {
		t.Fatalf("closing an edited file asked %q", title)
	}
	keys(t, tab, kb.Escape)
	harness.WaitFor[bool](tab, `!document.querySelector('#choice-dialog').open`, useBound)
	if got := harness.Eval[string](tab, `document.querySelector('#editor').value`); got != "# Plan more" {
		t.Fatalf("after Escape the editor holds %q", got)
	}
	// A dialog's close event is queued: Close pressed again before the last dialog's event arrived
	// (a fast second click, done here in one task) still asks, and that dialog's answer is heard.
	harness.Eval[bool](tab, `(() => {
		const close = document.querySelector('#close-file');
		close.click();
		document.querySelector('#choice-dialog').close('');
		close.click();
		return true;
	})()`)
	choice(t, tab)
	choose(t, tab, "discard")
	harness.WaitFor[bool](tab, `document.querySelector('#viewer-title').textContent === 'No file open'`, useBound)
	if got, _ := content(t, tab, "plan.md"); got != "# Plan" {
		t.Fatalf("after discarding plan.md holds %q", got)
	}
}

// TestWhatAnActionOpensIsShown is the second half of problem 4: at a phone's width, opening a
// mini-app or a file left it below the fold with nothing scrolled into view. Now it is shown and
// takes focus.
func TestWhatAnActionOpensIsShown(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	tab.Viewport(360, 740)
	openWorkspace(t, tab, relay.URL)
	inView := func(selector string) bool {
		return harness.Eval[bool](tab, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; })()`, selector))
	}
	harness.WaitFor[bool](tab, `document.querySelector('#app-tray li[data-app-id="app_timer"] .app-launch') !== null`, useBound)
	click(t, tab, `#app-tray li[data-app-id="app_timer"] .app-launch`)
	harness.WaitFor[bool](tab, `document.activeElement && document.activeElement.id === 'app-title-app_timer'`, useBound)
	if !inView(`#app-title-app_timer`) {
		t.Fatal("the opened mini-app is not on screen")
	}
	harness.Eval[bool](tab, `(scrollTo(0, 0), true)`)
	put(t, tab, "todo.txt", "milk")
	click(t, tab, "#refresh")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="todo.txt"]') !== null`, useBound)
	press(t, tab, `#file-list li[data-path="todo.txt"] .open`)
	harness.WaitFor[bool](tab, `document.activeElement === document.querySelector('#editor')`, useBound)
	if !inView("#editor") {
		t.Fatal("the opened file is not on screen")
	}
}

// startMachine pairs a machine environment named box with the relay and runs it on dir until
// the test ends.
func startMachine(t *testing.T, relay *harness.Relay, dir string) {
	t.Helper()
	bin := filepath.Join(harness.RepoRoot(), "bin", "relay")
	bearer, err := exec.Command(bin, "pair", "--extensions-dir", relay.StateDir, "box").Output()
	if err != nil {
		t.Fatalf("relay pair: %v", err)
	}
	bearerFile := filepath.Join(t.TempDir(), "bearer")
	os.WriteFile(bearerFile, bearer, 0o600)
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
}

// TestWhereToolsActIsSaid is problem 5: when a paired machine took over the executor, the
// assistant acted on the machine's folder while the Files panel still showed browser storage,
// and nothing said where the tools now acted. Now the header says it, the takeover is announced
// with the way back, and the Files panel shows the machine's folder.
func TestWhereToolsActIsSaid(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#where').textContent === "Tools act on: this tab's browser storage"`, useBound)
	put(t, tab, "only-in-the-tab.txt", "tab")
	press(t, tab, `#file-list li[data-path="only-in-the-tab.txt"] .open`)
	harness.WaitFor[bool](tab, `document.querySelector('#editor').value === 'tab'`, useBound)
	harness.Eval[bool](tab, `(() => { const ed = document.querySelector('#editor'); ed.value = 'tab, edited'; ed.dispatchEvent(new Event('input')); return true; })()`)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "on-the-machine.txt"), []byte("machine"), 0o644)
	startMachine(t, relay, dir)

	harness.WaitFor[bool](tab, `document.querySelector('#where').textContent === 'Tools act on: the machine “box”'`, channelBound)
	notice := harness.WaitFor[string](tab, `!document.querySelector('#notice').hidden && document.querySelector('#notice').textContent`, useBound)
	if !strings.Contains(notice, "box") || !strings.Contains(notice, "Use this tab") {
		t.Fatalf("the takeover was announced as %q", notice)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="on-the-machine.txt"]') !== null`, useBound)
	if harness.Eval[bool](tab, `!!document.querySelector('#file-list li[data-path="only-in-the-tab.txt"]')`) {
		t.Fatal("the Files panel still shows the tab's workspace while the machine holds it")
	}
	if !harness.Eval[bool](tab, `document.querySelector('#new-file').disabled && !document.querySelector('#files-note').hidden`) {
		t.Fatal("the Files panel offers to change the machine's folder, or does not say whose it is")
	}
	// The takeover dropped no unsaved edit: the tab's file is still open, and Save saves it there.
	if !harness.Eval[bool](tab, `document.querySelector('#editor').value === 'tab, edited' && !document.querySelector('#unsaved').hidden`) {
		t.Fatal("the takeover dropped the unsaved edit")
	}
	pressEnabled(t, tab, "#save")
	harness.WaitFor[bool](tab, `document.querySelector('#unsaved').hidden`, useBound)
	if got, _ := content(t, tab, "only-in-the-tab.txt"); got != "tab, edited" {
		t.Fatalf("after Save during the takeover the tab's file holds %q", got)
	}
	press(t, tab, `#file-list li[data-path="on-the-machine.txt"] .open`)
	harness.WaitFor[bool](tab, `document.querySelector('#editor').value === 'machine'`, useBound)
	checkAccessibility(t, tab, "a machine holding the workspace")

	// The way back.
	click(t, tab, "#channel-resume")
	harness.WaitFor[bool](tab, `document.querySelector('#where').textContent === "Tools act on: this tab's browser storage"`, channelBound)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="only-in-the-tab.txt"]') !== null`, useBound)
}

// TestExtensionsPanelFollowsTheRelay is problem 6: proposals, admissions and revocations made
// elsewhere appeared only on reload, and a refused proposal could not be dismissed.
func TestExtensionsPanelFollowsTheRelay(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#extensions').dataset.state === 'ready'`, readyBound)
	desc := func(id string) string {
		return `{"id":"` + id + `","name":"Notes reader","capabilities":["read"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file","params":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}`
	}
	// Elsewhere: a proposal, then the host admits it, then revokes it.
	if m := postAPI(t, relay.URL, "/api/extensions/sideload", "", desc("notes")); m["ok"] != true {
		t.Fatalf("sideload: %v", m)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#ext-pending li[data-id="notes"]') !== null`, useBound)
	if m := postAPI(t, relay.URL, "/api/extensions/admit", relay.HostToken(t), `{"id":"notes","decision":"admit","confirm":true}`); m["ok"] != true {
		t.Fatalf("admit: %v", m)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="notes"]') !== null && document.querySelector('#ext-pending li[data-id="notes"]') === null`, useBound)

	// A proposal the gate refuses (its tool's name is taken) can be dismissed.
	if m := postAPI(t, relay.URL, "/api/extensions/sideload", "", desc("notes-again")); m["ok"] != true {
		t.Fatalf("sideload: %v", m)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#ext-pending li[data-id="notes-again"] .ext-refused') !== null`, useBound)
	click(t, tab, `#ext-pending li[data-id="notes-again"] .ext-dismiss`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-pending li[data-id="notes-again"]') === null`, useBound)
	if m := postAPI(t, relay.URL, "/api/extensions/revoke", "", `{"id":"notes"}`); m["ok"] != true {
		t.Fatalf("revoke: %v", m)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="notes"]') === null`, useBound)
}

// TestErrorsAreSaidInWords is problem 8: results were raw JSON, with the relay down actions said
// "Failed to fetch" and their entries stayed pending for good, and the first screen led with a
// red operator error.
func TestErrorsAreSaidInWords(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "OPENAI_API_KEY=", "GEMINI_API_KEY=")
	tab := openExecutor(t, relay)

	// The first screen says what to do first, and no error.
	harness.WaitFor[bool](tab, `!document.querySelector('#start').hidden && voicebox.live.state() === 'no-key'`, useBound)
	if shown := harness.Eval[[]string](tab, `[...document.querySelectorAll('[data-state="error"], [data-state="failed"], [data-state="attention"]')]
		.filter((e) => e.checkVisibility()).map((e) => e.id || e.className)`); len(shown) > 0 {
		t.Fatalf("the first screen shows errors: %v", shown)
	}
	if harness.Eval[bool](tab, `!document.querySelector('#notice').hidden || !document.querySelector('#relay-down').hidden`) {
		t.Fatal("the first screen shows a notice")
	}

	// A result in words, the JSON only behind Details; a refusal as its sentence and rule id.
	put(t, tab, "milk.txt", "milk")
	typed(t, tab, "list files")
	words := harness.Eval[[]string](tab, `[document.querySelector('#turns li .result').textContent, String(document.querySelector('#turns li .result-json').open)]`)
	if !strings.Contains(words[0], "1 entry in the workspace") || !strings.Contains(words[0], "milk.txt") || strings.Contains(words[0], "{") || words[1] != "false" {
		t.Fatalf("list files shows %q (details open %s)", words[0], words[1])
	}
	if state, _ := typed(t, tab, "read nothing.txt"); state != "refused" {
		t.Fatalf("reading a missing file ended %s", state)
	}
	refusal := harness.Eval[[]string](tab, `[document.querySelector('#turns li .result .why').textContent, document.querySelector('#turns li .result .rule').textContent]`)
	if refusal[1] != "not-found" || !strings.Contains(refusal[0], "nothing.txt") {
		t.Fatalf("the refusal shows %q [%s]", refusal[0], refusal[1])
	}

	// The relay goes away: the page says so once, the command ends as not sent, and Retry
	// finds the relay once it is back.
	tab.Allow(`ERR_CONNECTION_REFUSED`)
	tab.Allow(`WebSocket connection to .*/channel' failed`)
	relay.Stop(t)
	harness.Eval[bool](tab, `(document.querySelector('#command').value = 'list files', document.querySelector('#command-form button[type="submit"]').click(), true)`)
	state := harness.WaitFor[string](tab, `(() => { const li = document.querySelector('#turns li'); return li.dataset.state !== 'pending' && li.dataset.state + ': ' + li.querySelector('.result').textContent; })()`, useBound)
	if !strings.HasPrefix(state, "failed: Not sent: the relay is not answering") {
		t.Fatalf("with the relay down the command ended %q", state)
	}
	harness.WaitFor[bool](tab, `!document.querySelector('#relay-down').hidden`, useBound)
	if n := harness.Eval[int](tab, `document.body.innerText.split('The relay is not answering').length - 1`); n != 1 {
		t.Fatalf("the page says the relay is down %d times", n)
	}
	harness.StartRelay(t, "PORT="+relay.Port(), "VOICEBOX_STATE_DIR="+relay.StateDir)
	// Retry is pressed while the banner shows; the page's own reconnection may find the relay
	// first, and either way the banner goes (a click that waited for a banner already gone hung).
	// A failed Retry hides the banner for a frame, so hidden counts only once the relay answers.
	harness.WaitFor[bool](tab, `(async () => {
		if (!document.querySelector('#relay-down').hidden) {
			document.querySelector('#relay-retry').click();
			return false;
		}
		try {
			return (await fetch('/api/health')).ok;
		} catch {
			return false;
		}
	})()`, useBound)
	harness.WaitFor[bool](tab, `document.querySelector('#relay-down').hidden`, useBound)
}

// TestMiniAppsSayWhatTheyOffer is problem 9: an app that registered no tools got no
// explanation, two apps of one title could not be told apart, the calculator sample was
// clipped, and the approval deadlines differed (15 s and 60 s) with no countdown. (The external
// apps' tools getting the sandboxed apps' schema form is held by TestExternalAppOrderBook.)
func TestMiniAppsSayWhatTheyOffer(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	put(t, tab, "plain.html", `<!doctype html><title>Plain</title><p>No tools here.</p>`)
	put(t, tab, "my-timer.html", `<!doctype html><title>Timer</title><p>Another timer.</p>`)
	harness.Eval[bool](tab, `voicebox.miniApps.refreshTray().then(() => true)`)
	labels := harness.WaitFor[[]string](tab, `(() => { const b = [...document.querySelectorAll('#app-tray .app-launch')].map((b) => b.textContent);
		return b.filter((t) => t.startsWith('Timer')).length === 2 ? b : null; })()`, useBound)
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l] {
			t.Fatalf("the tray shows %q twice: %v", l, labels)
		}
		seen[l] = true
	}
	harness.Eval[bool](tab, `voicebox.miniApps.launch({path: 'plain.html'}).then(() => true)`)
	if hint := harness.WaitFor[string](tab, `(document.querySelector('.app-card[data-app-id] .no-tools') || {}).textContent`, useBound); !strings.Contains(hint, "registered no tools, so the assistant cannot use it") {
		t.Fatalf("a page without tools says %q", hint)
	}

	// Every sample fits its frame.
	for _, app := range []string{"app_calculator", "app_scoreboard", "app_timer"} {
		for _, id := range harness.Eval[[]string](tab, `voicebox.miniApps.open()`) {
			harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.miniApps.close(%q), true)`, id))
		}
		harness.Eval[bool](tab, fmt.Sprintf(`voicebox.miniApps.launch({name: %q}).then(() => true)`, app))
		harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length > 0`, app), useBound)
		size := harness.EvalInFrame[map[string]float64](tab, "about:srcdoc", `({h: document.documentElement.scrollHeight, ih: innerHeight, w: document.documentElement.scrollWidth, iw: innerWidth})`)
		if size["h"] > size["ih"] || size["w"] > size["iw"] {
			t.Fatalf("%s needs %vx%v px in a %vx%v frame", app, size["w"], size["h"], size["iw"], size["ih"])
		}
	}

	// One deadline for every approval, counted down.
	put(t, tab, "old.txt", "old")
	typedAsync(t, tab, "delete old.txt")
	pendingApproval(t, tab)
	left := harness.Eval[int](tab, `parseInt(document.querySelector('#approvals li.approval .deadline').textContent)`)
	if left <= 15 || left > 60 {
		t.Fatalf("the delete's approval shows %d s left, want the one deadline of 60 s", left)
	}
	clickApproval(t, tab, "deny")
}

// TestControlsSayWhatTheyActOn is problem 10: many controls shared a name ("Delete" five times,
// "Call" thirteen, "↻"), so a screen reader user could not tell them apart. With files, an
// open app, its tools and an approval on the page, no two controls share an accessible name.
func TestControlsSayWhatTheyActOn(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	put(t, tab, "notes.txt", "a")
	put(t, tab, "todo.txt", "b")
	click(t, tab, "#refresh")
	harness.WaitFor[bool](tab, `document.querySelectorAll('#file-list li[data-path]').length === 2`, useBound)
	harness.Eval[bool](tab, `voicebox.miniApps.launch({name: 'app_scoreboard'}).then(() => true)`)
	harness.Eval[bool](tab, `voicebox.miniApps.launch({name: 'app_timer'}).then(() => true)`)
	harness.WaitFor[bool](tab, `voicebox.miniApps.tools('app_scoreboard').length > 0 && voicebox.miniApps.tools('app_timer').length > 0`, useBound)
	typedAsync(t, tab, "delete notes.txt")
	pendingApproval(t, tab)
	harness.Eval[bool](tab, `(document.querySelectorAll('details.tool').forEach((d) => { d.open = true; }), true)`)
	dupes := harness.Eval[[]string](tab, `(() => {
		const names = new Map();
		for (const b of document.querySelectorAll('button, [role="button"], input[type="submit"]')) {
			if (!b.checkVisibility()) continue;
			const name = (b.getAttribute('aria-label') || b.textContent).replace(/\s+/g, ' ').trim();
			names.set(name, (names.get(name) || 0) + 1);
		}
		return [...names].filter(([, n]) => n > 1).map(([name, n]) => name + ' ×' + n);
	})()`)
	if len(dupes) > 0 {
		t.Fatalf("controls share names: %v", dupes)
	}
	clickApproval(t, tab, "deny")
}
