package strictjson

import "time"

// The page's records carry their times as time.Time's MarshalJSON writes them (RFC 3339 with
// nanoseconds, quoted). readTime reads one back as (*time.Time).UnmarshalJSON does, without
// time.Parse: a call of UnmarshalJSON through an interface, or time.Parse itself, links the
// standard library's layout parser (about 25 KB of code, 13.5 KB of the page's brotli).
// TestReadTimeAgreesWithTime and FuzzReadTimeAgreesWithTime hold it to UnmarshalJSON: the same
// time, in the same location, and the same error, a *time.ParseError with the same fields.

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
	*t, err = parseRFC3339(string(v[1 : len(v)-1]))
	return err
}

// parseRFC3339 is time.Parse(time.RFC3339, value): the layout's elements in order, each read and
// refused with the words time.Parse's own layout walk gives it.
func parseRFC3339(value string) (time.Time, error) {
	rest := value
	// fail is the error of an element that did not read: layoutElem is what the layout wanted,
	// at what the value held there.
	fail := func(layoutElem, at string) (time.Time, error) {
		return time.Time{}, &time.ParseError{Layout: timeLayout, Value: value, LayoutElem: layoutElem, ValueElem: at}
	}
	outOfRange := func(layoutElem, what string) (time.Time, error) {
		return time.Time{}, &time.ParseError{Layout: timeLayout, Value: value, LayoutElem: layoutElem, ValueElem: rest,
			Message: ": " + what + " out of range"}
	}
	// literal takes one byte of the layout between two elements.
	literal := func(c byte) bool {
		if len(rest) == 0 || rest[0] != c {
			return false
		}
		rest = rest[1:]
		return true
	}

	// "2006": four digits.
	if len(rest) < 4 || !digits(rest[:4]) {
		return fail("2006", rest)
	}
	year := number(rest[:4])
	rest = rest[4:]
	if !literal('-') {
		return fail("-", rest)
	}
	// "01": two digits, 1 to 12.
	hold := rest
	month, ok := twoDigits(&rest)
	if !ok {
		return fail("01", hold)
	}
	if month < 1 || month > 12 {
		return outOfRange("01", "month")
	}
	if !literal('-') {
		return fail("-", rest)
	}
	// "02": two digits, checked against the month once the rest has read.
	hold = rest
	day, ok := twoDigits(&rest)
	if !ok {
		return fail("02", hold)
	}
	if !literal('T') {
		return fail("T", rest)
	}
	// "15": one or two digits, below 24.
	hold = rest
	hour, ok := oneOrTwoDigits(&rest)
	if !ok {
		return fail("15", hold)
	}
	if hour >= 24 {
		return outOfRange("15", "hour")
	}
	if !literal(':') {
		return fail(":", rest)
	}
	// "04": two digits, below 60.
	hold = rest
	minute, ok := twoDigits(&rest)
	if !ok {
		return fail("04", hold)
	}
	if minute >= 60 {
		return outOfRange("04", "minute")
	}
	if !literal(':') {
		return fail(":", rest)
	}
	// "05": two digits, below 60, then a fraction the layout does not name: a period or a comma
	// and every digit after it, the first nine kept.
	hold = rest
	sec, ok := twoDigits(&rest)
	if !ok {
		return fail("05", hold)
	}
	if sec >= 60 {
		return outOfRange("05", "second")
	}
	nsec := 0
	if len(rest) >= 2 && (rest[0] == '.' || rest[0] == ',') && isDigitByte(rest[1]) {
		n := 2
		for n < len(rest) && isDigitByte(rest[n]) {
			n++
		}
		frac := rest[1:min(n, 10)]
		nsec = number(frac)
		for range 9 - len(frac) {
			nsec *= 10
		}
		rest = rest[n:]
	}
	// "Z07:00": Z, or a sign, two digits, a colon and two digits (an hour up to 24, minutes up
	// to 60, as time.Parse allows).
	utc, offset := false, 0
	if len(rest) >= 1 && rest[0] == 'Z' {
		rest, utc = rest[1:], true
	} else {
		hold = rest
		if len(rest) < 6 || rest[3] != ':' {
			return fail("Z07:00", hold)
		}
		sign, hh, mm := rest[0], rest[1:3], rest[4:6]
		rest = rest[6:]
		okHour, okMinute := digits(hh), digits(mm)
		hr, mn := 0, 0
		if okHour {
			hr = number(hh)
			if okMinute {
				mn = number(mm)
			}
		}
		switch {
		case mn > 60:
			return outOfRange("Z07:00", "time zone offset minute")
		case hr > 24:
			return outOfRange("Z07:00", "time zone offset hour")
		case !okHour || !okMinute || (sign != '+' && sign != '-'):
			return fail("Z07:00", hold)
		}
		offset = (hr*60 + mn) * 60
		if sign == '-' {
			offset = -offset
		}
	}
	if rest != "" {
		return time.Time{}, &time.ParseError{Layout: timeLayout, Value: value, ValueElem: rest,
			Message: ": extra text: " + quoteParsed(rest)}
	}
	if day < 1 || day > daysIn(time.Month(month), year) {
		return time.Time{}, &time.ParseError{Layout: timeLayout, Value: value, Message: ": day out of range"}
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
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

func zoneOffset(t time.Time) int {
	_, off := t.Zone()
	return off
}

func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }

// digits reports whether s is all decimal digits (and not empty).
func digits(s string) bool {
	for i := range len(s) {
		if !isDigitByte(s[i]) {
			return false
		}
	}
	return s != ""
}

// number is the value of s, at most nine decimal digits.
func number(s string) int {
	n := 0
	for i := range len(s) {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// twoDigits takes two digits from *s.
func twoDigits(s *string) (int, bool) {
	if len(*s) < 2 || !digits((*s)[:2]) {
		return 0, false
	}
	n := number((*s)[:2])
	*s = (*s)[2:]
	return n, true
}

// oneOrTwoDigits takes one digit, or two when there are.
func oneOrTwoDigits(s *string) (int, bool) {
	if len(*s) == 0 || !isDigitByte((*s)[0]) {
		return 0, false
	}
	if len(*s) >= 2 && isDigitByte((*s)[1]) {
		return twoDigits(s)
	}
	n := int((*s)[0] - '0')
	*s = (*s)[1:]
	return n, true
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
func quoteParsed(s string) string {
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
