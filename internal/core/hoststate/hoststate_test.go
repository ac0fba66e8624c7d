package hoststate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestStateDirectoryAndFilePermissions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "voicebox")
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	bearer, err := d.Pair("box")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		mode os.FileMode
	}{
		{"the directory", dir, 0o700},
		{"the host token", filepath.Join(dir, HostTokenFile), 0o600},
		{"the pairings", filepath.Join(dir, PairingsFile), 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := os.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != tt.mode {
				t.Fatalf("mode %v, want %v", info.Mode().Perm(), tt.mode)
			}
		})
	}
	tok, _ := os.ReadFile(filepath.Join(dir, HostTokenFile))
	if s := strings.TrimSpace(string(tok)); len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "" {
		t.Fatalf("host token %q is not 32 bytes of hex", s)
	}
	pairings, _ := os.ReadFile(filepath.Join(dir, PairingsFile))
	secret := strings.TrimPrefix(bearer, BearerPrefix)
	if strings.Contains(string(pairings), secret) || !strings.Contains(string(pairings), hashHex(bearer)) {
		t.Fatalf("the pairings file holds the bearer, or not its hash:\n%s", pairings)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("the directory holds %v; a temporary file was left behind", entries)
	}
}

func TestReopenKeepsTokenAndTightensMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Fatalf("an open directory was left %v", info.Mode().Perm())
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(filepath.Join(dir, HostTokenFile))
	s := strings.TrimSpace(string(tok))
	if !a.CheckHostToken(s) || !b.CheckHostToken(s) {
		t.Fatal("the host token changed on reopening")
	}
	for _, wrong := range []string{"", s[:63], s + "0", strings.ToUpper(s)} {
		if b.CheckHostToken(wrong) {
			t.Fatalf("CheckHostToken(%q) passed", wrong)
		}
	}
}

func TestPairLookupRevoke(t *testing.T) {
	t.Parallel()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, _ := d.Pair("box")
	other, _ := d.Pair("laptop")
	tests := []struct {
		name, bearer, want string
		ok                 bool
	}{
		{"a paired bearer", first, "box", true},
		{"another", other, "laptop", true},
		{"no prefix", strings.TrimPrefix(first, BearerPrefix), "", false},
		{"one character off", first[:len(first)-1] + "x", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, ok, err := d.Lookup(tt.bearer)
			if err != nil || ok != tt.ok || name != tt.want {
				t.Fatalf("Lookup = %q, %v, %v", name, ok, err)
			}
		})
	}
	second, _ := d.Pair("box")
	if _, ok, _ := d.Lookup(first); ok {
		t.Fatal("pairing a name again left its old bearer working")
	}
	if name, ok, _ := d.Lookup(second); !ok || name != "box" {
		t.Fatal("the new bearer does not work")
	}
	if err := d.Revoke("box"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := d.Lookup(second); ok {
		t.Fatal("a revoked bearer still works")
	}
	if err := d.Revoke("box"); !errors.Is(err, ErrNotPaired) {
		t.Fatalf("revoking twice: %v", err)
	}
	for _, bad := range []string{"", "a b", "../x", strings.Repeat("a", MaxNameBytes+1), "naïve"} {
		if _, err := d.Pair(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("Pair(%q): %v", bad, err)
		}
	}
	ps, _ := d.List()
	if len(ps) != 1 || ps[0].Name != "laptop" {
		t.Fatalf("List = %v", ps)
	}
}

// TestPairHammer pairs from many goroutines at once: every pairing survives.
func TestPairHammer(t *testing.T) {
	t.Parallel()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	bearers := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			bearers[i], _ = d.Pair("env-" + string(rune('a'+i)))
		})
	}
	wg.Wait()
	for i, b := range bearers {
		if name, ok, _ := d.Lookup(b); !ok || name != "env-"+string(rune('a'+i)) {
			t.Fatalf("pairing %d lost", i)
		}
	}
}

func TestCheckNameNamesTheCharacter(t *testing.T) {
	t.Parallel()
	if r := CheckName("a client", "claude\u202e"); r == nil || r.Rule != refusal.InvalidName || !strings.Contains(r.Why, "U+202E") {
		t.Errorf("CheckName(RLO) = %v; want invalid-name", r)
	}
	if r := CheckName("a client", "clau de"); r == nil || r.Rule != refusal.InvalidArgument {
		t.Errorf("CheckName(space) = %v; want invalid-argument", r)
	}
	if r := CheckName("a client", "claude-1.2"); r != nil {
		t.Errorf("CheckName(clean) = %v", r)
	}
}
