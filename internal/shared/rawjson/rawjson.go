// Package rawjson is the page's JSON without reflection: it writes strings, numbers and objects
// byte for byte as encoding/json writes them, decodes a string literal as encoding/json decodes
// it, and walks the members of an object with encoding/json's verdicts on syntax. The page's wasm
// carries no encoding/json codec for what goes through here (the Go linker keeps a function only
// when something reachable calls it), and the hot paths skip reflection's per-call cost.
//
// Each function is held to encoding/json, kept as a test-only reference, by agreement tests and a
// fuzz target (rawjson_test.go): the same bytes out, the same verdict in.
//
// A type with a JSON shape of its own implements Appender; callers that take any (the executor's
// observations, the worker's answers) use it when the value has it.
package rawjson

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Appender is a value that writes its own JSON, exactly what json.Marshal writes for it (with or
// without HTML escaping, as the type's doc says), appended to dst.
type Appender interface {
	AppendJSON(dst []byte) []byte
}

// MaxDepth is the deepest nesting of objects and arrays Members and Valid accept: encoding/json's
// own bound, so the two give the same verdicts on any document.
const MaxDepth = 10000

const hex = "0123456789abcdef"

// plainJSON[c] is whether AppendString copies the byte c as it is, without HTML escaping: ASCII
// but control characters, '"' and '\\'. plainHTML is the same without '<', '>' and '&'. One
// lookup a byte instead of the comparisons (a string's bytes are most of an observation's).
var plainJSON, plainHTML = func() (plain, html [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}()

// AppendString appends s as a JSON string the way encoding/json writes it: invalid UTF-8 becomes
// \ufffd, U+2028 and U+2029 are escaped, and, when escapeHTML is true (json.Marshal; false is an
// Encoder with SetEscapeHTML(false)), so are <, > and &.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	plain := &plainJSON
	if escapeHTML {
		plain = &plainHTML
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json writes a float64 (shortest form, an exponent below 1e-6
// and from 1e21), and reports false, appending nothing, for NaN and the infinities, which JSON
// cannot hold (encoding/json refuses them with an UnsupportedValueError).
func AppendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(dst) - start; n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst, true
}

// AppendTime appends t as time.Time's MarshalJSON writes it (RFC 3339 with nanoseconds, quoted),
// and reports false, appending nothing, for a time MarshalJSON refuses (a year outside 0 to 9999).
func AppendTime(dst []byte, t time.Time) ([]byte, bool) {
	start := len(dst)
	b, err := t.AppendText(append(dst, '"'))
	if err != nil {
		return dst[:start], false
	}
	return append(b, '"'), true
}

// AppendArray writes s as json.Marshal writes a slice: null for a nil one, else its elements,
// each written by each, between brackets and separated by commas.
func AppendArray[E any](dst []byte, s []E, each func(dst []byte, e E) []byte) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, e := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = each(dst, e)
	}
	return append(dst, ']')
}

// Object writes one JSON object member by member; the zero value is not ready: start one with
// NewObject. Member names are written with AppendString, HTML-escaped as json.Marshal writes
// them when escapeHTML is set; names are the caller's own constants.
type Object struct {
	b          []byte
	n          int
	escapeHTML bool
}

// NewObject starts an object at the end of dst.
func NewObject(dst []byte, escapeHTML bool) Object {
	return Object{b: append(dst, '{'), escapeHTML: escapeHTML}
}

func (o *Object) key(name string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = AppendString(o.b, name, o.escapeHTML)
	o.b = append(o.b, ':')
}

// String writes a string member.
func (o *Object) String(name, v string) {
	o.key(name)
	o.b = AppendString(o.b, v, o.escapeHTML)
}

// Int writes an integer member.
func (o *Object) Int(name string, v int64) {
	o.key(name)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// Uint writes an unsigned integer member.
func (o *Object) Uint(name string, v uint64) {
	o.key(name)
	o.b = strconv.AppendUint(o.b, v, 10)
}

// Bool writes a boolean member.
func (o *Object) Bool(name string, v bool) {
	o.key(name)
	o.b = strconv.AppendBool(o.b, v)
}

// Float writes a number member; it reports false for NaN and the infinities (nothing is written).
func (o *Object) Float(name string, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	o.key(name)
	o.b, _ = AppendFloat(o.b, v)
	return true
}

// Time writes a time member as AppendTime does; it reports false (nothing written) for a time
// AppendTime refuses.
func (o *Object) Time(name string, t time.Time) bool {
	save, n := len(o.b), o.n
	o.key(name)
	var ok bool
	if o.b, ok = AppendTime(o.b, t); !ok {
		o.b, o.n = o.b[:save], n
	}
	return ok
}

// Raw writes a member whose value is already JSON, compacted as json.Marshal writes a
// json.RawMessage; it reports false (nothing written) when raw is not exactly one JSON value.
// An empty raw is written as null, as json.Marshal writes a nil json.RawMessage.
func (o *Object) Raw(name string, raw []byte) bool {
	if len(raw) == 0 {
		o.key(name)
		o.b = append(o.b, "null"...)
		return true
	}
	if !Valid(raw) {
		return false
	}
	o.key(name)
	o.b = AppendCompact(o.b, raw, o.escapeHTML)
	return true
}

// Any writes a member with AppendValue's JSON of v; it reports false, writing nothing, when
// AppendValue refuses v.
func (o *Object) Any(name string, v any) bool {
	save, n := len(o.b), o.n
	o.key(name)
	var ok bool
	if o.b, ok = appendValue(o.b, v, o.escapeHTML, 0); !ok {
		o.b, o.n = o.b[:save], n
	}
	return ok
}

// Value writes a member with an Appender's JSON.
func (o *Object) Value(name string, v Appender) {
	o.key(name)
	o.b = v.AppendJSON(o.b)
}

// Close ends the object and returns the whole buffer.
func (o *Object) Close() []byte { return append(o.b, '}') }

// Decode reads raw, exactly one JSON value with white space around it at most, as json.Unmarshal
// into an any with UseNumber: objects as map[string]any (a name given twice keeps its last
// value), arrays as []any, numbers as json.Number spelled as written, strings, bools and nil.
func Decode(raw []byte) (any, bool) {
	if !Valid(raw) {
		return nil, false
	}
	v, _ := decodeValid(raw, skipSpace(raw, 0))
	return v, true
}

// openValue is an object or array decodeValid is filling: an object with the name its next value
// goes under, or an array.
type openValue struct {
	obj  map[string]any
	arr  []any
	name string
}

// readName reads the member name at i and the colon after it into o, and returns where the
// member's value starts.
func (o *openValue) readName(b []byte, i int) int {
	end, _ := stringEnd(b, i)
	o.name, _ = Unquote(b[i:end])
	return skipSpace(b, skipSpace(b, end)+1)
}

// decodeValid decodes the valid value at i and returns it with its end. It keeps the objects and
// arrays it is inside on a stack of its own rather than recursing: under js/wasm a Go call is a
// call of the browser's WebAssembly stack, which a document MaxDepth deep overflows (a
// RangeError that ends the worker), so the depth Valid accepts must cost no stack.
func decodeValid(b []byte, i int) (any, int) {
	var stack []openValue
	for {
		var v any
		switch c := b[i]; c {
		case '{', '[':
			o := openValue{}
			if c == '{' {
				o.obj = map[string]any{}
			} else {
				o.arr = []any{}
			}
			i = skipSpace(b, i+1)
			if b[i] != '}' && b[i] != ']' {
				if c == '{' {
					i = o.readName(b, i)
				}
				stack = append(stack, o)
				continue
			}
			i++
			if c == '{' {
				v = o.obj
			} else {
				v = o.arr
			}
		case '"':
			end, _ := stringEnd(b, i)
			v, _ = Unquote(b[i:end])
			i = end
		case 't':
			v, i = true, i+4
		case 'f':
			v, i = false, i+5
		case 'n':
			v, i = nil, i+4
		default:
			end, _ := numberEnd(b, i)
			v, i = json.Number(b[i:end]), end
		}
		// v is whole: put it into the container it is in, and close every container it ends.
		for {
			if len(stack) == 0 {
				return v, i
			}
			top := &stack[len(stack)-1]
			if top.obj != nil {
				top.obj[top.name] = v
			} else {
				top.arr = append(top.arr, v)
			}
			i = skipSpace(b, i)
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if top.obj != nil {
					i = top.readName(b, i)
				}
				break
			}
			// b[i] is the container's '}' or ']' (the document is valid).
			i++
			if top.obj != nil {
				v = top.obj
			} else {
				v = top.arr
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// AppendValue appends v as json.Marshal writes it (escapeHTML true) or an Encoder with
// SetEscapeHTML(false): nil, bool, string, float64, int, int64, json.Number, json.RawMessage,
// map[string]any (names sorted), map[string]string, []any, []string and Appender, at any depth.
// It reports false for anything else, and for NaN, the infinities, an invalid json.Number or
// json.RawMessage, and nesting beyond MaxDepth; dst then holds part of the value.
func AppendValue(dst []byte, v any, escapeHTML bool) ([]byte, bool) {
	return appendValue(dst, v, escapeHTML, 0)
}

func appendValue(dst []byte, v any, escapeHTML bool, depth int) ([]byte, bool) {
	if depth > MaxDepth {
		return dst, false
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case string:
		return AppendString(dst, v, escapeHTML), true
	case float64:
		return AppendFloat(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case json.Number:
		if v == "" {
			return append(dst, '0'), true
		}
		if end, ok := numberEnd([]byte(v), 0); !ok || end != len(v) {
			return dst, false
		}
		return append(dst, v...), true
	case json.RawMessage:
		if v == nil {
			return append(dst, "null"...), true
		}
		if !Valid(v) {
			return dst, false
		}
		return AppendCompact(dst, v, escapeHTML), true
	case Appender:
		return v.AppendJSON(dst), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '{')
		ok := true
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(AppendString(dst, k, escapeHTML), ':')
			if dst, ok = appendValue(dst, v[k], escapeHTML, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case map[string]string:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(AppendString(dst, k, escapeHTML), ':')
			dst = AppendString(dst, v[k], escapeHTML)
		}
		return append(dst, '}'), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		ok := true
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendValue(dst, e, escapeHTML, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case []string:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, e, escapeHTML)
		}
		return append(dst, ']'), true
	}
	return dst, false
}
