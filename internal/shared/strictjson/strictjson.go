// Package strictjson decodes one JSON object strictly, the one way every door of the project reads
// an object it did not write (request bodies, frames, descriptors, registries, tool arguments):
// nothing but one object, no member its Go type lacks, nothing after it. A failure is an *Error
// whose Kind says what was wrong, so callers choose their refusal by Kind, never by an error's
// text.
//
// A Struct (a type that lists its fields) is read without reflection, with the same verdicts, so
// the page's wasm need not carry encoding/json's decoder for it: DecodeStruct. Any other type goes
// through encoding/json, with its rules for matching member names to fields (tags, then
// a case-insensitive match) and for null (it leaves a field as it is). What it adds is the
// verdict: encoding/json reports a member no field takes only as text, so Decode tells that case
// apart by decoding again without the check, and finds the member by asking encoding/json about
// each member alone.
//
// # Wasm
//
// The package is portable Go and behaves the same under GOOS=js GOARCH=wasm; the page uses it for
// the worker's requests and tool arguments.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Kind says what was wrong with a document.
type Kind uint8

// The kinds of Error, in the order Decode looks for them.
const (
	// NotObject: the document is empty, or is a value other than an object (null included).
	NotObject Kind = iota + 1
	// Syntax: the document is not JSON (a syntax error, or it ends early).
	Syntax
	// WrongType: a member's value has the wrong type for its field.
	WrongType
	// UnknownField: a member has no field to go to.
	UnknownField
	// Invalid: a value its type's own UnmarshalJSON refused (Err says why), or v cannot be
	// decoded into at all (not a non-nil pointer: a mistake of the caller's).
	Invalid
	// Trailing: something other than white space follows the object.
	Trailing
)

var kindNames = [...]string{NotObject: "not an object", Syntax: "not JSON", WrongType: "a value of the wrong type",
	UnknownField: "an unknown member", Invalid: "an invalid value", Trailing: "data after the object"}

// String names the kind in a few words.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// MaxProbes bounds the decodes Decode spends looking for which member is unknown; past it the
// Error is still UnknownField, with Field "".
const MaxProbes = 256

// Error is why a document was refused.
type Error struct {
	Kind Kind
	// Field is the member concerned, as a dotted path from the top object ("bounds.maxBytes"):
	// the unknown member for UnknownField (when found), the member of the wrong type for
	// WrongType; "" for the whole document.
	Field string
	// Offset is the byte offset of a Syntax error, or where Trailing data begins.
	Offset int64
	// Err is encoding/json's error, or the UnmarshalJSON's; nil for NotObject, UnknownField and
	// Trailing.
	Err error
}

// Error says what was wrong without quoting the document's values (a member name is quoted).
func (e *Error) Error() string {
	msg := "strictjson: " + e.Kind.String()
	switch {
	case e.Kind == Syntax:
		msg += " (at byte " + strconv.FormatInt(e.Offset, 10) + ")"
	case e.Kind == Trailing:
		msg += " (from byte " + strconv.FormatInt(e.Offset, 10) + ")"
	case e.Field != "":
		msg += " " + strconv.Quote(e.Field)
	}
	if e.Kind == Invalid && e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err's *Error, or 0 when err has none.
func KindOf(err error) Kind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return 0
}

// Decode reads data, which must be exactly one JSON object with white space around it at most,
// into v, a non-nil pointer. A member no field of v's type takes is refused, at any depth. On an
// error v may hold part of the object. The error is always an *Error.
//
// A Struct is read without reflection (see DecodeStruct); anything else through encoding/json.
func Decode(data []byte, v any) error {
	start := firstNonSpace(data)
	if start == len(data) || data[start] != '{' {
		return &Error{Kind: NotObject}
	}
	if s, ok := v.(Struct); ok {
		return decodeStruct(data, s)
	}
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

func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return len(b)
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

// Problem says what was wrong with a document in words a refusal can carry ("a syntax error at
// byte 12", "it has the member \"x\", which is not taken here", "it has data after the object").
// It quotes a member's name, never a value.
func Problem(err error) string {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return "it does not decode"
	}
	switch e.Kind {
	case NotObject:
		return "it is not one JSON object"
	case Syntax:
		if e.Offset > 0 {
			return fmt.Sprintf("a syntax error at byte %d", e.Offset)
		}
		return "it ends early"
	case WrongType:
		if e.Field == "" {
			return "it has the wrong type"
		}
		return fmt.Sprintf("member %q has the wrong type", e.Field)
	case UnknownField:
		if e.Field == "" {
			return "it has a member that is not taken here"
		}
		return fmt.Sprintf("it has the member %q, which is not taken here", e.Field)
	case Trailing:
		return "it has data after the object"
	}
	return "a value is not valid here"
}
