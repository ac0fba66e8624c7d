package executor_test

import (
	"testing"

	"voicebox/shared/executor/executortest"
	"voicebox/shared/fsroot"
)

func TestAssistantPrimitivesOnMemory(t *testing.T) {
	t.Parallel()
	executortest.Run(t, func(t *testing.T) fsroot.Root { return fsroot.NewMemory() })
}
