package hoststate_test

import (
	"path/filepath"
	"testing"

	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/hoststate/hoststatetest"
)

// TestFilePairings holds the state directory's pairings file to the conformance suite: two
// stores on one file stand for the relay and a `relay pair` run beside it.
func TestFilePairings(t *testing.T) {
	hoststatetest.RunPairings(t, func(t *testing.T) (hoststate.PairingStore, hoststate.PairingStore) {
		p := filepath.Join(t.TempDir(), hoststate.PairingsFile)
		return hoststate.NewFilePairings(p), hoststate.NewFilePairings(p)
	})
}
