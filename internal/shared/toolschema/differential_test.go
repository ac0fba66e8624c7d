package toolschema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// gen turns fuzz bytes into schemas and values of the subset, so the differential target explores
// the keywords rather than the parser's refusals.
type gen struct{ b []byte }

func (g *gen) next(n int) int {
	if len(g.b) == 0 || n <= 0 {
		return 0
	}
	v := int(g.b[0]) % n
	g.b = g.b[1:]
	return v
}

var genNumbers = []string{"0", "1", "-1", "2", "2.0", "2.5", "6", "6.0000000000000001", "1e1", "-0.5", "10", "1E0", "3"}
var genStrings = []string{"", "a", "b", "ab", "héé", "home", "away", "abcd", "__proto__"}

func (g *gen) number(integer bool) string {
	for {
		n := genNumbers[g.next(len(genNumbers))]
		if !integer || isInteger(json.Number(n)) {
			return n
		}
	}
}

func (g *gen) str() string { return genStrings[g.next(len(genStrings))] }

// schema writes a property schema; depth bounds nesting.
func (g *gen) schema(depth int) string {
	types := []string{"string", "number", "integer", "boolean", "array", "object"}
	if depth > 2 {
		types = types[:4]
	}
	t := types[g.next(len(types))]
	parts := []string{fmt.Sprintf(`"type":%q`, t)}
	switch t {
	case "string":
		lo, hi := g.next(4)-1, g.next(5)-1
		if lo >= 0 {
			parts = append(parts, fmt.Sprintf(`"minLength":%d`, lo))
		}
		if hi >= 0 && hi >= lo {
			parts = append(parts, fmt.Sprintf(`"maxLength":%d`, hi))
		}
		if g.next(2) == 1 {
			parts = append(parts, fmt.Sprintf(`"enum":[%q,%q]`, g.str(), g.str()))
		}
	case "number", "integer":
		if g.next(2) == 1 {
			parts = append(parts, `"minimum":`+g.number(t == "integer"))
		}
		if g.next(2) == 1 {
			parts = append(parts, `"maximum":`+g.number(t == "integer"))
		}
		if g.next(3) == 2 {
			parts = append(parts, fmt.Sprintf(`"enum":[%s,%s]`, g.number(t == "integer"), g.number(t == "integer")))
		}
	case "array":
		if g.next(2) == 1 {
			parts = append(parts, `"items":`+g.schema(3))
		}
	case "object":
		parts = append(parts, g.objectBody(depth+1)...)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func (g *gen) objectBody(depth int) []string {
	var parts, props, req []string
	for i, n := 0, g.next(4); i < n; i++ {
		name := []string{"a", "b", "c"}[i]
		props = append(props, fmt.Sprintf("%q:%s", name, g.schema(depth)))
		if g.next(2) == 1 {
			req = append(req, fmt.Sprintf("%q", name))
		}
	}
	if len(props) > 0 {
		parts = append(parts, `"properties":{`+strings.Join(props, ",")+`}`)
	}
	if len(req) > 0 {
		parts = append(parts, `"required":[`+strings.Join(req, ",")+`]`)
	}
	switch g.next(3) {
	case 1:
		parts = append(parts, `"additionalProperties":false`)
	case 2:
		parts = append(parts, `"additionalProperties":true`)
	}
	return parts
}

// value writes any JSON value of a few shapes.
func (g *gen) value(depth int) string {
	k := g.next(8)
	if depth > 3 && k >= 5 {
		k = 0
	}
	switch k {
	case 0:
		return g.number(false)
	case 1:
		return fmt.Sprintf("%q", g.str())
	case 2:
		return []string{"true", "false"}[g.next(2)]
	case 3:
		return "null"
	case 4:
		return g.number(true)
	case 5:
		var es []string
		for i, n := 0, g.next(4); i < n; i++ {
			es = append(es, g.value(depth+1))
		}
		return "[" + strings.Join(es, ",") + "]"
	default:
		var fs []string
		for i, n := 0, g.next(4); i < n; i++ {
			fs = append(fs, fmt.Sprintf("%q:%s", []string{"a", "b", "c", "d", "__proto__"}[g.next(5)], g.value(depth+1)))
		}
		return "{" + strings.Join(fs, ",") + "}"
	}
}

// FuzzAgreesWithReference holds Validate to the reference library on generated schemas and
// arguments: the same accepted value, or the same refusal.
func FuzzAgreesWithReference(f *testing.F) {
	for _, seed := range []string{"", "\x05\x01\x02\x03", "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", strings.Repeat("\x07\x03", 40)} {
		f.Add([]byte(seed), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, schemaSeed, argsSeed []byte) {
		g := &gen{b: schemaSeed}
		raw := "{" + strings.Join(append([]string{`"type":"object"`}, g.objectBody(1)...), ",") + "}"
		s, err := Parse([]byte(raw))
		if err != nil {
			return // a generated enum may fall outside its bounds, which the subset refuses
		}
		reference(t, s)
		a := &gen{b: argsSeed}
		agreesWithReference(t, s, []byte(a.value(0)))
		var obj []string
		for i, n := 0, a.next(5); i < n; i++ {
			obj = append(obj, fmt.Sprintf("%q:%s", []string{"a", "b", "c", "d", "__proto__"}[a.next(5)], a.value(1)))
		}
		agreesWithReference(t, s, []byte("{"+strings.Join(obj, ",")+"}"))
	})
}
