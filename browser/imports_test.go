//go:build !js

package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbiddenInPage are packages the page's wasm must not pull in: they add megabytes to every
// page load (net/http, crypto/tls; jsonschema/v6 and the golang.org/x/text it brings, which only
// the tests use as toolschema's reference) or belong to other programs.
var forbiddenInPage = []string{"net/http", "crypto/tls", "os/exec", "github.com/voicebox-go/voicebox/relay", "github.com/chromedp/",
	"github.com/santhosh-tekuri/jsonschema/", "golang.org/x/text/"}

// TestPageImportsStayLean guards the GOOS=js build of the page (this command and the engine it
// starts) against heavy or foreign imports.
func TestPageImportsStayLean(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "github.com/voicebox-go/voicebox/browser")
	cmd.Env = append(cmd.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !slices.Contains(deps, "github.com/voicebox-go/voicebox/browser/engine") {
		t.Fatalf("go list returned %d packages, without the engine; the guard would see nothing", len(deps))
	}
	for _, dep := range deps {
		for _, bad := range forbiddenInPage {
			if dep == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("the page's wasm imports %s", dep)
			}
		}
	}
}
