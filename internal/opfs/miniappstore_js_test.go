package opfs

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore/miniappstoretest"
)

// TestMiniAppStore runs the mini-app store's suite with every workspace, shelf and sandbox an
// OPFS root, and again over directory-handle roots. The two run at once (each root is a fresh
// directory of its own): their time is mostly waits on the browser's storage.
func TestMiniAppStore(t *testing.T) {
	t.Run("OPFS", func(t *testing.T) {
		t.Parallel()
		miniappstoretest.Run(t, func(t *testing.T) fsroot.Root { return opfsRoot(t) })
	})
	t.Run("Handle", func(t *testing.T) {
		t.Parallel()
		miniappstoretest.Run(t, func(t *testing.T) fsroot.Root { return FromHandle(freshDir(t)) })
	})
}
