package miniappstore

import (
	"html"
	"strings"
	"testing"
)

// TestTitleUnescapeAgreesWithHTML holds unescapeTitle to html.UnescapeString on the references it
// reads, and leaves any other named reference as written.
func TestTitleUnescapeAgreesWithHTML(t *testing.T) {
	for name := range titleEntities {
		for _, s := range []string{"&" + name + ";", "a&" + name + ";b", "&" + name + ";&" + name + ";"} {
			if got, want := unescapeTitle(s), html.UnescapeString(s); got != want {
				t.Errorf("unescapeTitle(%q) = %q, html says %q", s, got, want)
			}
		}
	}
	for _, s := range []string{"", "plain", "&", "&&", "a & b", "&#", "&#;", "&#x;", "&#1", "&#12", "&#65;", "&#x41", "&#X4a;",
		"&#128;", "&#x81;", "&#0;", "&#xD800;", "&#x110000;", "&#4294967361;", "&#65x", "&;", "&#xg"} {
		if got, want := unescapeTitle(s), html.UnescapeString(s); got != want {
			t.Errorf("unescapeTitle(%q) = %q, html says %q", s, got, want)
		}
	}
	if got := unescapeTitle("&eacute;t&eacute; &zz; &amp"); got != "&eacute;t&eacute; &zz; &amp" {
		t.Errorf("a name outside the table: %q, want it as written", got)
	}
}

// FuzzTitleUnescape compares unescapeTitle with html.UnescapeString on every input whose named
// references are all in titleEntities, each with its semicolon.
func FuzzTitleUnescape(f *testing.F) {
	for _, s := range []string{"Tom &amp; Jerry", "&#169; 2026 &mdash; x", "&#x1F600;&#128;", "& &; &#", "a&#12;3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !namesInTable(s) {
			t.Skip()
		}
		if got, want := unescapeTitle(s), html.UnescapeString(s); got != want {
			t.Fatalf("unescapeTitle(%q) = %q, html says %q", s, got, want)
		}
	})
}

// namesInTable reports whether every "&" in s that starts a named reference (a letter or digit
// follows) starts one of titleEntities closed by ";".
func namesInTable(s string) bool {
	for i := strings.IndexByte(s, '&'); i >= 0; {
		rest := s[i+1:]
		if rest != "" && isAlnum(rest[0]) {
			semi := strings.IndexByte(rest, ';')
			if semi < 0 {
				return false
			}
			if _, ok := titleEntities[rest[:semi]]; !ok {
				return false
			}
		}
		j := strings.IndexByte(rest, '&')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
