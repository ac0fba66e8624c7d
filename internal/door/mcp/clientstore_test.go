package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hoststate/hoststatetest"
)

func TestFileClientsMintLookupRevoke(t *testing.T) {
	t.Parallel()
	state, err := hoststate.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := NewFileClients(filepath.Join(state.Path(), ClientsFile))
	first, err := d.Mint("desktop")
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := d.Mint("agent")
	second, _ := d.Mint("desktop") // revokes first
	pairing, _ := state.Pair("desktop")
	tests := []struct {
		name, bearer, want string
		ok, live           bool
	}{
		{"a live bearer", second, "desktop", true, true},
		{"another client's", agent, "agent", true, true},
		{"one replaced by a newer mint", first, "desktop", true, false},
		{"a pairing's bearer of the same name", pairing, "", false, false},
		{"no prefix", strings.TrimPrefix(second, hoststate.MCPBearerPrefix), "", false, false},
		{"one character off", second[:len(second)-1] + "x", "", false, false},
		{"empty", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok, err := d.Lookup(tt.bearer)
			if err != nil || ok != tt.ok || c.Name != tt.want || (ok && c.Live() != tt.live) {
				t.Fatalf("Lookup = %+v, %v, %v", c, ok, err)
			}
		})
	}
	if err := d.Revoke("desktop"); err != nil {
		t.Fatal(err)
	}
	if c, ok, _ := d.Lookup(second); !ok || c.Live() {
		t.Fatalf("a revoked bearer reads %+v, %v", c, ok)
	}
	if err := d.Revoke("desktop"); !errors.Is(err, hoststate.ErrNoClient) {
		t.Fatalf("revoking twice: %v", err)
	}
	for _, bad := range []string{"", "a b", "../x", strings.Repeat("a", hoststate.MaxNameBytes+1)} {
		if _, err := d.Mint(bad); !errors.Is(err, hoststate.ErrBadName) {
			t.Errorf("Mint(%q): %v", bad, err)
		}
	}
	cs, _ := d.List()
	if len(cs) != 1 || cs[0].Name != "agent" {
		t.Fatalf("List = %+v", cs)
	}
	raw, _ := os.ReadFile(d.path)
	if strings.Contains(string(raw), strings.TrimPrefix(agent, hoststate.MCPBearerPrefix)) || !strings.Contains(string(raw), hoststate.HashBearer(agent)) {
		t.Fatalf("the clients file holds a bearer, or not its hash:\n%s", raw)
	}
	if info, _ := os.Stat(d.path); info.Mode().Perm() != 0o600 {
		t.Fatalf("the clients file is %v", info.Mode().Perm())
	}
}

func TestFileClientsBounds(t *testing.T) {
	t.Parallel()
	d := NewFileClients(filepath.Join(t.TempDir(), ClientsFile))
	for i := range hoststate.MaxMCPClients {
		if _, err := d.Mint("c" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Mint("one-more"); !errors.Is(err, hoststate.ErrTooManyClients) {
		t.Fatalf("minting past the bound: %v", err)
	}
	// Minting a name again revokes its bearer: many re-mints keep at most hoststate.MaxRevokedMCPClients
	// revoked records.
	d2 := NewFileClients(filepath.Join(t.TempDir(), ClientsFile))
	for range hoststate.MaxRevokedMCPClients + 10 {
		if _, err := d2.Mint("again"); err != nil {
			t.Fatal(err)
		}
	}
	cs, _ := d2.readClients()
	if len(cs) != hoststate.MaxRevokedMCPClients+1 {
		t.Fatalf("%d records kept, want %d", len(cs), hoststate.MaxRevokedMCPClients+1)
	}
}

// TestFileClientsConformance holds the state directory's MCP clients file to the conformance
// suite: two stores on one file stand for the relay and a `relay mcp-token` run beside it.
func TestFileClientsConformance(t *testing.T) {
	hoststatetest.RunMCPClients(t, func(t *testing.T) (hoststate.MCPClientStore, hoststate.MCPClientStore) {
		p := filepath.Join(t.TempDir(), ClientsFile)
		return NewFileClients(p), NewFileClients(p)
	})
}

// TestFileClientsLookupFollowsTheFile: a lookup decodes the file only when it changed, and
// every change is seen at the next lookup: a mint and a revocation by another process (another
// store on the file), the file removed, and the file replaced by hand with other records.
func TestFileClientsLookupFollowsTheFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), ClientsFile)
	relay, beside := NewFileClients(p), NewFileClients(p)
	lookup := func(bearer string) (string, bool) {
		t.Helper()
		c, ok, err := relay.Lookup(bearer)
		if err != nil {
			t.Fatal(err)
		}
		return c.Name, ok && c.Live()
	}
	desktop, _ := beside.Mint("desktop")
	if name, live := lookup(desktop); name != "desktop" || !live {
		t.Fatalf("a bearer minted beside: %q live %v", name, live)
	}
	if name, live := lookup(desktop); name != "desktop" || !live {
		t.Fatalf("the same lookup again: %q live %v", name, live)
	}
	before, _ := os.ReadFile(p)
	if err := beside.Revoke("desktop"); err != nil {
		t.Fatal(err)
	}
	if _, live := lookup(desktop); live {
		t.Fatal("a bearer revoked beside still works")
	}
	os.Remove(p)
	if _, ok, _ := relay.Lookup(desktop); ok {
		t.Fatal("a bearer found with the file removed")
	}
	// The file written back in place (same inode reused or not), with the old records of the
	// same length: it is read again.
	if err := os.WriteFile(p, before, 0o600); err != nil {
		t.Fatal(err)
	}
	if name, live := lookup(desktop); name != "desktop" || !live {
		t.Fatalf("the file put back by hand: %q live %v", name, live)
	}
}
