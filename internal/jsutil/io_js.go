package jsutil

import (
	"runtime"
	"unsafe"
)

// IO is public/engine-io.js's engineIO: the byte paths between the page's Go and the browser
// (a socket's frames in and out, a sync access handle's read) in one call across the wasm
// boundary each, reading and writing Go's memory in place. worker.js sets it as self.voiceboxIO
// before Go starts; a context without it (a test binary on the page's main thread) has none, and
// its callers take the generic way (Value's calls and the byte copies), with the same results.
type IO struct {
	// Its functions, taken once: each is called with Invoke, whose crossing carries no method
	// name for JavaScript to decode from Go's memory.
	frames, send, read Value
}

// EngineIO returns the context's IO, and whether it has one.
func EngineIO() (IO, bool) {
	v, err := Global().Get("voiceboxIO")
	if err != nil || v.Type() != TypeObject {
		return IO{}, false
	}
	var io IO
	for name, f := range map[string]*Value{"frames": &io.frames, "send": &io.send, "read": &io.read} {
		if *f, err = v.Get(name); err != nil || f.Type() != TypeFunction {
			return IO{}, false
		}
	}
	return io, true
}

// Kept is a Go buffer JavaScript writes into in place (IO.Frames, IO.Read): allocated once, its
// address given to JavaScript, and alive as long as the Kept is (Go's collector never moves a
// heap object). JavaScript writes it only while a call made through IO runs, or in the socket's
// message handler just before it calls Go's, so its user guards it as any buffer shared between
// goroutines.
type Kept struct {
	buf []byte
}

// NewKept allocates a Kept of n bytes.
func NewKept(n int) *Kept { return &Kept{buf: make([]byte, n)} }

// Bytes returns the buffer.
func (k *Kept) Bytes() []byte { return k.buf }

// addr is the address of b's first byte in the wasm memory, as engine-io.js takes it.
func addr(b []byte) int { return int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// Frames makes ws give each message it receives to onFrame, copying a frame of up to len(into)
// bytes into into first: onFrame(n, Undefined()) with the frame in into[:n], or onFrame(-1,
// data) with the message's data for what did not fit or is neither text nor an ArrayBuffer.
// onFrame runs inside the message's event and must take the bytes out of into before returning.
// The returned Func is released when the socket is done with.
func (io IO) Frames(ws Value, into *Kept, onFrame func(n int, data Value)) (Func, error) {
	f, err := FuncOf(func(_ Value, args []Value) any {
		if len(args) == 0 {
			return nil
		}
		n, err := args[0].Int()
		if err != nil {
			return nil
		}
		data := Undefined()
		if len(args) > 1 {
			data = args[1]
		}
		onFrame(n, data)
		return nil
	})
	if err != nil {
		return Func{}, err
	}
	buf := into.Bytes()
	if _, err := io.frames.Invoke(ws, addr(buf), len(buf), f); err != nil {
		f.Release()
		return Func{}, err
	}
	return f, nil
}

// Send sends frame on ws as one binary message, read from Go's memory where it lies, and
// reports whether ws was open to take it. The browser copies the bytes before the call returns.
func (io IO) Send(ws Value, frame []byte) (bool, error) {
	if len(frame) == 0 {
		frame = []byte{} // a valid address for an empty frame
	}
	v, err := io.send.Invoke(ws, addr(frame), len(frame))
	runtime.KeepAlive(frame)
	if err != nil {
		return false, err
	}
	return v.Bool()
}

// Read reads the file open as the sync access handle h, from its start, into into (up to its
// length), and returns how many bytes it read. A throw is returned as Thrown's *Error.
func (io IO) Read(h Value, into *Kept) (int, error) {
	buf := into.Bytes()
	v, err := io.read.Invoke(h, addr(buf), len(buf))
	if err != nil {
		return 0, Thrown(err)
	}
	return v.Int()
}
