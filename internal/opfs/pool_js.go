package opfs

import (
	"slices"
	"sync"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// handlePool keeps up to max sync access handles open, by path, closing the least recently used
// one past that. A read takes a handle and uses it without yielding (sync handle calls are
// synchronous), so no other goroutine can close a handle while it is read.
type handlePool struct {
	max    int
	base   string  // the path of the pool's root from the origin's storage root ("" is that root)
	lender *lender // lends the handles to the origin's other contexts; nil in tests of the pool

	mu    sync.Mutex
	open  map[string]jsutil.Value
	order []string // least recently used first

	readMu  sync.Mutex
	scratch jsutil.Value // a Uint8Array of readScratchBytes, once a read made it
	at0     jsutil.Value // the read options {at: 0}
	ready   bool         // scratch and at0 are made, or io and kept

	// io, when the worker has engine-io.js (hasIO), reads a file into kept, Go's own buffer of
	// readScratchBytes, in one call across the wasm boundary (instead of the read into scratch
	// and the copy out of it).
	io    jsutil.IO
	hasIO bool
	kept  *jsutil.Kept
}

// readScratchBytes is the size of the buffer the pool reads files of up to that size into, kept
// from read to read: a read then makes no JS object (each one costs Go's js bridge a finalizer
// and the browser a garbage collection later). A tool's read-file returns at most 64 KiB.
const readScratchBytes = 64 << 10

func newHandlePool(max int) *handlePool {
	return &handlePool{max: max, open: map[string]jsutil.Value{}}
}

// path is the path of key from the origin's storage root, as the origin's contexts ask for it.
func (p *handlePool) path(key string) string {
	if p.base == "" {
		return key
	}
	return p.base + "/" + key
}

// get returns the open handle of name, opening it with opener when there is none.
func (p *handlePool) get(name string, opener func() (jsutil.Value, error)) (jsutil.Value, error) {
	p.mu.Lock()
	if h, ok := p.open[name]; ok {
		p.touch(name)
		p.mu.Unlock()
		return h, nil
	}
	p.mu.Unlock()

	h, err := opener()
	if err != nil {
		return jsutil.Value{}, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if existing, ok := p.open[name]; ok {
		// Opened by another goroutine meanwhile (a second handle cannot exist, so ours failed
		// or this is a stale race): keep the pooled one.
		h.Call("close")
		p.touch(name)
		return existing, nil
	}
	p.open[name] = h
	p.order = append(p.order, name)
	for len(p.order) > p.max {
		oldest := p.order[0]
		p.order = p.order[1:]
		if old, ok := p.open[oldest]; ok {
			old.Call("close")
			delete(p.open, oldest)
		}
	}
	return h, nil
}

// readPrefix returns the first limit bytes of the file open as h (all of it when limit < 0) and
// the file's size. It calls h synchronously and never yields, like every use of a pooled handle.
// It reads into the kept scratch buffer first: a file shorter than the buffer, the common case,
// then needs no getSize (one call across the wasm boundary fewer per read; the size is what the
// read returned).
func (p *handlePool) readPrefix(h jsutil.Value, limit int) ([]byte, int64, error) {
	p.readMu.Lock()
	defer p.readMu.Unlock()
	if !p.ready {
		if p.io, p.hasIO = jsutil.EngineIO(); p.hasIO {
			p.kept, p.ready = jsutil.NewKept(readScratchBytes), true
		} else {
			scratch, err := newUint8Array(readScratchBytes)
			if err != nil {
				return nil, 0, err
			}
			p.scratch, p.at0, p.ready = scratch, jsutil.Object(map[string]any{"at": 0}), true
		}
	}
	if p.hasIO {
		return p.readKept(h, limit)
	}
	m, err := readInto(h, p.scratch, p.at0)
	if err != nil {
		return nil, 0, err
	}
	size := int64(m)
	if m == readScratchBytes {
		if size, err = handleSize(h); err != nil {
			return nil, 0, err
		}
	}
	n := int(size)
	if limit >= 0 && limit < n {
		n = limit
	}
	buf := p.scratch
	if n > m {
		// Longer than the buffer: read again, into one of the length wanted.
		if buf, err = newUint8Array(n); err != nil {
			return nil, 0, err
		}
		if m, err = readInto(h, buf, p.at0); err != nil {
			return nil, 0, err
		}
	}
	b := make([]byte, min(m, n))
	if _, err := jsutil.CopyBytesToGo(b, buf); err != nil {
		return nil, 0, err
	}
	return b, size, nil
}

// readKept is readPrefix through engine-io.js: the file is read into the kept Go buffer in one
// call; one that fills it is read again, whole (or its first limit bytes), into a Go buffer of
// that length.
func (p *handlePool) readKept(h jsutil.Value, limit int) ([]byte, int64, error) {
	m, err := p.io.Read(h, p.kept)
	if err != nil {
		return nil, 0, err
	}
	size := int64(m)
	if m == readScratchBytes {
		if size, err = handleSize(h); err != nil {
			return nil, 0, err
		}
	}
	n := int(size)
	if limit >= 0 && limit < n {
		n = limit
	}
	if n > m {
		long := jsutil.NewKept(n)
		if m, err = p.io.Read(h, long); err != nil {
			return nil, 0, err
		}
		return long.Bytes()[:min(m, n)], size, nil
	}
	return append([]byte(nil), p.kept.Bytes()[:n]...), size, nil
}

// readInto reads the file open as h from its start into buf, and returns how many bytes it read.
func readInto(h, buf, at0 jsutil.Value) (int, error) {
	got, err := h.Call("read", buf, at0)
	if err != nil {
		return 0, jsutil.Thrown(err)
	}
	return got.Int()
}

// handleSize is the size of the file open as h.
func handleSize(h jsutil.Value) (int64, error) {
	v, err := h.Call("getSize")
	if err != nil {
		return 0, jsutil.Thrown(err)
	}
	f, err := v.Float()
	return int64(f), err
}

// writeAtEnd writes data at the end of the file open as h, synchronously (no yield, like every
// use of a pooled handle), and fails unless all of it was written.
func (p *handlePool) writeAtEnd(h jsutil.Value, data []byte) error {
	size, err := handleSize(h)
	if err != nil {
		return err
	}
	chunk, err := jsutil.BytesToJS(data)
	if err != nil {
		return err
	}
	n, err := h.Call("write", chunk, jsutil.Object(map[string]any{"at": size}))
	if err != nil {
		return jsutil.Thrown(err)
	}
	if wrote, err := n.Int(); err != nil || wrote != len(data) {
		return textf.Errorf("opfs: the browser wrote %d of %d bytes", wrote, len(data))
	}
	return nil
}

func (p *handlePool) touch(name string) {
	if i := slices.Index(p.order, name); i >= 0 {
		p.order = append(append(p.order[:i:i], p.order[i+1:]...), name)
	}
}

// close closes the handle of name and of every file below it (name may be a directory).
func (p *handlePool) close(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.order = slices.DeleteFunc(p.order, func(k string) bool {
		if k != name && !(len(k) > len(name) && k[:len(name)] == name && k[len(name)] == '/') {
			return false
		}
		if h, ok := p.open[k]; ok {
			h.Call("close")
			delete(p.open, k)
		}
		return true
	})
}

func (p *handlePool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, h := range p.open {
		h.Call("close")
		delete(p.open, k)
	}
	p.order = nil
}
