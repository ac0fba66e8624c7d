package opfs

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor/executortest"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// TestAssistantPrimitives runs the executor's delete, edit, grep and undo suite, with its history
// in the root's hidden metadata area, over OPFS and over a directory handle.
func TestAssistantPrimitives(t *testing.T) {
	t.Run("OPFS", func(t *testing.T) {
		executortest.Run(t, func(t *testing.T) fsroot.Root { return opfsRoot(t) }, executortest.Options{FilesOnlyMove: true})
	})
	t.Run("Handle", func(t *testing.T) {
		executortest.Run(t, func(t *testing.T) fsroot.Root { return FromHandle(freshDir(t)) }, executortest.Options{FilesOnlyMove: true})
	})
}
