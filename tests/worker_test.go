//go:build !js

package tests

import (
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// workerPackages are the packages whose worker-only tests (build tag voicebox_worker) run inside a
// dedicated worker.
var workerPackages = []string{"./internal/engine", "./internal/opfs"}

func TestWorkerOnlyTestsPassInADedicatedWorker(t *testing.T) {
	for _, pkg := range workerPackages {
		t.Run(strings.TrimPrefix(pkg, "./"), func(t *testing.T) {
			t.Parallel()
			// Fuzz targets are left to the native and browser layers: the worker has no file
			// system, so reading a target's seed corpus (testdata/fuzz) fails there.
			res := harness.RunInWorker(t, harness.BuildWorkerTest(t, pkg), "-test.v", "-test.skip", "^Fuzz")
			out := res.Output()
			t.Log(out)
			if res.Exit != 0 || !strings.Contains(out, "\nPASS") {
				t.Fatalf("%s in the worker exited %d", pkg, res.Exit)
			}
			if !strings.Contains(out, "--- PASS: ") {
				t.Fatalf("%s ran no worker-only test", pkg)
			}
		})
	}
}

// TestWorkerHarnessReportsFailure shows that a failing test in the worker fails the run and its
// output comes back, so a green worker run means something.
func TestWorkerHarnessReportsFailure(t *testing.T) {
	t.Parallel()
	res := harness.RunInWorker(t, harness.BuildWorkerTest(t, "./tests/harness/testdata/workerfail"), "-test.v")
	out := res.Output()
	if res.Exit == 0 {
		t.Fatalf("a failing test exited 0:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestThisFails", "a line before the failure", "this test fails on purpose"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
