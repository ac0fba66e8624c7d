package server

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"io/fs"
	"sync"
	"time"
)

// etags are the page's files' validators: each file's strong ETag, the SHA-256 of the bytes
// served under it (a precompressed copy has its own), computed on its first request and kept
// while the file keeps its size and modification time.
//
// A validator is what lets a browser keep a response: Cache-Control: no-cache has it ask again
// on every load, and with an ETag (or a Last-Modified) the answer is a 304 that keeps the
// response it holds. Chromium keeps V8's compiled code for voicebox.wasm beside that response,
// keyed by the response's time, so a fresh 200 of the same bytes throws the compiled code away
// and the worker compiles the module again. The relay's embedded page has no modification
// times (embed.FS), so without an ETag it had no validator at all.
type etags struct {
	mu   sync.Mutex
	tags map[string]etag // by the name served: one entry a file, whatever its edits
}

// etag is a file's tag as of its size and modification time.
type etag struct {
	size int64
	mod  time.Time
	tag  string
}

// of returns f's ETag (f as name and info describe it), reading f once if it is not known
// yet (or changed since: another size or time) and seeking it back to its start; "" when f
// cannot be read, which leaves the answer without a validator rather than without the file.
func (e *etags) of(name string, info fs.FileInfo, f io.ReadSeeker) string {
	size, mod := info.Size(), info.ModTime()
	e.mu.Lock()
	known, ok := e.tags[name]
	e.mu.Unlock()
	if ok && known.size == size && known.mod.Equal(mod) {
		return known.tag
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return ""
	}
	tag := `"` + base64.RawURLEncoding.EncodeToString(h.Sum(nil)) + `"`
	e.mu.Lock()
	if e.tags == nil {
		e.tags = map[string]etag{}
	}
	e.tags[name] = etag{size, mod, tag}
	e.mu.Unlock()
	return tag
}
