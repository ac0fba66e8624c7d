package fleet_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/storetest"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// TestExtensionStoreConformance holds the fleet's extension store to the suite the state
// directory passes, two relays (two connections) on one embedded NATS.
func TestExtensionStoreConformance(t *testing.T) {
	storetest.Run(t, twoRelays(fleettest.Start(t), "ext", func(f *fleet.Fleet) extensionhost.Store { return f.Extensions() }))
}
