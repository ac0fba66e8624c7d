//go:build !js

package engine

import (
	"archive/zip"
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot/fsroottest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// exportMemoryBound is what one files.export.next may allocate, all of it included (the chunk it
// hands out, the archive's pending bytes, the piece of the file read, the call's own values): a
// few chunks, however large the file being downloaded.
const exportMemoryBound = 4 * ExportChunkBytes

// rootAPI returns an engine whose workspace, once root.open is called, is root.
func rootAPI(t testing.TB, root fsroot.Root) *Engine {
	t.Helper()
	a := newEngine(time.Now(), func(ctx context.Context, kind string, handle any) (fsroot.Root, RootInfo, error) {
		return root, RootInfo{Kind: kind, Name: "Test"}, nil
	})
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	return a
}

// namedRoot is a root a test runs against, and its name for the subtest.
type namedRoot struct {
	name string
	root fsroot.Root
}

// memoryAndOSRoots are a fresh memory root and a fresh OS root: the export's tests run on both.
func memoryAndOSRoots(t testing.TB) []namedRoot {
	osRoot, _ := osTestRoot(t)
	return []namedRoot{{"memory", fsroot.NewMemory()}, {"os", osRoot}}
}

// osTestRoot is an OS root over a fresh temporary folder, and that folder.
func osTestRoot(t testing.TB) (*fsroot.OSRoot, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := fsroot.OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

// bigContent is n bytes that differ from chunk to chunk and within each, so a piece out of
// place or missing shows.
func bigContent(n int) []byte {
	// A pattern whose length (a prime) no chunk's is a multiple of.
	const period = 65521
	return bytes.Repeat(fsroottest.Pattern(period, 3), n/period+1)[:n]
}

// exportAll runs one download to its end, measuring what each files.export.next allocates, and
// returns the archive and the most one call allocated.
func exportAll(t *testing.T, a *Engine) (archive []byte, most uint64) {
	t.Helper()
	v, _ := mustDo(t, a, "files.export.begin", `{}`, nil)
	id := v["exportId"].(string)
	archive = make([]byte, 0, int(v["bytes"].(float64))+1<<20)
	var before, after runtime.MemStats
	for i := 0; ; i++ {
		if i > bigFileBytes/ExportChunkBytes+10 {
			t.Fatal("the download did not end")
		}
		runtime.ReadMemStats(&before)
		v, r, chunk := do(t, a, "files.export.next", `{"exportId":"`+id+`"}`, nil)
		runtime.ReadMemStats(&after)
		if r != nil {
			t.Fatalf("files.export.next refused: %v", r)
		}
		most = max(most, after.TotalAlloc-before.TotalAlloc)
		if len(chunk) > ExportChunkBytes {
			t.Fatalf("a chunk of %d bytes, over ExportChunkBytes", len(chunk))
		}
		archive = append(archive, chunk...)
		if v["done"] == true {
			return archive, most
		}
	}
}

// readZip reads archive back with archive/zip (which checks each entry's CRC-32 and sizes
// against its data descriptor) as name -> content.
func readZip(t *testing.T, archive []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("the download is no zip: %v", err)
	}
	got := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, f.UncompressedSize64)
		if _, err := io.ReadFull(rc, b); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if n, err := rc.Read(make([]byte, 1)); n != 0 || err != io.EOF { // the CRC-32 is checked at EOF
			t.Fatalf("%s: past its %d bytes: %d, %v", f.Name, len(b), n, err)
		}
		got[f.Name] = b
	}
	return got
}

// TestALargeFileDownloadsAChunkAtATime: a 64 MiB file (64 chunks; 16 MiB under the race
// detector, whose copies are slow) downloads with no call of
// files.export.next allocating more than a few chunks, from the memory root and the OS root, and
// the archive holds it byte for byte beside a small file. Before the export read files in pieces,
// the call that reached the file read all of it (and copied it twice more): 192 MiB.
//
// Not parallel: it measures the process's allocations.
func TestALargeFileDownloadsAChunkAtATime(t *testing.T) {
	big := bigContent(bigFileBytes)
	for _, c := range memoryAndOSRoots(t) {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if err := c.root.WriteFile(ctx, "big.bin", big); err != nil {
				t.Fatal(err)
			}
			if err := c.root.WriteFile(ctx, "small.txt", []byte("small")); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			archive, most := exportAll(t, rootAPI(t, c.root))
			t.Logf("the most one files.export.next allocated: %d KiB (a chunk is %d KiB, the file %d MiB)", most>>10, ExportChunkBytes>>10, bigFileBytes>>20)
			if most > exportMemoryBound {
				t.Errorf("one files.export.next allocated %d bytes; want at most %d (a few chunks, not the file's %d)", most, exportMemoryBound, bigFileBytes)
			}
			got := readZip(t, archive)
			if !bytes.Equal(got["big.bin"], big) || string(got["small.txt"]) != "small" || len(got) != 2 {
				t.Errorf("the archive holds %d files, big.bin of %d bytes (crc %08x, want %08x)", len(got), len(got["big.bin"]), crc32.ChecksumIEEE(got["big.bin"]), crc32.ChecksumIEEE(big))
			}
		})
	}
}

// nextChunk asks for the download's next chunk and returns the refusal, if any.
func nextChunk(t *testing.T, a *Engine, id string) (*refusal.Refusal, []byte) {
	t.Helper()
	_, r, chunk := do(t, a, "files.export.next", `{"exportId":"`+id+`"}`, nil)
	return r, chunk
}

// TestAFileChangedInPlaceMidDownloadEndsItWithFileChanged: another program truncating (or
// rewriting) an OS file in place while its entry is half sent ends the download with
// file-changed naming the file, never an archive with a short or mixed entry; the next download
// starts over and holds the file as it is now.
func TestAFileChangedInPlaceMidDownloadEndsItWithFileChanged(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"truncated", "rewritten"} {
		t.Run(change, func(t *testing.T) {
			root, dir := osTestRoot(t)
			ctx := context.Background()
			host := filepath.Join(dir, "grows.log")
			if err := root.WriteFile(ctx, "grows.log", bigContent(3*ExportChunkBytes)); err != nil {
				t.Fatal(err)
			}
			a := rootAPI(t, root)
			v, _ := mustDo(t, a, "files.export.begin", `{}`, nil)
			id := v["exportId"].(string)
			if r, chunk := nextChunk(t, a, id); r != nil || len(chunk) != ExportChunkBytes {
				t.Fatalf("the first chunk: %d bytes, %v", len(chunk), r)
			}
			switch change {
			case "truncated":
				if err := os.Truncate(host, ExportChunkBytes/2); err != nil {
					t.Fatal(err)
				}
			case "rewritten":
				f, err := os.OpenFile(host, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteAt([]byte("changed"), 2*ExportChunkBytes)
				f.Close()
				later := time.Now().Add(time.Hour)
				os.Chtimes(host, later, later) // the same length: the time is what tells
			}
			r, _ := nextChunk(t, a, id)
			if r == nil || r.Rule != refusal.FileChanged || !bytes.Contains([]byte(r.Why), []byte("grows.log")) {
				t.Fatalf("the chunk after the change: %v; want file-changed naming grows.log", r)
			}
			if r, _ := nextChunk(t, a, id); r == nil || r.Rule != refusal.NotFound {
				t.Errorf("next after the refusal: %v; want not-found (the download ended)", r)
			}
			now, err := os.ReadFile(host)
			if err != nil {
				t.Fatal(err)
			}
			archive, _ := exportAll(t, a)
			if got := readZip(t, archive); !bytes.Equal(got["grows.log"], now) {
				t.Errorf("the next download holds grows.log of %d bytes; want the %d it has now", len(got["grows.log"]), len(now))
			}
		})
	}
}

// TestAFileReplacedMidDownloadKeepsTheVersionBegun: a file replaced through the root (as a save
// or an upload does) while its entry is half sent is downloaded whole as the version begun,
// from the memory root and the OS root: the archive is true to one version, never a mix.
func TestAFileReplacedMidDownloadKeepsTheVersionBegun(t *testing.T) {
	t.Parallel()
	for _, c := range memoryAndOSRoots(t) {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			old := bigContent(3 * ExportChunkBytes)
			if err := c.root.WriteFile(ctx, "doc.bin", old); err != nil {
				t.Fatal(err)
			}
			a := rootAPI(t, c.root)
			v, _ := mustDo(t, a, "files.export.begin", `{}`, nil)
			id := v["exportId"].(string)
			var archive []byte
			for i := 0; ; i++ {
				if i > 10 {
					t.Fatal("the download did not end in 10 chunks")
				}
				r, chunk := nextChunk(t, a, id)
				if r != nil {
					t.Fatalf("chunk %d: %v", i, r)
				}
				archive = append(archive, chunk...)
				if i == 0 {
					if err := c.root.WriteFile(ctx, "doc.bin", []byte("short "+strconv.Itoa(i))); err != nil {
						t.Fatal(err)
					}
				}
				if len(chunk) < ExportChunkBytes {
					break
				}
			}
			if got := readZip(t, archive); !bytes.Equal(got["doc.bin"], old) {
				t.Errorf("doc.bin in the archive: %d bytes; want the %d of the version begun", len(got["doc.bin"]), len(old))
			}
		})
	}
}
