package fleet_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hoststate/hoststatetest"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/core/session/sessiontest"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// join connects a relay to the fleet on srv under prefix, and leaves when the test ends.
func join(t testing.TB, srv *fleettest.Server, prefix string) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Connect(fleet.Config{URL: srv.URL(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// twoRelays returns the open function of a store conformance suite: each call joins two fresh
// relays to the fleet on srv (a prefix of their own per call) and returns what store takes from
// each, so the suite sees one shared store through two connections.
func twoRelays[S any](srv *fleettest.Server, prefix string, store func(*fleet.Fleet) S) func(*testing.T) (S, S) {
	n := 0
	return func(t *testing.T) (S, S) {
		n++
		p := prefix + string(rune('a'+n))
		return store(join(t, srv, p)), store(join(t, srv, p))
	}
}

// TestRecordsConformance holds the fleet's session records to the suite the memory records
// pass, two relays (two connections) on one embedded NATS.
func TestRecordsConformance(t *testing.T) {
	t.Parallel()
	sessiontest.RunRecords(t, twoRelays(fleettest.Start(t), "rec", func(f *fleet.Fleet) session.Records { return f.Records() }))
}

// TestPairingsConformance holds the fleet's pairings to the suite the pairings file passes.
func TestPairingsConformance(t *testing.T) {
	t.Parallel()
	hoststatetest.RunPairings(t, twoRelays(fleettest.Start(t), "pair", func(f *fleet.Fleet) hoststate.PairingStore { return f.Pairings() }))
}

// TestFilesConformance holds the fleet's shared files to the suite the state directory passes.
func TestFilesConformance(t *testing.T) {
	t.Parallel()
	hoststatetest.RunFiles(t, twoRelays(fleettest.Start(t), "files", func(f *fleet.Fleet) hoststate.Files { return f.Files() }))
}

// TestMCPClientsConformance holds the fleet's MCP clients' bearers to the suite the state
// directory's file passes.
func TestMCPClientsConformance(t *testing.T) {
	t.Parallel()
	hoststatetest.RunMCPClients(t, twoRelays(fleettest.Start(t), "mcp", func(f *fleet.Fleet) hoststate.MCPClientStore { return f.MCPClients() }))
}
