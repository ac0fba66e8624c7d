package jsutil

import (
	"context"
	"errors"
	"syscall/js"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// Error is a JavaScript exception or rejection: its name (the DOMException name, such as
// "NotFoundError") and its message.
type Error struct {
	Name    string
	Message string
}

func (e *Error) Error() string { return e.Name + ": " + e.Message }

// Name returns the DOMException name err carries, or "" when it carries none.
func Name(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Name
	}
	return ""
}

// FromValue turns a thrown or rejected JavaScript value into an *Error.
func FromValue(v Value) *Error {
	e := &Error{Name: "Error", Message: "(no message)"}
	if v.Type() != TypeObject {
		if s, err := v.String(); err == nil {
			e.Message = s
		}
		return e
	}
	if n, err := v.Get("name"); err == nil && n.Type() == TypeString {
		e.Name, _ = n.String()
	}
	if m, err := v.Get("message"); err == nil && m.Type() == TypeString {
		e.Message, _ = m.String()
	}
	return e
}

// Await waits for promise to settle and returns its value, or the rejection as an *Error. It must
// be called from a goroutine, never from inside a JavaScript callback. When ctx ends first it
// returns ctx.Err(); the promise still settles later and its callbacks release themselves.
func Await(ctx context.Context, promise Value) (Value, error) {
	type settled struct {
		v   Value
		err error
	}
	done := make(chan settled, 1)
	var onOK, onErr Func
	release := func() {
		onOK.Release()
		onErr.Release()
	}
	var err error
	onOK, err = FuncOf(func(_ Value, args []Value) any {
		v := Undefined()
		if len(args) > 0 {
			v = args[0]
		}
		done <- settled{v: v}
		release()
		return nil
	})
	if err != nil {
		return Value{}, err
	}
	onErr, err = FuncOf(func(_ Value, args []Value) any {
		reason := Undefined()
		if len(args) > 0 {
			reason = args[0]
		}
		done <- settled{err: FromValue(reason)}
		release()
		return nil
	})
	if err != nil {
		onOK.Release()
		return Value{}, err
	}
	if _, err := promise.Call("then", onOK.Value(), onErr.Value()); err != nil {
		release()
		return Value{}, textf.Errorf("jsutil: not a promise: %w", err)
	}
	select {
	case s := <-done:
		return s.v, s.err
	case <-ctx.Done():
		return Value{}, ctx.Err()
	}
}

// Call calls method on v and awaits the promise it returns. A synchronous throw is returned as an
// *Error too.
func Call(ctx context.Context, v Value, method string, args ...any) (Value, error) {
	p, err := v.Call(method, args...)
	if err != nil {
		return Value{}, Thrown(err)
	}
	return Await(ctx, p)
}

// Thrown turns the error a synchronous Value call returns for a JavaScript throw (syscall/js's
// Error, whose message drops the DOMException name) into an *Error, so its name can be read.
func Thrown(err error) error {
	if jsErr, ok := errors.AsType[js.Error](err); ok {
		return FromValue(Safe(jsErr.Value))
	}
	return err
}

// Object builds a plain JavaScript object from m.
func Object(m map[string]any) Value {
	v, err := ValueOf(m)
	if err != nil {
		panic("jsutil: " + err.Error())
	}
	return v
}

// BytesToJS copies b into a new Uint8Array.
func BytesToJS(b []byte) (Value, error) {
	ctor, err := Global().Get("Uint8Array")
	if err != nil {
		return Value{}, err
	}
	arr, err := ctor.New(len(b))
	if err != nil {
		return Value{}, err
	}
	if _, err := CopyBytesToJS(arr, b); err != nil {
		return Value{}, err
	}
	return arr, nil
}

// BytesToGo copies a Uint8Array (or an ArrayBuffer) into a new Go slice.
func BytesToGo(v Value) ([]byte, error) {
	if ok, _ := isInstance(v, "ArrayBuffer"); ok {
		ctor, err := Global().Get("Uint8Array")
		if err != nil {
			return nil, err
		}
		if v, err = ctor.New(v); err != nil {
			return nil, err
		}
	}
	n, err := v.Length()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := CopyBytesToGo(b, v); err != nil {
		return nil, err
	}
	return b, nil
}

func isInstance(v Value, ctor string) (bool, error) {
	c, err := Global().Get(ctor)
	if err != nil || c.IsUndefined() {
		return false, err
	}
	return v.InstanceOf(c)
}
