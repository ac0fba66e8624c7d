package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// referenceMessage is how parse read a call before: encoding/json's Decoder, one value.
func referenceMessage(in []byte) (message, bool) {
	var m message
	err := json.NewDecoder(bytes.NewReader(in)).Decode(&m)
	return m, err == nil
}

var messageSamples = []string{
	`{"type":"call","id":1,"method":"files.read","params":{"path":"a.txt"}}`,
	` {"TYPE":"call","Id":2.5,"METHOD":"m","Params":[1, 2]} trailing`, `{"type":"call","id":null}`, `{"id":"1"}`,
	`{"id":1e400}`, `{"id":-0}`, `{"type":5,"id":1}`, `{"id":1,"id":null}`, `{"id":null,"id":7}`, `{"params":null,"id":1}`,
	`{"other":{"deep":[1,{"x":"y"}]},"id":3}`, `null`, `[]`, `"x"`, `{`, `{"id":1`, `{"id":1}{`, ``, `{"ıd":4}`, `{"\u0069d":5}`,
	`{"type":"\u00e9\ud800","id":1,"method":"<&>"}`, `{"type":"call","id":1,"method":"m","params":{"a" : 1}}`,
}

func checkMessage(t *testing.T, in []byte) {
	want, wantOK := referenceMessage(in)
	var got message
	gotOK := got.decode(in)
	if gotOK != wantOK || (gotOK && !reflect.DeepEqual(got, want)) {
		t.Fatalf("decode(%q) = %+v %v; encoding/json %+v %v", in, got, gotOK, want, wantOK)
	}
}

func TestMessageDecodeAgreesWithJSON(t *testing.T) {
	for _, s := range messageSamples {
		checkMessage(t, []byte(s))
	}
}

func FuzzMessageDecodeAgreesWithJSON(f *testing.F) {
	for _, s := range messageSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkMessage(t, in) })
}

func TestAnswerEncodingAgreesWithJSON(t *testing.T) {
	answers := []answer{
		{Type: "result", ID: 1, OK: true, Value: map[string]any{"path": "a<b>.txt", "size": 3.0, "list": []any{"x", true, nil}}},
		{Type: "result", ID: 2.5, OK: true, Value: json.RawMessage(` {"content": "caf\u00e9 & more"} `)},
		{Type: "result", ID: 1e21, OK: true, Value: statusValue{Build: "dev", Go: "go1", UptimeMs: 12}},
		{Type: "result", ID: 3, OK: true, Value: []string{"a", "b"}},
		{Type: "result", ID: 4},
		refused(5, refusal.New(refusal.InvalidArgument, "the parameters of %q do not fit it: <x>", "m")),
		{Type: "result", ID: 7, OK: true, Value: json.RawMessage(`{"result":1}`), News: []json.RawMessage{[]byte(`{"type":"miniapp.call","onPort":true}`), []byte(`{"type":"x"}`)}},
		{Type: "result", ID: 8, Refused: refusal.ToolTimeout, Why: "late", News: []json.RawMessage{[]byte(`{"type":"miniapp.call"}`)}},
	}
	for _, a := range answers {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(a); !bytes.Equal(got, want) {
			t.Errorf("encode(%+v) = %s\nencoding/json writes %s", a, got, want)
		}
	}
	bad := answer{Type: "result", ID: 6, OK: true, Value: math.NaN()}
	if _, err := json.Marshal(bad); err == nil {
		t.Fatal("encoding/json wrote a NaN")
	}
	var got answer
	if err := json.Unmarshal(encode(bad), &got); err != nil || got.Refused != refusal.InternalError || got.ID != 6 {
		t.Errorf("an answer that cannot be written became %+v (%v); want internal-error for id 6", got, err)
	}
}

func TestSmallFramesAgreeWithJSON(t *testing.T) {
	for _, s := range []string{"", "dev", "<a & b>", "caf\u00e9 \u2028 \xff"} {
		a := &Engine{build: s}
		if want, _ := json.Marshal(map[string]string{"type": "ready", "build": s}); !bytes.Equal(a.readyMessage(), want) {
			t.Errorf("readyMessage wrote %s; json.Marshal %s", a.readyMessage(), want)
		}
		st := PeerState{State: "offline", Why: s, RetryMs: int64(len(s)) * 1000}
		want, _ := json.Marshal(map[string]any{"type": "channel", "state": st.State, "why": st.Why, "retryMs": st.RetryMs})
		if got := st.appendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("PeerState wrote %s; json.Marshal %s", got, want)
		}
	}
}
