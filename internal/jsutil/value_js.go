package jsutil

import (
	"errors"
	"syscall/js"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// Value is a JavaScript value whose every operation that can throw returns an error instead of
// panicking, as syscall/js's own operations do. The page's Go reaches JavaScript only through it.
type Value struct {
	v js.Value
}

// Type is a JavaScript value's type, as typeof names it (with TypeNull for null).
type Type = js.Type

// The types a Value can have.
const (
	TypeUndefined = js.TypeUndefined
	TypeNull      = js.TypeNull
	TypeBoolean   = js.TypeBoolean
	TypeNumber    = js.TypeNumber
	TypeString    = js.TypeString
	TypeSymbol    = js.TypeSymbol
	TypeObject    = js.TypeObject
	TypeFunction  = js.TypeFunction
)

// Safe wraps a syscall/js value.
func Safe(v js.Value) Value { return Value{v} }

// Unsafe returns the syscall/js value v wraps.
func Unsafe(v Value) js.Value { return v.v }

// Global returns JavaScript's global object.
func Global() Value { return Value{js.Global()} }

// Null returns JavaScript's null.
func Null() Value { return Value{js.Null()} }

// Undefined returns JavaScript's undefined.
func Undefined() Value { return Value{js.Undefined()} }

// try runs fn, returning what it panicked with as an error: the js.Error of a JavaScript throw,
// or syscall/js's message when a value is not what an operation needs.
func try[T any](fn func() T) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(r)
		}
	}()
	return fn(), nil
}

func panicError(r any) error {
	switch r := r.(type) {
	case error:
		return r
	case js.Value:
		return js.Error{Value: r}
	case string:
		return errors.New(r)
	}
	return textf.Errorf("%v", r)
}

// jsArg returns x with every Value and Func in it (also inside []any and map[string]any) as
// syscall/js's, which js.ValueOf takes.
func jsArg(x any) any {
	switch x := x.(type) {
	case Value:
		return x.v
	case Func:
		return x.f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsArg(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsArg(e)
		}
		return out
	}
	return x
}

func jsArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = jsArg(a)
	}
	return out
}

// ValueOf returns x as a JavaScript value (see js.ValueOf), or an error if it has no such form.
func ValueOf(x any) (Value, error) {
	x = jsArg(x)
	return try(func() Value { return Value{js.ValueOf(x)} })
}

// Type returns v's type.
func (v Value) Type() Type { return v.v.Type() }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.v.IsNull() }

// IsUndefined reports whether v is undefined.
func (v Value) IsUndefined() bool { return v.v.IsUndefined() }

// IsNaN reports whether v is NaN.
func (v Value) IsNaN() bool { return v.v.IsNaN() }

// Equal reports whether v === w.
func (v Value) Equal(w Value) bool { return v.v.Equal(w.v) }

// Get returns v's property p, or an error if v is not an object.
func (v Value) Get(p string) (Value, error) {
	return try(func() Value { return Value{v.v.Get(p)} })
}

// Set sets v's property p to x, or returns an error if v is not an object.
func (v Value) Set(p string, x any) error {
	x = jsArg(x)
	_, err := try(func() struct{} { v.v.Set(p, x); return struct{}{} })
	return err
}

// Delete deletes v's property p, or returns an error if v is not an object.
func (v Value) Delete(p string) error {
	_, err := try(func() struct{} { v.v.Delete(p); return struct{}{} })
	return err
}

// Index returns v[i], or an error if v is not an object.
func (v Value) Index(i int) (Value, error) {
	return try(func() Value { return Value{v.v.Index(i)} })
}

// SetIndex sets v[i] to x, or returns an error if v is not an object.
func (v Value) SetIndex(i int, x any) error {
	x = jsArg(x)
	_, err := try(func() struct{} { v.v.SetIndex(i, x); return struct{}{} })
	return err
}

// Length returns v.length, or an error if v is not an object.
func (v Value) Length() (int, error) { return try(v.v.Length) }

// Call calls v's method m with args; a throw (or no such method) is the error.
func (v Value) Call(m string, args ...any) (Value, error) {
	args = jsArgs(args)
	return try(func() Value { return Value{v.v.Call(m, args...)} })
}

// Invoke calls v with args; a throw (or v not a function) is the error.
func (v Value) Invoke(args ...any) (Value, error) {
	args = jsArgs(args)
	return try(func() Value { return Value{v.v.Invoke(args...)} })
}

// New calls v as a constructor with args; a throw (or v not a constructor) is the error.
func (v Value) New(args ...any) (Value, error) {
	args = jsArgs(args)
	return try(func() Value { return Value{v.v.New(args...)} })
}

// InstanceOf reports whether v instanceof t, or returns an error if t is not a constructor (a
// function whose prototype is an object).
func (v Value) InstanceOf(t Value) (bool, error) {
	if t.Type() != TypeFunction {
		return false, errors.New("jsutil: instanceof of a " + t.Type().String() + ", not a function")
	}
	proto, err := t.Get("prototype")
	if err != nil {
		return false, err
	}
	if proto.Type() != TypeObject {
		return false, errors.New("jsutil: instanceof of a function whose prototype is a " + proto.Type().String())
	}
	return try(func() bool { return v.v.InstanceOf(t.v) })
}

// Bool returns v as a bool, or an error if it is not a boolean.
func (v Value) Bool() (bool, error) { return try(v.v.Bool) }

// Int returns v truncated to an int, or an error if it is not a number.
func (v Value) Int() (int, error) { return try(v.v.Int) }

// Float returns v as a float64, or an error if it is not a number.
func (v Value) Float() (float64, error) { return try(v.v.Float) }

// Truthy reports whether v is truthy.
func (v Value) Truthy() (bool, error) { return try(v.v.Truthy) }

// String returns v as a string: a string's text, otherwise syscall/js's "<T>" or "<T: V>".
func (v Value) String() (string, error) { return try(v.v.String) }

// Func is a Go function JavaScript can call; Release it when JavaScript no longer will.
type Func struct {
	f js.Func
}

// FuncOf returns fn as a JavaScript function; what it returns goes back through js.ValueOf.
func FuncOf(fn func(this Value, args []Value) any) (Func, error) {
	return try(func() Func {
		return Func{js.FuncOf(func(this js.Value, args []js.Value) any {
			vs := make([]Value, len(args))
			for i, a := range args {
				vs[i] = Value{a}
			}
			return jsArg(fn(Value{this}, vs))
		})}
	})
}

// Release frees f's resources; JavaScript must not call it afterwards.
func (f Func) Release() { f.f.Release() }

// Value returns f as a JavaScript value.
func (f Func) Value() Value { return Value{f.f.Value} }

// CopyBytesToGo copies src (a Uint8Array) into dst, returning how many bytes it copied.
func CopyBytesToGo(dst []byte, src Value) (int, error) {
	return try(func() int { return js.CopyBytesToGo(dst, src.v) })
}

// CopyBytesToJS copies src into dst (a Uint8Array), returning how many bytes it copied.
func CopyBytesToJS(dst Value, src []byte) (int, error) {
	return try(func() int { return js.CopyBytesToJS(dst.v, src) })
}
