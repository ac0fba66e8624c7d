package toolschema

import (
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

const argsSchema = `{
  "type": "object",
  "properties": {
    "team":     {"type": "string", "enum": ["home", "away"]},
    "points":   {"type": "integer", "minimum": 1, "maximum": 6},
    "ratio":    {"type": "number", "minimum": 0, "maximum": 6},
    "name":     {"type": "string", "minLength": 2, "maxLength": 3},
    "urgent":   {"type": "boolean"},
    "tags":     {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    "counts":   {"type": "array", "items": {"type": "integer"}},
    "any":      {"type": "array"},
    "blob":     {"type": "object"},
    "settings": {"type": "object", "properties": {"volume": {"type": "integer", "maximum": 10}, "mode": {"type": "string"}},
                 "required": ["volume"], "additionalProperties": false},
    "text":     {"type": "string"},
    "constructor": {"type": "string"},
    "prototype":   {"type": "string"}
  },
  "required": ["team"],
  "additionalProperties": false
}`

// nested returns n objects nested inside each other: nested(1) is {}.
func nested(n int) string {
	return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
}

// withText returns arguments of exactly n bytes: {"team":"home","text":"xxx..."}.
func withText(n int) string {
	base := `{"team":"home","text":""}`
	return `{"team":"home","text":"` + strings.Repeat("x", n-len(base)) + `"}`
}

// withCounts returns arguments holding an array of n integers under "counts".
func withCounts(n int) string {
	return `{"team":"home","counts":[` + strings.TrimSuffix(strings.Repeat("1,", n), ",") + `]}`
}

func TestValidate(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(argsSchema))
	if err != nil {
		t.Fatal(err)
	}
	open, err := Parse([]byte(`{"type":"object","properties":{"x":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// Nodes: the root, "team", the "counts" array and its members.
	const fixedNodes = 3
	// Depth: the root, then "blob" one level down.
	tests := []struct {
		name   string
		schema *Schema
		args   string
		rule   refusal.Rule // "" means accepted
		why    string       // a fragment the reason must contain
	}{
		{name: "typical", args: `{"team":"home","points":3,"name":"ab","urgent":true,"tags":["a","b"]}`},
		{name: "null is empty object", schema: open, args: `null`},
		{name: "nothing is empty object", schema: open, args: ``},
		{name: "null is empty object, then required", args: `null`, rule: refusal.MissingArgument, why: `"team"`},
		{name: "array", args: `[]`, rule: refusal.InvalidToolArguments, why: "object"},
		{name: "string", args: `"team"`, rule: refusal.InvalidToolArguments, why: "object"},
		{name: "number", args: `3`, rule: refusal.InvalidToolArguments, why: "object"},
		{name: "boolean", args: `true`, rule: refusal.InvalidToolArguments, why: "object"},
		{name: "not JSON", args: `{"team":`, rule: refusal.InvalidToolArguments, why: "not JSON"},
		{name: "two values", args: `{"team":"home"} {}`, rule: refusal.InvalidToolArguments, why: "not JSON"},
		{name: "invalid UTF-8", args: "{\"team\":\"home\",\"text\":\"\xc3\x28\"}", rule: refusal.InvalidToolArguments, why: "UTF-8"},
		{name: "bytes at bound", args: withText(MaxArgumentBytes)},
		{name: "bytes over bound", args: withText(MaxArgumentBytes + 1), rule: refusal.InvalidToolArguments, why: "65536"},
		{name: "whitespace is not counted", args: " " + strings.Replace(withText(MaxArgumentBytes), `,`, ",\n    ", 1) + "\n"},
		// The original walks the value (nodes, depth) before it measures the bytes.
		{name: "nodes before bytes", args: `{"team":"home","counts":[` + strings.Repeat("1,", 40000) + `1]}`, rule: refusal.InvalidArgumentBounds},
		{name: "__proto__ before bytes", args: `{"__proto__":1,"team":"home","text":"` + strings.Repeat("x", MaxArgumentBytes) + `"}`, rule: refusal.InvalidArgument, why: "__proto__"},
		{name: "an infinite number before bytes", args: `{"ratio":1e999,"team":"home","text":"` + strings.Repeat("x", MaxArgumentBytes) + `"}`, rule: refusal.InvalidArgument, why: "finite"},
		{name: "depth at bound", args: `{"team":"home","blob":` + nested(MaxArgumentDepth-1) + `}`},
		{name: "depth over bound", args: `{"team":"home","blob":` + nested(MaxArgumentDepth) + `}`, rule: refusal.InvalidArgumentBounds, why: "32"},
		{name: "array depth at bound", args: `{"team":"home","any":` + strings.Repeat("[", MaxArgumentDepth-1) + strings.Repeat("]", MaxArgumentDepth-1) + `}`},
		{name: "array depth over bound", args: `{"team":"home","any":` + strings.Repeat("[", MaxArgumentDepth) + strings.Repeat("]", MaxArgumentDepth) + `}`, rule: refusal.InvalidArgumentBounds},
		{name: "depth beyond the decoder", args: `{"any":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, rule: refusal.InvalidArgumentBounds},
		{name: "nodes at bound", args: withCounts(MaxArgumentNodes - fixedNodes)},
		{name: "nodes over bound", args: withCounts(MaxArgumentNodes - fixedNodes + 1), rule: refusal.InvalidArgumentBounds, why: "2048"},
		{name: "bounds before required", args: `{"blob":` + nested(MaxArgumentDepth) + `}`, rule: refusal.InvalidArgumentBounds},
		{name: "number literal over bound", args: `{"team":"home","ratio":1` + strings.Repeat("0", MaxNumberLiteralBytes) + `}`, rule: refusal.InvalidArgumentBounds, why: "ratio"},
		{name: "exponent over bound", args: `{"team":"home","counts":[1e-401]}`, rule: refusal.InvalidArgumentBounds, why: "counts.0"},
		{name: "exponent at bound is a range question", args: `{"team":"home","ratio":-1e-400}`, rule: refusal.InvalidArgumentRange},
		// JavaScript reads these as Infinity; the original refuses them, and so do we.
		{name: "an overflowing exponent is not finite", args: `{"team":"home","ratio":1e400}`, rule: refusal.InvalidArgument, why: "not finite"},
		{name: "just past the largest float", args: `{"team":"home","ratio":1.8e308}`, rule: refusal.InvalidArgument, why: "not finite"},
		{name: "negative infinity", args: `{"team":"home","counts":[-1e309]}`, rule: refusal.InvalidArgument, why: "counts.0"},
		{name: "the largest float is finite", args: `{"team":"home","ratio":1.7976931348623157e308}`, rule: refusal.InvalidArgumentRange},
		{name: "an underflow is zero, finite", args: `{"team":"home","ratio":1e-320}`},
		{name: "an infinite number in an undeclared blob", args: `{"team":"home","blob":{"x":[1,2e999]}}`, rule: refusal.InvalidArgument, why: "blob.x.1"},
		{name: "the first in the walk: __proto__ of the object before its members", args: `{"team":"home","blob":{"x":1e999,"__proto__":1}}`, rule: refusal.InvalidArgument, why: "__proto__"},
		{name: "the first in the walk: an earlier member", args: `{"team":"home","counts":[1e999],"blob":{"__proto__":1}}`, rule: refusal.InvalidArgument, why: "finite"},
		{name: "missing required", args: `{"points":3}`, rule: refusal.MissingArgument, why: `"team"`},
		{name: "required null is missing", args: `{"team":null}`, rule: refusal.MissingArgument, why: `"team"`},
		{name: "optional null is a type error", args: `{"team":"home","points":null}`, rule: refusal.InvalidArgumentType, why: `"points"`},
		{name: "nested missing", args: `{"team":"home","settings":{"mode":"x"}}`, rule: refusal.MissingArgument, why: `"settings.volume"`},
		{name: "nested null is missing", args: `{"team":"home","settings":{"volume":null}}`, rule: refusal.MissingArgument, why: `"settings.volume"`},
		{name: "unknown key", args: `{"team":"home","colour":"red"}`, rule: refusal.InvalidArgument, why: `"colour"`},
		{name: "nested unknown key", args: `{"team":"home","settings":{"volume":1,"x":1}}`, rule: refusal.InvalidArgument, why: `"settings.x"`},
		{name: "unknown key allowed when open", schema: open, args: `{"x":"a","colour":"red"}`},
		{name: "own __proto__ closed", args: `{"team":"home","__proto__":{}}`, rule: refusal.InvalidArgument, why: "__proto__"},
		{name: "own __proto__ open", schema: open, args: `{"__proto__":{"polluted":true}}`, rule: refusal.InvalidArgument, why: "__proto__"},
		{name: "nested own __proto__", args: `{"team":"home","blob":{"a":{"__proto__":1}}}`, rule: refusal.InvalidArgument, why: "blob.a.__proto__"},
		{name: "constructor and prototype are data", args: `{"team":"home","constructor":"c","prototype":"p"}`},
		{name: "constructor undeclared when open", schema: open, args: `{"constructor":{"a":1},"prototype":[]}`},
		{name: "string for integer", args: `{"team":"home","points":"3"}`, rule: refusal.InvalidArgumentType, why: `"points"`},
		{name: "fraction for integer", args: `{"team":"home","points":1.5}`, rule: refusal.InvalidArgumentType},
		{name: "1.0 is an integer", args: `{"team":"home","points":1.0}`},
		{name: "string for boolean", args: `{"team":"home","urgent":"true"}`, rule: refusal.InvalidArgumentType},
		{name: "number for team", args: `{"team":1}`, rule: refusal.InvalidArgumentType},
		{name: "item type", args: `{"team":"home","counts":[1,"2"]}`, rule: refusal.InvalidArgumentType, why: `"counts.1"`},
		{name: "length at max in code points", args: `{"team":"home","name":"héé"}`},
		{name: "length over max in code points", args: `{"team":"home","name":"héé!"}`, rule: refusal.InvalidArgumentLength, why: "4 characters"},
		{name: "length at max astral", args: `{"team":"home","name":"😀😀😀"}`},
		{name: "length under min in code points", args: `{"team":"home","name":"é"}`, rule: refusal.InvalidArgumentLength, why: "is 1 character long"},
		{name: "length at min", args: `{"team":"home","name":"ab"}`},
		{name: "range at max", args: `{"team":"home","points":6}`},
		{name: "range at min", args: `{"team":"home","points":1}`},
		{name: "range over max", args: `{"team":"home","points":7}`, rule: refusal.InvalidArgumentRange, why: "maximum of 6"},
		{name: "range under min", args: `{"team":"home","points":0}`, rule: refusal.InvalidArgumentRange, why: "minimum of 1"},
		{name: "range exact, not rounded", args: `{"team":"home","ratio":6.0000000000000001}`, rule: refusal.InvalidArgumentRange},
		{name: "nested range", args: `{"team":"home","settings":{"volume":11}}`, rule: refusal.InvalidArgumentRange, why: `"settings.volume"`},
		{name: "enum", args: `{"team":"visitors"}`, rule: refusal.InvalidArgumentEnum, why: `"visitors"`},
		{name: "item enum", args: `{"team":"home","tags":["a","c"]}`, rule: refusal.InvalidArgumentEnum, why: `"c"`},
		{name: "required before unknown", args: `{"colour":"red"}`, rule: refusal.MissingArgument},
		{name: "unknown before type", args: `{"team":1,"colour":"red"}`, rule: refusal.InvalidArgument},
		{name: "type before length", args: `{"team":"home","points":"x","name":"toolong"}`, rule: refusal.InvalidArgumentType},
		// The original checks the arguments in their order and the first that fails decides;
		// within one value, type, then bounds, then enum.
		{name: "the first argument decides: an enum", args: `{"team":"visitors","name":"toolong"}`, rule: refusal.InvalidArgumentEnum},
		{name: "the first argument decides: a length", args: `{"name":"toolong","team":"visitors"}`, rule: refusal.InvalidArgumentLength},
		{name: "the first argument decides: a range", args: `{"points":9,"team":"visitors"}`, rule: refusal.InvalidArgumentRange},
		{name: "the first argument decides: a type over a later one", args: `{"team":"visitors","points":"9"}`, rule: refusal.InvalidArgumentEnum},
		{name: "the first argument decides: a type", args: `{"points":"9","team":"visitors"}`, rule: refusal.InvalidArgumentType},
		{name: "required before everything in its object", args: `{"points":"x","tags":[1]}`, rule: refusal.MissingArgument},
		{name: "unknown keys before the arguments' values", args: `{"points":"x","zzz":1,"team":"home"}`, rule: refusal.InvalidArgument, why: "zzz"},
		{name: "an item's failure in order", args: `{"team":"home","tags":["a",3,"c"]}`, rule: refusal.InvalidArgumentType, why: "tags.1"},
		{name: "nested: an earlier top-level argument first", args: `{"points":0,"settings":{"mode":3}}`, rule: refusal.MissingArgument, why: "team"},
		{name: "nested: inside an object, its own order", args: `{"team":"home","settings":{"mode":3,"volume":11}}`, rule: refusal.InvalidArgumentType, why: "settings.mode"},
		{name: "nested: its required first", args: `{"team":"home","settings":{"mode":3}}`, rule: refusal.MissingArgument, why: "settings.volume"},
		{name: "nested: after the arguments before it", args: `{"team":"home","points":0,"settings":{"mode":3}}`, rule: refusal.InvalidArgumentRange, why: "points"},
		{name: "a later duplicate key keeps the first place", args: `{"points":"x","team":"visitors","points":0}`, rule: refusal.InvalidArgumentRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sch := tt.schema
			if sch == nil {
				sch = s
			}
			agreesWithReference(t, sch, []byte(tt.args))
			got, err := sch.Validate([]byte(tt.args))
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("Validate refused: %v", err)
				}
				if got == nil {
					t.Fatalf("Validate returned no arguments")
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %.200s", tt.args)
			}
			r, ok := refusal.As(err)
			if !ok || r.Rule != tt.rule {
				t.Fatalf("Validate error = %v, want rule %s", err, tt.rule)
			}
			if !strings.Contains(r.Why, tt.why) {
				t.Fatalf("Why = %q, want it to contain %q", r.Why, tt.why)
			}
		})
	}
}

func TestValidateShapeHelpers(t *testing.T) {
	t.Parallel()
	for _, n := range []int{MaxArgumentBytes, MaxArgumentBytes + 1} {
		if got := len(withText(n)); got != n {
			t.Errorf("withText(%d) is %d bytes", n, got)
		}
	}
	if got := scanDepth([]byte(`{"team":"home","blob":` + nested(MaxArgumentDepth-1) + `}`)); got != MaxArgumentDepth {
		t.Errorf("depth case has depth %d", got)
	}
	if got := countNodes(t, withCounts(MaxArgumentNodes-3)); got != MaxArgumentNodes {
		t.Errorf("nodes case has %d nodes", got)
	}
}

// TestArgumentsInJavaScriptsOrder: the original reads an object's keys as JavaScript lists them,
// index-like keys first in ascending order, then the others as written; the first argument that
// fails in that order names the refusal.
func TestArgumentsInJavaScriptsOrder(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`{"type":"object","properties":{"b":{"type":"string"},"10":{"type":"integer"},"2":{"type":"boolean"},"02":{"type":"number"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ args, why string }{
		{`{"b":1,"10":"x","2":"y"}`, `"2"`},
		{`{"b":1,"10":"x"}`, `"10"`},
		{`{"b":1,"02":"x"}`, `"b"`}, // "02" is not an index: it keeps its place as written
		{`{"02":"x","b":1}`, `"02"`},
	}
	for _, tt := range tests {
		_, err := s.Validate([]byte(tt.args))
		r, ok := refusal.As(err)
		if !ok || r.Rule != refusal.InvalidArgumentType || !strings.Contains(r.Why, tt.why) {
			t.Errorf("Validate(%s) = %v, want invalid-argument-type naming %s", tt.args, err, tt.why)
		}
	}
}

// TestJSOrderListsIndicesFirst holds jsOrder to JavaScript's own-key order: array indices
// ascending by value (not by text), then the other keys as given, including numbers that are not
// canonical indices.
func TestJSOrderListsIndicesFirst(t *testing.T) {
	got := jsOrder([]string{"b", "10", "2", "a", "0", "01", "4294967295", "4294967294", "-1"})
	want := []string{"0", "2", "10", "4294967294", "b", "a", "01", "4294967295", "-1"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("jsOrder = %q, want %q", got, want)
	}
}
