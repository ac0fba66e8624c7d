//go:build js && voicebox_worker

// Package workerfail holds a test that always fails, so the worker harness's own test can show
// that a failing test in the worker fails the run.
package workerfail

import "testing"

func TestThisFails(t *testing.T) {
	t.Log("a line before the failure")
	t.Fatal("this test fails on purpose")
}
