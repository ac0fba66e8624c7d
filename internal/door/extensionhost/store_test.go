package extensionhost_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/storetest"
)

// TestDirStoreConformance holds the state directory to the suite the fleet's store passes: two
// DirStores on one directory.
func TestDirStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) (extensionhost.Store, extensionhost.Store) {
		dir := t.TempDir()
		return extensionhost.NewDirStore(dir), extensionhost.NewDirStore(dir)
	})
}
