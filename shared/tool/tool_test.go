package tool

import (
	"strings"
	"testing"
)

func TestModelName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 100)
	tests := []struct {
		name, scope, tool, want string
	}{
		{"no scope", "", "read_file", "read_file"},
		{"short", "app_x_orders__", "list", "app_x_orders__list"},
		{"exactly the bound", "s_", strings.Repeat("a", 62), "s_" + strings.Repeat("a", 62)},
		{"one over the bound", "s_", strings.Repeat("a", 63), "s_" + strings.Repeat("a", 53) + "_" + Digest(strings.Repeat("a", 63))},
		{"long tool", "app_12345678__", long, "app_12345678__" + long[:41] + "_" + Digest(long)},
		{"scope leaves no room", strings.Repeat("s", 61), "tool", strings.Repeat("s", 61) + "_" + Digest("tool")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ModelName(tt.scope, tt.tool); got != tt.want {
				t.Fatalf("ModelName(%q, %q) = %q, want %q", tt.scope, tt.tool, got, tt.want)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	t.Parallel()
	// SHA-256("abc") starts ba7816bf.
	if got := Digest("abc"); got != "ba7816bf" || len(got) != DigestLength {
		t.Fatalf("Digest(abc) = %q", got)
	}
}

// FuzzModelName: under a scope that leaves room, a name is at most MaxModelName long, starts with
// its scope, is the name itself when it fits, and two names that differ stay different when both
// fit or both are cut (barring a 32-bit digest collision). A name that fits can be written to
// equal another's cut form: the registries refuse such a second registration.
func FuzzModelName(f *testing.F) {
	f.Add("app_x_orders__", "list_orders", "list_order")
	f.Add("app_12345678__", strings.Repeat("a", 60), strings.Repeat("a", 61))
	f.Add("", strings.Repeat("b", 64), strings.Repeat("b", 65))
	f.Fuzz(func(t *testing.T, scope, a, b string) {
		if len(scope) > MaxModelName-DigestLength-1 {
			return
		}
		na, nb := ModelName(scope, a), ModelName(scope, b)
		if len(na) > MaxModelName || !strings.HasPrefix(na, scope) {
			t.Fatalf("ModelName(%q, %q) = %q: over the bound or not in its scope", scope, a, na)
		}
		if len(scope)+len(a) <= MaxModelName && na != scope+a {
			t.Fatalf("ModelName(%q, %q) = %q cut a name that fits", scope, a, na)
		}
		fits := func(s string) bool { return len(scope)+len(s) <= MaxModelName }
		if a != b && na == nb && fits(a) == fits(b) {
			t.Fatalf("%q and %q both became %q", a, b, na)
		}
	})
}
