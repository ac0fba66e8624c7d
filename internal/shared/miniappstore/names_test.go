package miniappstore

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

func TestSlug(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		// The original's examples (lib/mini-app-store.mjs): spaces and underscores become hyphens.
		{"title", "Pomodoro Timer", "pomodoro-timer"},
		{"file name", "pomodoro_timer.html", "pomodoro-timer"},
		{"app id", "app_pomodoro_timer", "pomodoro-timer"},
		{"app id with a hyphen", "app-pomodoro-timer", "pomodoro-timer"},
		{"app prefix, several separators", "APP__-Timer", "timer"},
		{"page id", "page_pomodoro_timer", "pomodoro-timer"},
		{"app without a separator is a word", "Apple Pie", "apple-pie"},
		{"upper-case extension", "Timer.HTML", "timer"},
		{"punctuation runs", "  Tic--Tac__Toe!! ", "tic-tac-toe"},
		{"letters outside ASCII separate runs", "Café Crème", "caf-cr-me"},
		{"digits", "2048 Game v2", "2048-game-v2"},
		{"bare prefix", "app_", "app"},
		{"no ASCII letters", "日本語", ""},
		{"no letters", "!!!", ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Slug(tc.in); got != tc.want {
				t.Fatalf("Slug(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := Slug(strings.Repeat("é", 200)); len(got) > MaxSlugBytes || !utf8.ValidString(got) {
		t.Fatalf("long slug %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

func TestTitleFromFileName(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"flappy_bird.html", "Flappy Bird"},
		{"my-cool app.html", "My Cool App"},
		{"x.HTML", "X"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := titleFromFileName(tc.in); got != tc.want {
				t.Fatalf("titleFromFileName(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestFindTitle(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain", "<title>Timer</title>", "Timer"},
		{"upper case, attributes", "<TITLE lang=en>Big  \n Timer</TITLE>", "Big Timer"},
		{"entities", "<title>Tom &amp; Jerry</title>", "Tom & Jerry"},
		{"not titlebar", "<titlebar>x</titlebar><title>Real</title>", "Real"},
		{"unclosed", "<title>Never ends", ""},
		{"none", "<p>hi</p>", ""},
		{"non-ASCII before", "<p>İİİ</p><title>After</title>", "After"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := findTitle([]byte(tc.in)); got != tc.want {
				t.Fatalf("findTitle(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzSlug checks that a slug is stable, bounded and usable as a shelf file name.
func FuzzSlug(f *testing.F) {
	for _, s := range []string{"Pomodoro Timer", "app_x.html", "..", "İ", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Slug(s)
		if got == "" {
			return
		}
		if Slug(got) != got && !strings.HasPrefix(got, "app-") && !strings.HasPrefix(got, "page-") {
			t.Fatalf("Slug(%q) = %q is not stable", s, got)
		}
		if strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || got[0] == '-' || got[len(got)-1] == '-' || strings.Contains(got, "--") {
			t.Fatalf("Slug(%q) = %q is not ASCII letters and digits joined by single hyphens", s, got)
		}
		if len(got) > MaxSlugBytes {
			t.Fatalf("Slug(%q) is %d bytes", s, len(got))
		}
		if err := fsroot.Check(got + recordExt); err != nil {
			t.Fatalf("Slug(%q) = %q: %v", s, got, err)
		}
	})
}

// FuzzFindTitle checks that any document gives a valid, bounded, trimmed title or none.
func FuzzFindTitle(f *testing.F) {
	f.Add([]byte("<title>x</title>"))
	f.Add([]byte("<TITLE>\xff</title>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := findTitle(b)
		if len(got) > MaxTitleBytes || strings.TrimSpace(got) != got {
			t.Fatalf("findTitle = %q", got)
		}
	})
}
