package toolschema

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		typicalSchema, argsSchema, `{"type":"object"}`, `{"type":"object","properties":{"p":{"type":"string","pattern":"x"}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2.0],"minimum":2}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","enum":["a"]}}}}`,
		`{"type":"object","required":["__proto__"]}`, `[]`, `null`, `{"type":"object","$ref":"http://x/"}`,
		nestedSchema(MaxSchemaDepth), `{"type":"object","properties":{"p":{"type":"number","maximum":1e400}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := Parse(raw)
		if err != nil {
			if refusal.RuleOf(err) != refusal.InvalidToolParameters {
				t.Fatalf("Parse error %v is not %s", err, refusal.InvalidToolParameters)
			}
			return
		}
		if s.root == nil {
			t.Fatalf("accepted without compiling")
		}
		reference(t, s) // the library must compile every schema the subset accepts
		again, err := Parse(s.JSON())
		if err != nil {
			t.Fatalf("normal form %s refused: %v", s.JSON(), err)
		}
		if !bytes.Equal(again.JSON(), s.JSON()) {
			t.Fatalf("normal form is not stable: %s then %s", s.JSON(), again.JSON())
		}
	})
}

func FuzzValidate(f *testing.F) {
	for _, c := range []struct{ schema, args string }{
		{typicalSchema, typicalArgs},
		{argsSchema, `{"team":"home","points":6,"name":"héé"}`},
		{argsSchema, `{"team":null}`},
		{argsSchema, `{"team":"home","settings":{"volume":1.0}}`},
		{argsSchema, `{"team":"home","__proto__":1}`},
		{argsSchema, `{"team":"home","ratio":6.0000000000000001}`},
		{argsSchema, `{"team":"home","counts":[1e401]}`},
		{`{"type":"object"}`, `null`},
		{`{"type":"object","properties":{"b":{"type":"object"}}}`, `{"b":` + nested(MaxArgumentDepth) + `}`},
	} {
		f.Add([]byte(c.schema), []byte(c.args))
	}
	fallback, err := Parse([]byte(argsSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, schemaRaw, argsRaw []byte) {
		s, err := Parse(schemaRaw)
		if err != nil {
			s = fallback // most mutated schemas are refused; keep the arguments exercised
		}
		agreesWithReference(t, s, argsRaw)
		args, err := s.Validate(argsRaw)
		if err != nil {
			if _, ok := refusal.As(err); !ok {
				t.Fatalf("Validate error %v is not a refusal", err)
			}
			return
		}
		enc, err := json.Marshal(args)
		if err != nil {
			t.Fatalf("accepted arguments do not encode: %v", err)
		}
		if len(enc) > MaxArgumentBytes+len(argsRaw) { // re-encoding may escape more, never invent data
			t.Fatalf("accepted %d bytes", len(enc))
		}
		w := walker{maxDepth: MaxArgumentDepth, maxNodes: MaxArgumentNodes}
		w.walk(args, 0)
		if w.over || w.hasProto || w.hasBadNumber {
			t.Fatalf("accepted arguments outside the bounds: %+v", w.m)
		}
	})
}
