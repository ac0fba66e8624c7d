//go:build !js

package executor_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

func init() {
	parallelRoots["os"] = func(t *testing.T) fsroot.Root {
		r, err := fsroot.OpenOS(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
}
