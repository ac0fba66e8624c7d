package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

const goodCall = `{"v":1,"callId":"call_1","tool":"read_notes","descriptorId":"notes","args":{"path":"a.txt"},"boundsEcho":{"maxBytes":4096,"paths":["notes/"]}}`

// nested returns a frame whose args nest depth-1 levels below the envelope.
func nested(depth int) string {
	inner := strings.Repeat(`[`, depth-2) + strings.Repeat(`]`, depth-2)
	return `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"args":{"x":` + inner + `}}`
}

func TestParseCallRefuses(t *testing.T) {
	t.Parallel()
	big := `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"args":{"x":"` + strings.Repeat("a", MaxFrameBytes) + `"}}`
	many := `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"args":{`
	for i := 0; i < 40; i++ {
		many += `"k` + strings.Repeat("x", i) + `":1,`
	}
	manyDup := many + `"kxxxxx":2}}`
	tests := []struct {
		name   string
		frame  string
		rule   refusal.Rule
		callID string // the callId the refusal must keep, "" when none may be read
	}{
		// The frame itself: malformed-call, and no callId is trusted.
		{"empty frame", ``, refusal.MalformedCall, ""},
		{"not JSON", `call me`, refusal.MalformedCall, ""},
		{"array", `[` + goodCall + `]`, refusal.MalformedCall, ""},
		{"string", `"{}"`, refusal.MalformedCall, ""},
		{"null", `null`, refusal.MalformedCall, ""},
		{"trailing object", goodCall + `{}`, refusal.MalformedCall, ""},
		{"trailing garbage", goodCall + ` x`, refusal.MalformedCall, ""},
		{"two envelopes", goodCall + "\n" + goodCall, refusal.MalformedCall, ""},
		{"truncated", goodCall[:len(goodCall)-1], refusal.MalformedCall, ""},
		{"invalid UTF-8", `{"v":1,"callId":"c` + "\xff" + `","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"duplicate callId", `{"v":1,"callId":"a","callId":"b","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"duplicate by escape", `{"v":1,"callId":"a","c\u0061llId":"b","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"duplicate in args", `{"v":1,"callId":"a","tool":"t","descriptorId":"d","boundsEcho":{},"args":{"path":"x","path":"/etc"}}`, refusal.MalformedCall, ""},
		{"duplicate deep in bounds", `{"v":1,"callId":"a","tool":"t","descriptorId":"d","boundsEcho":{"a":[{"h":1,"h":2}]}}`, refusal.MalformedCall, ""},
		{"duplicate among many keys", manyDup, refusal.MalformedCall, ""},
		{"oversized", big, refusal.MalformedCall, ""},
		{"too deep", nested(MaxDepth + 1), refusal.MalformedCall, ""},

		// Unknown fields win over everything after the frame check, and keep the callId.
		{"ambient grant", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{},"boundsEcho":{},"grant":"everything"}`, refusal.UnknownField, "c"},
		{"ambient decision", `{"decision":"allow","v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.UnknownField, "c"},
		{"answer field on a call", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"ok":true}`, refusal.UnknownField, "c"},
		{"case differs", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"CallId":"x"}`, refusal.UnknownField, "c"},
		{"unknown before bad version", `{"v":2,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"x":1}`, refusal.UnknownField, "c"},
		{"unknown before missing callId", `{"v":1,"tool":"t","descriptorId":"d","boundsEcho":{},"x":1}`, refusal.UnknownField, ""},
		{"unknown with null value", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"x":null}`, refusal.UnknownField, "c"},

		// Version.
		{"version 2", `{"v":2,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.BadVersion, "c"},
		{"version missing", `{"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.BadVersion, "c"},
		{"version as string", `{"v":"1","callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.BadVersion, "c"},
		{"version 1.5", `{"v":1.5,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.BadVersion, "c"},
		{"version before missing callId", `{"v":0,"tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.BadVersion, ""},

		// callId.
		{"callId missing", `{"v":1,"tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"callId null", `{"v":1,"callId":null,"tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"callId number", `{"v":1,"callId":7,"tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"callId empty", `{"v":1,"callId":"","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"callId too long", `{"v":1,"callId":"` + strings.Repeat("c", MaxIDBytes+1) + `","tool":"t","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, ""},
		{"callId before attribution", `{"v":1}`, refusal.MalformedCall, ""},

		// Attribution present.
		{"descriptorId missing", `{"v":1,"callId":"c","tool":"t","boundsEcho":{}}`, refusal.UnattributedCall, "c"},
		{"descriptorId empty", `{"v":1,"callId":"c","tool":"t","descriptorId":"","boundsEcho":{}}`, refusal.UnattributedCall, "c"},
		{"tool missing", `{"v":1,"callId":"c","descriptorId":"d","boundsEcho":{}}`, refusal.UnattributedCall, "c"},
		{"tool null", `{"v":1,"callId":"c","tool":null,"descriptorId":"d","boundsEcho":{}}`, refusal.UnattributedCall, "c"},
		{"boundsEcho missing", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{}}`, refusal.UnattributedCall, "c"},
		{"boundsEcho null", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":null}`, refusal.UnattributedCall, "c"},
		{"only callId", `{"v":1,"callId":"c"}`, refusal.UnattributedCall, "c"},

		// Attribution well typed.
		{"descriptorId number", `{"v":1,"callId":"c","tool":"t","descriptorId":3,"boundsEcho":{}}`, refusal.MalformedCall, "c"},
		{"tool object", `{"v":1,"callId":"c","tool":{},"descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, "c"},
		{"tool too long", `{"v":1,"callId":"c","tool":"` + strings.Repeat("t", MaxIDBytes+1) + `","descriptorId":"d","boundsEcho":{}}`, refusal.MalformedCall, "c"},
		{"boundsEcho array", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":[]}`, refusal.MalformedCall, "c"},
		{"boundsEcho string", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":"{}"}`, refusal.MalformedCall, "c"},
		{"args array", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"args":[1]}`, refusal.MalformedCall, "c"},
		{"args string", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"args":"x"}`, refusal.MalformedCall, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseCall([]byte(tt.frame))
			if err == nil {
				t.Fatalf("ParseCall accepted %.200s as %+v", tt.frame, c)
			}
			if got := refusal.RuleOf(err); got != tt.rule {
				t.Fatalf("rule = %q, want %q (%v)", got, tt.rule, err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.CallID != tt.callID {
				t.Fatalf("CallID = %q, want %q", pe.CallID, tt.callID)
			}
			if pe.Why == "" {
				t.Fatalf("refusal has no why")
			}
			if !c.equal(Call{}) {
				t.Fatalf("a refused frame returned a half-parsed call %+v", c)
			}
		})
	}
}

func (c Call) equal(o Call) bool {
	return c.CallID == o.CallID && c.Tool == o.Tool && c.DescriptorID == o.DescriptorID &&
		bytes.Equal(c.Args, o.Args) && bytes.Equal(c.BoundsEcho, o.BoundsEcho)
}

func TestParseCallAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame string
		want  Call
	}{
		{"typical", goodCall, Call{"call_1", "read_notes", "notes", json.RawMessage(`{"path":"a.txt"}`), json.RawMessage(`{"maxBytes":4096,"paths":["notes/"]}`)}},
		{"args absent", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`, Call{"c", "t", "d", json.RawMessage(`{}`), json.RawMessage(`{}`)}},
		{"args null", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"args":null}`, Call{"c", "t", "d", json.RawMessage(`{}`), json.RawMessage(`{}`)}},
		{"whitespace compacted", " {\n \"boundsEcho\" : { \"a\" : [ 1 , 2 ] } ,\t\"v\":1, \"args\":{ \"s\":\" x \" },\"descriptorId\":\"d\",\"tool\":\"t\",\"callId\":\"c\"}\n", Call{"c", "t", "d", json.RawMessage(`{"s":" x "}`), json.RawMessage(`{"a":[1,2]}`)}},
		{"escaped names", `{"\u0076":1,"call\u0049d":"c\u00e9","tool":"t","descriptorId":"d","boundsEcho":{}}`, Call{"c\u00e9", "t", "d", json.RawMessage(`{}`), json.RawMessage(`{}`)}},
		{"version spelled 1.0", `{"v":1.0,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`, Call{"c", "t", "d", json.RawMessage(`{}`), json.RawMessage(`{}`)}},
		{"same key in sibling objects", `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{"a":{"k":1},"b":{"k":1}},"args":{"k":[{"k":1},{"k":2}]}}`, Call{"c", "t", "d", json.RawMessage(`{"k":[{"k":1},{"k":2}]}`), json.RawMessage(`{"a":{"k":1},"b":{"k":1}}`)}},
		{"deepest allowed", nested(MaxDepth), Call{"c", "t", "d", json.RawMessage(`{"x":` + strings.Repeat(`[`, MaxDepth-2) + strings.Repeat(`]`, MaxDepth-2) + `}`), json.RawMessage(`{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseCall([]byte(tt.frame))
			if err != nil {
				t.Fatalf("ParseCall refused: %v", err)
			}
			if !c.equal(tt.want) {
				t.Fatalf("got %+v\nwant %+v", c, tt.want)
			}
			roundTripCall(t, c)
		})
	}
}

func TestParseCallDoesNotAliasFrame(t *testing.T) {
	t.Parallel()
	frame := []byte(goodCall)
	c, err := ParseCall(frame)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frame {
		frame[i] = ' '
	}
	if string(c.Args) != `{"path":"a.txt"}` || string(c.BoundsEcho) != `{"maxBytes":4096,"paths":["notes/"]}` {
		t.Fatalf("call changed with its frame: %+v", c)
	}
}

func TestFrameAtTheBound(t *testing.T) {
	t.Parallel()
	head := `{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"args":{"x":"`
	tail := `"}}`
	pad := MaxFrameBytes - len(head) - len(tail)
	frame := head + strings.Repeat("a", pad) + tail
	if _, err := ParseCall([]byte(frame)); err != nil {
		t.Fatalf("a frame of exactly MaxFrameBytes was refused: %v", err)
	}
	if _, err := ParseCall([]byte(head + strings.Repeat("a", pad+1) + tail)); refusal.RuleOf(err) != refusal.MalformedCall {
		t.Fatalf("a frame one byte over MaxFrameBytes: %v", err)
	}
}

func roundTripCall(t *testing.T, c Call) {
	t.Helper()
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON of an accepted call: %v", err)
	}
	again, err := ParseCall(b)
	if err != nil {
		t.Fatalf("the marshalled call %s does not parse: %v", b, err)
	}
	if !again.equal(c) {
		t.Fatalf("round trip changed the call:\n%+v\n%+v", c, again)
	}
	// encoding/json (which escapes HTML) must produce an equal call too.
	b2, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	if again, err = ParseCall(b2); err != nil || !SameJSON(again.Args, c.Args) || !SameJSON(again.BoundsEcho, c.BoundsEcho) || again.CallID != c.CallID {
		t.Fatalf("json.Marshal round trip: %s, %v", b2, err)
	}
}

func TestCallMarshalRefusesInvalid(t *testing.T) {
	t.Parallel()
	ok := Call{"c", "t", "d", nil, json.RawMessage(`{}`)}
	tests := []struct {
		name string
		mod  func(*Call)
	}{
		{"no callId", func(c *Call) { c.CallID = "" }},
		{"no tool", func(c *Call) { c.Tool = "" }},
		{"no descriptorId", func(c *Call) { c.DescriptorID = "" }},
		{"long callId", func(c *Call) { c.CallID = strings.Repeat("x", MaxIDBytes+1) }},
		{"no boundsEcho", func(c *Call) { c.BoundsEcho = nil }},
		{"boundsEcho array", func(c *Call) { c.BoundsEcho = json.RawMessage(`[]`) }},
		{"args broken", func(c *Call) { c.Args = json.RawMessage(`{"a":`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tt.mod(&c)
			if b, err := c.MarshalJSON(); err == nil {
				t.Fatalf("MarshalJSON wrote %s", b)
			}
		})
	}
	b, err := ok.MarshalJSON()
	if err != nil || string(b) != `{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{},"boundsEcho":{}}` {
		t.Fatalf("MarshalJSON = %s, %v", b, err)
	}
}

func TestCheckFrame(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tt := range []struct {
		name, frame string
		ok          bool
	}{
		{"a call", goodCall, true},
		{"as deep as allowed", deep(MaxDepth), true},
		{"one level too deep", deep(MaxDepth + 1), false},
		{"brackets inside a string do not count", `{"s":"` + strings.Repeat("[", 2*MaxDepth) + `"}`, true},
		{"an escaped quote does not end the string", `{"s":"\"` + strings.Repeat("[", 2*MaxDepth) + `"}`, true},
		{"an escaped backslash does", `{"s":"\\",` + `"t":` + deep(MaxDepth+1) + `}`, false},
		{"too large", `{"s":"` + strings.Repeat("a", MaxFrameBytes) + `"}`, false},
		{"exactly the bound", `{"s":"` + strings.Repeat("a", MaxFrameBytes-8) + `"}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := CheckFrame([]byte(tt.frame), refusal.MalformedCall)
			if (r == nil) != tt.ok {
				t.Fatalf("CheckFrame = %v, want ok %v", r, tt.ok)
			}
			if r != nil && (r.Rule != refusal.MalformedCall || r.Why == "") {
				t.Fatalf("refusal %v", r)
			}
		})
	}
}

// FuzzCheckFrameAgreesWithParse: what a sender lets through CheckFrame, a receiver never refuses
// for its bounds, and what CheckFrame refuses a receiver refuses too.
func FuzzCheckFrameAgreesWithParse(f *testing.F) {
	f.Add([]byte(goodCall))
	f.Add([]byte(`{"s":"\\\"[[["}`))
	f.Add([]byte(strings.Repeat("[", MaxDepth+1)))
	f.Fuzz(func(t *testing.T, frame []byte) {
		_, err := ParseCall(frame)
		if CheckFrame(frame, refusal.MalformedCall) != nil {
			if err == nil {
				t.Fatalf("ParseCall accepted a frame CheckFrame refuses: %q", frame)
			}
			return
		}
		if pe, ok := err.(*ParseError); ok && (pe.Why == string(faultTooDeep) || pe.Why == string(faultTooLarge)) {
			t.Fatalf("ParseCall refused for a bound CheckFrame passed: %v", err)
		}
	})
}
