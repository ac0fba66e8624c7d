package toolschema

import (
	"strconv"
	"strings"
)

// maxDecimalExponent bounds the exponent parseDecimal accepts. The checker meets only literals
// within MaxNumberLiteralBytes and MaxNumberExponent; this keeps parseDecimal's arithmetic and
// String's output small on any input.
const maxDecimalExponent = 1 << 16

// decimal is the exact value of a JSON number literal: (-1)^neg × 0.digits × 10^exp, digits
// without leading or trailing zeros. Zero is the zero decimal (digits ""). JSON numbers are finite
// decimals, so comparing them needs no fractions: the package compares decimals rather than
// math/big's Rat, which with its printing links about 50 KB of brotli into the page's wasm.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal reads a JSON number literal (RFC 8259's grammar); ok is false for anything else
// and for an exponent beyond maxDecimalExponent.
func parseDecimal(s string) (d decimal, ok bool) {
	rest := s
	if strings.HasPrefix(rest, "-") {
		d.neg = true
		rest = rest[1:]
	}
	intEnd := digitRun(rest)
	if intEnd == 0 || intEnd > 1 && rest[0] == '0' {
		return decimal{}, false
	}
	intPart, frac := rest[:intEnd], ""
	rest = rest[intEnd:]
	if strings.HasPrefix(rest, ".") {
		n := digitRun(rest[1:])
		if n == 0 {
			return decimal{}, false
		}
		frac, rest = rest[1:1+n], rest[1+n:]
	}
	exp := 0
	if rest != "" {
		if rest[0] != 'e' && rest[0] != 'E' {
			return decimal{}, false
		}
		e := rest[1:]
		if strings.HasPrefix(e, "+") || strings.HasPrefix(e, "-") {
			e = e[1:]
		}
		if digitRun(e) != len(e) || e == "" {
			return decimal{}, false
		}
		e = strings.TrimLeft(e, "0")
		if len(e) > 6 {
			return decimal{}, false
		}
		exp, _ = strconv.Atoi(e)
		if rest[1] == '-' {
			exp = -exp
		}
		if exp > maxDecimalExponent || exp < -maxDecimalExponent {
			return decimal{}, false
		}
	}
	mant := intPart + frac
	point := len(intPart) + exp
	for mant != "" && mant[0] == '0' {
		mant = mant[1:]
		point--
	}
	mant = strings.TrimRight(mant, "0")
	if mant == "" {
		return decimal{}, true
	}
	d.digits, d.exp = mant, point
	return d, true
}

// digitRun is the length of the run of ASCII digits s starts with.
func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// sign is -1, 0 or +1.
func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmp compares d with e by value: -1, 0 or +1.
func (d decimal) cmp(e decimal) int {
	if ds, es := d.sign(), e.sign(); ds != es || ds == 0 {
		return cmpInt(ds, es)
	}
	c := cmpInt(d.exp, e.exp)
	if c == 0 {
		c = strings.Compare(d.digits, e.digits) // no trailing zeros: text order is value order
	}
	if d.neg {
		return -c
	}
	return c
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isInt reports whether d has no fractional part.
func (d decimal) isInt() bool {
	return len(d.digits) <= d.exp || d.digits == ""
}

// int64 is d as an int64; ok is false when d is not an integer or does not fit.
func (d decimal) int64() (int64, bool) {
	if !d.isInt() || d.exp > 19 {
		return 0, false
	}
	x, err := strconv.ParseInt(d.String(), 10, 64)
	return x, err == nil
}

// String writes d exactly, in plain decimal notation without an exponent: "-12.5", "1000", "0.001".
func (d decimal) String() string {
	if d.digits == "" {
		return "0"
	}
	var sb strings.Builder
	if d.neg {
		sb.WriteByte('-')
	}
	switch {
	case d.exp <= 0:
		sb.WriteString("0.")
		sb.WriteString(strings.Repeat("0", -d.exp))
		sb.WriteString(d.digits)
	case d.exp >= len(d.digits):
		sb.WriteString(d.digits)
		sb.WriteString(strings.Repeat("0", d.exp-len(d.digits)))
	default:
		sb.WriteString(d.digits[:d.exp])
		sb.WriteByte('.')
		sb.WriteString(d.digits[d.exp:])
	}
	return sb.String()
}
