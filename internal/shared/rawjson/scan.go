package rawjson

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Valid reports whether b is exactly one JSON value with white space around it at most: what
// json.Valid reports (a string's bytes are not checked to be UTF-8, as there), nesting at most
// MaxDepth deep.
func Valid(b []byte) bool {
	end, ok := valueEnd(b, skipSpace(b, 0))
	return ok && skipSpace(b, end) == len(b)
}

// valueEnd returns the end of the one JSON value that starts at i, validating it.
func valueEnd(b []byte, i int) (int, bool) {
	end, failAt := Scan(b, i)
	return end, failAt < 0
}

// Scan validates the one JSON value that starts at i (white space before it skipped) and returns
// its end, with failAt -1; or, when it is not valid, failAt: the index of the byte where it stops
// being JSON (where encoding/json's scanner reports its syntax error, one before the error's
// Offset), or len(b) when b ends first.
func Scan(b []byte, i int) (end, failAt int) {
	var shallow [32]byte
	stack := shallow[:0] // '{' or '[' for each open container; on the stack while shallow
	i = skipSpace(b, i)
	for {
		if i >= len(b) {
			return 0, len(b)
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) == MaxDepth {
				return 0, i
			}
			i = skipSpace(b, i+1)
			if i < len(b) && ((c == '{' && b[i] == '}') || (c == '[' && b[i] == ']')) {
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				var ok bool
				if i, ok = keyEnd(b, i); !ok {
					return 0, i
				}
			}
			continue
		case '"':
			var ok bool
			if i, ok = stringEnd(b, i); !ok {
				return 0, i
			}
		case 't', 'f', 'n':
			lit := "null"
			if c == 't' {
				lit = "true"
			} else if c == 'f' {
				lit = "false"
			}
			var ok bool
			if i, ok = literal(b, i, lit); !ok {
				return 0, i
			}
		default:
			var ok bool
			if i, ok = numberEnd(b, i); !ok {
				return 0, i
			}
		}
		for {
			if len(stack) == 0 {
				return i, -1
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, len(b)
			}
			top := stack[len(stack)-1]
			if (top == '{' && b[i] == '}') || (top == '[' && b[i] == ']') {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return 0, i
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				var ok bool
				if i, ok = keyEnd(b, i); !ok {
					return 0, i
				}
			}
			break
		}
	}
}

// keyEnd reads `"key" :` and white space from i; on failure it returns where.
func keyEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := stringEnd(b, i)
	if !ok {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func literal(b []byte, i int, lit string) (int, bool) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return i + k, false
		}
	}
	return i + len(lit), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberEnd returns the end of the number at i, or where it stops being one.
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}

func isHex(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

// stringEnd returns the end of the string literal at i (after its closing quote), or where it
// stops being one.
func stringEnd(b []byte, i int) (int, bool) {
	i++
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i + 1, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(b) || !isHex(b[k]) {
						return k, false
					}
				}
				i += 6
			default:
				return i + 1, false
			}
		default:
			i++
		}
	}
	return i, false
}

// Unquote decodes raw, which must be exactly one JSON string literal, as json.Unmarshal decodes
// it into a string: an invalid UTF-8 byte and an unpaired surrogate escape each become U+FFFD.
func Unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if end, ok := stringEnd(raw, 0); !ok || end != len(raw) {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	plain := true
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(body), true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\':
			switch e := body[i+1]; e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(body[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if len(body)-i >= 6 && body[i] == '\\' && body[i+1] == 'u' {
						if d := utf16.DecodeRune(r, hex4(body[i+2:])); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, body[i:i+size]...)
			}
			i += size
		}
	}
	return string(out), true
}

// hex4 reads four hex digits (already checked).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case isDigit(c):
			c -= '0'
		case c >= 'a':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// AppendCompact appends b, which must be valid JSON, without its insignificant white space, as
// json.Compact does; with escapeHTML it also escapes <, > and & within strings, as json.Marshal
// does for a json.RawMessage, and U+2028 and U+2029 as well.
func AppendCompact(dst, b []byte, escapeHTML bool) []byte {
	start := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inString {
			if isSpace(c) {
				dst = append(dst, b[start:i]...)
				start = i + 1
			} else if c == '"' {
				inString = true
			}
			continue
		}
		switch {
		case c == '\\':
			i++
		case c == '"':
			inString = false
		case escapeHTML && (c == '<' || c == '>' || c == '&'):
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			start = i + 1
		case escapeHTML && c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[b[i+2]&0xF])
			start = i + 3
			i += 2
		}
	}
	return append(dst, b[start:]...)
}

// AppendIndent appends b, which must be valid JSON, indented as json.Indent writes it: each
// member and element on a line of its own, begun with prefix and indent once per level of
// nesting, a space after each colon, empty objects and arrays as {} and []; white space before
// the value is dropped and after it kept.
func AppendIndent(dst, b []byte, prefix, indent string) []byte {
	start := skipSpace(b, 0)
	end, _ := valueEnd(b, start)
	depth := 0
	open := false // a { or [ was written and its first member not yet
	for i := start; i < end; i++ {
		c := b[i]
		if isSpace(c) {
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			depth++
			dst = appendNewline(dst, prefix, indent, depth)
		}
		switch c {
		case '"':
			j, _ := stringEnd(b, i)
			dst = append(dst, b[i:j]...)
			i = j - 1
		case '{', '[':
			open = true
			dst = append(dst, c)
		case ',':
			dst = appendNewline(append(dst, c), prefix, indent, depth)
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				dst = appendNewline(dst, prefix, indent, depth)
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, b[end:]...)
}

func appendNewline(dst []byte, prefix, indent string, depth int) []byte {
	dst = append(append(dst, '\n'), prefix...)
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}

// Members calls fn with each member of obj, which must be exactly one JSON object with white space
// around it at most, in document order: the name decoded (as Unquote) and the value as written.
// It reports false, before calling fn at all, when obj is not one valid object. A name given
// twice is given to fn twice; fn decides (json.Unmarshal into a map keeps the last).
func Members(obj []byte, fn func(name string, value []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' || !Valid(obj) {
		return false
	}
	i = skipSpace(obj, i+1)
	if obj[i] == '}' {
		return true
	}
	for {
		kEnd, _ := stringEnd(obj, i)
		name, _ := Unquote(obj[i:kEnd])
		i = skipSpace(obj, kEnd)
		i = skipSpace(obj, i+1) // the colon
		vEnd, _ := valueEnd(obj, i)
		if !fn(name, obj[i:vEnd]) {
			return true
		}
		i = skipSpace(obj, vEnd)
		if obj[i] == '}' {
			return true
		}
		i = skipSpace(obj, i+1) // the comma
	}
}

// First returns the first JSON value of b (after white space), valid, and what follows it, as a
// json.Decoder reads one value from a stream and leaves the rest unread; ok is false when b does
// not begin with one valid value.
func First(b []byte) (value, rest []byte, ok bool) {
	start := skipSpace(b, 0)
	end, ok := valueEnd(b, start)
	if !ok {
		return nil, nil, false
	}
	return b[start:end], b[end:], true
}

// Fold is name as encoding/json folds a member name to match it to a field case-insensitively
// (ASCII letters upper-cased, any other rune the smallest of its case-folding orbit): a member
// goes to the field its name matches exactly, else to the one whose folded name equals its own.
func Fold(name string) string { return string(AppendFold(nil, name)) }

// AppendFold appends Fold(name) to dst; `switch string(AppendFold(buf[:0], name))` over a
// stack buffer folds a member name without allocating.
func AppendFold(dst []byte, name string) []byte {
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(name[i:])
		dst = utf8.AppendRune(dst, foldRune(r))
		i += n
	}
	return dst
}

// FoldEqual reports whether Fold(a) == Fold(b), without allocating when both are ASCII.
func FoldEqual(a, b string) bool {
	if !isASCII(a) || !isASCII(b) {
		return Fold(a) == Fold(b)
	}
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// foldRune is the smallest rune of r's case-folding orbit (K, k and the Kelvin sign fold alike).
func foldRune(r rune) rune {
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next
		}
		r = next
	}
}

// Float reads raw, one JSON value, as json.Unmarshal reads it into a float64: false when it is not
// a number or is out of float64's range.
func Float(raw []byte) (float64, bool) {
	if end, ok := numberEnd(raw, 0); len(raw) == 0 || !ok || end != len(raw) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// Elements calls fn with each element of arr, one valid JSON array, as written.
func Elements(arr []byte, fn func(value []byte)) {
	i := skipSpace(arr, 1)
	if arr[i] == ']' {
		return
	}
	for {
		end, _ := valueEnd(arr, i)
		fn(arr[i:end])
		i = skipSpace(arr, end)
		if arr[i] == ']' {
			return
		}
		i = skipSpace(arr, i+1)
	}
}

// Strings reads raw as json.Unmarshal reads it into a []string: an array of strings (a null
// element is ""), or null (a nil slice). It reports false for anything else, or raw that is not
// exactly one JSON value with white space around it at most.
func Strings(raw []byte) ([]string, bool) {
	i := skipSpace(raw, 0)
	if !Valid(raw) {
		return nil, false
	}
	if raw[i] == 'n' {
		return nil, true
	}
	if raw[i] != '[' {
		return nil, false
	}
	out, ok := []string{}, true
	Elements(raw[i:], func(e []byte) {
		if string(e) == "null" {
			out = append(out, "")
			return
		}
		s, isString := Unquote(e)
		ok = ok && isString
		out = append(out, s)
	})
	return out, ok
}
