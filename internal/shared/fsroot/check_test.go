package fsroot_test

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		path string
		rule refusal.Rule // "" means accepted
	}{
		{"plain", "notes.md", ""},
		{"nested", "notes/2026/today.md", ""},
		{"double-dot-inside-name", "a..b", ""},
		{"trailing-dot", "a.", ""},
		{"unicode", "ünïcödé/ファイル.md", ""},
		{"space", "with space/x y", ""},
		{"max-depth", strings.Repeat("d/", fsroot.MaxPathDepth-1) + "f", ""},
		{"max-name", strings.Repeat("n", fsroot.MaxNameBytes), ""},
		{"max-bytes", strings.Repeat(strings.Repeat("n", 200)+"/", 4) + strings.Repeat("n", fsroot.MaxPathBytes-4*201), ""},

		{"empty", "", refusal.OutsideRoot},
		{"dot", ".", refusal.OutsideRoot},
		{"dotdot", "..", refusal.OutsideRoot},
		{"parent-escape", "../../evil.sh", refusal.OutsideRoot},
		{"inner-escape", "assets/../../evil.sh", refusal.OutsideRoot},
		{"inner-dotdot", "a/../b", refusal.OutsideRoot},
		{"trailing-dotdot", "a/..", refusal.OutsideRoot},
		{"inner-dot", "a/./b", refusal.OutsideRoot},
		{"leading-dot-segment", "./a", refusal.OutsideRoot},
		{"absolute", "/etc/passwd", refusal.OutsideRoot},
		{"slash", "/", refusal.OutsideRoot},
		{"backslash", "a\\b", refusal.OutsideRoot},
		{"windows-escape", "..\\..\\evil.sh", refusal.OutsideRoot},
		{"nul", "a\x00b", refusal.OutsideRoot},
		{"empty-segment", "a//b", refusal.OutsideRoot},
		{"trailing-slash", "a/", refusal.OutsideRoot},
		{"invalid-utf8", "a\xffb", refusal.OutsideRoot},
		{"escape-beats-dotfile", ".secret/../x", refusal.OutsideRoot},

		{"host-token", ".host-token", refusal.DotfileRefused},
		{"nested-dotfile", "notes/.secret", refusal.DotfileRefused},
		{"dot-dir", ".git/config", refusal.DotfileRefused},
		{"meta-dir", fsroot.MetaDir + "/audit.jsonl", refusal.DotfileRefused},
		{"triple-dot", "...", refusal.DotfileRefused},

		{"too-deep", strings.Repeat("d/", fsroot.MaxPathDepth) + "f", refusal.PathTooLong},
		{"name-too-long", strings.Repeat("n", fsroot.MaxNameBytes+1), refusal.PathTooLong},
		{"path-too-long", strings.Repeat("abcdefg/", fsroot.MaxPathBytes/8) + "x", refusal.PathTooLong},
		{"path-one-over", strings.Repeat(strings.Repeat("n", 200)+"/", 4) + strings.Repeat("n", fsroot.MaxPathBytes-4*201+1), refusal.PathTooLong},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := fsroot.Check(c.path)
			if c.rule == "" {
				if err != nil {
					t.Fatalf("Check(%q) = %v; want accepted", c.path, err)
				}
				if path.Clean(c.path) != c.path {
					t.Fatalf("accepted %q is not its own path.Clean", c.path)
				}
				return
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Op != "check" || pe.Path != c.path {
				t.Fatalf("Check(%q) = %#v; want a *fs.PathError{Op: check}", c.path, err)
			}
			if !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("Check(%q) does not wrap fs.ErrInvalid", c.path)
			}
			if got := refusal.RuleOf(err); got != c.rule {
				t.Errorf("Check(%q) rule = %q; want %q (%v)", c.path, got, c.rule, err)
			}
			if !errors.Is(err, refusal.Of(c.rule)) {
				t.Errorf("errors.Is(Check(%q), refusal.Of(%s)) = false", c.path, c.rule)
			}
			if r, _ := refusal.As(err); r == nil || r.Why == "" {
				t.Errorf("Check(%q): refusal without a why", c.path)
			}
		})
	}
}

func TestCheckDir(t *testing.T) {
	t.Parallel()
	if err := fsroot.CheckDir(""); err != nil {
		t.Errorf("CheckDir(\"\") = %v; want the root accepted", err)
	}
	if err := fsroot.CheckDir("a/b"); err != nil {
		t.Errorf("CheckDir(a/b) = %v", err)
	}
	if refusal.RuleOf(fsroot.CheckDir("..")) != refusal.OutsideRoot {
		t.Errorf("CheckDir(..) accepted")
	}
	if refusal.RuleOf(fsroot.CheckDir(".voicebox")) != refusal.DotfileRefused {
		t.Errorf("CheckDir(.voicebox) accepted")
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"a": true, "a.txt": true, ".a": false, "a/b": false, "": false, "..": false, ".vbx-tmp": false, "a\\b": false} {
		if got := fsroot.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		kind error
		std  error
	}{
		{"is-dir", fsroot.ErrIsDir, fs.ErrInvalid},
		{"not-dir", fsroot.ErrNotDir, fs.ErrInvalid},
		{"not-empty", fsroot.ErrNotEmpty, fs.ErrExist},
		{"not-exist", fs.ErrNotExist, fs.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := fsroot.Err("open", "a/b", c.kind)
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "a/b" {
				t.Fatalf("Err = %#v", err)
			}
			if !errors.Is(err, c.kind) || !errors.Is(err, c.std) {
				t.Errorf("Err(%v) does not wrap %v and %v", c.kind, c.kind, c.std)
			}
			if refusal.RuleOf(err) != "" {
				t.Errorf("Err(%v) carries a refusal", c.kind)
			}
		})
	}
	r := fsroot.Refused("open", "link", refusal.New(refusal.OutsideRoot, "leads outside"))
	if !errors.Is(r, fs.ErrInvalid) || refusal.RuleOf(r) != refusal.OutsideRoot {
		t.Errorf("Refused = %v", r)
	}
	w := fsroot.WithOp(fsroot.Check(".."), "stat")
	var pe *fs.PathError
	if !errors.As(w, &pe) || pe.Op != "stat" || refusal.RuleOf(w) != refusal.OutsideRoot {
		t.Errorf("WithOp = %#v", w)
	}
}
