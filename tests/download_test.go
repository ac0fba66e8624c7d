//go:build !js

package tests

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestDownloadAllStreamsAFileOfManyChunks: a file of several of the worker's chunks, dropped in
// the page (so it lies in OPFS, read by the worker's pool of sync handles), comes out of
// "Download all" whole: the worker reads it a piece at a time into an entry whose CRC-32 and
// sizes follow the data, and Go's archive/zip reads it back, checking them.
func TestDownloadAllStreamsAFileOfManyChunks(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	const size = 6<<20 + 123
	// Every byte a function of its place, over a period (251) no chunk is a multiple of.
	harness.Eval[bool](tab, fmt.Sprintf(`(() => {
		const bytes = new Uint8Array(%d);
		for (let i = 0; i < bytes.length; i++) bytes[i] = i %% 251;
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], 'big.bin'));
		const panel = document.querySelector('#files');
		panel.dispatchEvent(new DragEvent('dragover', {dataTransfer: dt, bubbles: true, cancelable: true}));
		panel.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true;
	})()`, size))
	harness.WaitFor[bool](tab, `document.querySelector('#uploads li[data-state="done"]') !== null`, 60*time.Second)
	put(t, tab, "notes.txt", "small")
	harness.WaitFor[bool](tab, `!document.querySelector('#download-all').disabled`, useBound)
	harness.Eval[bool](tab, `(() => {
		window.showSaveFilePicker = undefined;
		window.caught = null;
		const make = URL.createObjectURL;
		URL.createObjectURL = (blob) => { window.caughtBlob = blob; return make(blob); };
		HTMLAnchorElement.prototype.click = function () { window.caught = {name: this.download}; };
		return true;
	})()`)
	press(t, tab, "#download-all")
	harness.WaitFor[string](tab, `window.caught && window.caught.name`, 60*time.Second)
	b64 := harness.Eval[string](tab, `window.caughtBlob.arrayBuffer().then(buf => {
		const b = new Uint8Array(buf);
		let s = '';
		for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode.apply(null, b.subarray(i, i + 8192));
		return btoa(s);
	})`)
	archive, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("Download all gave no zip (%d bytes): %v", len(archive), err)
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i % 251)
	}
	got := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC-32 of the data descriptor
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if f.Flags&0x8 == 0 {
			t.Errorf("%s has no data descriptor (flags %#x)", f.Name, f.Flags)
		}
		got[f.Name] = b
	}
	if !bytes.Equal(got["big.bin"], want) || string(got["notes.txt"]) != "small" || len(got) != 2 {
		t.Errorf("the zip holds %d files, big.bin of %d bytes (equal: %v), notes.txt %q; want %d bytes and small",
			len(got), len(got["big.bin"]), bytes.Equal(got["big.bin"], want), got["notes.txt"], size)
	}
}

// TestDownloadAllEndsWithFileChangedWhenAFileChangesMidEntry: in the page's worker, a file
// replaced (here by a save) while its entry is half sent ends the download with file-changed
// naming it (the browser refuses the worker's stale snapshot of the file), the download is over,
// and the next one gives the file as it is now.
func TestDownloadAllEndsWithFileChangedWhenAFileChangesMidEntry(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := harness.NewTab(t)
	openWorkspace(t, tab, relay.URL)
	harness.Eval[bool](tab, `(() => {
		const dt = new DataTransfer();
		dt.items.add(new File([new Uint8Array(3 << 20).fill(7)], 'big.bin'));
		const panel = document.querySelector('#files');
		panel.dispatchEvent(new DragEvent('dragover', {dataTransfer: dt, bubbles: true, cancelable: true}));
		panel.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#uploads li[data-state="done"]') !== null`, 60*time.Second)
	type step struct {
		Refused string `json:"refused"`
		Why     string `json:"why"`
		Bytes   int    `json:"bytes"`
	}
	got := harness.Eval[[]step](tab, `(async () => {
		const steps = [];
		const note = (a) => steps.push(a.ok ? {bytes: a.value.bytes.length} : {refused: a.refused, why: a.why});
		const begun = await voicebox.must('files.export.begin', undefined);
		note(await voicebox.call('files.export.next', {exportId: begun.exportId}));
		await voicebox.must('files.write', {path: 'big.bin', content: 'now short'});
		note(await voicebox.call('files.export.next', {exportId: begun.exportId}));
		note(await voicebox.call('files.export.next', {exportId: begun.exportId}));
		return steps;
	})()`)
	if len(got) != 3 || got[0].Bytes != 1<<20 || got[1].Refused != "file-changed" || !bytes.Contains([]byte(got[1].Why), []byte("big.bin")) || got[2].Refused != "not-found" {
		t.Fatalf("first chunk, the chunk after the save, one more: %+v; want a chunk, file-changed naming big.bin, not-found", got)
	}
	n := harness.Eval[int](tab, `(async () => {
		const begun = await voicebox.must('files.export.begin', undefined);
		let n = 0;
		for (;;) {
			const next = await voicebox.must('files.export.next', {exportId: begun.exportId});
			n += next.bytes.length;
			if (next.done) return n;
		}
	})()`)
	// One entry of 9 bytes: its local header and name, the data, the descriptor, the central
	// header and name, the end.
	if want := 30 + 7 + 9 + 16 + 46 + 7 + 22; n != want {
		t.Errorf("the next download is %d bytes; want %d (big.bin as it is now)", n, want)
	}
}
