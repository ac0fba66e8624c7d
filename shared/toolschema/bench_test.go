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
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := s.Validate(raw); err != nil {
			b.Fatal(err)
		}
	}
}
