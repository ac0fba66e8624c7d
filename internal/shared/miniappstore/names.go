package miniappstore

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/names"
)

// Slug returns the normal form of a name, as the original Voicebox makes it: lower case, ASCII
// letters and digits with a single hyphen between runs, without a trailing .html and without a
// leading app or page prefix (app_, app-, page_, page-), at most MaxSlugBytes bytes. "Pomodoro
// Timer", "pomodoro_timer.html" and "app_pomodoro_timer" all give "pomodoro-timer". Letters
// outside ASCII separate runs as punctuation does, so every id made from a slug is one a mini-app
// may register under (miniapp's app id alphabet). A name with no ASCII letters or digits gives "";
// callers refuse it rather than name an app "mini-app" as the original does.
func Slug(name string) string {
	name = strings.TrimSpace(name)
	if isHTML(name) {
		name = name[:len(name)-len(htmlExt)]
	}
	lower := strings.ToLower(name)
	for _, p := range []string{"app", "page"} {
		rest, ok := strings.CutPrefix(lower, p)
		if trimmed := strings.TrimLeft(rest, "_-"); ok && trimmed != rest && trimmed != "" {
			lower = trimmed
			break
		}
	}
	var b strings.Builder
	gap := false
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			gap = b.Len() > 0
			continue
		}
		n := 1
		if gap {
			n++
		}
		if b.Len()+n > MaxSlugBytes {
			break
		}
		if gap {
			b.WriteByte('-')
			gap = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// titleFromFileName turns a file name into a title: flappy_bird.html is "Flappy Bird".
func titleFromFileName(name string) string {
	if isHTML(name) {
		name = name[:len(name)-len(htmlExt)]
	}
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || unicode.IsSpace(r) })
	for i, w := range words {
		r, n := utf8.DecodeRuneInString(w)
		words[i] = string(unicode.ToUpper(r)) + w[n:]
	}
	return clip(names.Escape(strings.Join(words, " ")))
}

// readTitle returns the <title> of the file name in r, or "" when it has none or cannot be
// read.
func readTitle(ctx context.Context, r fsroot.Root, name string) string {
	data, _, err := fsroot.ReadPrefix(ctx, r, name, MaxTitleScanBytes)
	if err != nil {
		return ""
	}
	return findTitle(data)
}

// findTitle returns the text of the first <title> element, unescaped, with its white space
// collapsed, or "".
func findTitle(data []byte) string {
	if len(data) > MaxTitleScanBytes {
		data = data[:MaxTitleScanBytes]
	}
	s := string(data)
	lower := asciiLower(s) // ASCII only, so byte offsets in lower are offsets in s
	i := strings.Index(lower, "<title")
	for i >= 0 {
		rest := lower[i+len("<title"):]
		if rest != "" && (rest[0] == '>' || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r') {
			break
		}
		j := strings.Index(rest, "<title")
		if j < 0 {
			return ""
		}
		i += len("<title") + j
	}
	if i < 0 {
		return ""
	}
	open := strings.IndexByte(lower[i:], '>')
	if open < 0 {
		return ""
	}
	start := i + open + 1
	end := strings.Index(lower[start:], "</title")
	if end < 0 {
		return ""
	}
	text := strings.ToValidUTF8(unescapeTitle(s[start:start+end]), "\uFFFD")
	// A document's title is its author's, not a name Voicebox makes: shown escaped, not refused.
	return clip(names.Escape(strings.Join(strings.Fields(text), " ")))
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// clip cuts s to at most MaxTitleBytes bytes on a rune boundary.
func clip(s string) string {
	if len(s) <= MaxTitleBytes {
		return s
	}
	cut := MaxTitleBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// TitleOf is the title Save gives HTML saved without one: its <title>, or "".
func TitleOf(html []byte) string { return findTitle(html) }
