package mcphost

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// nesting is how deep JSON text s nests (strings skipped).
func nesting(s string) int {
	depth, most, inString, escaped := 0, 0, false, false
	for _, b := range []byte(s) {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString:
			inString = b != '"'
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			most = max(most, depth)
		case b == '}' || b == ']':
			depth--
		}
	}
	return most
}

// FuzzDepthCap: a JSON body through depthCap, read a byte at a time, is valid JSON again, nests
// at most MaxMCPMessageDepth levels, and is unchanged when it nested no deeper.
func FuzzDepthCap(f *testing.F) {
	f.Add(`{"a":[1,"x\"]",{"b":null}]}`)
	f.Add(strings.Repeat("[", MaxMCPMessageDepth+5) + strings.Repeat("]", MaxMCPMessageDepth+5))
	f.Add(`{"tools":[` + strings.Repeat(`{"a":`, 300) + `1` + strings.Repeat(`}`, 300) + `,{"name":"ok"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		out, err := io.ReadAll(&depthCap{rc: io.NopCloser(iotest.OneByteReader(strings.NewReader(in)))})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) || nesting(string(out)) > MaxMCPMessageDepth {
			t.Fatalf("%.200q became %.200q", in, out)
		}
		if nesting(in) <= MaxMCPMessageDepth && string(out) != in {
			t.Fatalf("%.200q, within the bound, became %.200q", in, out)
		}
	})
}

// TestDepthCapReadsAnEventStream: in an event stream only data lines are JSON; a comment's quote
// or bracket does not throw the count, and each event starts afresh.
func TestDepthCapReadsAnEventStream(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	in := ": a comment with \" and [[[\n\nevent: message\ndata: {\"a\":" + deep + "}\n\nid: 7\ndata: {\"b\":1}\n\n"
	out, err := io.ReadAll(&depthCap{rc: io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), sse: true})
	if err != nil {
		t.Fatal(err)
	}
	want := ": a comment with \" and [[[\n\nevent: message\ndata: {\"a\":" + strings.Repeat("[", MaxMCPMessageDepth-1) + string(deepValue) + strings.Repeat("]", MaxMCPMessageDepth-1) + "}\n\nid: 7\ndata: {\"b\":1}\n\n"
	if string(out) != want {
		t.Fatalf("got %.300q", out)
	}
}
