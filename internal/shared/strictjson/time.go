package strictjson

import "time"

// The page's records carry their times as time.Time's MarshalJSON writes them (RFC 3339 with
// nanoseconds, quoted). readTime reads one back as (*time.Time).UnmarshalJSON does, without
// time.Parse: a call of UnmarshalJSON through an interface, or time.Parse itself, links the
// standard library's layout parser (about 25 KB of code, 13.5 KB of the page's brotli).
// TestReadTimeAgreesWithTime, FuzzReadTimeAgreesWithTime and FuzzReadTimeOfDigits hold it to
// UnmarshalJSON: the same time, in the same location, and the same error, a *time.ParseError with
// the same fields.

// timeLayout is the layout UnmarshalJSON parses with; it is named in its errors.
const timeLayout = time.RFC3339

var errTimeNotString = errorString("Time.UnmarshalJSON: input is not a JSON string")

// readTime sets *t from v, a JSON value as written, as (*time.Time).UnmarshalJSON does: null
// leaves *t as it is; a string's bytes between its quotes, unescaped or not, are read as
// time.Parse(time.RFC3339, s) reads them, with its leniencies (a one-digit hour, a comma before
// the fraction, any number of fraction digits, a zone offset of 24 hours or 60 minutes).
func readTime(v []byte, t *time.Time) error {
	if string(v) == "null" {
		return nil
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return errTimeNotString
	}
	var err error
	*t, err = parseRFC3339(v[1 : len(v)-1])
	return err
}

// timeSeparators are the bytes before timeFields' numbers (the first has none).
const timeSeparators = " --T::"

// timeFields are the layout's numbers before the fraction, in order: each one's element in the
// layout, its width (a one-digit hour is taken), its range, and the words of a number out of it
// (the day's is checked against the month at the end, as time.Parse does).
var timeFields = [...]struct {
	elem       string
	width      int
	oneDigitOK bool
	lo, hi     int
	what       string
}{
	{"2006", 4, false, 0, 9999, ""},
	{"01", 2, false, 1, 12, "month"},
	{"02", 2, false, 0, 99, ""},
	{"15", 2, true, 0, 23, "hour"},
	{"04", 2, false, 0, 59, "minute"},
	{"05", 2, false, 0, 59, "second"},
}

// parseRFC3339 is time.Parse(time.RFC3339, value): the layout's elements in order, each read and
// refused with the words time.Parse's own layout walk gives it.
func parseRFC3339(value []byte) (time.Time, error) {
	rest := value
	var n [len(timeFields)]int
	for i, f := range timeFields {
		if i > 0 {
			if len(rest) == 0 || rest[0] != timeSeparators[i] {
				return parseError(value, timeSeparators[i:i+1], rest, "")
			}
			rest = rest[1:]
		}
		w := leadingDigits(rest, f.width)
		if w < f.width && !(f.oneDigitOK && w == 1) {
			return parseError(value, f.elem, rest, "")
		}
		n[i], rest = number(rest[:w]), rest[w:]
		if n[i] < f.lo || n[i] > f.hi {
			return parseError(value, f.elem, rest, ": "+f.what+" out of range")
		}
	}
	// A fraction the layout does not name: a period or a comma and every digit after it, the
	// first nine kept.
	nsec := 0
	if len(rest) >= 2 && (rest[0] == '.' || rest[0] == ',') && isDigitByte(rest[1]) {
		w := 1 + leadingDigits(rest[1:], len(rest))
		frac := rest[1:min(w, 10)]
		nsec = number(frac)
		for range 9 - len(frac) {
			nsec *= 10
		}
		rest = rest[w:]
	}
	// "Z07:00": Z, or a sign, two digits, a colon and two digits (an hour up to 24, minutes up
	// to 60, as time.Parse allows).
	utc, offset := false, 0
	if len(rest) != 0 && rest[0] == 'Z' {
		rest, utc = rest[1:], true
	} else {
		zone := rest
		if len(rest) < 6 || rest[3] != ':' {
			return parseError(value, "Z07:00", zone, "")
		}
		sign, hh, mm := rest[0], rest[1:3], rest[4:6]
		rest = rest[6:]
		okHour, okMinute := leadingDigits(hh, 2) == 2, leadingDigits(mm, 2) == 2
		hr, mn := 0, 0
		if okHour {
			hr = number(hh)
			if okMinute {
				mn = number(mm)
			}
		}
		switch {
		case mn > 60:
			return parseError(value, "Z07:00", rest, ": time zone offset minute out of range")
		case hr > 24:
			return parseError(value, "Z07:00", rest, ": time zone offset hour out of range")
		case !okHour || !okMinute || (sign != '+' && sign != '-'):
			return parseError(value, "Z07:00", zone, "")
		}
		offset = (hr*60 + mn) * 60
		if sign == '-' {
			offset = -offset
		}
	}
	if len(rest) != 0 {
		return parseError(value, "", rest, ": extra text: "+quoteParsed(rest))
	}
	year, month, day := n[0], time.Month(n[1]), n[2]
	if day < 1 || day > daysIn(month, year) {
		return parseError(value, "", nil, ": day out of range")
	}
	t := time.Date(year, month, day, n[3], n[4], n[5], nsec, time.UTC)
	if utc {
		return t, nil
	}
	// The local zone when its offset at that instant is the one written, else a zone fixed at it.
	t = t.Add(-time.Duration(offset) * time.Second)
	if local := t.In(time.Local); zoneOffset(local) == offset {
		return local, nil
	}
	return t.In(time.FixedZone("", offset)), nil
}

// parseError is time.Parse's error: layoutElem is what the layout wanted, at valueElem. It and
// the helpers below are not inlined: their copies were half of parseRFC3339's code in the page
// (16.8 KB of wasm before, 7.5 KB after).
//
//go:noinline
func parseError(value []byte, layoutElem string, valueElem []byte, message string) (time.Time, error) {
	return time.Time{}, &time.ParseError{Layout: timeLayout, Value: string(value), LayoutElem: layoutElem, ValueElem: string(valueElem),
		Message: message}
}

func zoneOffset(t time.Time) int {
	_, off := t.Zone()
	return off
}

func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }

// leadingDigits is how many decimal digits s starts with, up to most.
//
//go:noinline
func leadingDigits(s []byte, most int) int {
	i := 0
	for i < len(s) && i < most && isDigitByte(s[i]) {
		i++
	}
	return i
}

// number is the value of s, at most nine decimal digits.
//
//go:noinline
func number(s []byte) int {
	n := 0
	for i := range len(s) {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// quoteParsed quotes s as time's errors quote a value: printable ASCII as it is (a quote and a
// backslash escaped), every other byte of it as \x and two hex digits, a UTF-8 encoded U+FFFD
// (and a lone invalid byte) included.
//
//go:noinline
func quoteParsed(s []byte) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 1, len(s)+2)
	b[0] = '"'
	for i := range len(s) {
		switch c := s[i]; {
		case c >= 0x80 || c < ' ':
			b = append(b, '\\', 'x', hex[c>>4], hex[c&0xF])
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
