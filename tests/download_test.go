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
