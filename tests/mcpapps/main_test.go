//go:build !js

// Package mcpapps admits the MCP Apps example servers of ext-apps (pinned npm packages) as remote
// MCP extensions and opens their views in the page. It is a test binary of its own, with its own
// Chromium, so that go test runs its servers beside the other end-to-end packages.
package mcpapps

import (
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
