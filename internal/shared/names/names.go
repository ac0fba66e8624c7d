// Package names is the one rule for the characters of a name a person reads: file and folder
// names (every element of a path), app titles, tool names, extension ids and names, the names of
// MCP clients and paired machines. Every door that takes such a name calls Check before it
// stores or offers it, the page (compiled to WASM) as well as the relay.
//
// A name may not hold a character that changes how the rest of it shows or that does not show
// at all: "\u200b.voicebox" looks like the hidden history folder, "\u202egnp.exe" shows as
// "exe.png", a tool name with U+202E reads reversed in an admission plan. Check refuses, with
// refusal.InvalidName naming the character (U+XXXX and its class) and its index:
//
//   - C0 and C1 controls and DEL (category Cc): NUL, CR, LF, ESC, ...;
//   - every format character (category Cf): the bidi controls (U+061C, U+200E, U+200F,
//     U+202A-U+202E, U+2066-U+2069), the zero-width characters (U+200B-U+200D, U+2060,
//     U+FEFF), the soft hyphen, tag characters, ...; with the two exceptions below;
//   - the line and paragraph separators U+2028 and U+2029;
//   - bytes that are not UTF-8.
//
// Joiners: U+200D (zero width joiner) is taken between two pictographic symbols, so emoji
// sequences such as a family or a rainbow flag may name a file, and after a virama, where Indic
// scripts need it (RFC 5892's rule for ZWJ). U+200C (zero width non-joiner) is taken after a
// virama and between two letters of the Arabic script, where Persian writes it (an
// approximation of RFC 5892's joining-type rule, whose table Go does not carry). Anywhere else
// either joiner is invisible and refused.
//
// Normal form: a name must be in Unicode Normalization Form C. Two names that NFC would make
// equal ("é" as one code point, or as "e" and a combining accent) look the same, and file
// systems disagree about them (macOS's normalise or compare them as equal, the browser's origin
// private file system keeps both), so Check refuses the decomposed one rather than rewrite it:
// the name checked is then the name stored on every backend, and no two names created through
// Voicebox can be NFC-equal without being equal.
//
// Names already stored with such characters (made outside Voicebox) are not this package's to
// refuse: internal/shared/fsroot reads, lists, renames and removes them, and refuses only to create or
// write one; Escape shows one without letting it rearrange the text around it.
package names

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxShownBytes bounds how much of a refused name a refusal quotes.
const MaxShownBytes = 128

// The classes Check names a refused character by.
const (
	ClassC0      = "C0 control"
	ClassDEL     = "control (DEL)"
	ClassC1      = "C1 control"
	ClassBidi    = "bidi control"
	ClassZero    = "zero-width"
	ClassFormat  = "format character (Cf)"
	ClassLineSep = "line or paragraph separator"
)

// bidiControls are Unicode's Bidi_Control characters.
var bidiControls = []rune{0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}

// zeroWidth are the characters that take no width and are not bidi controls.
var zeroWidth = []rune{0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF}

// Class returns the class of r when a name may not hold it wherever it stands, or "" when it
// may (the joiners' context is Check's to judge: Class names them ClassZero).
func Class(r rune) string {
	switch {
	case r < 0x20:
		return ClassC0
	case r == 0x7F:
		return ClassDEL
	case 0x80 <= r && r <= 0x9F:
		return ClassC1
	case r == 0x2028 || r == 0x2029:
		return ClassLineSep
	case r < 0x80:
		return ""
	}
	for _, b := range bidiControls {
		if r == b {
			return ClassBidi
		}
	}
	for _, z := range zeroWidth {
		if r == z {
			return ClassZero
		}
	}
	if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r) {
		return ClassFormat
	}
	return ""
}

// Check returns nil when s may be a name, or an invalid-name refusal that says what (e.g. "the
// path", "the tool name"), the first character refused, its class and its index (code points
// counted from 0), or that s is not in NFC. The empty name passes: whether a name may be empty
// is the caller's rule.
func Check(what, s string) *refusal.Refusal {
	var prev rune = -1
	i := 0
	for at, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[at:]); n == 1 {
				return refusal.New(refusal.InvalidName, "%s %s is not UTF-8 at index %d; name it in UTF-8", what, Quote(s), i)
			}
		}
		if c := Class(r); c != "" && !joinerTaken(r, prev, s[at+utf8.RuneLen(r):]) {
			return refusal.New(refusal.InvalidName, "%s %s holds U+%04X (%s) at index %d, which shows as nothing or reorders what follows; name it without that character",
				what, Quote(s), r, c, i)
		}
		prev = r
		i++
	}
	if n, changed := nfc(s); changed {
		return refusal.New(refusal.InvalidName, "%s %s is not in Unicode normal form C from index %d (a letter and its accent are two characters where NFC has one); write it as %s",
			what, Quote(s), firstDifference(s, n), Quote(n))
	}
	return nil
}

// joinerTaken reports whether the joiner r, after prev and before rest, is one a name may hold.
func joinerTaken(r, prev rune, rest string) bool {
	if r != 0x200D && r != 0x200C {
		return false
	}
	next, _ := utf8.DecodeRuneInString(rest)
	if prev >= 0 && unicode.Is(viramas, prev) {
		return true
	}
	if r == 0x200D {
		return pictographic(prev) && pictographic(next)
	}
	return unicode.Is(unicode.Arabic, prev) && unicode.IsLetter(prev) && unicode.Is(unicode.Arabic, next) && unicode.IsLetter(next)
}

// viramas are the characters of canonical combining class 9 (virama), after which RFC 5892
// takes a joiner. TestViramasAreCombiningClass9 holds the table to x/text's (Unicode 15).
var viramas = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x094D, 0x094D, 1},
		{0x09CD, 0x09CD, 1},
		{0x0A4D, 0x0A4D, 1},
		{0x0ACD, 0x0ACD, 1},
		{0x0B4D, 0x0B4D, 1},
		{0x0BCD, 0x0BCD, 1},
		{0x0C4D, 0x0C4D, 1},
		{0x0CCD, 0x0CCD, 1},
		{0x0D3B, 0x0D3C, 1},
		{0x0D4D, 0x0D4D, 1},
		{0x0DCA, 0x0DCA, 1},
		{0x0E3A, 0x0E3A, 1},
		{0x0EBA, 0x0EBA, 1},
		{0x0F84, 0x0F84, 1},
		{0x1039, 0x103A, 1},
		{0x1714, 0x1715, 1},
		{0x1734, 0x1734, 1},
		{0x17D2, 0x17D2, 1},
		{0x1A60, 0x1A60, 1},
		{0x1B44, 0x1B44, 1},
		{0x1BAA, 0x1BAB, 1},
		{0x1BF2, 0x1BF3, 1},
		{0x2D7F, 0x2D7F, 1},
		{0xA806, 0xA806, 1},
		{0xA82C, 0xA82C, 1},
		{0xA8C4, 0xA8C4, 1},
		{0xA953, 0xA953, 1},
		{0xA9C0, 0xA9C0, 1},
		{0xAAF6, 0xAAF6, 1},
		{0xABED, 0xABED, 1},
	},
	R32: []unicode.Range32{
		{0x10A3F, 0x10A3F, 1},
		{0x11046, 0x11046, 1},
		{0x11070, 0x11070, 1},
		{0x1107F, 0x1107F, 1},
		{0x110B9, 0x110B9, 1},
		{0x11133, 0x11134, 1},
		{0x111C0, 0x111C0, 1},
		{0x11235, 0x11235, 1},
		{0x112EA, 0x112EA, 1},
		{0x1134D, 0x1134D, 1},
		{0x11442, 0x11442, 1},
		{0x114C2, 0x114C2, 1},
		{0x115BF, 0x115BF, 1},
		{0x1163F, 0x1163F, 1},
		{0x116B6, 0x116B6, 1},
		{0x1172B, 0x1172B, 1},
		{0x11839, 0x11839, 1},
		{0x1193D, 0x1193E, 1},
		{0x119E0, 0x119E0, 1},
		{0x11A34, 0x11A34, 1},
		{0x11A47, 0x11A47, 1},
		{0x11A99, 0x11A99, 1},
		{0x11C3F, 0x11C3F, 1},
		{0x11D44, 0x11D45, 1},
		{0x11D97, 0x11D97, 1},
		{0x11F41, 0x11F42, 1},
	},
}

// pictographic reports whether r may stand beside a ZWJ in an emoji sequence: a symbol, an
// emoji modifier, or the emoji variation selector.
func pictographic(r rune) bool {
	return r == 0xFE0F || unicode.Is(unicode.So, r) || 0x1F3FB <= r && r <= 0x1F3FF
}

// firstDifference returns the index (in code points) of the first character where s and n
// differ.
func firstDifference(s, n string) int {
	i := 0
	for s != "" && n != "" {
		a, sa := utf8.DecodeRuneInString(s)
		b, sb := utf8.DecodeRuneInString(n)
		if a != b {
			break
		}
		s, n, i = s[sa:], n[sb:], i+1
	}
	return i
}

// Escape returns s with every character a name may not hold written as \u{XXXX} (and bytes that
// are not UTF-8 as \x{XX}), so a name stored before the rule shows what it holds instead of
// hiding it or reversing the text after it. A name Check accepts is returned unchanged.
func Escape(s string) string {
	if Check("", s) == nil {
		return s
	}
	var b strings.Builder
	var prev rune = -1
	for at, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[at:]); n == 1 {
				b.WriteString(textf.Sprintf(`\x{%02X}`, s[at]))
				prev = -1
				continue
			}
		}
		if c := Class(r); c != "" && !joinerTaken(r, prev, s[at+utf8.RuneLen(r):]) {
			b.WriteString(textf.Sprintf(`\u{%04X}`, r))
		} else {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// Quote returns s quoted for a refusal's sentence: Go-quoted, so no control or format character
// reaches the reader raw, and cut to MaxShownBytes.
func Quote(s string) string {
	if len(s) <= MaxShownBytes {
		return textf.Sprintf("%q", s)
	}
	cut := MaxShownBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return textf.Sprintf("%q...", s[:cut])
}

// Fold returns a key that names a file system may take for one file share: s in Unicode NFC,
// in lower case. Two names with one key may be different files (on a case-sensitive file
// system); two names of one file never have different keys on the file systems Voicebox
// serves (case-insensitive ones fold case; APFS ignores the normalization). It is for locks
// and such, where joining two files costs only waiting.
func Fold(s string) string {
	n, _ := nfc(s)
	return strings.ToLower(n)
}
