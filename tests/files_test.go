//go:build !js

package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// listed returns the names the file list shows.
func listed(tab *harness.Tab) []string {
	return harness.Eval[[]string](tab, `[...document.querySelectorAll('#file-list li[data-path]')].map(li => li.dataset.path)`)
}

func TestFileBrowserCreatesAFileThatSurvivesReload(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	if got := harness.Eval[string](tab, `document.querySelector('#root-kind').value`); got != "opfs" {
		t.Fatalf("the default root is %q, want browser storage", got)
	}

	// New file through the dialog, type into the editor, save.
	harness.Eval[bool](tab, `(async () => {
		document.querySelector('#new-file').click();
		document.querySelector('#name-input').value = 'notes.txt';
		document.querySelector('#name-ok').click();
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#viewer-title').textContent === 'notes.txt' && !document.querySelector('#editor').disabled`, 10*time.Second)
	harness.Eval[bool](tab, `(() => {
		const ed = document.querySelector('#editor');
		ed.value = 'remember the milk';
		ed.dispatchEvent(new Event('input'));
		document.querySelector('#save').click();
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#save').disabled`, 10*time.Second)
	tab.Screenshot("file-browser-saved")

	tab.Navigate(relay.URL)
	openWorkspace(t, tab, relay.URL)
	if got := listed(tab); len(got) != 1 || got[0] != "notes.txt" {
		t.Fatalf("after reload the list shows %v, want [notes.txt]", got)
	}
	harness.Eval[bool](tab, `(document.querySelector('#file-list li[data-path="notes.txt"] .open').click(), true)`)
	text := harness.WaitFor[string](tab, `document.querySelector('#viewer-title').textContent === 'notes.txt' && document.querySelector('#editor').value`, 10*time.Second)
	if text != "remember the milk" {
		t.Fatalf("the file reads %q after reload", text)
	}

	// Delete it through the confirmation.
	harness.Eval[bool](tab, `(document.querySelector('#delete').click(), document.querySelector('#confirm-ok').click(), true)`)
	harness.WaitFor[bool](tab, `document.querySelector('#file-list li.empty') !== null`, 10*time.Second)
}

func TestFileBrowserUploadsALargeFileWithProgress(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)

	const size = 20 << 20
	// Drop a 20 MiB file on the file panel, as a person dragging it from their desktop would,
	// and record every progress value the upload shows.
	harness.Eval[bool](tab, fmt.Sprintf(`(() => {
		window.progressSeen = [];
		const obs = new MutationObserver(() => {
			const bar = document.querySelector('#uploads progress');
			if (bar) window.progressSeen.push(bar.value);
		});
		obs.observe(document.querySelector('#uploads'), {subtree: true, childList: true, attributes: true, characterData: true});
		const bytes = new Uint8Array(%d);
		for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i / 4096 & 255;
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], 'big.bin'));
		const panel = document.querySelector('#files');
		panel.dispatchEvent(new DragEvent('dragover', {dataTransfer: dt, bubbles: true, cancelable: true}));
		panel.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true;
	})()`, size))
	harness.WaitFor[bool](tab, `document.querySelector('#uploads li[data-state="done"]') !== null`, 60*time.Second)
	tab.Screenshot("file-browser-uploaded")
	progress := harness.Eval[[]float64](tab, `window.progressSeen`)
	distinct := map[float64]bool{}
	for _, p := range progress {
		if p > 0 && p < size {
			distinct[p] = true
		}
	}
	if len(distinct) < 5 {
		t.Fatalf("the upload showed %d intermediate progress values, want at least 5: %v", len(distinct), progress)
	}

	type listing struct {
		OK    bool `json:"ok"`
		Value struct {
			Entries []struct {
				Name string `json:"name"`
				Size int64  `json:"size"`
			} `json:"entries"`
		} `json:"value"`
	}
	got := harness.Eval[listing](tab, `voicebox.call('files.list', {dir: ''})`)
	if !got.OK || len(got.Value.Entries) != 1 || got.Value.Entries[0].Name != "big.bin" || got.Value.Entries[0].Size != size {
		t.Fatalf("after the upload the root lists %+v, want big.bin of %d bytes", got, size)
	}
	// The content arrived whole: check the marker bytes through a download.
	ok := harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.download', {path: 'big.bin'}).then(a => {
		const b = a.value.bytes;
		if (b.length !== %d) return false;
		for (let i = 0; i < b.length; i += 4096) if (b[i] !== (i / 4096 & 255)) return false;
		return true;
	})`, size))
	if !ok {
		t.Fatal("the downloaded bytes differ from the uploaded ones")
	}
}

func TestFileBrowserRefusesPathsOutsideTheRoot(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	type answer struct {
		OK      bool   `json:"ok"`
		Refused string `json:"refused"`
		Why     string `json:"why"`
	}
	for path, rule := range map[string]string{
		"../../evil.sh":        "outside-root",
		"assets/../../evil.sh": "outside-root",
		"/etc/passwd":          "outside-root",
		".host-token":          "dotfile-refused",
	} {
		got := harness.Eval[answer](tab, fmt.Sprintf(`voicebox.call('files.write', {path: %q, content: 'x'})`, path))
		if got.OK || got.Refused != rule || got.Why == "" {
			t.Errorf("write %q answered %+v, want %s", path, got, rule)
		}
	}
}

// TestAChosenFolderIsKeptAcrossReloads stands in for the folder picker (which needs a person):
// it stores a directory handle the way choosing a folder does (IndexedDB, plus the choice in
// localStorage), reloads, and expects the page to reopen that folder as its workspace.
func TestAChosenFolderIsKeptAcrossReloads(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	harness.Eval[bool](tab, `(async () => {
		const top = await navigator.storage.getDirectory();
		const picked = await top.getDirectoryHandle('picked-folder', {create: true});
		const f = await (await picked.getFileHandle('inside.txt', {create: true})).createWritable();
		await f.write('in the picked folder'); await f.close();
		const db = await new Promise((res, rej) => { const r = indexedDB.open('voicebox', 1); r.onupgradeneeded = () => r.result.createObjectStore('handles'); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
		await new Promise((res, rej) => { const tx = db.transaction('handles', 'readwrite'); tx.objectStore('handles').put(picked, 'root'); tx.oncomplete = res; tx.onerror = () => rej(tx.error); });
		db.close();
		localStorage.setItem('voicebox.root', 'handle');
		return true;
	})()`)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#root-kind').value === 'handle' &&
		document.querySelector('#status').textContent.includes('picked-folder') &&
		document.querySelector('#file-list li[data-path="inside.txt"]') !== null`, readyBound)
	type info struct {
		OK    bool `json:"ok"`
		Value struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"value"`
	}
	if got := harness.Eval[info](tab, `voicebox.call('root.info')`); !got.OK || got.Value.Kind != "handle" || got.Value.Name != "picked-folder" {
		t.Fatalf("root.info = %+v", got)
	}
	// Switching back to browser storage is one choice away, and is kept too.
	harness.Eval[bool](tab, `(() => { const s = document.querySelector('#root-kind'); s.value = 'opfs'; s.dispatchEvent(new Event('change')); return true; })()`)
	harness.WaitFor[bool](tab, `document.querySelector('#status').textContent.includes('Browser storage')`, readyBound)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#status').textContent.includes('Browser storage')`, readyBound)
}
