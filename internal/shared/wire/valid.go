package wire

// valid reports whether b is exactly one JSON value (RFC 8259), with optional whitespace around
// it: what encoding/json's Valid reports, without its per-byte state machine (a function call for
// every byte, the largest cost of an answer's marshalling in the page: TestValidAgreesWithJSON
// and FuzzValid hold the two to the same verdicts). As there, a string's bytes are not checked
// to be UTF-8 (scanFrame checks the whole frame first). Nesting costs one byte of a kept stack
// per level, whatever the depth.
func valid(b []byte) bool {
	var stack []byte // '{' or '[' for each open container
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == closer(c) {
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i = objectKey(b, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			if i = stringEnd(b, i); i < 0 {
				return false
			}
		case 't':
			if i = literal(b, i, "true"); i < 0 {
				return false
			}
		case 'f':
			if i = literal(b, i, "false"); i < 0 {
				return false
			}
		case 'n':
			if i = literal(b, i, "null"); i < 0 {
				return false
			}
		default:
			if i = numberEnd(b, i); i < 0 {
				return false
			}
		}
		// A value ended before i: close containers, or go on to the next member or element.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == closer(top) {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i = objectKey(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// plainInString[c] is whether the byte c stands for itself inside a JSON string: not a control
// character, '"' or '\\'. One lookup a byte instead of three comparisons (a string's bytes are
// most of an observation's).
var plainInString = func() (plain [256]bool) {
	for c := 0x20; c < len(plain); c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// objectKey reads `"key" :` at i and returns where the member's value starts, or -1.
func objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// literal returns the index after word at b[i:], or -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// stringEnd returns the index after the string whose opening quote is at i, or -1 when it is
// not a JSON string: unterminated, holding a control character, or an escape JSON lacks.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		c := b[i]
		if plainInString[c] {
			continue
		}
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// numberEnd returns the index after the number at i, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
// or -1.
func numberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b) || !isDigit(b[i]):
		return -1
	case b[i] == '0':
		i++
	default:
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
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
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

// compactValid appends b, valid JSON, to dst without the whitespace outside its strings: what
// encoding/json's Compact writes for it.
func compactValid(dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			i = stringEnd(b, i) - 1
		case isSpace(c):
			dst = append(dst, b[start:i]...)
			start = i + 1
		}
	}
	return append(dst, b[start:]...)
}
