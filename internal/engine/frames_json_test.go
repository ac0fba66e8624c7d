package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

var frameStrings = []string{"", "mc-1", "<tool & co>", "caf\u00e9 \u2028 \u2029 \xff \x01\"\\"}

var frameArgs = []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(` {"a" : "<b>", "n": [1, 2.5, "\u2028"]} `)}

// TestPortFramesAgreeWithJSON holds every frame the worker writes for a mini-app or external app
// call to what encoding/json wrote for it before.
func TestPortFramesAgreeWithJSON(t *testing.T) {
	same := func(what string, got []byte, v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s wrote %s; json.Marshal %s", what, got, want)
		}
	}
	for _, s := range frameStrings {
		for _, args := range frameArgs {
			c := portCall{"call_tool", s, s + "x", args}
			got, ok := c.appendJSON([]byte("keep"))
			if !ok || !bytes.HasPrefix(got, []byte("keep")) {
				t.Fatalf("portCall %+v: %s %v", c, got, ok)
			}
			same("portCall", got[4:], c)
			got, ok = appendMiniAppCall(nil, s, s+"a", s+"t", args)
			if !ok {
				t.Fatalf("appendMiniAppCall refused %s", args)
			}
			same("miniapp.call", got, struct {
				Type   string          `json:"type"`
				CallID string          `json:"callId"`
				AppID  string          `json:"appId"`
				Tool   string          `json:"tool"`
				Args   json.RawMessage `json:"args"`
			}{"miniapp.call", s, s + "a", s + "t", args})
			got, ok = appendExternalCall(nil, s, s+"n", args)
			if !ok {
				t.Fatalf("appendExternalCall refused %s", args)
			}
			same("externalapp.call", got, struct {
				Type   string          `json:"type"`
				CallID string          `json:"callId"`
				Name   string          `json:"name"`
				Args   json.RawMessage `json:"args"`
			}{"externalapp.call", s, s + "n", args})
		}
		n := portNotice{"miniapp.call", s, s, s, len(s)%2 == 0}
		same("portNotice", n.appendJSON(nil), n)
		e := expiredNotice{"miniapp.cancel", s, s, s, uint64(len(s)) << 40, true}
		same("expiredNotice", e.appendJSON(nil), e)
		o := overBudgetNotice{"miniapp.over_budget", s, ^uint64(0), s, len(s), -len(s)}
		same("overBudgetNotice", o.appendJSON(nil), o)
		for _, expired := range []bool{false, true} {
			same("cancel", appendCancel(nil, s+"c", s, expired), map[string]any{"type": s + "c", "callId": s, "expired": expired})
		}
		same("cancel_call", appendPortCancel(nil, s), map[string]string{"type": "cancel_call", "callId": s})
	}
	for _, bad := range []json.RawMessage{json.RawMessage(`{"a":`), json.RawMessage(`1 2`), json.RawMessage(` `)} {
		if _, err := json.Marshal(portCall{Args: bad}); err == nil {
			t.Fatalf("json.Marshal wrote the arguments %q", bad)
		}
		if b, ok := (portCall{"call_tool", "mc-1", "t", bad}).appendJSON(nil); ok {
			t.Errorf("a call whose arguments are %q was written: %s", bad, b)
		}
		if b, ok := appendMiniAppCall(nil, "mc-1", "a", "t", bad); ok {
			t.Errorf("a miniapp.call whose arguments are %q was written: %s", bad, b)
		}
		if b, ok := appendExternalCall(nil, "mc-1", "t", bad); ok {
			t.Errorf("an externalapp.call whose arguments are %q was written: %s", bad, b)
		}
	}
}

func TestPortAnswerListsItsFields(t *testing.T) { strictjsontest.CheckFields(t, &portAnswer{}) }

var portAnswerSamples = []string{
	`{"type":"tool_result","callId":"mc-1","ok":true,"result":"{\"ok\":true}"}`,
	`{"type":"tool_result","callId":"mc-2","ok":false,"error":"no"}`, `{"type":"tool_result","callId":"mc-2","ok":false,"error":null}`,
	`{"TYPE":"tool_result","CallId":"mc-3","Result":null,"result":"x","OK":true}`, `{"result":"x","result":null}`, `{"result":1}`,
	`{"ok":"true"}`, `{"ok":1}`, `{"ok":null}`, `{"ok":true,"ok":null}`, `{"error":{}}`, `{"error":5,"error":"x"}`, `{"sneaky":1,"ok":"x"}`,
	`{"type":"tool_result"} `, `{"type":"tool_result"}x`, `null`, ` null `, `[]`, `"x"`, `1`, `{`, ``, `{"other":[1,{"a":2}],"callId":"\u00e9\ud800"}`,
	`{"type":"tool_result","callId":"mc-1","ok":true,"result":"x","extra":{"deep":[null]}}`,
}

func checkPortAnswer(t *testing.T, msg []byte) {
	var want portAnswer
	wantOK := json.Unmarshal(msg, &want) == nil
	var got portAnswer
	gotOK := got.decode(msg)
	if gotOK != wantOK || (gotOK && !reflect.DeepEqual(got, want)) {
		t.Fatalf("decode(%q) = %+v %v; json.Unmarshal %+v %v", msg, got, gotOK, want, wantOK)
	}
	if gotOK && got.shaped() != want.shaped() {
		t.Fatalf("decode(%q): shaped %v; json.Unmarshal's %v", msg, got.shaped(), want.shaped())
	}
}

func TestPortAnswerDecodeAgreesWithJSON(t *testing.T) {
	for _, s := range portAnswerSamples {
		checkPortAnswer(t, []byte(s))
	}
}

func FuzzPortAnswerDecodeAgreesWithJSON(f *testing.F) {
	for _, s := range portAnswerSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) { checkPortAnswer(t, msg) })
}

var portRefusalSamples = []string{
	`{"dropped":0,"refused":{},"samples":[]}`,
	`{"dropped":3,"refused":{"malformed-answer":2,"mini-app-unsolicited-answer":1},"samples":[{"rule":"malformed-answer","why":"not JSON <&>"},{"rule":"x","why":"\u00e9\ud800"}]}`,
	`{"DROPPED":1,"Refused":null,"SAMPLES":null}`, `{"refused":{"a":null},"samples":[null,{},{"rule":"r","extra":[1]}]}`, `{"other":1}`,
	`{"dropped":1.5}`, `{"dropped":"1"}`, `{"refused":[]}`, `{"samples":{}}`, `{"samples":[1]}`, `null`, `[]`, ``, `{`, `{} x`,
}

func checkPortRefusals(t *testing.T, in []byte) {
	var want PortRefusals
	if json.Unmarshal(in, &want) != nil || repeatsAName(in) {
		return
	}
	var got PortRefusals
	got.decode(in)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decode(%q) = %+v; json.Unmarshal %+v", in, got, want)
	}
}

// repeatsAName reports whether an object in v, a valid JSON value, names a member twice (as
// encoding/json folds names to match them): PortRefusals.decode's agreement leaves such
// documents out.
func repeatsAName(v []byte) bool {
	v, _, _ = rawjson.First(v)
	repeated := false
	switch v[0] {
	case '{':
		seen := map[string]bool{}
		rawjson.Members(v, func(name string, val []byte) bool {
			k := rawjson.Fold(name)
			repeated = repeated || seen[k] || repeatsAName(val)
			seen[k] = true
			return !repeated
		})
	case '[':
		rawjson.Elements(v, func(e []byte) { repeated = repeated || repeatsAName(e) })
	}
	return repeated
}

func TestPortRefusalsDecodeAgreesWithJSON(t *testing.T) {
	for _, s := range portRefusalSamples {
		checkPortRefusals(t, []byte(s))
	}
	var r PortRefusals
	r.decode([]byte(portRefusalSamples[1]))
	if r.Dropped != 3 || r.Refused["malformed-answer"] != 2 || len(r.Samples) != 2 || r.Samples[1].Why != "\u00e9\ufffd" {
		t.Errorf("decoded %+v", r)
	}
}

func FuzzPortRefusalsDecodeAgreesWithJSON(f *testing.F) {
	for _, s := range portRefusalSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkPortRefusals(t, in) })
}
