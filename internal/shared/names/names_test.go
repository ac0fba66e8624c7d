package names_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, s string
		want    string // "" when accepted, else what the sentence must hold
	}{
		{"ascii", "notes.txt", ""},
		{"empty is the caller's rule", "", ""},
		{"accented NFC", "caf\u00e9.md", ""},
		{"cjk", "日本語.txt", ""},
		{"arabic", "ملف.txt", ""},
		{"emoji", "🎉 party.html", ""},
		{"emoji ZWJ family", "👨\u200d👩\u200d👧.png", ""},
		{"emoji ZWJ after VS16", "🏳\ufe0f\u200d🌈", ""},
		{"persian ZWNJ between arabic letters", "می\u200cخواهم", ""},
		{"devanagari ZWJ after virama", "क\u094d\u200dष", ""},
		{"devanagari ZWNJ after virama", "क\u094d\u200cष", ""},
		{"zero-width space hiding a dot name", "\u200b.voicebox", "U+200B (zero-width) at index 0"},
		{"right-to-left override", "\u202egnp.exe", "U+202E (bidi control) at index 0"},
		{"bidi isolate later", "report\u2066x", "U+2066 (bidi control) at index 6"},
		{"arabic letter mark", "a\u061cb", "U+061C (bidi control) at index 1"},
		{"LRM", "a\u200eb", "U+200E (bidi control) at index 1"},
		{"RLM", "a\u200fb", "U+200F (bidi control) at index 1"},
		{"word joiner", "a\u2060b", "U+2060 (zero-width) at index 1"},
		{"BOM", "\ufeffa", "U+FEFF (zero-width) at index 0"},
		{"ZWJ between letters", "a\u200db", "U+200D (zero-width) at index 1"},
		{"ZWJ after emoji before letter", "🎉\u200db", "U+200D (zero-width) at index 1"},
		{"ZWNJ between latin letters", "a\u200cb", "U+200C (zero-width) at index 1"},
		{"ZWNJ at the start", "\u200cم", "U+200C (zero-width) at index 0"},
		{"soft hyphen", "pass\u00adword", "U+00AD (format character (Cf)) at index 4"},
		{"tag character", "a\U000E0041", "U+E0041 (format character (Cf)) at index 1"},
		{"CR", "a\rb", "U+000D (C0 control) at index 1"},
		{"LF", "a\nb", "U+000A (C0 control) at index 1"},
		{"ESC", "\x1b[31mred", "U+001B (C0 control) at index 0"},
		{"NUL", "a\x00", "U+0000 (C0 control) at index 1"},
		{"DEL", "a\x7f", "U+007F (control (DEL)) at index 1"},
		{"C1 CSI", "a\u009bb", "U+009B (C1 control) at index 1"},
		{"line separator", "a\u2028b", "U+2028 (line or paragraph separator) at index 1"},
		{"index counts characters", "日本\u202e", "at index 2"},
		{"not UTF-8", "a\xffb", "not UTF-8 at index 1"},
		{"decomposed accent", "cafe\u0301.md", "not in Unicode normal form C from index 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := names.Check("the name", c.s)
			if c.want == "" {
				if r != nil {
					t.Fatalf("Check(%+q) = %v, want nil", c.s, r)
				}
				if got := names.Escape(c.s); got != c.s {
					t.Fatalf("Escape(%+q) = %+q, want it unchanged", c.s, got)
				}
				return
			}
			if r == nil {
				t.Fatalf("Check(%+q) = nil, want invalid-name with %q", c.s, c.want)
			}
			if r.Rule != refusal.InvalidName || !strings.Contains(r.Why, c.want) {
				t.Fatalf("Check(%+q) = %v, want invalid-name with %q", c.s, r, c.want)
			}
			if strings.ContainsFunc(r.Why, func(x rune) bool { return names.Class(x) != "" }) {
				t.Fatalf("the sentence %+q holds a character a name may not: it would hide or reorder itself", r.Why)
			}
		})
	}
}

func TestEveryBidiAndZeroWidthCharacterIsRefusedAlone(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2060, 0x2066, 0x2067, 0x2068, 0x2069, 0xFEFF} {
		if names.Check("the name", "x"+string(r)+"y") == nil {
			t.Errorf("U+%04X between two letters was accepted", r)
		}
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"\u200b.voicebox", `\u{200B}.voicebox`},
		{"\u202egnp.exe", `\u{202E}gnp.exe`},
		{"a\r\nb", `a\u{000D}\u{000A}b`},
		{"a\xffb", `a\x{FF}b`},
		{"👨\u200d👩 \u200d", "👨\u200d👩 \\u{200D}"},
	} {
		if got := names.Escape(c.in); got != c.want {
			t.Errorf("Escape(%+q) = %+q, want %+q", c.in, got, c.want)
		}
	}
}

func TestQuoteBoundsLongNames(t *testing.T) {
	t.Parallel()
	r := names.Check("the name", strings.Repeat("é", 1000)+"\u202e")
	if r == nil || len(r.Why) > 2*names.MaxShownBytes+300 {
		t.Fatalf("Check of a long name = %v; want a bounded sentence", r)
	}
}

// FuzzCheck holds Check's promises on any input: what it accepts is UTF-8 in NFC with no
// character of a refused class outside a taken joiner, and Escape of it is itself; what it
// refuses, Escape shows with no refused character left raw except joiners it takes.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "a", "\u200b.voicebox", "\u202egnp.exe", "cafe\u0301", "👨\u200d👩", "می\u200cخواهم", "a\xff", "\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := names.Check("the name", s)
		esc := names.Escape(s)
		if r == nil {
			if !utf8.ValidString(s) || !norm.NFC.IsNormalString(s) {
				t.Fatalf("Check accepted %+q, which is not UTF-8 in NFC", s)
			}
			for _, c := range s {
				if cl := names.Class(c); cl != "" && c != 0x200C && c != 0x200D {
					t.Fatalf("Check accepted %+q holding U+%04X (%s)", s, c, cl)
				}
			}
			if esc != s {
				t.Fatalf("Escape changed the accepted %+q to %+q", s, esc)
			}
			return
		}
		if r.Rule != refusal.InvalidName {
			t.Fatalf("Check(%+q) refused %s, want invalid-name", s, r.Rule)
		}
		if !utf8.ValidString(esc) {
			t.Fatalf("Escape(%+q) = %+q is not UTF-8", s, esc)
		}
		for _, c := range esc {
			if cl := names.Class(c); cl != "" && c != 0x200C && c != 0x200D {
				t.Fatalf("Escape(%+q) = %+q still holds U+%04X (%s)", s, esc, c, cl)
			}
		}
	})
}

// TestViramasAreCombiningClass9 holds the virama table Check uses for joiners to x/text's
// canonical combining classes, over every code point.
func TestViramasAreCombiningClass9(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		want := norm.NFC.PropertiesString(string(r)).CCC() == 9
		if got := names.IsVirama(r); got != want {
			t.Errorf("U+%04X: virama %v, want %v", r, got, want)
		}
	}
}

// TestFoldJoinsTheNamesOfOneFile: the names a case-insensitive or normalization-insensitive file
// system takes for one file share a key; names that differ otherwise do not.
func TestFoldJoinsTheNamesOfOneFile(t *testing.T) {
	t.Parallel()
	for _, same := range [][2]string{{"Notes.TXT", "notes.txt"}, {"caf\u00e9.md", "cafe\u0301.md"}, {"\u00c9t\u00e9/A.txt", "e\u0301te\u0301/a.txt"}} {
		if names.Fold(same[0]) != names.Fold(same[1]) {
			t.Errorf("Fold(%q) = %q, Fold(%q) = %q; want one key", same[0], names.Fold(same[0]), same[1], names.Fold(same[1]))
		}
	}
	for _, other := range [][2]string{{"notes.txt", "notes.md"}, {"a/b.txt", "a/c.txt"}, {"cafe.md", "caf\u00e9.md"}} {
		if names.Fold(other[0]) == names.Fold(other[1]) {
			t.Errorf("Fold(%q) and Fold(%q) are both %q; want two keys", other[0], other[1], names.Fold(other[0]))
		}
	}
}
