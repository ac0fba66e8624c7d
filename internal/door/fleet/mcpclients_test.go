package fleet

import (
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// TestMCPClientsForgetOldRevocations checks the bucket itself: past MaxRevokedMCPClients
// revocations, the oldest records are gone, and the newest are kept.
func TestMCPClientsForgetOldRevocations(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	f, err := Connect(Config{URL: srv.URL(), Prefix: "prune"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.MCPClients()
	first, _ := s.Mint("again")
	for range hoststate.MaxRevokedMCPClients + 10 {
		if _, err := s.Mint("again"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel, kv, err := f.op(mcpClientsBucket)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	records := 0
	eachValue(ctx, kv, func(key string, _ []byte) {
		if strings.HasPrefix(key, mcpRecordKey) {
			records++
		}
	})
	if records != hoststate.MaxRevokedMCPClients+1 {
		t.Fatalf("%d records kept, want %d (the revocations remembered and the live one)", records, hoststate.MaxRevokedMCPClients+1)
	}
	if _, ok, _ := s.Lookup(first); ok {
		t.Fatal("the oldest revocation is still remembered")
	}
}
