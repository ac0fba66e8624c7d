package executor_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/shared/executor/executortest"
	"github.com/voicebox-go/voicebox/shared/fsroot"
)

func TestAssistantPrimitivesOnMemory(t *testing.T) {
	t.Parallel()
	executortest.Run(t, func(t *testing.T) fsroot.Root { return fsroot.NewMemory() })
}
