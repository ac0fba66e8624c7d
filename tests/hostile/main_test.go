//go:build !js

package hostile

import (
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestMain stops the Chromium the browser cases share once every case has run.
func TestMain(m *testing.M) { harness.Main(m) }
