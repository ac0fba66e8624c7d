package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// stdKeys decodes frame's top level with encoding/json, which keeps names exactly as sent.
func stdKeys(t *testing.T, frame []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(frame, &m); err != nil {
		t.Fatalf("accepted a frame encoding/json refuses: %v", err)
	}
	return m
}

func allowed(name string, allow []string) bool {
	for _, a := range allow {
		if a == name {
			return true
		}
	}
	return false
}

func checkParseError(t *testing.T, err error, rules ...refusal.Rule) {
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Refusal == nil || pe.Why == "" {
		t.Fatalf("refusal is not a *ParseError with a why: %#v", err)
	}
	for _, r := range rules {
		if pe.Rule == r {
			return
		}
	}
	t.Fatalf("unexpected rule %q", pe.Rule)
}

func FuzzParseCall(f *testing.F) {
	for _, s := range []string{
		goodCall,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}}`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{},"grant":"everything"}`,
		`{"v":1,"callId":"a","c\u0061llId":"b","tool":"t","descriptorId":"d","boundsEcho":{}}`,
		`{"v":2,"callId":"c"}`,
		`{"v":1e0,"callId":"\u00e9\ud83d\ude00","tool":"t","descriptorId":"d","boundsEcho":{"n":[1,-0.5e3,true,null,"s"]}}`,
		`[{"v":1}]`,
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","boundsEcho":{}} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := ParseCall(frame)
		if err != nil {
			checkParseError(t, err, refusal.MalformedCall, refusal.UnknownField, refusal.BadVersion, refusal.UnattributedCall)
			return
		}
		m := stdKeys(t, frame)
		for name := range m {
			if !allowed(name, callFields) {
				t.Fatalf("accepted a call carrying %q", name)
			}
		}
		// encoding/json must read the same envelope.
		var id string
		if err := json.Unmarshal(m["callId"], &id); err != nil || id != c.CallID {
			t.Fatalf("encoding/json reads callId %q (%v), ParseCall %q", id, err, c.CallID)
		}
		var echo bytes.Buffer
		if err := json.Compact(&echo, m["boundsEcho"]); err != nil || !bytes.Equal(echo.Bytes(), c.BoundsEcho) {
			t.Fatalf("boundsEcho %s, compacted by encoding/json %s", c.BoundsEcho, echo.Bytes())
		}
		b, err := c.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of accepted %+v: %v", c, err)
		}
		again, err := ParseCall(b)
		if err != nil || !again.equal(c) {
			t.Fatalf("round trip: %s -> %+v, %v; want %+v", b, again, err, c)
		}
		if !SameJSON(c.BoundsEcho, c.BoundsEcho) {
			t.Fatalf("bounds %s are not the same as themselves", c.BoundsEcho)
		}
	})
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"callId":"c","ok":true,"observed":{"bytes":12}}`,
		`{"v":1,"callId":"c","ok":false,"refused":"host-not-allowed","why":"w"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"w","budget":{"used":3,"max":3}}`,
		`{"v":1,"callId":"c","ok":true}`,
		`{"v":1,"callId":"c","ok":true,"observed":{},"decision":"allow"}`,
		`{"v":1,"callId":"c","ok":false,"refused":"x","why":"w","budget":{"used":1,"max":2,"used":0}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		a, err := ParseAnswer(frame)
		if err != nil {
			checkParseError(t, err, refusal.MalformedAnswer, refusal.UnknownField, refusal.BadVersion)
			return
		}
		m := stdKeys(t, frame)
		for name := range m {
			if !allowed(name, answerFields) {
				t.Fatalf("accepted an answer carrying %q", name)
			}
		}
		if a.Budget != nil {
			var b map[string]json.RawMessage
			if err := json.Unmarshal(m["budget"], &b); err != nil {
				t.Fatal(err)
			}
			for name := range b {
				if !allowed(name, budgetFields) {
					t.Fatalf("accepted a budget carrying %q", name)
				}
			}
		}
		if a.OK == (a.Refused != "") {
			t.Fatalf("accepted an answer that is both or neither: %+v", a)
		}
		b, err := a.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of accepted %+v: %v", a, err)
		}
		again, err := ParseAnswer(b)
		if err != nil || !again.equal(a) {
			t.Fatalf("round trip: %s -> %+v, %v; want %+v", b, again, err, a)
		}
	})
}

// FuzzAppendObject holds appendObject, the one check of an object set by code before it crosses,
// to the library: it takes exactly what encoding/json holds to be one JSON object, and writes what
// json.Compact would, after whatever dst held; the depth it reports is the deepest nesting of the
// object's tokens as encoding/json's decoder reads them.
func FuzzAppendObject(f *testing.F) {
	for _, seed := range []string{`{}`, ` {"a" : [1, "x y"] }`, "{\"a\":\"\\\"\\\\ \"}\n", `{"a":`, `[1]`, `"s"`, `{} {}`, ``, `{"a":1}x`, "{\"\xff\":1}",
		`{"a":[[],{"b":[{}]}],"c":"[{"}`, `{"x":"\\"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, depth, ok := appendObject([]byte("prefix"), raw)
		trimmed := bytes.TrimLeft(raw, " \t\r\n")
		want := json.Valid(raw) && len(trimmed) > 0 && trimmed[0] == '{'
		if ok != want {
			t.Fatalf("appendObject(%q) ok = %v, want %v", raw, ok, want)
		}
		if !ok {
			if string(out) != "prefix" {
				t.Fatalf("a refused object changed dst to %q", out)
			}
			return
		}
		var compact bytes.Buffer
		compact.WriteString("prefix")
		if err := json.Compact(&compact, raw); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, compact.Bytes()) {
			t.Fatalf("appendObject(%q) = %q, want %q", raw, out, compact.Bytes())
		}
		if want := tokenDepth(t, raw); depth != want {
			t.Fatalf("appendObject(%q) depth = %d, want %d", raw, depth, want)
		}
	})
}

// tokenDepth is the deepest nesting of raw's objects and arrays, read by encoding/json's decoder.
func tokenDepth(t *testing.T, raw []byte) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			t.Fatalf("decoding %q: %v", raw, err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// FuzzAppendFrameAgreesWithCheckFrame: an answer's AppendFrame writes what MarshalJSON writes,
// after whatever dst held, fails as it fails, and refuses exactly the frames CheckFrame refuses,
// with its refusal: the bounds counted as the frame is written are the ones read from it.
func FuzzAppendFrameAgreesWithCheckFrame(f *testing.F) {
	deep := func(n int, inner string) string {
		return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
	}
	for _, seed := range []struct {
		observed string
		ok       bool
		budget   bool
	}{
		{`{"path":"a.txt","content":"x"}`, true, false},
		{deep(MaxDepth-2, `[]`), true, false},
		{deep(MaxDepth-1, `[]`), true, false},
		{deep(MaxDepth-1, `1`), true, false},
		{deep(MaxDepth, `1`), true, false},
		{deep(MaxDepth-2, `"[[[{{"`), true, false},
		{`{"content":"` + strings.Repeat("x", MaxFrameBytes-40) + `"}`, true, false},
		{`{"content":"` + strings.Repeat("x", MaxFrameBytes) + `"}`, true, false},
		{` { "a" : [ 1 , 2 ] } `, true, false},
		{`[1]`, true, false},
		{``, false, true},
		{``, false, false},
	} {
		f.Add([]byte(seed.observed), seed.ok, seed.budget)
	}
	f.Fuzz(func(t *testing.T, observed []byte, ok, budget bool) {
		a := Answer{CallID: "c1", OK: ok}
		if ok {
			a.Observed = observed
		} else {
			a.Refused, a.Why = refusal.ToolTimeout, string(observed)+"."
			if budget {
				a.Budget = &Budget{Used: 3, Max: 10}
			}
		}
		want, wantErr := a.MarshalJSON()
		got, r, err := a.AppendFrame([]byte("prefix"), refusal.MalformedAnswer)
		if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
			t.Fatalf("AppendFrame failed with %v, MarshalJSON with %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("AppendFrame wrote %.200q, MarshalJSON %.200q", got, want)
		}
		wantR := CheckFrame(want, refusal.MalformedAnswer)
		if (r == nil) != (wantR == nil) || (r != nil && (r.Rule != wantR.Rule || r.Why != wantR.Why)) {
			t.Fatalf("AppendFrame refused %v, CheckFrame %v", r, wantR)
		}
	})
}
