package strictjson

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
)

// Struct is a type that lists its fields for Decode, which then reads it without reflection and
// with the same verdicts (TestStructsAgreeWithReference and FuzzStructsAgreeWithReference hold the
// two paths together; strictjsontest.CheckFields holds a type's list to its struct tags).
type Struct interface {
	StrictFields() []Field
}

// Unmarshaler is a field that reads its own member, as a json.Unmarshaler does for encoding/json:
// UnmarshalStrict is given the member's value as written (null included), and its error is the
// Error's Err, of Kind Invalid, which ends the decode. It is not json.Unmarshaler because one call
// of UnmarshalJSON through an interface keeps, in the page's wasm, the UnmarshalJSON of every type
// the page puts in an interface: time.Time's, and time.Parse with it (browser's
// TestPageLinksNoTimeParse). strictjsontest.CheckFields fails a field that reads itself only for
// encoding/json.
type Unmarshaler interface {
	UnmarshalStrict(b []byte) error
}

// Field is one member of a Struct: its name as the field's json tag gives it, and a pointer to the
// field. Into is one of *string, *bool, *int, *int64, *uint64, **uint64, **string, **bool,
// *float64, *json.RawMessage, *[]string, *[]json.RawMessage, *[]byte, *[][]byte (base64), a
// Struct (a pointer to a nested struct), a *time.Time (read as its UnmarshalJSON reads it), or an
// Unmarshaler. A pointer field is set to nil by a null member, as encoding/json sets it.
// A field of a named string type is listed as a *string: (*string)(&s.Field).
type Field struct {
	Name string
	Into any
}

// DecodeStruct is Decode for a Struct, without reflection: the page's callers use it so that
// encoding/json's decoder is not linked in for them.
func DecodeStruct(data []byte, s Struct) error {
	start := firstNonSpace(data)
	if start == len(data) || data[start] != '{' {
		return &Error{Kind: NotObject}
	}
	return decodeStruct(data, s)
}

// decodeStruct is Decode for a Struct. The verdicts come in encoding/json's order: a syntax error
// of the first value, then the first member of the wrong type in document order (members nothing
// takes are not looked into), then the first member nothing takes, then data after the object.
func decodeStruct(data []byte, s Struct) error {
	start := firstNonSpace(data)
	end, failAt := rawjson.Scan(data, start)
	switch {
	case failAt == len(data):
		return &Error{Kind: Syntax, Err: errEndsEarly}
	case failAt >= 0:
		return &Error{Kind: Syntax, Offset: int64(failAt) + 1, Err: errSyntax}
	}
	d := structDecoder{}
	d.object(data[start:end], s, nil, nil)
	switch {
	case d.invalid != nil:
		return &Error{Kind: Invalid, Err: d.invalid}
	case d.badBytes != nil:
		return &Error{Kind: Invalid, Err: d.badBytes}
	case d.wrongType != nil:
		return &Error{Kind: WrongType, Field: strings.Join(d.wrongType, "."), Err: errWrongType}
	case d.unknown != nil:
		return &Error{Kind: UnknownField, Field: strings.Join(d.unknown, ".")}
	}
	if rest := firstNonSpace(data[end:]); end+rest != len(data) {
		return &Error{Kind: Trailing, Offset: int64(end + rest)}
	}
	return nil
}

// The Err of an *Error from a Struct's decode: encoding/json's own errors name Go types, which a
// Struct's decode does not know.
var (
	errEndsEarly = errorString("unexpected end of JSON input")
	errSyntax    = errorString("invalid character")
	errWrongType = errorString("a value of the wrong type")
)

type errorString string

func (e errorString) Error() string { return string(e) }

// DecodeStructLoose reads data into s as json.Unmarshal reads it into a struct, without
// reflection: a member no field takes is skipped, null is left as it is (a nil error), and data
// must be one JSON value alone. It is for documents Voicebox wrote itself and reads back, which a
// newer build may have written with members this one does not know. The error is an *Error.
func DecodeStructLoose(data []byte, s Struct) error {
	if !rawjson.Valid(data) {
		end, failAt := rawjson.Scan(data, firstNonSpace(data))
		if failAt < 0 {
			return &Error{Kind: Trailing, Offset: int64(end + firstNonSpace(data[end:]))}
		}
		if failAt == len(data) {
			return &Error{Kind: Syntax, Err: errEndsEarly}
		}
		return &Error{Kind: Syntax, Offset: int64(failAt) + 1, Err: errSyntax}
	}
	start := firstNonSpace(data)
	switch {
	case data[start] == 'n':
		return nil
	case data[start] != '{':
		return &Error{Kind: NotObject}
	}
	d := structDecoder{loose: true}
	d.object(data[start:], s, nil, nil)
	switch {
	case d.invalid != nil:
		return &Error{Kind: Invalid, Err: d.invalid}
	case d.badBytes != nil:
		return &Error{Kind: Invalid, Err: d.badBytes}
	case d.wrongType != nil:
		return &Error{Kind: WrongType, Field: strings.Join(d.wrongType, "."), Err: errWrongType}
	}
	return nil
}

// structDecoder keeps the first member of the wrong type and the first unknown one, as paths, and
// the first error of an Unmarshaler or a time, which ends the decode (as it ends encoding/json's).
type structDecoder struct {
	wrongType []string
	unknown   []string
	invalid   error
	// badBytes is a []byte member whose string is not base64: encoding/json keeps the first of it
	// and a member of the wrong type, and goes on.
	badBytes error
	// loose skips unknown members, as json.Unmarshal does.
	loose bool
}

// object decodes obj, a valid JSON object, into s; at names obj's place by its fields' names (as
// encoding/json names a member of the wrong type), written by the members' names as the document
// spells them (as the prober names an unknown member).
func (d *structDecoder) object(obj []byte, s Struct, at, written []string) {
	fields := s.StrictFields()
	rawjson.Members(obj, func(name string, v []byte) bool {
		f := match(fields, name)
		if f == nil {
			if d.unknown == nil && !d.loose {
				d.unknown = append(append([]string(nil), written...), name)
			}
			return true
		}
		// The paths are made only where they are needed: for a nested Struct, whose members'
		// verdicts name them, and for a verdict (a plain member of the right type costs none).
		var here, hereWritten []string
		if _, nested := f.Into.(Struct); nested {
			here, hereWritten = append(at[:len(at):len(at)], f.Name), append(written[:len(written):len(written)], name)
		}
		if !d.value(v, f.Into, here, hereWritten) && d.wrongType == nil && d.badBytes == nil {
			d.wrongType = append(at[:len(at):len(at)], f.Name)
		}
		return d.invalid == nil
	})
}

// match is the field a member goes to: the one whose name it is, else the one whose name folds
// to the same as its own (as encoding/json matches).
func match(fields []Field, name string) *Field {
	for i := range fields {
		if fields[i].Name == name {
			return &fields[i]
		}
	}
	for i := range fields {
		if rawjson.FoldEqual(fields[i].Name, name) {
			return &fields[i]
		}
	}
	return nil
}

// value decodes v into into; false when v has the wrong type for it. null leaves a field as it
// is, except a pointer, slice or json.RawMessage, which it sets as encoding/json does.
func (d *structDecoder) value(v []byte, into any, at, written []string) bool {
	null := string(v) == "null"
	switch p := into.(type) {
	case *json.RawMessage:
		*p = append((*p)[:0:0], v...)
		return true
	case *[]json.RawMessage:
		if null {
			*p = nil
			return true
		}
		if v[0] != '[' {
			return false
		}
		out := []json.RawMessage{}
		rawjson.Elements(v, func(e []byte) { out = append(out, append(json.RawMessage(nil), e...)) })
		*p = out
		return true
	case *[]string:
		if null {
			*p = nil
			return true
		}
		if v[0] != '[' {
			return false
		}
		old, out, ok := *p, []string{}, true
		rawjson.Elements(v, func(e []byte) {
			if string(e) == "null" { // leaves the element there was, as encoding/json does
				if len(out) < len(old) {
					out = append(out, old[len(out)])
				} else {
					out = append(out, "")
				}
				return
			}
			s, isString := rawjson.Unquote(e)
			ok = ok && isString
			out = append(out, s)
		})
		*p = out
		return ok
	case Struct:
		if null {
			return true
		}
		if v[0] != '{' {
			return false
		}
		d.object(v, p, at, written)
		return true
	case *[]byte:
		return d.bytes(v, p)
	case *[][]byte:
		if null {
			*p = nil
			return true
		}
		if v[0] != '[' {
			return false
		}
		out, ok := [][]byte{}, true
		rawjson.Elements(v, func(e []byte) {
			var b []byte
			ok = d.bytes(e, &b) && ok
			out = append(out, b)
		})
		*p = out
		return ok
	case *time.Time:
		if err := readTime(v, p); err != nil && d.invalid == nil {
			d.invalid = err
		}
		return true
	case Unmarshaler:
		if err := p.UnmarshalStrict(v); err != nil && d.invalid == nil {
			d.invalid = err
		}
		return true
	}
	if null {
		switch p := into.(type) {
		case **uint64:
			*p = nil
		case **string:
			*p = nil
		case **bool:
			*p = nil
		}
		return true
	}
	switch p := into.(type) {
	case *string:
		s, ok := rawjson.Unquote(v)
		if ok {
			*p = s
		}
		return ok
	case *bool:
		if string(v) != "true" && string(v) != "false" {
			return false
		}
		*p = string(v) == "true"
		return true
	case *float64:
		f, ok := rawjson.Float(v)
		if ok {
			*p = f
		}
		return ok
	case *int:
		n, ok := intValue(v, strconv.IntSize)
		if ok {
			*p = int(n)
		}
		return ok
	case *int64:
		n, ok := intValue(v, 64)
		if ok {
			*p = n
		}
		return ok
	case *uint64:
		n, ok := uintValue(v)
		if ok {
			*p = n
		}
		return ok
	case **uint64:
		n, ok := uintValue(v)
		if ok {
			*p = &n
		}
		return ok
	case **string:
		s, ok := rawjson.Unquote(v)
		if ok {
			*p = &s
		}
		return ok
	case **bool:
		if string(v) != "true" && string(v) != "false" {
			return false
		}
		b := string(v) == "true"
		*p = &b
		return true
	}
	panic("strictjson: a Field's Into of a kind Decode does not take")
}

// bytes decodes v into p as encoding/json decodes a []byte: a base64 string (its error kept in
// badBytes), an array of numbers from 0 to 255, or null; false when v has the wrong type.
func (d *structDecoder) bytes(v []byte, p *[]byte) bool {
	switch v[0] {
	case 'n':
		*p = nil
		return true
	case '"':
		s, _ := rawjson.Unquote(v)
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, []byte(s))
		if err != nil {
			if d.badBytes == nil && d.wrongType == nil {
				d.badBytes = err
			}
			return true
		}
		*p = b[:n]
		return true
	case '[':
		old, out, ok := *p, []byte{}, true
		old = old[:cap(old)]
		rawjson.Elements(v, func(e []byte) {
			if string(e) == "null" { // leaves the byte there was, as encoding/json does
				if len(out) < len(old) {
					out = append(out, old[len(out)])
				} else {
					out = append(out, 0)
				}
				return
			}
			n, isByte := uintValue(e)
			ok = ok && isByte && n <= 255
			out = append(out, byte(n))
		})
		*p = out
		return ok
	}
	return false
}

// intValue and uintValue read a number as encoding/json reads one into an integer: its spelling
// must be an integer of the type's range (1.0 and 1e2 are not).
func intValue(v []byte, bits int) (int64, bool) {
	if !isNumber(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, bits)
	return n, err == nil
}

func uintValue(v []byte) (uint64, bool) {
	if !isNumber(v) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	return n, err == nil
}

func isNumber(v []byte) bool { return len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) }
