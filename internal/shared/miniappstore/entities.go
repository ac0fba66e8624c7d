package miniappstore

import (
	"strings"
	"unicode/utf8"
)

// titleEntities are the named character references a <title> is read with: those a title
// plausibly holds. Any other named reference is left as written. The standard library's
// html.UnescapeString knows all 2,231 of HTML's, and its table cost the page 26 KB of brotli
// (measured 2026-12-05) to unescape one string, an app's title; TestTitleUnescapeAgreesWithHTML
// holds these and the numeric references to html.UnescapeString.
var titleEntities = map[string]string{
	"amp": "&", "lt": "<", "gt": ">", "quot": `"`, "apos": "'", "nbsp": "\u00a0",
	"ndash": "\u2013", "mdash": "\u2014", "hellip": "\u2026", "middot": "\u00b7", "bull": "\u2022",
	"lsquo": "\u2018", "rsquo": "\u2019", "ldquo": "\u201c", "rdquo": "\u201d",
	"laquo": "\u00ab", "raquo": "\u00bb", "copy": "\u00a9", "reg": "\u00ae", "trade": "\u2122",
	"deg": "\u00b0", "times": "\u00d7", "euro": "\u20ac", "pound": "\u00a3",
	"rarr": "\u2192", "larr": "\u2190", "hearts": "\u2665", "star": "\u2606",
}

// windows1252 is what HTML reads the numeric references &#128; to &#159; as (the C1 controls
// are taken for the Windows-1252 characters at those bytes); 0 where it keeps the code point.
var windows1252 = [32]rune{
	'\u20AC', 0x81, '\u201A', '\u0192', '\u201E', '\u2026', '\u2020', '\u2021',
	'\u02C6', '\u2030', '\u0160', '\u2039', '\u0152', 0x8D, '\u017D', 0x8F,
	0x90, '\u2018', '\u2019', '\u201C', '\u201D', '\u2022', '\u2013', '\u2014',
	'\u02DC', '\u2122', '\u0161', '\u203A', '\u0153', 0x9D, '\u017E', '\u0178',
}

// unescapeTitle replaces the character references in s: numeric ones (&#38; &#x26;, the
// semicolon optional, as HTML reads them) and the named ones of titleEntities followed by a
// semicolon.
func unescapeTitle(s string) string {
	i := strings.IndexByte(s, '&')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		s = s[i:]
		n := 0
		if len(s) > 1 && s[1] == '#' {
			var r rune
			if r, n = numericReference(s); n > 0 {
				b.WriteRune(r)
			}
		} else if semi := strings.IndexByte(s, ';'); semi > 1 {
			if v, ok := titleEntities[s[1:semi]]; ok {
				b.WriteString(v)
				n = semi + 1
			}
		}
		if n == 0 {
			b.WriteByte('&')
			n = 1
		}
		s = s[n:]
		i = strings.IndexByte(s, '&')
	}
	b.WriteString(s)
	return b.String()
}

// numericReference reads the reference "&#..." at the start of s as html.UnescapeString does:
// the character it stands for and its length, or 0 when it is not one (fewer than four bytes,
// or no digit after "&#"; "&#x;" is read as U+FFFD, as there). Its value wraps past int32 as
// html's does, so the two agree on any input.
func numericReference(s string) (rune, int) {
	if len(s) <= 3 {
		return 0, 0
	}
	i, hex := 2, false
	if s[2] == 'x' || s[2] == 'X' {
		i, hex = 3, true
	}
	var x rune
	for i < len(s) {
		c := s[i]
		i++
		switch {
		case '0' <= c && c <= '9':
			x = base(hex)*x + rune(c-'0')
			continue
		case hex && 'a' <= c && c <= 'f':
			x = 16*x + rune(c-'a') + 10
			continue
		case hex && 'A' <= c && c <= 'F':
			x = 16*x + rune(c-'A') + 10
			continue
		}
		if c != ';' {
			i--
		}
		break
	}
	if i <= 3 {
		return 0, 0
	}
	switch {
	case 0x80 <= x && x <= 0x9F:
		if r := windows1252[x-0x80]; r != 0 {
			return r, i
		}
	case x == 0 || 0xD800 <= x && x <= 0xDFFF || x > utf8.MaxRune:
		return utf8.RuneError, i
	}
	return x, i
}

func base(hex bool) rune {
	if hex {
		return 16
	}
	return 10
}
