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
// The package is portable Go and behaves the same under GOOS=js GOARCH=wasm for a Struct; the page
// uses it for the worker's requests and tool arguments. The page calls DecodeStruct only, never
// Decode, so that its wasm carries no encoding/json decoder (browser/jsoncallers_test.go holds
// it); a shared package that decodes other types through Decode (the relay's) works under js too.
package strictjson

import (
	"errors"
	"strconv"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
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
	// Invalid: a value its type's own reader refused (a Struct field's UnmarshalStrict or a
	// time's, another type's UnmarshalJSON; Err says why), a []byte member's string is not
	// base64, or v cannot be decoded into at all (not a non-nil pointer: a mistake of the
	// caller's).
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
	// Err is encoding/json's error, or the field's reader's; nil for NotObject, UnknownField and
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
// A Struct is read without reflection (see DecodeStruct); anything else through encoding/json
// (see the package's Wasm section).
func Decode(data []byte, v any) error {
	start := firstNonSpace(data)
	if start == len(data) || data[start] != '{' {
		return &Error{Kind: NotObject}
	}
	if s, ok := v.(Struct); ok {
		return decodeStruct(data, s)
	}
	return decodeReflect(data, v)
}

func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return len(b)
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
			return textf.Sprintf("a syntax error at byte %d", e.Offset)
		}
		return "it ends early"
	case WrongType:
		if e.Field == "" {
			return "it has the wrong type"
		}
		return textf.Sprintf("member %q has the wrong type", e.Field)
	case UnknownField:
		if e.Field == "" {
			return "it has a member that is not taken here"
		}
		return textf.Sprintf("it has the member %q, which is not taken here", e.Field)
	case Trailing:
		return "it has data after the object"
	}
	return "a value is not valid here"
}
