package toolschema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// suiteDir holds the official JSON Schema test suite's files for the subset's keywords, with its
// licence, kept in the repository so that a clone tests without anything beside it.
const suiteDir = "testdata/json-schema-test-suite"

// suiteFiles are the keyword files the subset covers; every one must be present.
var suiteFiles = []string{
	"additionalProperties.json", "enum.json", "items.json", "maxLength.json", "maximum.json",
	"minLength.json", "minimum.json", "properties.json", "required.json", "type.json",
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// wrapSuiteSchema makes a group's schema the schema of one required property "v". The draft marker
// goes: it names draft 2020-12, which is what every tool schema is compiled as.
func wrapSuiteSchema(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var schema any
	if err := dec.Decode(&schema); err != nil {
		t.Fatal(err)
	}
	if obj, ok := schema.(map[string]any); ok && obj["$schema"] == "https://json-schema.org/draft/2020-12/schema" {
		delete(obj, "$schema")
	}
	b, err := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{"v": schema},
		"required":   []string{"v"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJSONSchemaSuite(t *testing.T) {
	t.Parallel()
	groupsIn, groupsOut, cases := 0, 0, 0
	for _, name := range suiteFiles {
		raw, err := os.ReadFile(filepath.Join(suiteDir, name))
		if err != nil {
			t.Fatalf("the JSON Schema test suite must be present at %s (beside the checkout): %v", suiteDir, err)
		}
		var groups []suiteGroup
		if err := json.Unmarshal(raw, &groups); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(groups) == 0 {
			t.Fatalf("%s holds no groups", name)
		}
		for _, g := range groups {
			s, err := Parse(wrapSuiteSchema(t, g.Schema))
			if err != nil {
				groupsOut++
				continue
			}
			groupsIn++
			for _, c := range g.Tests {
				cases++
				args := append(append([]byte(`{"v":`), c.Data...), '}')
				agreesWithReference(t, s, args)
				_, err := s.Validate(args)
				if (err == nil) != c.Valid {
					t.Errorf("%s: %s: %s: valid = %v, but Validate says %v", name, g.Description, c.Description, c.Valid, err)
				}
			}
		}
	}
	t.Logf("JSON Schema suite: %d groups inside the subset (%d cases agree), %d groups outside it refused at registration",
		groupsIn, cases, groupsOut)
	if groupsIn == 0 || groupsOut == 0 {
		t.Fatalf("the suite split %d in / %d out; both sides must be exercised", groupsIn, groupsOut)
	}
}
