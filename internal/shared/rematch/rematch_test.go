package rematch

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// patterns are what tool schemas write, and the corners of the syntax rematch takes.
var patterns = []string{
	``, `a`, `abc`, `^abc$`, `^[a-z]+$`, `^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$`,
	`^\d{4}-\d{2}-\d{2}$`, `^\d{3}-\d{4}$`, `^(\d{1,3}\.){3}\d{1,3}$`, `^#[0-9a-fA-F]{6}$`,
	`^[A-Z]{2}\d{2}[A-Z0-9]{4,30}$`, `^https?://[^\s/$.?#].[^\s]*$`, `^[a-z0-9]+(?:-[a-z0-9]+)*$`,
	`^(?P<year>\d{4})-(?<month>\d\d)$`, `^(red|green|blue)$`, `colou?r`, `^a{2,4}$`, `^a{3}$`,
	`^a{2,}$`, `a{0}`, `^(a+)+$`, `(a*)*b`, `(a|ab)(c|bcd)(d*)`, `^(?:a|b)*?c$`, `x*?y+?z??`,
	`.`, `^.$`, `(?s)^.$`, `^.+$`, `(?s).+`, `a.c`, `\.`, `\\`, `\+\*\?\(\)\[\]\{\}\|\^\$`,
	`\x41`, `\x{263a}`, `\x{10FFFF}`, `[\x00-\x1f]`, `\t\n\r\f\v\a`, `\Qa.b*c\E+`, `\Q(x`,
	`[abc]`, `[^abc]`, `[a-c-e]`, `[-a]`, `[a-]`, `[]a]`, `[^]a]`, `[\]\\\-]`, `[.]`, `[\d\s]`,
	`[^\d]`, `[\D]`, `[^\D\S]`, `[\W_]`, `\d+`, `\D+`, `\s`, `\S+`, `\w+`, `\W`,
	`[[:alpha:]]+`, `[[:^alpha:]]`, `[[:digit:][:upper:]]`, `[[:punct:]]`, `[[:space:]]`,
	`[[:word:]]`, `[[:xdigit:]]{2}`, `[[:^space:]x]`, `[[:cntrl:][:print:]]`, `[[:a]`, `[[]`,
	`\bfoo\b`, `\Bo\B`, `\b`, `\B`, `^`, `$`, `^$`, `\A\z`, `\Aab`, `ab\z`, `(?m)^b$`,
	`(?m)^$`, `(?m)a$`, `a$`, `^*a`, `(^)*`, `(?:$)+`, `(?i)abc`, `(?i)k`, `(?i)[k]`, `(?i)[^k]`,
	`(?i)\w`, `(?i)\W`, `(?i)[^\W]`, `(?i)ſ`, `(?i)σ`, `(?i)[a-z]+`, `(?i:A)b`, `a(?i)b|c`,
	`(?i)a(?-i)b`, `(?i-s:.)`, `(?U)a+`, `(?is)A.`, `(?)a`, `()`, `(|a)`, `a|`, `|`, `a||b`,
	`((a)|b)+`, `(a{2}){3}`, `(?:ab){0,3}c`, `a{,5}`, `a{1`, `{`, `a{x}`, `}`, `]`, `a]`,
	`é+`, `[é-ü]`, `日本`, `[^日]`, `\x{FFFD}`, `[\x{80}-\x{10FFFF}]`, `(?i)straße`, `(?i)Σ`,
	`.{0,1000}`, `(?:[a-z]{0,20}\.){0,4}x`, `a*b*c*$`, `(a|b|c|d|e)*f`, `(?i)[[:upper:]]+`,
	`(?i)[^[:lower:]]`, `(?i)[\d[:^alpha:]]`, `(?i)[^\S]`, `(?i:[^k-s])`, `(?m)\Bb$`,
}

// inputs are strings matched against every pattern, with the edges of the assertions.
var inputs = []string{
	"", "a", "b", "abc", "ABC", "aBc", "xabcx", "abc\n", "\nabc", "a\nb", "a\n", "\n", "\n\n",
	"aa", "aaa", "aaaa", "aaaaa", "aaaa!", "2026-12-05", "555-1234", "192.168.1.1", "#00ffAA",
	"me@example.com", "https://example.com/a", "foo bar", "foobar", " foo ", "red", "green!",
	"color", "colour", "abcd", "abcbcd", "c", "ac", "abababc", "xyz", "xyyz", "a.b*c", "a.b*cc",
	"(x", "a{,5}", "a{1", "{", "}", "]", "a]", "-", "_", "K", "k", "\u212a", "ſ", "S", "s", "σ", "Σ", "ς",
	"STRASSE", "straße", "é", "ü", "日本語", "日", "\x00", "\x1f", "\t\n\r\f\v\a", "\xff", "a\xffb",
	"\xed\xa0\x80", "\u263a", "\U0010ffff", "+*?()[]{}|^$", "\\", ".", "A.", "A\n", "f", "abcdef",
	strings.Repeat("a", 40) + "!", strings.Repeat("ab", 30), "iiii.jjj.kk.x", "a.b.c.d.e.x",
}

// TestEveryVerdictIsGoRegexps holds rematch to Go's regexp: every pattern it takes, regexp takes,
// and on every input both answer the same.
func TestEveryVerdictIsGoRegexps(t *testing.T) {
	t.Parallel()
	for _, p := range patterns {
		re, err := Compile(p)
		if err != nil {
			t.Errorf("Compile(%q) refused a pattern the table expects taken: %v", p, err)
			continue
		}
		ref, err := regexp.Compile(p)
		if err != nil {
			t.Errorf("Compile(%q) took a pattern regexp refuses: %v", p, err)
			continue
		}
		for _, in := range inputs {
			got, err := re.MatchString(in)
			if err != nil {
				t.Fatalf("MatchString(%q) on %q: %v", in, p, err)
			}
			if want := ref.MatchString(in); got != want {
				t.Errorf("%q on %q: got %v, regexp says %v", p, in, got, want)
			}
		}
	}
}

// TestWhatRE2RefusesIsRefused: what Go's regexp refuses, and what rematch leaves out, is refused
// with an error naming the construct.
func TestWhatRE2RefusesIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct{ pattern, names string }{
		{`(?=a)`, `(?=`}, {`(?!a)`, `(?!`}, {`(?<=a)b`, `(?<`}, {`(?<!a)b`, `(?<`}, {`(a)\1`, `\1`},
		{`\0`, `\0`}, {`\8`, `\8`}, {`\pL`, `\p`}, {`\p{Greek}`, `\p`}, {`\PL`, `\P`},
		{`[`, `[`}, {`[a`, `[a`}, {`[z-a]`, `z-a`}, {`(`, `(`}, {`)`, `)`}, {`a)`, `)`}, {`*a`, `*`},
		{`a**`, `*`}, {`a*+`, `+`}, {`a???`, `?`}, {`a{2}{3}`, `{3}`}, {`(*)`, `*`}, {`|+`, `+`},
		{`a{1001}`, `{1001}`}, {`a{2,1}`, `{2,1}`}, {`a{99999999}`, `{99999999}`}, {`(a{1000}){2}`, `{2}`},
		{`((a{10}){10}){11}`, `{11}`}, {`a{01}`, `{`}, {`(?i)*`, `*`}, {`\Q\E*`, `*`}, {`(?i-)`, `(?i-)`},
		{`(?-)`, `(?-)`}, {`(?--i)`, `(?--`}, {`(?x)`, `(?x`}, {`(?P=n)`, `(?P=`}, {`(?P<>a)`, `(?P<`},
		{`(?P<a-b>x)`, `(?P<`}, {`(?P<n>a)(?P<n>b)`, `n`}, {`\Z`, `\Z`}, {`\e`, `\e`}, {`\x`, `\x`},
		{`\xg0`, `\xg`}, {`\x{}`, `\x{}`}, {`\x{110000}`, `\x{110000}`}, {`\`, `\`}, {`[[:foo:]]`, `[:foo:]`},
		{`[\b]`, `\b`}, {`[a-\d]`, `\d`}, {"\xff", ""}, {`\C`, `\C`},
		{strings.Repeat(`.{0,1000}`, 5), ""}, {strings.Repeat(`[a-z]{1000}`, 9), ""},
	}
	for _, c := range cases {
		_, err := Compile(c.pattern)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%q) = %v, want an *Error", c.pattern, err)
			continue
		}
		if !strings.Contains(e.Construct, c.names) || e.Why == "" {
			t.Errorf("Compile(%q) refused %q (%s), want it to name %q", c.pattern, e.Construct, e.Why, c.names)
		}
	}
}

// TestAMatchIsBoundedInSteps: a pattern whose every instruction stays live over a long string is
// answered ErrTooCostly past MaxSteps, and a shorter string still matches.
func TestAMatchIsBoundedInSteps(t *testing.T) {
	t.Parallel()
	re, err := Compile(`[a-z]{0,1000}!`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := re.MatchString(strings.Repeat("a", 20000)); !errors.Is(err, ErrTooCostly) {
		t.Fatalf("a 20,000-rune string answered %v, want ErrTooCostly", err)
	}
	if ok, err := re.MatchString(strings.Repeat("a", 1500) + "!"); !ok || err != nil {
		t.Fatalf("a 1,501-rune string answered %v, %v", ok, err)
	}
}

// FuzzAgreesWithRegexp: for any pattern rematch takes, regexp takes it and both answer the same.
func FuzzAgreesWithRegexp(f *testing.F) {
	for i, p := range patterns {
		f.Add(p, inputs[i%len(inputs)])
	}
	f.Add(`(?i)[^\W\d]+\b`, "Kelvin \u212a 9")
	f.Add(`(?m)^\s*$`, "a\n \nb")
	f.Fuzz(func(t *testing.T, p, in string) {
		if len(p) > 64 {
			return
		}
		re, err := Compile(p)
		if err != nil {
			if utf8.ValidString(p) && len(err.Error()) == 0 {
				t.Fatal("an empty error")
			}
			return
		}
		ref, err := regexp.Compile(p)
		if err != nil {
			t.Fatalf("Compile(%q) took a pattern regexp refuses: %v", p, err)
		}
		got, err := re.MatchString(in)
		if err != nil {
			return // the step bound, not a verdict
		}
		if want := ref.MatchString(in); got != want {
			t.Fatalf("%q on %q: got %v, regexp says %v", p, in, got, want)
		}
	})
}

// TestOneRegexpServesManyGoroutines: a Regexp shared by goroutines (its machines are pooled)
// answers each of them as regexp does.
func TestOneRegexpServesManyGoroutines(t *testing.T) {
	t.Parallel()
	re, err := Compile(`^(?:[a-z]+\.){1,3}[a-z]{2,}$`)
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(re.String())
	in := []string{"a.example", "example", "a.b.c.d.ee", "x.y", "x.yy", "a..bb", ""}
	done := make(chan string, 8)
	for g := range 8 {
		go func() {
			for i := range 300 {
				s := in[(g+i)%len(in)]
				if got, _ := re.MatchString(s); got != ref.MatchString(s) {
					done <- s
					return
				}
			}
			done <- ""
		}()
	}
	for range 8 {
		if s := <-done; s != "" {
			t.Errorf("a goroutine got a verdict on %q that regexp does not give", s)
		}
	}
}
