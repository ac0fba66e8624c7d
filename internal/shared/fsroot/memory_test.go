package fsroot_test

import (
	"errors"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot/fsroottest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	fsroottest.Run(t, func(t *testing.T) fsroot.Root { return fsroot.NewMemory() }, fsroottest.Options{
		FailWrites: func(t *testing.T, root fsroot.Root) func() {
			m := root.(*fsroot.MemRoot)
			m.FailWrites(func(name string, written int64) error {
				if written > 1<<10 {
					return errors.New("injected: no space left")
				}
				return nil
			})
			return func() { m.FailWrites(nil) }
		},
	})
}
