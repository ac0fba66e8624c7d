package toolschema

import (
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The WebMCP draft's dialect takes pattern and prefixItems and only a false additionalProperties;
// the original's refuses the first two and takes a true additionalProperties.
func TestTheDraftDialectTakesPatternAndPrefixItems(t *testing.T) {
	for _, tt := range []struct {
		schema          string
		original, draft bool // whether each dialect takes it
	}{
		{`{"type":"object","properties":{"code":{"type":"string","pattern":"^[a-z]+$"}}}`, false, true},
		{`{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"string"}}}}`, false, true},
		{`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":true}`, true, false},
		{`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`, true, true},
		{`{"type":"object","properties":{"x":{"type":"string","pattern":"["}}}`, false, false},
		{`{"type":"object","properties":{"x":{"type":"string","pattern":"` + strings.Repeat("a", MaxPatternLength+1) + `"}}}`, false, false},
		{`{"type":"object","properties":{"t":{"type":"array","prefixItems":[]}}}`, false, false},
		{`{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"object"}]}}}`, false, false},
		{`{"type":"object","properties":{"x":{"type":"string","format":"email"}}}`, false, false},
	} {
		for _, d := range []struct {
			dialect Dialect
			want    bool
		}{{Original, tt.original}, {WebMCPDraft, tt.draft}} {
			_, err := ParseDialect([]byte(tt.schema), d.dialect)
			if (err == nil) != d.want {
				t.Errorf("dialect %d, %s: err %v, want taken %v", d.dialect, tt.schema[:min(len(tt.schema), 90)], err, d.want)
			}
			if err != nil {
				if r, ok := refusal.As(err); !ok || r.Rule != refusal.InvalidToolParameters {
					t.Errorf("%s refused as %v", tt.schema, err)
				}
			}
		}
	}
}

func TestTheDraftDialectChecksPatternAndPrefixItems(t *testing.T) {
	s, err := ParseDialect([]byte(`{"type":"object","properties":{
		"code":{"type":"string","pattern":"^[a-z]+$"},
		"t":{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":{"type":"boolean"}}}}`), WebMCPDraft)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ args, rule string }{
		{`{"code":"abc"}`, ""},
		{`{"code":"ABC123"}`, string(refusal.InvalidArgumentPattern)},
		{`{"t":[1,"a",true,false]}`, ""},
		{`{"t":["a"]}`, string(refusal.InvalidArgumentType)},
		{`{"t":[1,2]}`, string(refusal.InvalidArgumentType)},
		{`{"t":[1,"a","x"]}`, string(refusal.InvalidArgumentType)},
	} {
		_, err := s.Validate([]byte(tt.args))
		got := ""
		if err != nil {
			r, _ := refusal.As(err)
			got = string(r.Rule)
		}
		if got != tt.rule {
			t.Errorf("%s: refused %q (%v), want %q", tt.args, got, err, tt.rule)
		}
	}
}

// A pattern that backtracks catastrophically in a backtracking engine is matched in linear time.
func TestANestedQuantifierIsMatchedInLinearTime(t *testing.T) {
	s, err := ParseDialect([]byte(`{"type":"object","properties":{"s":{"type":"string","pattern":"^(a+)+$"}}}`), WebMCPDraft)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Validate([]byte(`{"s":"` + strings.Repeat("a", 30000) + `!"}`))
	if r, ok := refusal.As(err); !ok || r.Rule != refusal.InvalidArgumentPattern {
		t.Fatalf("answered %v, want invalid-argument-pattern", err)
	}
}
