package jsutil

import (
	"errors"
	"syscall/js"
	"testing"
)

// TestValueReturnsErrorsWhereSyscallJSPanics holds Value to its promise: each operation that
// panics in syscall/js (a property of undefined, a call of a missing method, a throw, a number
// read from a string) returns an error, and the error of a JavaScript throw is syscall/js's
// Error, which Thrown turns into the DOMException's name.
func TestValueReturnsErrorsWhereSyscallJSPanics(t *testing.T) {
	t.Parallel()
	undef := Undefined()
	if _, err := undef.Get("x"); err == nil {
		t.Error("undefined.x returned no error")
	}
	if err := undef.Set("x", 1); err == nil {
		t.Error("setting undefined.x returned no error")
	}
	if _, err := Global().Call("noSuchFunctionAnywhere"); err == nil {
		t.Error("calling a missing method returned no error")
	}
	str, err := ValueOf("text")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Int(); err == nil {
		t.Error("a string read as an int returned no error")
	}
	if s, err := str.String(); err != nil || s != "text" {
		t.Errorf("String() = %q, %v", s, err)
	}
	thrower, err := Global().Get("Function")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := thrower.New(`throw new DOMException("gone", "NotFoundError")`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fn.Invoke()
	var jsErr js.Error
	if !errors.As(err, &jsErr) {
		t.Fatalf("a throw returned %v, not a js.Error", err)
	}
	if Name(Thrown(err)) != "NotFoundError" {
		t.Errorf("Thrown(%v) names %q, not NotFoundError", err, Name(Thrown(err)))
	}
	if _, err := Global().InstanceOf(str); err == nil {
		t.Error("instanceof a string returned no error")
	}
	if _, err := ValueOf(struct{}{}); err == nil {
		t.Error("ValueOf a struct returned no error")
	}
}

// TestValueConvertsItsOwnValuesInArguments: a Value or Func passed to JavaScript, alone or
// inside a []any or map[string]any, arrives as the JavaScript value it wraps.
func TestValueConvertsItsOwnValuesInArguments(t *testing.T) {
	t.Parallel()
	marker := Object(map[string]any{"n": 7})
	double, err := FuncOf(func(_ Value, args []Value) any {
		n, _ := args[0].Int()
		return n * 2
	})
	if err != nil {
		t.Fatal(err)
	}
	defer double.Release()
	obj, err := ValueOf(map[string]any{"marker": marker, "list": []any{marker, double}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := obj.Get("marker")
	if err != nil || !got.Equal(marker) {
		t.Fatalf("the nested Value arrived as %v (%v)", got, err)
	}
	list, err := obj.Get("list")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := list.Length(); err != nil || n != 2 {
		t.Fatalf("list length %d, %v", n, err)
	}
	f, err := list.Index(1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Invoke(21)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := out.Int(); err != nil || n != 42 {
		t.Errorf("the Func in a list answered %d, %v; want 42", n, err)
	}
	if err := obj.Set("self", obj); err != nil {
		t.Fatal(err)
	}
	if self, err := obj.Get("self"); err != nil || !self.Equal(obj) {
		t.Errorf("a Value set as a property arrived as %v (%v)", self, err)
	}
}
