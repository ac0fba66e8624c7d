//go:build !js

package chaos

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// replacedDownloads is how many downloads run while a file of theirs is replaced over and over.
const replacedDownloads = 6

// TestDownloadsDuringReplacesNeverLie: the page downloads its workspace again and again while
// uploads replace its one large file (several chunks) with versions of other lengths. Every
// download ends, either whole, its zip readable and the file in it one version exactly (every
// byte that version's, its length too), or refused file-changed naming the file; none gives a
// zip mixing versions or cutting one short. With the replaces over, the next download is whole
// and holds the last version.
func TestDownloadsDuringReplacesNeverLie(t *testing.T) {
	relay := harness.StartRelay(t)
	tab := openPage(t, relay)
	type outcome struct {
		Refused string `json:"refused"`
		Why     string `json:"why"`
		Zip     string `json:"zip"` // base64
	}
	outs := harness.Eval[[]outcome](tab, strings.ReplaceAll(`(async () => {
		// Version v of big.bin: its length tells the versions apart too, every byte is v.
		const size = (v) => v % 2 ? (3 << 19) + v : (5 << 19) + v;
		const put = async (v) => {
			const up = await voicebox.must('files.upload.begin', {path: 'big.bin'});
			const bytes = new Uint8Array(size(v)).fill(v);
			for (let at = 0; at < bytes.length; at += 1 << 20) {
				await voicebox.must('files.upload.chunk', {uploadId: up.uploadId, bytes: bytes.slice(at, at + (1 << 20))});
			}
			await voicebox.must('files.upload.commit', {uploadId: up.uploadId});
		};
		const b64 = (parts) => {
			let s = '';
			for (const p of parts) for (let i = 0; i < p.length; i += 8192) s += String.fromCharCode.apply(null, p.subarray(i, i + 8192));
			return btoa(s);
		};
		const download = async () => {
			const begun = await voicebox.must('files.export.begin', undefined);
			const parts = [];
			for (;;) {
				const a = await voicebox.call('files.export.next', {exportId: begun.exportId});
				if (!a.ok) return {refused: a.refused, why: a.why};
				parts.push(a.value.bytes);
				if (a.value.done) return {zip: b64(parts)};
			}
		};
		await put(1);
		let writing = true;
		const writer = (async () => { for (let v = 2; writing && v < 200; v++) await put(v); })();
		const outs = [];
		for (let i = 0; i < DOWNLOADS; i++) outs.push(await download());
		writing = false;
		await writer;
		outs.push(await download());
		return outs;
	})()`, "DOWNLOADS", strconv.Itoa(replacedDownloads)))
	if len(outs) != replacedDownloads+1 {
		t.Fatalf("%d downloads ended; want %d", len(outs), replacedDownloads+1)
	}
	var summary []string
	defer func() { t.Logf("the downloads: %s", strings.Join(summary, ", ")) }()
	for i, o := range outs {
		if o.Refused != "" {
			summary = append(summary, o.Refused)
			if o.Refused != "file-changed" || !strings.Contains(o.Why, "big.bin") || i == replacedDownloads {
				t.Errorf("download %d was refused %s (%s); want file-changed naming big.bin, and the last one whole", i, o.Refused, o.Why)
			}
			continue
		}
		archive, err := base64.StdEncoding.DecodeString(o.Zip)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
		if err != nil || len(zr.File) != 1 || zr.File[0].Name != "big.bin" {
			t.Fatalf("download %d is no zip of big.bin (%d bytes): %v", i, len(archive), err)
		}
		rc, err := zr.File[0].Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC-32 after the data
		if err != nil {
			t.Fatalf("download %d: %v", i, err)
		}
		if len(b) == 0 {
			t.Fatalf("download %d holds an empty big.bin", i)
		}
		v := int(b[0])
		summary = append(summary, "version "+strconv.Itoa(v))
		want := 5<<19 + v
		if v%2 == 1 {
			want = 3<<19 + v
		}
		if len(b) != want || bytes.Count(b, []byte{byte(v)}) != want {
			t.Errorf("download %d holds big.bin of %d bytes, not all of them %d; want version %d whole, %d bytes", i, len(b), v, v, want)
		}
	}
}
