package toolschema

import "testing"

func BenchmarkPartDecode(b *testing.B) {
	raw := []byte(typicalArgs)
	for b.Loop() {
		decode(raw)
	}
}

func BenchmarkPartCheck(b *testing.B) {
	s, _ := Parse([]byte(typicalSchema))
	v, _ := decode([]byte(typicalArgs))
	for b.Loop() {
		s.root.check(v, nil, nil)
	}
}

// BenchmarkPartLibrary is the reference library's validation of the same value, for comparison.
func BenchmarkPartLibrary(b *testing.B) {
	s, _ := Parse([]byte(typicalSchema))
	ref := reference(b, s)
	v, _ := decode([]byte(typicalArgs))
	for b.Loop() {
		ref.Validate(v)
	}
}

func BenchmarkPartWalk(b *testing.B) {
	v, _ := decode([]byte(typicalArgs))
	for b.Loop() {
		w := walker{maxDepth: MaxArgumentDepth, maxNodes: MaxArgumentNodes}
		w.walk(v, 0)
	}
}

func BenchmarkPartNullRequired(b *testing.B) {
	s, _ := Parse([]byte(typicalSchema))
	v, _ := decode([]byte(typicalArgs))
	for b.Loop() {
		nullRequired(s.doc, v.(map[string]any), nil, nil)
	}
}

func BenchmarkPartParse(b *testing.B) {
	raw := []byte(typicalArgs)
	for b.Loop() {
		parseJSON(raw, MaxArgumentDepth, MaxArgumentNodes)
	}
}
