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

// FuzzCheck holds Check to its promise: a name it accepts resolves inside the root however it is
// joined, and a name it refuses is refused in the documented shape.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"notes.md", "a/b/c", "../../evil.sh", "assets/../../evil.sh", "/etc/passwd", "a\\b",
		"a\x00b", ".host-token", "notes/.secret", "", ".", "..", "a//b", "a/", "a..b", "...",
		"ünï/ファイル", "\xff", "a/./b", strings.Repeat("d/", 40), "C:\\Windows", "%2e%2e/x",
	} {
		f.Add(s)
	}
	const top = "/workspace/root"
	f.Fuzz(func(t *testing.T, name string) {
		err := fsroot.Check(name)
		if err != nil {
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != name || !errors.Is(err, fs.ErrInvalid) {
				t.Fatalf("Check(%q) = %#v; want a *fs.PathError wrapping fs.ErrInvalid", name, err)
			}
			switch refusal.RuleOf(err) {
			case refusal.OutsideRoot, refusal.DotfileRefused, refusal.PathTooLong:
			default:
				t.Fatalf("Check(%q) refused with rule %q", name, refusal.RuleOf(err))
			}
			if fsroot.CheckDir(name) == nil && name != "" {
				t.Fatalf("CheckDir(%q) accepts what Check refuses", name)
			}
			return
		}
		joined := path.Join(top, name)
		if joined != top+"/"+name {
			t.Fatalf("accepted %q joins to %q, not to itself under the root", name, joined)
		}
		if !strings.HasPrefix(joined, top+"/") {
			t.Fatalf("accepted %q resolves outside the root: %q", name, joined)
		}
		if path.Clean(name) != name || path.IsAbs(name) {
			t.Fatalf("accepted %q is not a clean relative path", name)
		}
		elems := strings.Split(name, "/")
		if len(name) > fsroot.MaxPathBytes || len(elems) > fsroot.MaxPathDepth {
			t.Fatalf("accepted %q over the bounds", name)
		}
		for _, e := range elems {
			if e == "" || e[0] == '.' || len(e) > fsroot.MaxNameBytes || strings.ContainsAny(e, "\\\x00") || !fsroot.ValidName(e) {
				t.Fatalf("accepted %q with the element %q", name, e)
			}
		}
		if fsroot.CheckDir(name) != nil {
			t.Fatalf("CheckDir(%q) refuses what Check accepts", name)
		}
	})
}
