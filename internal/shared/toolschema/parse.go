package toolschema

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// errTooDeep and errTooMany report a value past the parser's depth or node limit.
var (
	errTooDeep = errors.New("nested too deeply")
	errTooMany = errors.New("too many values")
)

// parseStats is what the parser notices on the way, so the common case needs no second walk.
type parseStats struct {
	nodes     int
	sawNull   bool // some value is null
	sawProto  bool // some object has an own "__proto__" key
	badNumber bool // some number literal is outside MaxNumberLiteralBytes or MaxNumberExponent
}

// parser decodes one JSON value into the types encoding/json gives with UseNumber (map[string]any,
// []any, string, json.Number, bool, nil), the later of two equal keys winning as there. It exists
// because arguments are decoded on every call and encoding/json scans its input twice; it is
// checked against encoding/json by FuzzParser. Input must be valid UTF-8. It stops past maxDepth
// containers or maxNodes values (see the package doc), so a deep or wide value costs no more than
// the part within the bounds.
type parser struct {
	b        []byte
	s        string // b as one string, so keys and plain strings are substrings, not copies
	i        int
	maxDepth int
	maxNodes int
	st       parseStats
}

func parseJSON(b []byte, maxDepth, maxNodes int) (any, parseStats, error) {
	p := parser{b: b, s: string(b), maxDepth: maxDepth, maxNodes: maxNodes}
	v, err := p.value(0)
	if err != nil {
		return nil, p.st, err
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, p.st, p.fail("data after the value")
	}
	return v, p.st, nil
}

func (p *parser) fail(what string) error {
	return errors.New(what + " at byte " + strconv.Itoa(p.i))
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	p.ws()
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end")
	}
	p.st.nodes++
	if p.st.nodes > p.maxNodes {
		return nil, errTooMany
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if depth >= p.maxDepth {
			return nil, errTooDeep
		}
		return p.object(depth + 1)
	case c == '[':
		if depth >= p.maxDepth {
			return nil, errTooDeep
		}
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		p.st.sawNull = true
		return nil, p.literal("null")
	}
	return nil, p.fail("unexpected character")
}

func (p *parser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.fail("bad literal")
	}
	p.i += len(word)
	return nil
}

func (p *parser) object(depth int) (any, error) {
	p.i++ // {
	obj := make(map[string]any)
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return obj, nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("expected a key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if k == "__proto__" {
			p.st.sawProto = true
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		obj[k] = v
		p.ws()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	p.i++ // [
	arr := []any{}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arr, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.ws()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return arr, nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

func (p *parser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, nil
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return "", p.fail("control character in string")
		}
		p.i++
	}
	return "", p.fail("unterminated string")
}

// escaped finishes a string that holds an escape, decoding as encoding/json does (a lone
// surrogate becomes U+FFFD).
func (p *parser) escaped(start int) (string, error) {
	out := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", p.fail("unterminated string")
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
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
			r, ok := p.hex4()
			if !ok {
				return "", p.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					if x, ok := p.hex4(); ok {
						r2 = x
					} else {
						return "", p.fail("bad \\u escape")
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						continue
					}
					p.i = save // not a pair: the second escape stands alone
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", p.fail("bad escape")
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}

func (p *parser) number() (any, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return nil, p.fail("bad number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, p.fail("bad number")
		}
	}
	n := p.s[start:p.i]
	if !numberInBounds(n) {
		p.st.badNumber = true
	}
	return json.Number(n), nil
}

func (p *parser) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}
