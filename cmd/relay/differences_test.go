package main

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
)

// notOurRules are the kebab-case names docs/differences.md may write in backticks that are not
// rule ids of ours and that no table of the code lists: the original's rule ids we do not have,
// and words. A rule id of ours is checked against shared/refusal, a catalogue entry against the
// shipped catalogue, a primitive against extensions' primitives.
var notOurRules = map[string]string{
	"bad-redirect":              "the original's rule id",
	"bad-url":                   "the original's rule id",
	"bootstrap-ticket-refused":  "the original's rule id",
	"host-deny":                 "the original's rule id",
	"redirect-without-location": "the original's rule id",
	"mini-app":                  "the original's name for an app with no letters",
	"wasm-shelf":                "the shelf's directory and its id prefix (extensions.ShelfPrefix)",
}

// TestDifferencesNameOnlyLiveRules holds docs/differences.md to the code where it can: every
// kebab-case name it writes in backticks is one of our rule ids (shared/refusal), an entry of the
// shipped catalogue, a primitive, or a name listed in notOurRules with what it is. A difference
// that names a rule id since removed or renamed fails here, naming it.
func TestDifferencesNameOnlyLiveRules(t *testing.T) {
	t.Parallel()
	text := readDoc(t, moduleRoot(t), "docs/differences.md")
	rules := map[string]bool{}
	for _, sec := range refusalSections(t) {
		for _, r := range sec.rules {
			rules[r.id] = true
		}
	}
	primitives := map[string]bool{}
	for _, p := range []extensions.Primitive{extensions.Now, extensions.ReadFile, extensions.WriteFile, extensions.ListFiles, extensions.HTTPGet, extensions.Wasm} {
		primitives[string(p)] = true
	}
	names := regexp.MustCompile("`([a-z0-9]+(?:-[a-z0-9]+)+)`").FindAllStringSubmatch(text, -1)
	if len(names) < 20 {
		t.Fatalf("only %d kebab-case names found in docs/differences.md: the scan is broken", len(names))
	}
	seen := map[string]bool{}
	for _, m := range names {
		name := m[1]
		if seen[name] {
			continue
		}
		seen[name] = true
		_, inCatalogue := fs.Stat(catalogue.Files, name+".json")
		switch {
		case notOurRules[name] != "" && rules[name]:
			t.Errorf("%q is listed in notOurRules as %s, but it is a rule id of ours now", name, notOurRules[name])
		case rules[name], primitives[name], inCatalogue == nil, notOurRules[name] != "":
		default:
			t.Errorf("docs/differences.md names `%s`, which is no rule id in shared/refusal (removed or renamed?), no catalogue entry and no primitive: fix the line, or add it to notOurRules saying what it is", name)
		}
	}
	for name := range notOurRules {
		if !seen[name] && !strings.Contains(text, name) {
			t.Errorf("notOurRules lists %q, which docs/differences.md no longer names: drop it", name)
		}
	}
}

// TestDifferencesQuoteTheCataloguesBudgets: every entry of the shipped catalogue with a request
// budget is named in docs/differences.md as "`ID` allows N requests", N its bounds.maxRequests,
// so the line that says how ours differs from the original's budgets follows the catalogue.
func TestDifferencesQuoteTheCataloguesBudgets(t *testing.T) {
	t.Parallel()
	text := strings.Join(strings.Fields(readDoc(t, moduleRoot(t), "docs/differences.md")), " ")
	quoted := map[string]int{}
	for _, m := range regexp.MustCompile("`([a-z0-9.-]+)` allows ([0-9,]+) requests?").FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
		quoted[m[1]] = n
	}
	files, err := fs.Glob(catalogue.Files, "*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no catalogue entries: %v", err)
	}
	budgets := 0
	for _, f := range files {
		raw, _ := fs.ReadFile(catalogue.Files, f)
		var d struct {
			ID     string
			Bounds struct{ MaxRequests int }
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.Bounds.MaxRequests == 0 {
			continue
		}
		budgets++
		switch n, ok := quoted[d.ID]; {
		case !ok:
			t.Errorf("docs/differences.md does not say the budget of the catalogue's %s (\"`%s` allows %d requests\")", d.ID, d.ID, d.Bounds.MaxRequests)
		case n != d.Bounds.MaxRequests:
			t.Errorf("docs/differences.md says `%s` allows %d requests; the catalogue's entry allows %d", d.ID, n, d.Bounds.MaxRequests)
		}
	}
	if budgets == 0 {
		t.Fatal("no catalogue entry has a request budget: the scan is broken")
	}
}
