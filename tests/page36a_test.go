//go:build !js

package tests

// The page as people use it, round 2 (issue 36): items 1 (no silent overwrite), 6 (Undo and Redo
// symmetric), 8 (the upload dialog) and 10 (words). Each test fails on the page before its fix.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// assistantWrites has the assistant write name through POST /api/turn, as a model's or a typed
// write_file does, and fails the test unless it was done.
func assistantWrites(t *testing.T, relay *harness.Relay, name, content string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"action": map[string]string{"verb": "write_file", "name": name, "content": content}})
	resp, err := http.Post(relay.URL+"/api/turn", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST /api/turn: %v", err)
	}
	defer resp.Body.Close()
	var turn struct {
		OK  bool   `json:"ok"`
		Why string `json:"why"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&turn); err != nil || !turn.OK {
		t.Fatalf("the assistant's write of %s answered %d %+v %v", name, resp.StatusCode, turn, err)
	}
}

// dropFiles drops files (name, content, name, content, ...) on the Files panel, in order.
func dropFiles(t *testing.T, tab *harness.Tab, files ...string) {
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

// openInViewer opens name from the file list and waits until the editor shows want.
func openInViewer(t *testing.T, tab *harness.Tab, name, want string) {
	t.Helper()
	click(t, tab, "#refresh")
	press(t, tab, fmt.Sprintf(`#file-list li[data-path=%q] .open`, name))
	harness.WaitFor[bool](tab, fmt.Sprintf(`document.querySelector('#viewer-title').textContent === %q && document.querySelector('#editor').value === %q`, name, want), useBound)
}

// edit types text into the viewer as the person's edit (not saved).
func edit(t *testing.T, tab *harness.Tab, text string) {
	t.Helper()
	harness.Eval[bool](tab, fmt.Sprintf(`(() => { const ed = document.querySelector('#editor'); ed.value = %q; ed.dispatchEvent(new Event('input')); return true; })()`, text))
	harness.WaitFor[bool](tab, `!document.querySelector('#unsaved').hidden`, useBound)
}

// viewerNote waits for the note under the viewer's title to say something containing want.
func viewerNote(t *testing.T, tab *harness.Tab, want string) {
	t.Helper()
	harness.WaitFor[bool](tab, fmt.Sprintf(`!document.querySelector('#viewer-note').hidden && document.querySelector('#viewer-note').textContent.includes(%q)`, want), useBound)
}

// holds fails the test unless the workspace file name holds want.
func holds(t *testing.T, tab *harness.Tab, name, want string) {
	t.Helper()
	if got, ok := content(t, tab, name); !ok || got != want {
		t.Fatalf("%s holds %q (present %v), want %q", name, got, ok, want)
	}
}

// TestASaveNeverOverwritesANewerVersion is item 1: with unsaved edits in the viewer, the
// assistant wrote the same file (or an upload replaced it), and Save wrote over the newer version
// without a word. Now the save asks (keep mine, keep theirs, keep both), and an open file that
// changed while unedited reloads, saying so.
func TestASaveNeverOverwritesANewerVersion(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li.empty') !== null`, useBound)
	put(t, tab, "notes.txt", "as opened")
	openInViewer(t, tab, "notes.txt", "as opened")

	// Unedited: the assistant's write shows at once, with a note.
	assistantWrites(t, relay, "notes.txt", "the assistant's first")
	harness.WaitFor[bool](tab, `document.querySelector('#editor').value === "the assistant's first"`, useBound)
	viewerNote(t, tab, "changed while it was open, and was reloaded")

	// Edited, then the assistant writes: Save asks, and nothing is written until it is answered.
	edit(t, tab, "mine")
	assistantWrites(t, relay, "notes.txt", "theirs")
	viewerNote(t, tab, "Save will ask")
	if got := harness.Eval[string](tab, `document.querySelector('#editor').value`); got != "mine" {
		t.Fatalf("the assistant's write replaced the unsaved edits in the editor: %q", got)
	}
	pressEnabled(t, tab, "#save")
	if title := choice(t, tab); title != "The file changed since you opened it" {
		t.Fatalf("a save onto a newer version asked %q", title)
	}
	holds(t, tab, "notes.txt", "theirs")
	choose(t, tab, "both")
	harness.WaitFor[bool](tab, `document.querySelector('#unsaved').hidden && document.querySelector('#editor').value === 'theirs'`, useBound)
	holds(t, tab, "notes.txt", "theirs")
	holds(t, tab, "notes (mine).txt", "mine")

	// Keep theirs: the edits go, the file stays.
	edit(t, tab, "mine, dropped")
	assistantWrites(t, relay, "notes.txt", "theirs again")
	pressEnabled(t, tab, "#save")
	choice(t, tab)
	choose(t, tab, "theirs")
	harness.WaitFor[bool](tab, `document.querySelector('#unsaved').hidden && document.querySelector('#editor').value === 'theirs again'`, useBound)
	holds(t, tab, "notes.txt", "theirs again")

	// An upload that replaces the open file is a newer version too; keep mine writes over it,
	// and Undo brings the upload back.
	edit(t, tab, "mine, kept")
	dropFiles(t, tab, "notes.txt", "uploaded")
	if title := choice(t, tab); title != "A file of that name exists" {
		t.Fatalf("the upload asked %q", title)
	}
	choose(t, tab, "replace")
	harness.WaitFor[bool](tab, `voicebox.call('files.read', {path: 'notes.txt'}).then((a) => a.ok && a.value.text === 'uploaded')`, useBound)
	pressEnabled(t, tab, "#save")
	choice(t, tab)
	choose(t, tab, "mine")
	harness.WaitFor[bool](tab, `document.querySelector('#unsaved').hidden`, useBound)
	holds(t, tab, "notes.txt", "mine, kept")
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You wrote notes.txt")
	holds(t, tab, "notes.txt", "uploaded")

	// With no one else writing, Save saves at once, twice in a row (it expects its own version).
	harness.WaitFor[bool](tab, `document.querySelector('#editor').value === 'uploaded'`, useBound)
	for _, text := range []string{"plain save", "plain save, again"} {
		edit(t, tab, text)
		pressEnabled(t, tab, "#save")
		harness.WaitFor[bool](tab, `document.querySelector('#unsaved').hidden`, useBound)
		if harness.Eval[bool](tab, `document.querySelector('#choice-dialog').open`) {
			t.Fatalf("a save of %q with no newer version asked", text)
		}
		holds(t, tab, "notes.txt", text)
	}
}

// TestUndoAndRedoAreSymmetric is item 6: typed redo was not understood nor listed by help, the
// note "…Redo puts it back." stayed after a new change ended the redos, undoing a move into a new
// folder left the folder, and removing a folder was not in the history.
func TestUndoAndRedoAreSymmetric(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li.empty') !== null`, useBound)

	typed(t, tab, "help")
	if help := harness.Eval[string](tab, `document.querySelector('#turns li div.help').textContent`); !strings.Contains(help, "redo") {
		t.Fatalf("help does not list redo:\n%s", help)
	}
	typed(t, tab, "write a.txt: one")
	if state, result := typed(t, tab, "undo"); state != "ok" {
		t.Fatalf("typed undo: %s %s", state, result)
	}
	if _, ok := content(t, tab, "a.txt"); ok {
		t.Fatal("after undo a.txt is there")
	}
	if state, result := typed(t, tab, "redo"); state != "ok" {
		t.Fatalf("typed redo: %s %s", state, result)
	}
	holds(t, tab, "a.txt", "one")

	// The note promises a redo only while there is one.
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Redo puts it back.")
	put(t, tab, "b.txt", "a new change")
	harness.WaitFor[bool](tab, `document.querySelector('#redo').disabled && !document.querySelector('#history-note').textContent.includes('Redo')`, useBound)
	if note := harness.Eval[string](tab, `document.querySelector('#history-note').textContent`); !strings.HasPrefix(note, "Undone: The assistant wrote a.txt") {
		t.Fatalf("the note after a new change reads %q", note)
	}

	// Undoing a move into a new folder takes the folder away too.
	click(t, tab, "#refresh")
	press(t, tab, `#file-list li[data-path="b.txt"] .rename`)
	harness.WaitFor[bool](tab, `document.querySelector('#name-dialog').open`, useBound)
	harness.Eval[bool](tab, `(document.querySelector('#name-input').value = 'made/deeper/b.txt', true)`)
	click(t, tab, "#name-ok")
	harness.WaitFor[bool](tab, `(document.querySelector('#history-list li') || {}).textContent?.startsWith('You moved b.txt to made/deeper/b.txt')`, useBound)
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You moved b.txt to made/deeper/b.txt")
	holds(t, tab, "b.txt", "a new change")
	harness.WaitFor[bool](tab, `voicebox.call('files.list', {dir: ''}).then((a) => a.ok && !a.value.entries.some((e) => e.name === 'made'))`, useBound)

	// A folder made and removed in the file browser is in the history both ways.
	click(t, tab, "#new-folder")
	harness.WaitFor[bool](tab, `document.querySelector('#name-dialog').open`, useBound)
	harness.Eval[bool](tab, `(document.querySelector('#name-input').value = 'box', true)`)
	click(t, tab, "#name-ok")
	harness.WaitFor[bool](tab, `(document.querySelector('#history-list li') || {}).textContent?.startsWith('You made the folder box')`, useBound)
	press(t, tab, `#file-list li[data-path="box"] .remove`)
	harness.WaitFor[bool](tab, `document.querySelector('#confirm-dialog').open`, useBound)
	click(t, tab, "#confirm-ok")
	harness.WaitFor[bool](tab, `(document.querySelector('#history-list li') || {}).textContent?.startsWith('You removed the folder box')`, useBound)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="box"]') === null`, useBound)
	pressEnabled(t, tab, "#undo")
	historyNote(t, tab, "Undone: You removed the folder box")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="box"][data-kind="dir"]') !== null`, useBound)
	pressEnabled(t, tab, "#redo")
	historyNote(t, tab, "Redone: You removed the folder box")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="box"]') === null`, useBound)
}

// TestTheUploadDialogCountsWhatItAsksAbout is item 8: the upload dialog offered "the 2 other
// files whose names are taken" when none was, and its checkbox sat above its label.
func TestTheUploadDialogCountsWhatItAsksAbout(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li.empty') !== null`, useBound)
	put(t, tab, "a.txt", "a")
	click(t, tab, "#refresh")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="a.txt"]') !== null`, useBound)

	// One taken name among three: nothing to do "for all".
	dropFiles(t, tab, "a.txt", "A", "b.txt", "B", "c.txt", "C")
	choice(t, tab)
	if shown := harness.Eval[bool](tab, `!document.querySelector('#choice-all-row').hidden`); shown {
		t.Fatalf("with no other taken name the dialog offers %q", harness.Eval[string](tab, `document.querySelector('#choice-all-label').textContent`))
	}
	choose(t, tab, "skip")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="c.txt"]') !== null`, useBound)

	// Three taken of four: the two others are counted, and the checkbox sits beside its words.
	dropFiles(t, tab, "a.txt", "A", "new.txt", "N", "b.txt", "B", "c.txt", "C")
	choice(t, tab)
	if label := harness.Eval[string](tab, `document.querySelector('#choice-all-row').hidden ? '' : document.querySelector('#choice-all-label').textContent`); label != "Do the same for the 2 other files whose names are taken" {
		t.Fatalf("the dialog offers %q", label)
	}
	beside := harness.Eval[[]float64](tab, `(() => {
		const box = document.querySelector('#choice-all').getBoundingClientRect();
		const words = document.querySelector('#choice-all-label').getBoundingClientRect();
		return [box.left, box.right, box.top, box.bottom, words.left, words.top, words.bottom];
	})()`)
	boxMiddle := (beside[2] + beside[3]) / 2
	if beside[1] > beside[4] || boxMiddle < beside[5] || boxMiddle > beside[6] {
		t.Fatalf("the checkbox (%v..%v, %v..%v) is not on its words' line before them (from %v, %v..%v)", beside[0], beside[1], beside[2], beside[3], beside[4], beside[5], beside[6])
	}
	checkAccessibility(t, tab, "the upload dialog asking for all")
	harness.Eval[bool](tab, `(document.querySelector('#choice-all').checked = true, true)`)
	choose(t, tab, "skip")
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li[data-path="new.txt"]') !== null`, useBound)
	holds(t, tab, "a.txt", "a")
	holds(t, tab, "c.txt", "C")
}

// TestTheWordsAreRight is item 10: "Write 1 bytes"; the live region read "The assistant asks:
// MCP client "inspector" asks: …"; a non-empty folder's delete was refused file-exists; and the
// folder picker's refusal showed the browser's raw DOMException text.
func TestTheWordsAreRight(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li.empty') !== null`, useBound)

	typed(t, tab, "write one.txt: x")
	if said := harness.Eval[string](tab, `document.querySelector('#turns li .understood').textContent`); said != "Write 1 byte to one.txt." {
		t.Fatalf("the turn says %q", said)
	}

	// A folder that holds a file is not deleted, and the refusal says why.
	put(t, tab, "full/inside.txt", "keep")
	click(t, tab, "#refresh")
	press(t, tab, `#file-list li[data-path="full"] .remove`)
	harness.WaitFor[bool](tab, `document.querySelector('#confirm-dialog').open`, useBound)
	click(t, tab, "#confirm-ok")
	if rule := harness.WaitFor[string](tab, `!document.querySelector('#notice').hidden && (document.querySelector('#notice code.rule') || {}).textContent`, useBound); rule != "folder-not-empty" {
		t.Fatalf("deleting a folder that holds a file was refused %q", rule)
	}
	holds(t, tab, "full/inside.txt", "keep")

	// An MCP client's request is announced once as its own, not as the assistant's.
	s, _ := connectMCP(t, relay, "inspector")
	answer := make(chan map[string]any, 1)
	go func() {
		m, _ := mcpCall(t, s, "delete_file", map[string]string{"name": "one.txt"})
		answer <- m
	}()
	pendingApproval(t, tab)
	announced := harness.Eval[string](tab, `document.querySelector('#approvals li.approval [role="alert"]').textContent`)
	if strings.Count(announced, "asks") != 1 || !strings.HasPrefix(announced, `MCP client "inspector" asks: `) || !strings.Contains(announced, "(1 byte)?") {
		t.Fatalf("the live region reads %q", announced)
	}
	clickApproval(t, tab, "deny")
	if m := <-answer; m["refused"] != "approval-denied" {
		t.Fatalf("the denied delete answered %v", m)
	}

	// The browser refusing its folder picker is said in words.
	harness.Eval[bool](tab, `(() => {
		window.showDirectoryPicker = () => Promise.reject(new DOMException("Failed to execute 'showDirectoryPicker' on 'Window': Must be handling a user gesture to show a file picker.", 'SecurityError'));
		const select = document.querySelector('#root-kind');
		select.value = 'handle';
		select.dispatchEvent(new Event('change'));
		return true;
	})()`)
	notice := harness.WaitFor[string](tab, `!document.querySelector('#notice').hidden && document.querySelector('#notice').textContent.includes('picker') && document.querySelector('#notice').textContent`, useBound)
	if strings.Contains(notice, "Failed to execute") || strings.Contains(notice, "showDirectoryPicker") {
		t.Fatalf("the picker's refusal reads %q", notice)
	}
	if kind := harness.Eval[string](tab, `document.querySelector('#root-kind').value`); kind != "opfs" {
		t.Fatalf("after the refused picker the workspace choice reads %q", kind)
	}
}
