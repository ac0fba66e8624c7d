package engine

import (
	"context"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ExportChunkBytes bounds the bytes one files.export.next hands the page (a file larger than
// that comes in several); the page writes each chunk out before asking for the next, so neither
// side holds more than a file and a chunk of the archive.
const ExportChunkBytes = 1 << 20

// The workspace's download: every file of the open workspace, as a stored zip archive
// (zipstore.go) made as the page reads it, chunk by chunk. Hidden files (a dot name, the history
// under .voicebox/ among them) are the workspace's own and stay out, as every tool leaves them.

// exportMethodTable is the download's methods (see methodTable).
func exportMethodTable() []methodSpec {
	return []methodSpec{
		{"files.export.begin", "undefined", "{exportId: string, files: number, bytes: number}",
			"starts a download of the whole workspace as a zip (stored): the files it will hold; an earlier unfinished one is dropped", (*Engine).exportBegin},
		{"files.export.next", "{exportId: string}", "{done: boolean, bytes: Uint8Array<ArrayBuffer>}",
			"the archive's next chunk (at most ExportChunkBytes), in value.bytes; done once the archive is whole", (*Engine).exportNext},
	}
}

// exportState is the download in progress: one per page.
type exportState struct {
	mu      sync.Mutex
	seq     int
	id      string
	root    fsroot.Root
	files   []fsroot.Entry // Name holds the path
	next    int
	zip     storedZip
	pending []byte
	ended   bool
}

func (a *Engine) exportBegin(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(root fsroot.Root, _ *workspace, _ struct{}) (result, *refusal.Refusal) {
		var files []fsroot.Entry
		var total int64
		var z storedZip
		var walk func(dir string) *refusal.Refusal
		walk = func(dir string) *refusal.Refusal {
			entries, err := root.ReadDir(ctx, dir)
			if err != nil {
				return fileRefusal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name, ".") {
					continue
				}
				p := path.Join(dir, e.Name)
				if e.Dir {
					if r := walk(p); r != nil {
						return r
					}
					continue
				}
				if !z.fits(p, int(e.Size)) {
					return refusal.New(refusal.FileTooLarge, "the workspace is over what one zip holds (%d files, 4 GiB); download its folders' files one by one", MaxZipEntries)
				}
				z.File(p, nil, e.ModTime) // counts the entry and its headers; the bytes are added below
				z.offset += uint64(e.Size)
				total += e.Size
				e.Name = p
				files = append(files, e)
			}
			return nil
		}
		if r := walk(""); r != nil {
			return result{}, r
		}
		x := &a.export
		x.mu.Lock()
		defer x.mu.Unlock()
		x.seq++
		x.id, x.root, x.files, x.next = "export-"+strconv.Itoa(x.seq), root, files, 0
		x.zip, x.pending, x.ended = storedZip{}, nil, false
		return result{Value: map[string]any{"exportId": x.id, "files": len(files), "bytes": total}}, nil
	})
}

func (a *Engine) exportNext(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p struct {
		ExportID string `json:"exportId"`
	}
	if r := decodeParams(req, &p); r != nil {
		return result{}, r
	}
	a.ws.mu.Lock()
	root := a.ws.root
	a.ws.mu.Unlock()
	x := &a.export
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.id == "" || x.id != p.ExportID || x.ended && len(x.pending) == 0 {
		return result{}, refusal.New(refusal.NotFound, "no download %q is in progress; start it again", p.ExportID)
	}
	if x.root != root {
		x.id = ""
		return result{}, refusal.New(refusal.RootUnavailable, "the workspace changed during the download; start it again")
	}
	for len(x.pending) < ExportChunkBytes && !x.ended {
		if x.next == len(x.files) {
			x.pending = append(x.pending, x.zip.End()...)
			x.ended = true
			break
		}
		f := x.files[x.next]
		x.next++
		data, err := x.root.ReadFile(ctx, f.Name)
		if err != nil || !x.zip.fits(f.Name, len(data)) {
			// Gone or grown past the bound since the list was made: left out.
			continue
		}
		x.pending = append(x.pending, x.zip.File(f.Name, data, f.ModTime)...)
	}
	n := min(len(x.pending), ExportChunkBytes)
	chunk := append([]byte(nil), x.pending[:n]...)
	x.pending = x.pending[n:]
	done := x.ended && len(x.pending) == 0
	if done {
		x.id = ""
	}
	return result{Value: map[string]any{"done": done}, Bytes: chunk}, nil
}
