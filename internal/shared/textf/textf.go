// Package textf formats the sentences of refusals and errors as fmt.Sprintf and fmt.Errorf do,
// for the verbs and values the shared rules use, without linking fmt: fmt's printer reaches every
// kind of value through reflect and cost the page's wasm about 40 KB of brotli (issue 38).
//
// The verbs are %v, %s, %q, %d, %x, %X, %T and %w (Errorf), with the flags '-', '+', '#', ' '
// and '0', a width and a precision (%.32s), and %% for a percent sign. The values are nil, bool,
// the integers, the floats (%v), string, []byte, error and fmt.Stringer's String method, and a
// type defined on one of those kinds (its underlying value, as fmt prints it when the type has no
// String method). What fmt would print for any of those, textf prints: TestAgreesWithFmt holds it
// to fmt. A value outside that set (a struct, a map, a slice other than []byte) prints as
// %!v(TYPE), where fmt would print its fields: give such a value a String method.
package textf

import (
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Sprintf returns format with each verb replaced by its argument, as fmt.Sprintf would.
func Sprintf(format string, args ...any) string {
	var p printer
	p.printf(format, args)
	return string(p.buf)
}

// Errorf returns an error whose message is Sprintf's, wrapping each argument of a %w verb as
// fmt.Errorf does: errors.Is and errors.As see through it to them.
func Errorf(format string, args ...any) error {
	var p printer
	p.wrapping = true
	p.printf(format, args)
	msg := string(p.buf)
	switch len(p.wrapped) {
	case 0:
		return &plainError{msg}
	case 1:
		return &wrapError{msg, p.wrapped[0]}
	default:
		return &wrapErrors{msg, p.wrapped}
	}
}

type plainError struct{ msg string }

func (e *plainError) Error() string { return e.msg }

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

type wrapErrors struct {
	msg  string
	errs []error
}

func (e *wrapErrors) Error() string   { return e.msg }
func (e *wrapErrors) Unwrap() []error { return e.errs }

type stringer interface{ String() string }

// spec is one verb's flags, width and precision.
type spec struct {
	minus, plus, sharp, space, zero bool
	width, prec                     int // -1 when absent
}

type printer struct {
	buf      []byte
	wrapping bool
	wrapped  []error
}

func (p *printer) printf(format string, args []any) {
	next := 0
	for i := 0; i < len(format); {
		c := format[i]
		if c != '%' {
			j := i + 1
			for j < len(format) && format[j] != '%' {
				j++
			}
			p.buf = append(p.buf, format[i:j]...)
			i = j
			continue
		}
		i++
		s := spec{width: -1, prec: -1}
	flags:
		for ; i < len(format); i++ {
			switch format[i] {
			case '-':
				s.minus = true
			case '+':
				s.plus = true
			case '#':
				s.sharp = true
			case ' ':
				s.space = true
			case '0':
				s.zero = true
			default:
				break flags
			}
		}
		s.width, i = number(format, i)
		if i < len(format) && format[i] == '.' {
			s.prec, i = number(format, i+1)
			if s.prec < 0 {
				s.prec = 0
			}
		}
		if i >= len(format) {
			p.buf = append(p.buf, "%!(NOVERB)"...)
			break
		}
		verb, size := utf8.DecodeRuneInString(format[i:])
		i += size
		if verb == '%' {
			p.buf = append(p.buf, '%')
			continue
		}
		if next >= len(args) {
			p.buf = append(p.buf, '%', '!')
			p.buf = utf8.AppendRune(p.buf, verb)
			p.buf = append(p.buf, "(MISSING)"...)
			continue
		}
		arg := args[next]
		next++
		if verb == 'w' && p.wrapping {
			if err, ok := arg.(error); ok {
				p.wrapped = append(p.wrapped, err)
				verb = 'v'
			}
		}
		p.arg(arg, verb, s)
	}
	if next < len(args) {
		p.buf = append(p.buf, "%!(EXTRA "...)
		for k, arg := range args[next:] {
			if k > 0 {
				p.buf = append(p.buf, ", "...)
			}
			p.buf = append(p.buf, typeName(arg)...)
			p.buf = append(p.buf, '=')
			p.arg(arg, 'v', spec{width: -1, prec: -1})
		}
		p.buf = append(p.buf, ')')
	}
}

// MaxWidth bounds a width or precision written in a format, as fmt bounds it: digits past it are
// read but no longer counted, so a format cannot ask for an unbounded amount of padding.
const MaxWidth = 1e6

// number reads the decimal number at format[i:], returning -1 when there is none.
func number(format string, i int) (int, int) {
	n := -1
	for ; i < len(format) && '0' <= format[i] && format[i] <= '9'; i++ {
		if n < 0 {
			n = 0
		}
		if n < MaxWidth {
			n = n*10 + int(format[i]-'0')
		}
	}
	return n, i
}

func typeName(arg any) string {
	if arg == nil {
		return "<nil>"
	}
	return reflect.TypeOf(arg).String()
}

func (p *printer) arg(arg any, verb rune, s spec) {
	if arg == nil {
		switch verb {
		case 'T', 'v':
			p.pad("<nil>", s)
		default:
			p.bad(verb, arg, s)
		}
		return
	}
	if verb == 'T' {
		p.pad(typeName(arg), s)
		return
	}
	switch verb {
	case 'v', 's', 'x', 'X', 'q':
		switch v := arg.(type) {
		case error:
			p.text(v.Error(), verb, s, arg)
			return
		case stringer:
			p.text(v.String(), verb, s, arg)
			return
		}
	}
	switch v := arg.(type) {
	case string:
		p.text(v, verb, s, arg)
	case []byte:
		if verb == 'd' || verb == 'v' {
			p.buf = append(p.buf, '[')
			for i, c := range v {
				if i > 0 {
					p.buf = append(p.buf, ' ')
				}
				p.integer(int64(c), true, 'd', s, c)
			}
			p.buf = append(p.buf, ']')
			return
		}
		p.text(string(v), verb, s, arg)
	case bool:
		if verb != 'v' {
			p.bad(verb, arg, s)
			return
		}
		p.pad(strconv.FormatBool(v), s)
	case float64:
		p.float(v, 64, verb, s, arg)
	case int:
		p.integer(int64(v), false, verb, s, arg)
	case int64:
		p.integer(v, false, verb, s, arg)
	case uint64:
		p.integer(int64(v), true, verb, s, arg)
	default:
		// The other sizes, and a type defined on a basic kind without a String method: its
		// underlying value.
		r := reflect.ValueOf(arg)
		switch r.Kind() {
		case reflect.String:
			p.text(r.String(), verb, s, arg)
		case reflect.Bool:
			p.arg(r.Bool(), verb, s)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			p.integer(r.Int(), false, verb, s, arg)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			p.integer(int64(r.Uint()), true, verb, s, arg)
		case reflect.Float32, reflect.Float64:
			p.float(r.Float(), r.Type().Bits(), verb, s, arg)
		default:
			p.buf = append(p.buf, '%', '!')
			p.buf = utf8.AppendRune(p.buf, verb)
			p.buf = append(p.buf, '(')
			p.buf = append(p.buf, typeName(arg)...)
			p.buf = append(p.buf, ')')
		}
	}
}

// bad writes fmt's mark for a verb that does not fit its value, %!d(string=hi), the value under
// %v with the verb's flags.
func (p *printer) bad(verb rune, arg any, s spec) {
	p.buf = append(p.buf, '%', '!')
	p.buf = utf8.AppendRune(p.buf, verb)
	p.buf = append(p.buf, '(')
	if arg == nil {
		p.buf = append(p.buf, "<nil>"...)
	} else {
		p.buf = append(p.buf, typeName(arg)...)
		p.buf = append(p.buf, '=')
		p.arg(arg, 'v', s)
	}
	p.buf = append(p.buf, ')')
}

// text writes a string under %v, %s, %q, %x or %X.
func (p *printer) text(v string, verb rune, s spec, arg any) {
	if s.prec >= 0 {
		n := 0
		for i := range v {
			if n == s.prec {
				v = v[:i]
				break
			}
			n++
		}
	}
	switch verb {
	case 'v', 's':
		p.pad(v, s)
	case 'q':
		switch {
		case s.sharp && strconv.CanBackquote(v):
			p.pad("`"+v+"`", s)
		case s.plus:
			p.pad(strconv.QuoteToASCII(v), s)
		default:
			p.pad(strconv.Quote(v), s)
		}
	case 'x', 'X':
		digits := "0123456789abcdef"
		if verb == 'X' {
			digits = "0123456789ABCDEF"
		}
		var b []byte
		for i := 0; i < len(v); i++ {
			if s.space && i > 0 {
				b = append(b, ' ')
			}
			if s.sharp && (s.space || i == 0) {
				b = append(b, '0', byte(verb))
			}
			b = append(b, digits[v[i]>>4], digits[v[i]&0xF])
		}
		p.pad(string(b), s)
	default:
		p.bad(verb, arg, s)
	}
}

// integer writes an integer under %v, %d, %x, %X (and %c, %q, %U are fmt's alone: marked bad).
func (p *printer) integer(v int64, unsigned bool, verb rune, s spec, arg any) {
	base := 10
	switch verb {
	case 'v', 'd':
	case 'x', 'X':
		base = 16
	case 'q':
		r := rune(v)
		if uint64(v) > utf8.MaxRune {
			r = utf8.RuneError
		}
		if s.plus {
			p.pad(strconv.QuoteRuneToASCII(r), s)
		} else {
			p.pad(strconv.QuoteRune(r), s)
		}
		return
	default:
		p.bad(verb, arg, s)
		return
	}
	var digits string
	neg := false
	if unsigned {
		digits = strconv.FormatUint(uint64(v), base)
	} else {
		if v < 0 {
			neg = true
			digits = strconv.FormatUint(uint64(-v), base)
		} else {
			digits = strconv.FormatUint(uint64(v), base)
		}
	}
	if verb == 'X' {
		digits = upper(digits)
	}
	if s.prec >= 0 {
		if s.prec == 0 && v == 0 {
			digits = ""
		}
		for len(digits) < s.prec {
			digits = "0" + digits
		}
	}
	prefix := ""
	if s.sharp && base == 16 {
		prefix = "0x"
		if verb == 'X' {
			prefix = "0X"
		}
	}
	sign := ""
	switch {
	case neg:
		sign = "-"
	case s.plus:
		sign = "+"
	case s.space:
		sign = " "
	}
	if s.zero && !s.minus && s.prec < 0 {
		for len(sign)+len(prefix)+len(digits) < s.width {
			digits = "0" + digits
		}
	}
	s.zero = false
	p.pad(sign+prefix+digits, s)
}

// float writes a float under %v (fmt's %g with the shortest digits that read back).
func (p *printer) float(v float64, bits int, verb rune, s spec, arg any) {
	if verb != 'v' {
		p.bad(verb, arg, s)
		return
	}
	str := strconv.FormatFloat(v, 'g', s.prec, bits)
	sign := ""
	if str[0] == '-' || str[0] == '+' {
		sign, str = str[:1], str[1:]
	} else if s.plus {
		sign = "+"
	} else if s.space {
		sign = " "
	}
	if s.zero && !s.minus && str != "Inf" && str != "NaN" {
		for len(sign)+len(str) < s.width {
			str = "0" + str
		}
	}
	s.zero = false
	p.pad(sign+str, s)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// pad writes v within the spec's width: spaces before it, or after it with the '-' flag.
func (p *printer) pad(v string, s spec) {
	n := s.width - utf8.RuneCountInString(v)
	if n > 0 && !s.minus {
		fill := byte(' ')
		if s.zero {
			fill = '0'
		}
		for range n {
			p.buf = append(p.buf, fill)
		}
	}
	p.buf = append(p.buf, v...)
	if n > 0 && s.minus {
		for range n {
			p.buf = append(p.buf, ' ')
		}
	}
}
