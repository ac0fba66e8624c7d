package engine

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ExportChunkBytes bounds the bytes one files.export.next hands the page (a file larger than
// that comes in several) and the piece of a file the worker reads for it: the page writes each
// chunk out before asking for the next, so neither side holds more than about a chunk of the
// archive, however large a file of the workspace is.
const ExportChunkBytes = 1 << 20

// pendingBytes is what the download's pending bytes may reach while a chunk is made: the chunk,
// and a local header (the longest name) or a data descriptor begun just before it was full. Only
// the archive's end (the central directory) may pass it.
const pendingBytes = ExportChunkBytes + localHeaderBytes + fsroot.MaxPathBytes + dataDescriptorBytes

// The workspace's download: every file of the open workspace, as a stored zip archive
// (zipstore.go) made as the page reads it, chunk by chunk. Hidden files (a dot name, the history
// under .voicebox/ among them) are the workspace's own and stay out, as every tool leaves them.
//
// Each file is read in pieces of one version of it (fsroot.OpenRange), its entry's size being
// that version's. A file removed (or grown past what the archive holds) before its turn is left
// out; a file whose version is gone while its entry is half written (the browser's snapshot of a
// replaced file, an OS file written in place) ends the download with file-changed: the bytes
// already sent cannot be taken back, and ending the entry short or with another version's bytes
// would save an archive that lies about the file. The page then discards what it wrote.

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
	pending []byte // archive bytes made and not yet handed out; reused from chunk to chunk
	ended   bool

	cur     fsroot.FileReader // the file whose entry is being written; nil between files
	curName string
	curOff  int64 // the bytes of cur written so far
}

// drop ends the download in progress (the caller holds mu): its reader is closed and its id no
// longer names it.
func (x *exportState) drop() {
	if x.cur != nil {
		x.cur.Close()
		x.cur = nil
	}
	x.id, x.pending = "", nil
}

func (a *Engine) exportBegin(ctx context.Context, req request) (result, *refusal.Refusal) {
	return onRoot(a, req, func(root fsroot.Root, _ *workspace, _ noParams) (result, *refusal.Refusal) {
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
				if !z.fits(p, e.Size) {
					return refusal.New(refusal.FileTooLarge, "the workspace is over what one zip holds (%d files, 4 GiB); download its folders' files one by one", MaxZipEntries)
				}
				z.reserve(p, e.Size)
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
		x.drop()
		x.seq++
		x.id, x.root, x.files, x.next = "export-"+strconv.Itoa(x.seq), root, files, 0
		x.zip, x.pending, x.ended = storedZip{}, nil, false
		return result{Value: map[string]any{"exportId": x.id, "files": len(files), "bytes": total}}, nil
	})
}

func (a *Engine) exportNext(ctx context.Context, req request) (result, *refusal.Refusal) {
	var p exportNextParams
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
		x.drop()
		return result{}, refusal.New(refusal.RootUnavailable, "the workspace changed during the download; start it again")
	}
	for len(x.pending) < ExportChunkBytes && !x.ended {
		if x.cur == nil {
			if x.next == len(x.files) {
				x.pending = append(x.pending, x.zip.End()...)
				x.ended = true
				break
			}
			f := x.files[x.next]
			x.next++
			rd, err := fsroot.OpenRange(ctx, x.root, f.Name)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsroot.ErrIsDir) {
				continue // gone since the list was made: left out
			}
			if err != nil {
				x.drop()
				return result{}, fileRefusal(err)
			}
			if !x.zip.fits(f.Name, rd.Size()) {
				rd.Close() // grown past the bound since the list was made: left out
				continue
			}
			if x.pending == nil {
				// Room for a chunk and what may pass it (a local header after the last piece
				// of a chunk, or a data descriptor), so pending is made once per download.
				x.pending = make([]byte, 0, pendingBytes)
			}
			x.pending = append(x.pending, x.zip.begin(f.Name, f.ModTime)...)
			x.cur, x.curName, x.curOff = rd, f.Name, 0
		}
		if r := x.readPiece(ctx); r != nil {
			x.drop()
			return result{}, r
		}
	}
	n := min(len(x.pending), ExportChunkBytes)
	chunk := append([]byte(nil), x.pending[:n]...)
	x.pending = x.pending[:copy(x.pending, x.pending[n:])]
	done := x.ended && len(x.pending) == 0
	if done {
		x.drop()
	}
	return result{Value: map[string]any{"done": done}, Bytes: chunk}, nil
}

// readPiece appends to pending the next piece of the file being written, as much as keeps
// pending within ExportChunkBytes, and the entry's data descriptor once the file is whole (the
// caller holds mu).
func (x *exportState) readPiece(ctx context.Context) *refusal.Refusal {
	want := int(min(int64(ExportChunkBytes-len(x.pending)), x.cur.Size()-x.curOff))
	if want > 0 {
		at := len(x.pending)
		x.pending = slices.Grow(x.pending, want)[:at+want]
		n, err := x.cur.ReadAt(ctx, x.pending[at:], x.curOff)
		if errors.Is(err, fsroot.ErrChanged) {
			return refusal.New(refusal.FileChanged, "%q changed while it was being downloaded, so the download stopped rather than save an archive with a mix of two versions of it; download again", x.curName)
		}
		if err != nil {
			return fileRefusal(err)
		}
		x.pending = x.pending[:at+n]
		x.zip.write(x.pending[at:])
		x.curOff += int64(n)
	}
	if x.curOff == x.cur.Size() {
		x.pending = append(x.pending, x.zip.finish()...)
		x.cur.Close()
		x.cur = nil
	}
	return nil
}
