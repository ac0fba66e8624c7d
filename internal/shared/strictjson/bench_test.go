package strictjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

var benchDoc = []byte(`{"name":"box","count":3,"bounds":{"maxBytes":4096,"name":"b"},"list":[{"name":"a"},{"name":"b"}],"extra":{"k":"v"}}`)

// BenchmarkDecode is Decode of a small valid object; BenchmarkDecodeBaseline is the
// encoding/json decode it wraps (DisallowUnknownFields, one value), for the difference.
func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var d doc
		if err := Decode(benchDoc, &d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBaseline(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var d doc
		dec := json.NewDecoder(bytes.NewReader(benchDoc))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeUnknownMember is the refusal path: the decode, the lenient decode that tells
// the unknown member apart, and the probes that find it.
func BenchmarkDecodeUnknownMember(b *testing.B) {
	bad := []byte(`{"name":"box","count":3,"bounds":{"maxBytes":4096,"sneaky":1}}`)
	b.ReportAllocs()
	for b.Loop() {
		var d doc
		if KindOf(Decode(bad, &d)) != UnknownField {
			b.Fatal("not refused")
		}
	}
}
