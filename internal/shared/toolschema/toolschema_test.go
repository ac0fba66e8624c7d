package toolschema

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// props builds a top-level schema around one property schema, named "p".
func props(p string) string {
	return `{"type":"object","properties":{"p":` + p + `}}`
}

// nestedSchema returns a schema whose JSON depth is exactly depth (depth >= 3 and odd, or even via
// a trailing enum array): object property schemas sit at depths 1, 3, 5, ...
func nestedSchema(depth int) string {
	inner := `{"type":"boolean"}`
	d := depth
	if depth%2 == 0 {
		inner = `{"type":"string","enum":["x"]}` // the enum array is one level below its schema
		d--
	}
	s := inner
	for level := d; level > 1; level -= 2 {
		s = `{"type":"object","properties":{"a":` + s + `}}`
	}
	return s
}

// wideSchema returns a schema of exactly nodes JSON values (nodes >= 3).
func wideSchema(nodes int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	n := (nodes - 3) / 2
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p` + itoa(i) + `":{"type":"boolean"}`)
	}
	b.WriteString(`}`)
	if (nodes-3)%2 == 1 {
		b.WriteString(`,"additionalProperties":true`)
	}
	b.WriteString(`}`)
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// levels returns a schema whose property schemas nest n deep: an object property inside an object
// property, and so on, the innermost a string with an enum (the original's depth n-1).
func levels(n int) string {
	s := `{"type":"string","enum":["x"]}`
	for i := 1; i < n; i++ {
		s = `{"type":"object","properties":{"a":` + s + `}}`
	}
	return `{"type":"object","properties":{"a":` + s + `}}`
}

// manyProperties returns a schema of n property schemas: n/per objects at the top level, each
// holding per-1 booleans (per 1 makes n booleans).
func manyProperties(n, per int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; i < n/per; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if per == 1 {
			b.WriteString(`"p` + itoa(i) + `":{"type":"boolean"}`)
			continue
		}
		b.WriteString(`"o` + itoa(i) + `":{"type":"object","properties":{`)
		for j := 0; j < per-1; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"q` + itoa(j) + `":{"type":"boolean"}`)
		}
		b.WriteString(`}}`)
	}
	if n%per != 0 {
		b.WriteString(`,"extra":{"type":"boolean"}`)
	}
	b.WriteString(`}}`)
	return b.String()
}

// countNodes counts JSON values independently of the package's walker.
func countNodes(t *testing.T, raw string) int {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	n := 0
	inObject := []bool{}
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			inObject = inObject[:len(inObject)-1]
			expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
			continue
		}
		if expectKey {
			expectKey = false
			continue
		}
		n++
		if d, ok := tok.(json.Delim); ok {
			inObject = append(inObject, d == '{')
			expectKey = d == '{'
			continue
		}
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
	return n
}

func TestSchemaShapeHelpers(t *testing.T) {
	t.Parallel()
	for _, d := range []int{15, 16, 17} {
		if got := scanDepth([]byte(nestedSchema(d))); got != d {
			t.Errorf("nestedSchema(%d) has depth %d", d, got)
		}
	}
	for _, n := range []int{511, 512, 513} {
		if got := countNodes(t, wideSchema(n)); got != n {
			t.Errorf("wideSchema(%d) has %d nodes", n, got)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("1", MaxNumberLiteralBytes)
	padded := func(n int) string { // a valid schema of exactly n bytes
		base := `{"type":"object","properties":{"p":{"type":"string","description":""}}}`
		return strings.Replace(base, `""`, `"`+strings.Repeat("d", n-len(base))+`"`, 1)
	}
	tests := []struct {
		name   string
		schema string
		where  string // a fragment the reason must contain; "" when accepted
		ok     bool
	}{
		{name: "minimal", schema: `{"type":"object"}`, ok: true},
		{name: "set_score", schema: `{"type":"object","properties":{"team":{"type":"string","enum":["home","away"]},"points":{"type":"number","description":"Points to add"}},"required":["team","points"]}`, ok: true},
		{name: "not an object", schema: `[]`, where: "must be an object"},
		{name: "not JSON", schema: `{"type":`, where: "not JSON"},
		{name: "trailing data", schema: `{"type":"object"} {}`, where: "not JSON"},
		{name: "invalid UTF-8", schema: "{\"type\":\"object\",\"properties\":{\"\xff\":{\"type\":\"string\"}}}", where: "UTF-8"},
		{name: "top type missing", schema: `{"properties":{}}`, where: "type"},
		{name: "top type array", schema: `{"type":"array"}`, where: "type"},
		{name: "top type as list", schema: `{"type":["object"]}`, where: "type"},
		{name: "top description", schema: `{"type":"object","description":"x"}`, where: `description: keyword "description"`},
		{name: "top $schema", schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, where: "$schema"},
		{name: "top $ref", schema: `{"type":"object","$ref":"http://example.com/s.json"}`, where: "$ref"},
		{name: "properties not object", schema: `{"type":"object","properties":[]}`, where: "properties:"},
		{name: "property not object", schema: props(`true`), where: "properties.p:"},
		{name: "property without type", schema: props(`{}`), where: "properties.p.type"},
		{name: "property type list", schema: props(`{"type":["string"]}`), where: "properties.p.type"},
		{name: "property type null", schema: props(`{"type":"null"}`), where: "properties.p.type"},
		{name: "pattern", schema: `{"type":"object","properties":{"count":{"type":"string","pattern":"^a"}}}`, where: "properties.count.pattern"},
		{name: "format", schema: props(`{"type":"string","format":"email"}`), where: "properties.p.format"},
		{name: "default", schema: props(`{"type":"string","default":"x"}`), where: "properties.p.default"},
		{name: "minLength on number", schema: props(`{"type":"number","minLength":1}`), where: "properties.p.minLength"},
		{name: "minimum on string", schema: props(`{"type":"string","minimum":1}`), where: "properties.p.minimum"},
		{name: "enum on boolean", schema: props(`{"type":"boolean","enum":[true]}`), where: "properties.p.enum"},
		{name: "description not string", schema: props(`{"type":"boolean","description":3}`), where: "properties.p.description"},
		{name: "array items ok", schema: props(`{"type":"array","items":{"type":"integer","enum":[1,2],"description":"n"}}`), ok: true},
		{name: "array without items", schema: props(`{"type":"array"}`), ok: true},
		{name: "items.minLength", schema: `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","minLength":1}}}}`, where: "properties.tags.items.minLength"},
		{name: "items array", schema: props(`{"type":"array","items":{"type":"array"}}`), where: "properties.p.items.type"},
		{name: "items object", schema: props(`{"type":"array","items":{"type":"object"}}`), where: "properties.p.items.type"},
		{name: "items not object", schema: props(`{"type":"array","items":true}`), where: "properties.p.items"},
		{name: "items enum wrong type", schema: props(`{"type":"array","items":{"type":"string","enum":[1]}}`), where: "properties.p.items.enum.0"},
		{name: "minItems", schema: props(`{"type":"array","minItems":1}`), where: "properties.p.minItems"},
		{name: "__proto__ property", schema: `{"type":"object","properties":{"__proto__":{"type":"string"}}}`, where: "__proto__"},
		{name: "__proto__ required", schema: `{"type":"object","required":["__proto__"]}`, where: "required.0"},
		{name: "empty property name", schema: `{"type":"object","properties":{"":{"type":"string"}}}`, where: "empty"},
		{name: "constructor and prototype are names", schema: `{"type":"object","properties":{"constructor":{"type":"string"},"prototype":{"type":"string"}},"required":["constructor"]}`, ok: true},
		{name: "minLength string", schema: props(`{"type":"string","minLength":"3"}`), where: "properties.p.minLength"},
		{name: "minLength negative", schema: props(`{"type":"string","minLength":-1}`), where: "properties.p.minLength"},
		{name: "minLength fraction", schema: props(`{"type":"string","minLength":1.5}`), where: "properties.p.minLength"},
		{name: "minLength 2.0 is an integer", schema: props(`{"type":"string","minLength":2.0}`), ok: true},
		{name: "maxLength at its bound", schema: props(`{"type":"string","maxLength":2147483647}`), ok: true},
		{name: "maxLength over its bound", schema: props(`{"type":"string","maxLength":2147483648}`), where: "properties.p.maxLength"},
		{name: "minLength over maxLength", schema: props(`{"type":"string","minLength":3,"maxLength":2}`), where: "properties.p.minLength"},
		{name: "minLength equal maxLength", schema: props(`{"type":"string","minLength":2,"maxLength":2}`), ok: true},
		{name: "minimum string", schema: props(`{"type":"number","minimum":"1"}`), where: "properties.p.minimum"},
		{name: "integer minimum fraction", schema: props(`{"type":"integer","minimum":1.5}`), where: "properties.p.minimum"},
		{name: "number minimum fraction", schema: props(`{"type":"number","minimum":1.5}`), ok: true},
		{name: "minimum over maximum", schema: props(`{"type":"number","minimum":2,"maximum":1.5}`), where: "properties.p.minimum"},
		{name: "minimum equal maximum", schema: props(`{"type":"integer","minimum":2,"maximum":2.0}`), ok: true},
		{name: "enum not array", schema: props(`{"type":"string","enum":"a"}`), where: "properties.p.enum"},
		{name: "enum empty", schema: props(`{"type":"string","enum":[]}`), where: "properties.p.enum"},
		{name: "enum member type", schema: props(`{"type":"string","enum":["a",1]}`), where: "properties.p.enum.1"},
		{name: "enum null member", schema: props(`{"type":"string","enum":[null]}`), where: "properties.p.enum.0"},
		{name: "integer enum fraction", schema: props(`{"type":"integer","enum":[1,1.5]}`), where: "properties.p.enum.1"},
		{name: "integer enum 2.0", schema: props(`{"type":"integer","enum":[2.0]}`), ok: true},
		{name: "enum outside bounds", schema: props(`{"type":"integer","enum":[1,2],"minimum":3}`), where: "properties.p.enum"},
		{name: "enum one inside bounds", schema: props(`{"type":"integer","enum":[1,5],"minimum":3}`), ok: true},
		{name: "string enum outside lengths", schema: props(`{"type":"string","enum":["abcd"],"maxLength":3}`), where: "properties.p.enum"},
		{name: "string enum lengths in code points", schema: props(`{"type":"string","enum":["héé"],"maxLength":3}`), ok: true},
		{name: "required not array", schema: `{"type":"object","required":"a"}`, where: "required:"},
		{name: "required member not string", schema: `{"type":"object","required":[1]}`, where: "required.0"},
		{name: "required empty name", schema: `{"type":"object","required":[""]}`, where: "required.0"},
		{name: "required twice", schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]}`, where: "required.1"},
		{name: "required undeclared closed", schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"],"additionalProperties":false}`, where: "required.0"},
		{name: "required undeclared open", schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, ok: true},
		{name: "additionalProperties string", schema: `{"type":"object","additionalProperties":"false"}`, where: "additionalProperties"},
		{name: "additionalProperties schema", schema: `{"type":"object","additionalProperties":{"type":"string"}}`, where: "additionalProperties"},
		{name: "nested pattern", schema: `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","pattern":"x"}}}}}`, where: "properties.a.properties.b.pattern"},
		{name: "nested required undeclared", schema: `{"type":"object","properties":{"a":{"type":"object","required":["x"],"additionalProperties":false}}}`, where: "properties.a.required.0"},
		{name: "odd name quoted", schema: `{"type":"object","properties":{"a b":{"type":"string","format":"x"}}}`, where: `properties["a b"].format`},
		// Depth and nodes count property schemas, as the original does (core/mini-app.ts): the
		// top level's properties are at depth 0, and items schemas and the top are not nodes.
		{name: "schema depth 16", schema: levels(MaxSchemaDepth + 1), ok: true},
		{name: "schema depth 17", schema: levels(MaxSchemaDepth + 2), where: "nest more than 16 levels"},
		{name: "schema nodes 512", schema: manyProperties(MaxSchemaNodes, 1), ok: true},
		{name: "schema nodes 513", schema: manyProperties(MaxSchemaNodes+1, 1), where: "more than 512 property schemas"},
		{name: "schema nodes counted nested", schema: manyProperties(MaxSchemaNodes, 2), ok: true},
		{name: "schema nodes counted nested, one more", schema: manyProperties(MaxSchemaNodes+1, 2), where: "more than 512 property schemas"},
		{name: "a long enum is one schema", schema: props(`{"type":"integer","enum":[` + strings.TrimSuffix(strings.Repeat("1,", 3000), ",") + `]}`), ok: true},
		{name: "a non-finite maximum", schema: props(`{"type":"number","maximum":1e999}`), where: "not finite"},
		{name: "a non-finite enum member", schema: props(`{"type":"number","enum":[1,-2e308]}`), where: "properties.p.enum.1"},
		{name: "schema deeper than the decoder goes", schema: strings.Repeat("[", 20000) + strings.Repeat("]", 20000), where: "levels deep"},
		{name: "schema bytes at bound", schema: padded(MaxSchemaBytes), ok: true},
		{name: "schema bytes over bound", schema: padded(MaxSchemaBytes + 1), where: "bytes"},
		{name: "number literal at bound", schema: props(`{"type":"integer","maximum":` + long + `}`), ok: true},
		{name: "number literal over bound", schema: props(`{"type":"integer","maximum":` + long + `1}`), where: "properties.p.maximum"},
		{name: "exponent at bound", schema: props(`{"type":"number","maximum":1e-400}`), ok: true},
		{name: "exponent over bound", schema: props(`{"type":"number","maximum":1e-401}`), where: "properties.p.maximum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse([]byte(tt.schema))
			if tt.ok {
				if err != nil {
					t.Fatalf("Parse refused: %v", err)
				}
				if _, err := Parse(s.JSON()); err != nil {
					t.Fatalf("the normal form %s does not parse again: %v", s.JSON(), err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted %.200s", tt.schema)
			}
			r, ok := refusal.As(err)
			if !ok || r.Rule != refusal.InvalidToolParameters {
				t.Fatalf("Parse error = %v, want rule %s", err, refusal.InvalidToolParameters)
			}
			if !strings.Contains(r.Why, tt.where) {
				t.Fatalf("Why = %q, want it to contain %q", r.Why, tt.where)
			}
		})
	}
}

func TestNormalForm(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(` { "required": ["a"], "type": "object",
		"properties": {"a": {"type": "number", "maximum": 1.50, "description": "<b>&"}} }`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{"a":{"description":"<b>&","maximum":1.50,"type":"number"}},"required":["a"],"type":"object"}`
	if string(s.JSON()) != want {
		t.Fatalf("JSON() = %s, want %s", s.JSON(), want)
	}
}
