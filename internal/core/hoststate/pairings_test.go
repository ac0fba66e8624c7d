package hoststate_test

import (
	"path/filepath"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hoststate/hoststatetest"
)

// TestFilePairings holds the state directory's pairings file to the conformance suite: two
// stores on one file stand for the relay and a `relay pair` run beside it.
func TestFilePairings(t *testing.T) {
	hoststatetest.RunPairings(t, func(t *testing.T) (hoststate.PairingStore, hoststate.PairingStore) {
		p := filepath.Join(t.TempDir(), hoststate.PairingsFile)
		return hoststate.NewFilePairings(p), hoststate.NewFilePairings(p)
	})
}

// TestDirFiles holds the state directory's files to the conformance suite.
func TestDirFiles(t *testing.T) {
	hoststatetest.RunFiles(t, func(t *testing.T) (hoststate.Files, hoststate.Files) {
		dir := filepath.Join(t.TempDir(), "state")
		a, err := hoststate.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := hoststate.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	})
}
