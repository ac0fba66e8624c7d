package fleet_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/relay/extensionhost"
	"github.com/voicebox-go/voicebox/relay/extensionhost/storetest"
	"github.com/voicebox-go/voicebox/relay/fleet/fleettest"
)

// TestExtensionStoreConformance holds the fleet's extension store to the suite the state
// directory passes, two relays (two connections) on one embedded NATS.
func TestExtensionStoreConformance(t *testing.T) {
	srv := fleettest.Start(t)
	n := 0
	storetest.Run(t, func(t *testing.T) (extensionhost.Store, extensionhost.Store) {
		n++
		prefix := "ext" + string(rune('a'+n))
		return join(t, srv, prefix).Extensions(), join(t, srv, prefix).Extensions()
	})
}
