package mcphost

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestRemoteSchemas: a remote MCP tool's schema as servers write them compiles, is offered with
// its $refs resolved and annotations kept, and its arguments are held to all of it; a schema past
// a bound, one that refers outside itself or to itself, is not offered, with the reason.
func TestRemoteSchemas(t *testing.T) {
	t.Parallel()
	s, err := compileRemoteSchema([]byte(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"definitions":{"unit":{"type":"string","enum":["C","F"],"default":"C"}},
		"properties":{"city":{"type":"string","pattern":"^[A-Z]","examples":["Paris"],"format":"uri-reference"},
		"unit":{"$ref":"#/definitions/unit","description":"The unit."},
		"when":{"oneOf":[{"const":"now"},{"type":"integer","minimum":0}]}},"required":["city"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"city":{"examples":["Paris"],"format":"uri-reference","pattern":"^[A-Z]","type":"string"},"unit":{"default":"C","description":"The unit.","enum":["C","F"],"type":"string"},"when":{"oneOf":[{"const":"now"},{"minimum":0,"type":"integer"}]}},"required":["city"],"type":"object"}`
	if string(s.offered) != want || !strings.Contains(s.note, "$ref resolved") {
		t.Fatalf("offered %s (%q), want %s", s.offered, s.note, want)
	}
	for _, c := range []struct {
		args string
		rule refusal.Rule
		at   string
	}{
		{`{"city":"Paris","unit":"F","when":"now"}`, "", ""},
		{`{"city":"Paris","when":3}`, "", ""},
		{`{}`, refusal.MissingArgument, "/"},
		{`{"city":"paris"}`, refusal.InvalidArgument, "/city"},
		{`{"city":"Paris","unit":"K"}`, refusal.InvalidArgumentEnum, "/unit"},
		{`{"city":"Paris","when":-1}`, refusal.InvalidArgument, "/when"},
		{`{"city":"Paris","extra":1}`, refusal.InvalidArgument, "/"},
		{`{"city":"Paris","when":1e999}`, refusal.InvalidArgument, ""},
		{`[1]`, refusal.InvalidToolArguments, ""},
		{`{"city":"P` + strings.Repeat("a", 70000) + `"}`, refusal.InvalidToolArguments, ""},
		{strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40), refusal.InvalidArgumentBounds, ""},
	} {
		_, err := s.validate([]byte(c.args))
		if got := refusal.RuleOf(err); got != c.rule || (c.at != "" && !strings.Contains(err.Error(), c.at+":")) {
			t.Errorf("%.60s: %v, want %q at %q", c.args, err, c.rule, c.at)
		}
	}

	bomb := `{"type":"object","$defs":{"a30":{"type":"string"}`
	for i := 29; i >= 0; i-- {
		bomb += fmt.Sprintf(`,"a%d":{"allOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]}`, i, i+1, i+1)
	}
	bomb += `},"properties":{"x":{"$ref":"#/$defs/a0"}}}`
	deep := `{"type":"object","properties":{"x":` + strings.Repeat(`{"items":`, MaxRemoteSchemaDepth) + "{}" + strings.Repeat("}", MaxRemoteSchemaDepth) + "}}"
	for _, c := range []struct{ name, schema, why string }{
		{"a $ref to another document", `{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`, "fetches no schema"},
		{"a $ref that recurses", `{"type":"object","$defs":{"n":{"properties":{"a":{"anyOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}}},"properties":{"x":{"$ref":"#/$defs/n"}}}`, "refers to itself"},
		{"a $ref bomb", bomb, fmt.Sprintf("past %d JSON values", MaxOfferedSchemaNodes)},
		{"too deep", deep, fmt.Sprintf("more than %d JSON levels", MaxRemoteSchemaDepth)},
		{"too big", `{"type":"object","description":"` + strings.Repeat("a", MaxRemoteSchemaBytes) + `"}`, "over the bound"},
		{"a long number", `{"type":"object","properties":{"x":{"maximum":1e999999}}}`, "not finite"},
		{"not an object schema", `{"type":"string"}`, "not an object schema"},
		{"invalid JSON Schema", `{"type":"object","properties":{"x":{"type":"strin"}}}`, "not valid JSON Schema"},
	} {
		if _, err := compileRemoteSchema([]byte(c.schema)); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want %q", c.name, err, c.why)
		}
	}
}
