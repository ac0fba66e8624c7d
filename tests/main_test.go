//go:build !js

// Package tests holds the end-to-end tests: the real relay binary, the real page in headless
// Chromium (and a smoke of it in Firefox ESR, firefox_test.go), and GOOS=js test binaries run
// inside a dedicated worker.
package tests

import (
	"os"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

func TestMain(m *testing.M) {
	if os.Getenv(forwardEnv) != "" {
		os.Exit(forwardStdio(os.Args[1:])) // BenchmarkMCPReadWorkspace's second process, not a test run
	}
	harness.Main(m)
}
