package wire

import (
	"encoding/json"
	"testing"
)

// BenchmarkCallRoundTrip measures what a receiver does for one typical call: parse the frame,
// re-verify its attribution, and marshal an answer.
func BenchmarkCallRoundTrip(b *testing.B) {
	frame := []byte(goodCall)
	admitted := AdmittedMap{"notes": json.RawMessage(`{"maxBytes":4096,"paths":["notes/"]}`)}
	observed := json.RawMessage(`{"bytes":12,"text":"hello, world"}`)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := ParseCall(frame)
		if err != nil {
			b.Fatal(err)
		}
		if r := Verify(c, admitted); r != nil {
			b.Fatal(r)
		}
		if _, err := OK(c.CallID, observed).MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAnswer measures the asking side: parse one observed answer.
func BenchmarkParseAnswer(b *testing.B) {
	frame := []byte(`{"v":1,"callId":"call_1","ok":true,"observed":{"bytes":12,"text":"hello, world"}}`)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAnswer(frame); err != nil {
			b.Fatal(err)
		}
	}
}
