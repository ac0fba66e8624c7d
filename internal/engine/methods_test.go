//go:build !js

package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWorkerMethodsModuleIsCurrent holds public/worker-methods.js, the page's list and typedef
// of the worker's methods, to the method table it is rendered from.
func TestWorkerMethodsModuleIsCurrent(t *testing.T) {
	t.Parallel()
	want, err := MethodsModule()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "public", "worker-methods.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("public/worker-methods.js is stale: run go generate ./browser/engine and commit it")
	}
}

// TestTheModuleListsEveryMethodTheWorkerAnswers: every method an Engine answers is a line of the
// page's module, and nothing else is.
func TestTheModuleListsEveryMethodTheWorkerAnswers(t *testing.T) {
	t.Parallel()
	mod, err := MethodsModule()
	if err != nil {
		t.Fatal(err)
	}
	methods := New(Options{}).Methods()
	for _, m := range methods {
		if !bytes.Contains(mod, []byte("\n *   '"+m+"': [")) {
			t.Errorf("the worker answers %s, and public/worker-methods.js does not list it", m)
		}
	}
	if n := bytes.Count(mod, []byte("\n *   '")); n != len(methods) {
		t.Errorf("public/worker-methods.js lists %d methods, the worker answers %d", n, len(methods))
	}
}
