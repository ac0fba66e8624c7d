//go:build !js

// Package tests holds the end-to-end tests: the real relay binary, the real page in headless
// Chromium (and a smoke of it in Firefox ESR, firefox_test.go), and GOOS=js test binaries run
// inside a dedicated worker.
package tests

import (
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
