package toolschema

import (
	"strings"
	"testing"
)

const typicalSchema = `{
  "type": "object",
  "properties": {
    "team":   {"type": "string", "enum": ["home", "away"], "description": "Which team"},
    "points": {"type": "integer", "minimum": 1, "maximum": 6},
    "note":   {"type": "string", "maxLength": 200},
    "urgent": {"type": "boolean"},
    "tags":   {"type": "array", "items": {"type": "string"}}
  },
  "required": ["team", "points"],
  "additionalProperties": false
}`

const typicalArgs = `{"team":"home","points":3,"note":"a short note here","urgent":true,"tags":["a","b"]}`

func BenchmarkValidateTypical(b *testing.B) {
	s, err := Parse([]byte(typicalSchema))
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(typicalArgs)
	warmUp(b, s, raw, 20000)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := s.Validate(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate64KiB(b *testing.B) {
	s, err := Parse([]byte(`{"type":"object","properties":{"text":{"type":"string","maxLength":70000}},"required":["text"]}`))
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"text":"` + strings.Repeat("x", MaxArgumentBytes-len(`{"text":""}`)) + `"}`)
	if len(raw) != MaxArgumentBytes {
		b.Fatalf("payload is %d bytes", len(raw))
	}
	warmUp(b, s, raw, 200)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := s.Validate(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// warmUp runs the code before timing it. In the browser, V8 first runs wasm compiled by its
// baseline compiler and swaps in optimised code later; without this, the first benchmark of a run
// measures the baseline tier (several times slower). Natively it costs a few milliseconds.
func warmUp(b *testing.B, s *Schema, raw []byte, n int) {
	b.Helper()
	for range n {
		if _, err := s.Validate(raw); err != nil {
			b.Fatal(err)
		}
	}
}
