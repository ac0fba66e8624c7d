package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestPortFramesAgreeWithJSON(t *testing.T) {
	for _, s := range []string{"", "mc-1", "<tool & co>", "caf\u00e9 \u2028 \xff"} {
		for _, args := range []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(` {"a" : "<b>", "n": [1, 2.5]} `)} {
			c := portCall{"call_tool", s, s + "x", args}
			want, _ := json.Marshal(c)
			if got, ok := c.appendJSON(nil); !ok || !bytes.Equal(got, want) {
				t.Errorf("portCall wrote %s %v; json.Marshal %s", got, ok, want)
			}
		}
		n := portNotice{"miniapp.call", s, s, s, len(s)%2 == 0}
		if want, _ := json.Marshal(n); !bytes.Equal(n.appendJSON(nil), want) {
			t.Errorf("portNotice wrote %s; json.Marshal %s", n.appendJSON(nil), want)
		}
		e := expiredNotice{"miniapp.cancel", s, s, s, uint64(len(s)) << 40, true}
		if want, _ := json.Marshal(e); !bytes.Equal(e.appendJSON(nil), want) {
			t.Errorf("expiredNotice wrote %s; json.Marshal %s", e.appendJSON(nil), want)
		}
	}
	if _, ok := (portCall{"call_tool", "mc-1", "t", json.RawMessage(`{"a":`)}).appendJSON(nil); ok {
		t.Error("a call whose arguments are not JSON was written")
	}
}

var portAnswerSamples = []string{
	`{"type":"tool_result","callId":"mc-1","result":"{\"ok\":true}"}`, `{"type":"tool_result","callId":"mc-2","refused":"tool-failed","why":"no"}`,
	`{"TYPE":"tool_result","CallId":"mc-3","Result":null,"result":"x"}`, `{"result":"x","result":null}`, `{"result":1}`, `{"why":{}}`,
	`{"type":"tool_result"} `, `{"type":"tool_result"}x`, `null`, `[]`, `"x"`, `{`, ``, `{"other":[1,{"a":2}],"callId":"\u00e9\ud800"}`,
}

func checkPortAnswer(t *testing.T, msg []byte) {
	var want portAnswer
	wantOK := json.Unmarshal(msg, &want) == nil
	var got portAnswer
	gotOK := got.decode(msg)
	if gotOK != wantOK || (gotOK && !reflect.DeepEqual(got, want)) {
		t.Fatalf("decode(%q) = %+v %v; json.Unmarshal %+v %v", msg, got, gotOK, want, wantOK)
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
