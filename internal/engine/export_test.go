package engine

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestTheWholeWorkspaceDownloadsAsAZip: files.export.begin then files.export.next until done
// hand over a zip that archive/zip reads back with every file of the workspace, folders
// included, hidden files not, each file's bytes whole (one larger than a chunk too).
func TestTheWholeWorkspaceDownloadsAsAZip(t *testing.T) {
	t.Parallel()
	a, mem := memoryAPI(t)
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), ExportChunkBytes/16+100)
	want := map[string][]byte{"notes.md": []byte("# Notes\n"), "docs/plan.txt": []byte("plan"), "docs/deep/é.txt": []byte("accent"), "big.bin": big, "empty.txt": nil}
	for name, data := range want {
		if err := mem.MkdirAll(ctx, "docs/deep"); err != nil {
			t.Fatal(err)
		}
		if err := mem.WriteFile(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
	mem.MkdirAll(ctx, ".voicebox")
	mem.WriteFile(ctx, ".voicebox/secret", []byte("history"))
	v, _ := mustDo(t, a, "files.export.begin", `{}`, nil)
	if v["files"] != float64(len(want)) {
		t.Fatalf("begin: %v, want %d files", v, len(want))
	}
	id := v["exportId"].(string)
	var archive []byte
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("the download did not end in 10 chunks")
		}
		v, chunk := mustDo(t, a, "files.export.next", `{"exportId":"`+id+`"}`, nil)
		if len(chunk) > ExportChunkBytes {
			t.Fatalf("a chunk of %d bytes, over ExportChunkBytes", len(chunk))
		}
		archive = append(archive, chunk...)
		if v["done"] == true {
			break
		}
	}
	r, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("the download is no zip: %v", err)
	}
	got := map[string][]byte{}
	for _, f := range r.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC too
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		got[f.Name] = b
		if strings.HasPrefix(f.Name, ".") {
			t.Errorf("the hidden %s is in the download", f.Name)
		}
	}
	for name, data := range want {
		if !bytes.Equal(got[name], data) {
			t.Errorf("%s: %d bytes in the zip, want %d", name, len(got[name]), len(data))
		}
	}
	if len(got) != len(want) {
		t.Errorf("the zip holds %d files, want %d", len(got), len(want))
	}
	if _, r, _ := do(t, a, "files.export.next", `{"exportId":"`+id+`"}`, nil); r == nil || r.Rule != "not-found" {
		t.Errorf("next after the end: %v, want not-found", r)
	}
}
