package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
)

// decodeReflect is Decode for a type that is not a Struct, through encoding/json: the relay's.
func decodeReflect(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		end := dec.InputOffset()
		if rest := firstNonSpace(data[end:]); int(end)+rest != len(data) {
			return &Error{Kind: Trailing, Offset: end + int64(rest)}
		}
		return nil
	}
	if e := typed(err); e != nil {
		return e
	}
	// Only encoding/json's unknown-member error is untyped: a decode without the check that
	// succeeds says that was it.
	fresh, ok := freshOf(v)
	if !ok {
		return &Error{Kind: Invalid, Err: err}
	}
	lenient := json.NewDecoder(bytes.NewReader(data))
	if err2 := lenient.Decode(fresh.Interface()); err2 != nil {
		if e := typed(err2); e != nil {
			return e
		}
		return &Error{Kind: Invalid, Err: err2}
	}
	p := &prober{typ: fresh.Type().Elem(), budget: MaxProbes}
	path, _ := p.find(nil, data)
	return &Error{Kind: UnknownField, Field: strings.Join(path, ".")}
}

// typed is the *Error of one of encoding/json's typed errors, or nil.
func typed(err error) *Error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return &Error{Kind: Syntax, Offset: se.Offset, Err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &Error{Kind: Syntax, Err: err}
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return &Error{Kind: WrongType, Field: te.Field, Err: err}
	}
	if _, ok := errors.AsType[*json.InvalidUnmarshalError](err); ok {
		return &Error{Kind: Invalid, Err: err}
	}
	return nil
}

// freshOf returns a new zero value of what v points to, as a pointer.
func freshOf(v any) (reflect.Value, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return reflect.Value{}, false
	}
	return reflect.New(rv.Type().Elem()), true
}

// prober finds the unknown member by asking encoding/json about documents that hold one member
// alone, along a path of objects: {"a":{"b":null}} is refused exactly when b is unknown in a.
type prober struct {
	typ    reflect.Type
	budget int
}

// find returns the path of the first unknown member within obj, the object found at path.
func (p *prober) find(path []string, obj []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false
		}
		here := append(append([]string(nil), path...), name)
		known, ok := p.accepts(here, []byte("null"))
		if !ok {
			return nil, false
		}
		if !known {
			return here, true
		}
		if whole, ok := p.accepts(here, val); !ok {
			return nil, false
		} else if !whole { // the unknown member is inside this one
			if deeper, ok := p.find(here, val); ok {
				return deeper, true
			}
			return here, true // inside an array: the member that holds it
		}
	}
	return nil, false
}

// accepts reports whether {"path[0]":{...{"path[n]": leaf}}} decodes into the type with the
// check on; false, false once the budget is spent.
func (p *prober) accepts(path []string, leaf []byte) (known, ok bool) {
	if p.budget <= 0 {
		return false, false
	}
	p.budget--
	var b bytes.Buffer
	for _, name := range path {
		q, _ := json.Marshal(name)
		b.WriteByte('{')
		b.Write(q)
		b.WriteByte(':')
	}
	b.Write(leaf)
	for range path {
		b.WriteByte('}')
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	return dec.Decode(reflect.New(p.typ).Interface()) == nil, true
}
