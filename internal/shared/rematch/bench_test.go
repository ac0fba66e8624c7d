package rematch

import (
	"regexp"
	"strings"
	"testing"
)

// benchCases are typical schema patterns with an argument each, matched by rematch and by Go's
// regexp (BENCHMARKS.md has the figures).
var benchCases = []struct{ name, pattern, input string }{
	{"slug", `^[a-z0-9]+(?:-[a-z0-9]+)*$`, "a-typical-slug-of-forty-characters-or-so"},
	{"date", `^\d{4}-\d{2}-\d{2}$`, "2026-12-05"},
	{"email", `^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$`, "someone.else@example.com"},
	{"unanchored", `colou?r`, "the favourite colour of the sky at noon"},
}

func BenchmarkMatch(b *testing.B) {
	for _, c := range benchCases {
		re, err := Compile(c.pattern)
		if err != nil {
			b.Fatal(err)
		}
		ref := regexp.MustCompile(c.pattern)
		b.Run(c.name+"/rematch", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, _ := re.MatchString(c.input); !ok {
					b.Fatal("no match")
				}
			}
		})
		b.Run(c.name+"/regexp", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !ref.MatchString(c.input) {
					b.Fatal("no match")
				}
			}
		})
	}
}

// BenchmarkWorstMatch is the longest one match can hold its caller: every instruction of a
// 2,000-instruction program live until MaxSteps.
func BenchmarkWorstMatch(b *testing.B) {
	re, err := Compile(`[a-z]{0,1000}!`)
	if err != nil {
		b.Fatal(err)
	}
	s := strings.Repeat("a", 20000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := re.MatchString(s); err != ErrTooCostly {
			b.Fatalf("answered %v", err)
		}
	}
}
