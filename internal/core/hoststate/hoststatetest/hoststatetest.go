// Package hoststatetest holds the conformance suites of hoststate's interfaces, PairingStore,
// MCPClientStore and Files: the state directory's files and a fleet's shared buckets pass the
// same cases.
package hoststatetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
)

// OpenPairings returns two views of one new, empty store: two FilePairings on one file, or two
// relays' connections to one fleet.
type OpenPairings func(t *testing.T) (a, b hoststate.PairingStore)

// RunPairings runs the suite. What one view pairs the other admits; what one revokes the other
// refuses; no view keeps a bearer.
func RunPairings(t *testing.T, open OpenPairings) {
	t.Run("PairedOnOneAdmittedOnTheOther", func(t *testing.T) {
		a, b := open(t)
		bearer, err := a.Pair("laptop")
		if err != nil || !strings.HasPrefix(bearer, hoststate.BearerPrefix) {
			t.Fatalf("Pair = %q %v", bearer, err)
		}
		if name, ok, err := b.Lookup(bearer); err != nil || !ok || name != "laptop" {
			t.Fatalf("Lookup on the other view = %q %v %v", name, ok, err)
		}
		if ok, err := b.Paired("laptop"); err != nil || !ok {
			t.Fatalf("Paired = %v %v", ok, err)
		}
		for _, bad := range []string{"", "vbx_", bearer + "0", strings.TrimPrefix(bearer, hoststate.BearerPrefix), hoststate.HashBearer(bearer)} {
			if _, ok, err := b.Lookup(bad); err != nil || ok {
				t.Errorf("Lookup(%q) matched (%v)", bad, err)
			}
		}
		list, err := b.List()
		if err != nil || len(list) != 1 || list[0].Name != "laptop" || list[0].BearerSHA256 != hoststate.HashBearer(bearer) || list[0].Created.IsZero() {
			t.Fatalf("List = %+v %v", list, err)
		}
	})

	t.Run("PairingAgainReplacesTheBearer", func(t *testing.T) {
		a, b := open(t)
		old, _ := a.Pair("ci")
		fresh, err := b.Pair("ci")
		if err != nil || fresh == old {
			t.Fatalf("Pair again = %q %v", fresh, err)
		}
		if _, ok, _ := a.Lookup(old); ok {
			t.Fatal("the replaced bearer still passes")
		}
		if name, ok, _ := a.Lookup(fresh); !ok || name != "ci" {
			t.Fatal("the new bearer does not pass")
		}
		if list, _ := a.List(); len(list) != 1 {
			t.Fatalf("two pairings of one name: %+v", list)
		}
	})

	t.Run("RevokedOnOneRefusedOnTheOther", func(t *testing.T) {
		a, b := open(t)
		bearer, _ := a.Pair("gone")
		keep, _ := a.Pair("kept")
		if err := b.Revoke("gone"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := a.Lookup(bearer); ok {
			t.Fatal("a revoked bearer passes")
		}
		if ok, _ := a.Paired("gone"); ok {
			t.Fatal("a revoked name is paired")
		}
		if _, ok, _ := a.Lookup(keep); !ok {
			t.Fatal("revoking one pairing ended another")
		}
		if err := a.Revoke("gone"); !errors.Is(err, hoststate.ErrNotPaired) {
			t.Fatalf("revoked twice: %v", err)
		}
	})

	t.Run("BadNames", func(t *testing.T) {
		a, _ := open(t)
		for _, name := range []string{"", strings.Repeat("a", hoststate.MaxNameBytes+1), "a b", "a/b", "é", "a\x00"} {
			if _, err := a.Pair(name); !errors.Is(err, hoststate.ErrBadName) {
				t.Errorf("Pair(%q) = %v", name, err)
			}
		}
		for _, name := range []string{".", "..", "a..b", "-", strings.Repeat("z", hoststate.MaxNameBytes)} {
			if _, err := a.Pair(name); err != nil {
				t.Errorf("Pair(%q) = %v", name, err)
			}
		}
	})

	t.Run("OldestFirst", func(t *testing.T) {
		a, b := open(t)
		for _, n := range []string{"one", "two", "three"} {
			if _, err := a.Pair(n); err != nil {
				t.Fatal(err)
			}
		}
		list, err := b.List()
		if err != nil || len(list) != 3 {
			t.Fatalf("List = %+v %v", list, err)
		}
		for i := 1; i < len(list); i++ {
			if list[i].Created.Before(list[i-1].Created) {
				t.Fatalf("not oldest first: %+v", list)
			}
		}
	})

	t.Run("Hammer", func(t *testing.T) {
		a, _ := open(t)
		for name, bearer := range hammer(t, a.Pair) {
			if got, ok, err := a.Lookup(bearer); err != nil || !ok || got != name {
				t.Fatalf("pairing %s lost: %q %v %v", name, got, ok, err)
			}
		}
	})
}

// OpenFiles returns two views of one new, empty set of state files.
type OpenFiles func(t *testing.T) (a, b hoststate.Files)

// RunFiles is the conformance suite of hoststate.Files.
func RunFiles(t *testing.T, open OpenFiles) {
	t.Run("WrittenOnOneReadOnTheOther", func(t *testing.T) {
		a, b := open(t)
		if got, err := b.ReadFile(".settings.json", 1024); err != nil || got != nil {
			t.Fatalf("a missing file = %q %v, want nil nil", got, err)
		}
		if err := a.WriteFile(".settings.json", []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := a.WriteFile(".settings.json", []byte(`{"v":2}`)); err != nil {
			t.Fatal(err)
		}
		if got, err := b.ReadFile(".settings.json", 1024); err != nil || string(got) != `{"v":2}` {
			t.Fatalf("read on the other view = %q %v", got, err)
		}
	})
	t.Run("Bounds", func(t *testing.T) {
		a, b := open(t)
		if err := a.WriteFile("big", make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ReadFile("big", 99); err == nil {
			t.Fatal("a file over the bound was read")
		}
		if got, err := b.ReadFile("big", 100); err != nil || len(got) != 100 {
			t.Fatalf("a file at the bound: %d %v", len(got), err)
		}
	})
	t.Run("BadNames", func(t *testing.T) {
		a, _ := open(t)
		for _, name := range []string{"", ".", "..", "a/b", "../x"} {
			if err := a.WriteFile(name, []byte("x")); err == nil {
				t.Errorf("WriteFile(%q) succeeded", name)
			}
			if _, err := a.ReadFile(name, 10); err == nil {
				t.Errorf("ReadFile(%q) succeeded", name)
			}
		}
	})
}

// OpenMCPClients returns two views of one new, empty store of MCP clients' bearers: two
// internal/door/mcp.FileClients on one file, or two relays' connections to one fleet.
type OpenMCPClients func(t *testing.T) (a, b hoststate.MCPClientStore)

// RunMCPClients is the conformance suite of hoststate.MCPClientStore. What one view mints the
// other admits; what one revokes (or replaces by minting the name again) the other reads as
// revoked; a name holds at most one live bearer; no view keeps a bearer.
func RunMCPClients(t *testing.T, open OpenMCPClients) {
	live := func(t *testing.T, s hoststate.MCPClientStore, bearer, name string) {
		t.Helper()
		c, ok, err := s.Lookup(bearer)
		if err != nil || !ok || c.Name != name || !c.Live() || c.BearerSHA256 != hoststate.HashBearer(bearer) || c.Created.IsZero() {
			t.Fatalf("Lookup of %s's bearer = %+v %v %v, want it live", name, c, ok, err)
		}
	}
	revoked := func(t *testing.T, s hoststate.MCPClientStore, bearer, name string) {
		t.Helper()
		c, ok, err := s.Lookup(bearer)
		if err != nil || !ok || c.Name != name || c.Live() {
			t.Fatalf("Lookup of %s's old bearer = %+v %v %v, want it revoked", name, c, ok, err)
		}
	}

	t.Run("MintedOnOneAdmittedOnTheOther", func(t *testing.T) {
		a, b := open(t)
		bearer, err := a.Mint("desktop")
		if err != nil || !strings.HasPrefix(bearer, hoststate.MCPBearerPrefix) {
			t.Fatalf("Mint = %q %v", bearer, err)
		}
		live(t, b, bearer, "desktop")
		pairing := hoststate.NewBearer()
		for _, bad := range []string{"", hoststate.MCPBearerPrefix, bearer + "0", bearer[:len(bearer)-1] + "x",
			strings.TrimPrefix(bearer, hoststate.MCPBearerPrefix), hoststate.HashBearer(bearer), pairing, "vbm_*", "vbm_a.b"} {
			if c, ok, err := b.Lookup(bad); err != nil || ok {
				t.Errorf("Lookup(%q) = %+v %v %v", bad, c, ok, err)
			}
		}
		list, err := b.List()
		if err != nil || len(list) != 1 || list[0].Name != "desktop" || list[0].BearerSHA256 != hoststate.HashBearer(bearer) || !list[0].Live() {
			t.Fatalf("List = %+v %v", list, err)
		}
	})

	t.Run("MintingAgainRevokesTheOld", func(t *testing.T) {
		a, b := open(t)
		old, _ := a.Mint("agent")
		fresh, err := b.Mint("agent")
		if err != nil || fresh == old {
			t.Fatalf("Mint again = %q %v", fresh, err)
		}
		revoked(t, a, old, "agent")
		live(t, a, fresh, "agent")
		if list, _ := a.List(); len(list) != 1 || list[0].BearerSHA256 != hoststate.HashBearer(fresh) {
			t.Fatalf("List = %+v, want the new bearer alone", list)
		}
	})

	t.Run("RevokedOnOneRefusedOnTheOther", func(t *testing.T) {
		a, b := open(t)
		gone, _ := a.Mint("gone")
		kept, _ := a.Mint("kept")
		if err := b.Revoke("gone"); err != nil {
			t.Fatal(err)
		}
		revoked(t, a, gone, "gone")
		live(t, a, kept, "kept")
		if err := a.Revoke("gone"); !errors.Is(err, hoststate.ErrNoClient) {
			t.Fatalf("revoked twice: %v", err)
		}
		if err := a.Revoke("never"); !errors.Is(err, hoststate.ErrNoClient) {
			t.Fatalf("revoking a name never minted: %v", err)
		}
		if list, _ := b.List(); len(list) != 1 || list[0].Name != "kept" {
			t.Fatalf("List = %+v", list)
		}
		again, err := b.Mint("gone")
		if err != nil {
			t.Fatal(err)
		}
		live(t, a, again, "gone")
		revoked(t, a, gone, "gone")
	})

	t.Run("BadNames", func(t *testing.T) {
		a, _ := open(t)
		for _, name := range []string{"", strings.Repeat("a", hoststate.MaxNameBytes+1), "a b", "a/b", "../x", "é", "a\x00"} {
			if _, err := a.Mint(name); !errors.Is(err, hoststate.ErrBadName) {
				t.Errorf("Mint(%q) = %v", name, err)
			}
		}
		for _, name := range []string{".", "a..b", "a.b", "-", strings.Repeat("z", hoststate.MaxNameBytes)} {
			bearer, err := a.Mint(name)
			if err != nil {
				t.Errorf("Mint(%q) = %v", name, err)
				continue
			}
			live(t, a, bearer, name)
		}
	})

	t.Run("AtMostMaxMCPClientsLive", func(t *testing.T) {
		a, b := open(t)
		for i := range hoststate.MaxMCPClients {
			if _, err := a.Mint(fmt.Sprintf("c%02d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.Mint("one-more"); !errors.Is(err, hoststate.ErrTooManyClients) {
			t.Fatalf("minting past the bound: %v", err)
		}
		if _, err := b.Mint("c00"); err != nil { // minting a name again replaces its bearer
			t.Fatalf("minting a live name again at the bound: %v", err)
		}
		if err := b.Revoke("c01"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Mint("one-more"); err != nil {
			t.Fatalf("minting after a revocation: %v", err)
		}
	})

	t.Run("RevocationsAreRemembered", func(t *testing.T) {
		a, b := open(t)
		var prev, last string
		for range hoststate.MaxRevokedMCPClients + 10 {
			bearer, err := a.Mint("again")
			if err != nil {
				t.Fatal(err)
			}
			prev, last = last, bearer
		}
		revoked(t, b, prev, "again")
		live(t, b, last, "again")
		if list, _ := b.List(); len(list) != 1 {
			t.Fatalf("List = %d clients, want 1", len(list))
		}
	})

	t.Run("OneNameMintedAtOnceThroughBoth", func(t *testing.T) {
		a, b := open(t)
		var wg sync.WaitGroup
		bearers := make([]string, 8)
		for i := range bearers {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				var err error
				if bearers[i], err = s.Mint("raced"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		n := 0
		for _, bearer := range bearers {
			if c, ok, err := a.Lookup(bearer); err == nil && ok && c.Live() {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d of the raced bearers are live, want exactly 1", n)
		}
		if list, _ := b.List(); len(list) != 1 {
			t.Fatalf("List = %+v, want one client", list)
		}
	})

	t.Run("Hammer", func(t *testing.T) {
		a, _ := open(t)
		for name, bearer := range hammer(t, a.Mint) {
			live(t, a, bearer, name)
		}
	})
}

// hammer issues bearers for 16 names at once through issue (a store's Pair or Mint) and returns
// each name's bearer; a failed issue fails the test.
func hammer(t *testing.T, issue func(name string) (string, error)) map[string]string {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		bearers = map[string]string{}
	)
	for i := range 16 {
		name := fmt.Sprintf("m%02d", i)
		wg.Go(func() {
			bearer, err := issue(name)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			bearers[name] = bearer
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(bearers) != 16 {
		t.Fatalf("%d of 16 bearers issued", len(bearers))
	}
	return bearers
}
