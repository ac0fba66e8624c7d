package hoststate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMCPClientMintLookupRevoke(t *testing.T) {
	t.Parallel()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, err := d.MintMCPClient("desktop")
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := d.MintMCPClient("agent")
	second, _ := d.MintMCPClient("desktop") // revokes first
	pairing, _ := d.Pair("desktop")
	tests := []struct {
		name, bearer, want string
		ok, live           bool
	}{
		{"a live bearer", second, "desktop", true, true},
		{"another client's", agent, "agent", true, true},
		{"one replaced by a newer mint", first, "desktop", true, false},
		{"a pairing's bearer of the same name", pairing, "", false, false},
		{"no prefix", strings.TrimPrefix(second, MCPBearerPrefix), "", false, false},
		{"one character off", second[:len(second)-1] + "x", "", false, false},
		{"empty", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok, err := d.LookupMCPClient(tt.bearer)
			if err != nil || ok != tt.ok || c.Name != tt.want || (ok && c.Live() != tt.live) {
				t.Fatalf("LookupMCPClient = %+v, %v, %v", c, ok, err)
			}
		})
	}
	if err := d.RevokeMCPClient("desktop"); err != nil {
		t.Fatal(err)
	}
	if c, ok, _ := d.LookupMCPClient(second); !ok || c.Live() {
		t.Fatalf("a revoked bearer reads %+v, %v", c, ok)
	}
	if err := d.RevokeMCPClient("desktop"); !errors.Is(err, ErrNoClient) {
		t.Fatalf("revoking twice: %v", err)
	}
	for _, bad := range []string{"", "a b", "../x", strings.Repeat("a", MaxNameBytes+1)} {
		if _, err := d.MintMCPClient(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("MintMCPClient(%q): %v", bad, err)
		}
	}
	cs, _ := d.MCPClients()
	if len(cs) != 1 || cs[0].Name != "agent" {
		t.Fatalf("MCPClients = %+v", cs)
	}
	raw, _ := os.ReadFile(filepath.Join(d.Path(), MCPClientsFile))
	if strings.Contains(string(raw), strings.TrimPrefix(agent, MCPBearerPrefix)) || !strings.Contains(string(raw), hashHex(agent)) {
		t.Fatalf("the clients file holds a bearer, or not its hash:\n%s", raw)
	}
	if info, _ := os.Stat(filepath.Join(d.Path(), MCPClientsFile)); info.Mode().Perm() != 0o600 {
		t.Fatalf("the clients file is %v", info.Mode().Perm())
	}
}

func TestMCPClientBounds(t *testing.T) {
	t.Parallel()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxMCPClients {
		if _, err := d.MintMCPClient("c" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.MintMCPClient("one-more"); !errors.Is(err, ErrTooManyClients) {
		t.Fatalf("minting past the bound: %v", err)
	}
	// Minting a name again revokes its bearer: many re-mints keep at most MaxRevokedMCPClients
	// revoked records.
	d2, _ := Open(t.TempDir())
	for range MaxRevokedMCPClients + 10 {
		if _, err := d2.MintMCPClient("again"); err != nil {
			t.Fatal(err)
		}
	}
	cs, _ := NewFileMCPClients(filepath.Join(d2.Path(), MCPClientsFile)).readClients()
	if len(cs) != MaxRevokedMCPClients+1 {
		t.Fatalf("%d records kept, want %d", len(cs), MaxRevokedMCPClients+1)
	}
}
