package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
)

// isNull reports whether a raw property value is absent or JSON null; the wire treats both alike.
func isNull(raw []byte) bool { return raw == nil || string(raw) == "null" }

// stringValue decodes a raw JSON value that must be a string.
func stringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	return rawjson.Unquote(raw)
}

// compactObject returns a compact copy of a raw JSON value that must be an object; spaced says
// whether the scanner saw whitespace to remove.
func compactObject(raw []byte, spaced bool) (json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	if !spaced {
		return append(json.RawMessage(nil), raw...), true
	}
	return compactValid(make(json.RawMessage, 0, len(raw)), raw), true
}

// canonNum is a JSON number reduced to sign, significant digits and a power of ten, so that two
// spellings of one value compare equal.
type canonNum struct {
	neg    bool
	digits string // no leading or trailing zeros; "" for zero
	exp    int64
}

// maxExpDigits bounds the exponent a number may spell and still be compared by value.
const maxExpDigits = 15

func canonical(s string) (canonNum, bool) {
	var n canonNum
	i := 0
	if i < len(s) && s[i] == '-' {
		n.neg = true
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[intStart:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
	}
	if intPart == "" {
		return n, false
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		es := i
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if len(s)-i > maxExpDigits {
			return n, false
		}
		e, err := strconv.ParseInt(s[es:], 10, 64)
		if err != nil {
			return n, false
		}
		exp = e
		i = len(s)
	}
	if i != len(s) {
		return n, false
	}
	digits := intPart + frac
	exp -= int64(len(frac))
	j := 0
	for j < len(digits) && digits[j] == '0' {
		j++
	}
	digits = digits[j:]
	k := len(digits)
	for k > 0 && digits[k-1] == '0' {
		k--
	}
	exp += int64(len(digits) - k)
	digits = digits[:k]
	if digits == "" {
		return canonNum{}, true
	}
	n.digits = digits
	n.exp = exp
	return n, true
}

// sameNumber reports whether two JSON number spellings name the same value. Numbers whose exponent
// is too long to compare are equal only when spelled identically.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	ca, okA := canonical(a)
	cb, okB := canonical(b)
	return okA && okB && ca == cb
}

// appendString appends s as a JSON string, escaping only what JSON requires (and U+2028, U+2029,
// which some JavaScript parsers treat as line ends), so a frame stays readable: rawjson's writer
// without HTML escaping.
func appendString(dst []byte, s string) []byte { return rawjson.AppendString(dst, s, false) }

// appendObject appends raw, which must be one JSON object, without insignificant whitespace, and
// reports whether it was one, and how deep its brackets nest (1 for an object with no object or
// array inside, as boundsFault counts). The validator (valid) reads raw once, and shapeOf once
// more; raw with no whitespace outside its strings (what encoding/json and this package write)
// is then copied as it is.
func appendObject(dst, raw []byte) ([]byte, int, bool) {
	i := 0
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	if i == len(raw) || raw[i] != '{' {
		return dst, 0, false
	}
	if !valid(raw) {
		return dst, 0, false
	}
	spaced, depth := shapeOf(raw)
	if !spaced {
		return append(dst, raw...), depth, true
	}
	return compactValid(dst, raw), depth, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// shapeOf reports, for raw that is valid JSON, whether it holds whitespace outside its strings,
// and the deepest nesting of its brackets outside strings (boundsFault's count).
func shapeOf(raw []byte) (spaced bool, depth int) {
	inString, d := false, 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString && plainInString[c] {
			continue
		}
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if d++; d > depth {
				depth = d
			}
		case c == '}' || c == ']':
			d--
		case isSpace(c):
			spaced = true
		}
	}
	return spaced, depth
}
