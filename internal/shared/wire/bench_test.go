package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
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

// BenchmarkAnswerFrame writes the answer to a 4 KiB read and checks it against CheckFrame's
// bounds, as the door does: AppendFrame (the bounds counted as it is written), and MarshalJSON
// then CheckFrame (the frame read once more).
func BenchmarkAnswerFrame(b *testing.B) {
	obs, _ := json.Marshal(map[string]any{"path": "bench-4k.txt", "size": 4096, "content": strings.Repeat("text of a file, \"quoted\"\n", 4096/26)})
	a := OK("call-1", obs)
	b.Run("append-frame", func(b *testing.B) {
		b.SetBytes(int64(len(obs)))
		for b.Loop() {
			if _, r, err := a.AppendFrame(nil, refusal.MalformedAnswer); r != nil || err != nil {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("marshal-then-check", func(b *testing.B) {
		b.SetBytes(int64(len(obs)))
		for b.Loop() {
			out, err := a.MarshalJSON()
			if r := CheckFrame(out, refusal.MalformedAnswer); r != nil || err != nil {
				b.Fatal(r, err)
			}
		}
	})
}
