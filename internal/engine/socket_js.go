package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// socket is a thin wrapper over the browser's own WebSocket: it receives the relay's frames, text
// or binary (the page asks for calls as binary, FramesQuery; an older relay sends text), and sends
// its own as binary messages (Send). The page uses it instead of coder/websocket, whose
// GOOS=js build pulls in net/http and crypto/tls (megabytes of wasm and tens of milliseconds of
// start-up) for the same browser object underneath.
type socket struct {
	ws    jsutil.Value
	funcs []jsutil.Func

	mu     sync.Mutex
	queue  [][]byte
	signal chan struct{} // a receive waiting for the queue
	closed *closeInfo
	done   chan struct{}

	sendMu  sync.Mutex
	scratch jsutil.Value // sendScratchBytes, once a send made it

	// uint8Array is the Uint8Array constructor, and received a kept buffer a binary frame is
	// copied into first (onmessage only, one message at a time): a frame that fits crosses from
	// JavaScript in two calls (a view of its ArrayBuffer, the copy) and is then cut to its size.
	uint8Array jsutil.Value
	received   []byte

	// io, when the worker has engine-io.js (hasIO), moves the bytes instead: a frame is written
	// into inbox before Go's handler is called with its length, and an answer is sent from
	// where it lies in Go's memory, one call across each way.
	io    jsutil.IO
	hasIO bool
	inbox *jsutil.Kept
}

// receiveScratchBytes is the size of the buffer a binary frame is copied into on arrival: a call
// frame is far smaller; a larger frame (up to wire.MaxFrameBytes) is copied again at its size.
const receiveScratchBytes = 16 << 10

// dialSocket opens a WebSocket to url and waits until it is open or has failed.
func dialSocket(ctx context.Context, url string) (*socket, error) {
	ctor, err := jsutil.Global().Get("WebSocket")
	if err != nil || ctor.IsUndefined() {
		return nil, errors.New("this context has no WebSocket")
	}
	ws, err := ctor.New(url)
	if err != nil {
		return nil, jsutil.Thrown(err)
	}
	s := &socket{ws: ws, signal: make(chan struct{}, 1), done: make(chan struct{})}
	// Binary frames arrive as ArrayBuffers (the default, Blob, would take a promise to read).
	if err := ws.Set("binaryType", "arraybuffer"); err != nil {
		return nil, jsutil.Thrown(err)
	}
	if s.uint8Array, err = jsutil.Global().Get("Uint8Array"); err != nil {
		return nil, jsutil.Thrown(err)
	}
	opened := make(chan struct{})
	var openOnce sync.Once
	on := func(event string, fn func(args []jsutil.Value)) error {
		f, err := jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
			fn(args)
			return nil
		})
		if err != nil {
			return err
		}
		s.funcs = append(s.funcs, f)
		return ws.Set(event, f.Value())
	}
	errs := []error{
		on("onopen", func([]jsutil.Value) { openOnce.Do(func() { close(opened) }) }),
		s.listen(),
		on("onclose", func(args []jsutil.Value) {
			info := &closeInfo{Code: 1006}
			if code, err := args[0].Get("code"); err == nil {
				info.Code, _ = code.Int()
			}
			if reason, err := args[0].Get("reason"); err == nil {
				info.Reason, _ = reason.String()
			}
			s.mu.Lock()
			first := s.closed == nil
			if first {
				s.closed = info
			}
			s.mu.Unlock()
			if first {
				// The browser calls nothing of a closed socket's: its callbacks (this one
				// included, which syscall/js allows) and its inbox go now, not at the page's
				// end, so a page that reconnects all day keeps one socket's.
				s.release()
				close(s.done)
			}
			s.wake()
		}),
		on("onerror", func([]jsutil.Value) {}), // a close event always follows
	}
	if err := errors.Join(errs...); err != nil {
		s.release()
		return nil, err
	}
	select {
	case <-opened:
		return s, nil
	case <-s.done:
		s.release()
		return nil, textf.Errorf("connection failed (close %d %s)", s.closed.Code, s.closed.Reason)
	case <-ctx.Done():
		s.Close(1000, "gave up connecting")
		return nil, ctx.Err()
	}
}

// listen sets the socket's message handler: through engine-io.js when the worker has it,
// otherwise a Go function reading each message's data.
func (s *socket) listen() error {
	if s.io, s.hasIO = jsutil.EngineIO(); s.hasIO {
		s.inbox = jsutil.NewKept(receiveScratchBytes)
		f, err := s.io.Frames(s.ws, s.inbox, func(n int, data jsutil.Value) {
			if n >= 0 && n <= len(s.inbox.Bytes()) {
				s.enqueue(append([]byte(nil), s.inbox.Bytes()[:n]...))
			} else if frame, ok := s.frameOf(data); ok {
				s.enqueue(frame)
			}
		})
		if err != nil {
			return err
		}
		s.funcs = append(s.funcs, f)
		return nil
	}
	f, err := jsutil.FuncOf(func(_ jsutil.Value, args []jsutil.Value) any {
		data, err := args[0].Get("data")
		if err != nil {
			return nil
		}
		if frame, ok := s.frameOf(data); ok {
			s.enqueue(frame)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.funcs = append(s.funcs, f)
	return s.ws.Set("onmessage", f.Value())
}

// enqueue queues a received frame for Receive.
func (s *socket) enqueue(frame []byte) {
	s.mu.Lock()
	s.queue = append(s.queue, frame)
	s.mu.Unlock()
	s.wake()
}

func (s *socket) wake() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// frameOf returns the bytes of a message's data: a text frame's UTF-8, or a binary frame's bytes
// (an ArrayBuffer). Anything else is no frame. A binary frame is not checked here: the peer and
// the door read it as they read text, so a malformed one is refused as a malformed text frame is.
func (s *socket) frameOf(data jsutil.Value) ([]byte, bool) {
	if data.Type() == jsutil.TypeString {
		text, err := data.String()
		return []byte(text), err == nil
	}
	if data.Type() != jsutil.TypeObject {
		return nil, false
	}
	view, err := s.uint8Array.New(data) // throws for what is not an ArrayBuffer
	if err != nil {
		return nil, false
	}
	if s.received == nil {
		s.received = make([]byte, receiveScratchBytes)
	}
	n, err := jsutil.CopyBytesToGo(s.received, view)
	if err != nil {
		return nil, false
	}
	if n < len(s.received) {
		return append([]byte(nil), s.received[:n]...), true
	}
	if n, err = view.Length(); err != nil {
		return nil, false
	}
	frame := make([]byte, n)
	_, err = jsutil.CopyBytesToGo(frame, view)
	return frame, err == nil
}

// Receive returns the next frame, or errSocketClosed once the socket has closed and every frame
// that arrived before has been returned.
func (s *socket) Receive(ctx context.Context) ([]byte, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			frame := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return frame, nil
		}
		closed := s.closed != nil
		s.mu.Unlock()
		if closed {
			return nil, errSocketClosed
		}
		select {
		case <-s.signal:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Send sends frame, JSON, as a binary message: from where it lies in Go's memory through
// engine-io.js, one call across, or else through the kept scratch buffer (see binary). A socket
// the browser has begun to close (readyState CLOSING or CLOSED, before its close event reached
// us) takes nothing: the browser would drop the frame and log an error, so the sender is told
// the socket closed instead.
func (s *socket) Send(frame []byte) error {
	if s.Closed() != nil {
		return errSocketClosed
	}
	if s.hasIO {
		sent, err := s.io.Send(s.ws, frame)
		if err != nil {
			return jsutil.Thrown(err)
		}
		if !sent {
			return errSocketClosed
		}
		return nil
	}
	if !s.open() {
		return errSocketClosed
	}
	arr, err := s.binary(frame)
	if err != nil {
		return err
	}
	if _, err := s.ws.Call("send", arr); err != nil {
		return jsutil.Thrown(err)
	}
	return nil
}

// sendScratchBytes is the size of the buffer a frame up to that size is copied into on its way
// to the socket, kept from frame to frame (a call's answer: a tool's read returns at most 64 KiB).
const sendScratchBytes = 72 << 10

// binary returns b as a Uint8Array for a binary frame: a view of the kept scratch
// buffer when it fits, a new array otherwise. The browser copies a frame's bytes when it is sent,
// so the buffer is free again at once. Sent as binary, the frame crosses from Go as bytes: no
// decoding into a JavaScript string and encoding back into UTF-8 (the relay reads either kind of
// frame as the same bytes).
func (s *socket) binary(b []byte) (jsutil.Value, error) {
	if len(b) > sendScratchBytes {
		return jsutil.BytesToJS(b)
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.scratch.IsUndefined() {
		arr, err := jsutil.BytesToJS(make([]byte, sendScratchBytes))
		if err != nil {
			return jsutil.Value{}, err
		}
		s.scratch = arr
	}
	if _, err := jsutil.CopyBytesToJS(s.scratch, b); err != nil {
		return jsutil.Value{}, err
	}
	return s.scratch.Call("subarray", 0, len(b))
}

// wsOpen is a WebSocket's readyState while it is open.
const wsOpen = 1

// open reports whether the browser still holds the socket open (readyState OPEN).
func (s *socket) open() bool {
	v, err := s.ws.Get("readyState")
	if err != nil {
		return false
	}
	n, err := v.Int()
	return err == nil && n == wsOpen
}

// Closed returns how the socket closed, or nil while it is open.
func (s *socket) Closed() *closeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Done is closed when the socket has closed.
func (s *socket) Done() <-chan struct{} { return s.done }

// Close closes the socket with code and reason.
func (s *socket) Close(code int, reason string) {
	s.ws.Call("close", code, reason)
}

// release drops the JS callbacks once the socket is finished with.
func (s *socket) release() {
	// engine-io.js writes a frame into the inbox before it calls Go: it must stop first.
	s.ws.Set("onmessage", jsutil.Null())
	for _, f := range s.funcs {
		f.Release()
	}
	s.funcs = nil
}
