package fleet_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/relay/fleet"
	"github.com/voicebox-go/voicebox/relay/fleet/fleettest"
	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/hoststate/hoststatetest"
	"github.com/voicebox-go/voicebox/relay/session"
	"github.com/voicebox-go/voicebox/relay/session/sessiontest"
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

// TestRecordsConformance holds the fleet's session records to the suite the memory records
// pass, two relays (two connections) on one embedded NATS.
func TestRecordsConformance(t *testing.T) {
	srv := fleettest.Start(t)
	n := 0
	sessiontest.RunRecords(t, func(t *testing.T) (session.Records, session.Records) {
		n++
		prefix := "rec" + string(rune('a'+n))
		return join(t, srv, prefix).Records(), join(t, srv, prefix).Records()
	})
}

// TestPairingsConformance holds the fleet's pairings to the suite the pairings file passes.
func TestPairingsConformance(t *testing.T) {
	srv := fleettest.Start(t)
	n := 0
	hoststatetest.RunPairings(t, func(t *testing.T) (hoststate.PairingStore, hoststate.PairingStore) {
		n++
		prefix := "pair" + string(rune('a'+n))
		return join(t, srv, prefix).Pairings(), join(t, srv, prefix).Pairings()
	})
}

// TestFilesConformance holds the fleet's shared files to the suite the state directory passes.
func TestFilesConformance(t *testing.T) {
	srv := fleettest.Start(t)
	n := 0
	hoststatetest.RunFiles(t, func(t *testing.T) (hoststate.Files, hoststate.Files) {
		n++
		prefix := "files" + string(rune('a'+n))
		return join(t, srv, prefix).Files(), join(t, srv, prefix).Files()
	})
}

// TestMCPClientsConformance holds the fleet's MCP clients' bearers to the suite the state
// directory's file passes.
func TestMCPClientsConformance(t *testing.T) {
	srv := fleettest.Start(t)
	n := 0
	hoststatetest.RunMCPClients(t, func(t *testing.T) (hoststate.MCPClientStore, hoststate.MCPClientStore) {
		n++
		prefix := "mcp" + string(rune('a'+n))
		return join(t, srv, prefix).MCPClients(), join(t, srv, prefix).MCPClients()
	})
}
