package opfs

import (
	"slices"
	"sync"

	"github.com/hack-pad/safejs"
)

// handlePool keeps up to max sync access handles open, by path, closing the least recently used
// one past that. A read takes a handle and uses it without yielding (sync handle calls are
// synchronous), so no other goroutine can close a handle while it is read.
type handlePool struct {
	max int

	mu    sync.Mutex
	open  map[string]safejs.Value
	order []string // least recently used first
}

func newHandlePool(max int) *handlePool {
	return &handlePool{max: max, open: map[string]safejs.Value{}}
}

// get returns the open handle of name, opening it with opener when there is none.
func (p *handlePool) get(name string, opener func() (safejs.Value, error)) (safejs.Value, error) {
	p.mu.Lock()
	if h, ok := p.open[name]; ok {
		p.touch(name)
		p.mu.Unlock()
		return h, nil
	}
	p.mu.Unlock()

	h, err := opener()
	if err != nil {
		return safejs.Value{}, err
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
