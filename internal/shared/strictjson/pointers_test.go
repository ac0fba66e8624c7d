package strictjson_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

// sPtrs holds the pointer kinds a Field may take: a member absent leaves nil, null sets nil.
type sPtrs struct {
	S *string `json:"s"`
	B *bool   `json:"b"`
	U *uint64 `json:"u"`
}

func (s *sPtrs) StrictFields() []strictjson.Field {
	return []strictjson.Field{{"s", &s.S}, {"b", &s.B}, {"u", &s.U}}
}

var pointerSamples = []string{
	`{"s":"a","b":true,"u":1}`, `{"s":null,"b":null,"u":null}`, `{"s":"a","s":null}`, `{"b":false,"b":null,"b":true}`,
	`{"S":"\u00e9\ud800","B":false}`, `{"s":1}`, `{"b":"true"}`, `{"b":0}`, `{"s":{}}`, `{"s":[]}`, `{"s":5,"s":"x"}`,
	`{"b":true,"x":1}`, `{}`, `{"s":"a"} x`, `{"s":"a"`, `null`,
}

// referencePtrs decodes in as strictjson's contract says encoding/json does: unknown members
// refused, one object and nothing after it.
func referencePtrs(in []byte) (sPtrs, bool) {
	var v sPtrs
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if len(bytes.TrimSpace(in)) == 0 || bytes.TrimSpace(in)[0] != '{' || dec.Decode(&v) != nil {
		return v, false
	}
	return v, len(bytes.TrimSpace(in[dec.InputOffset():])) == 0
}

func checkPtrs(t *testing.T, in []byte) {
	want, wantOK := referencePtrs(in)
	var got sPtrs
	gotErr := strictjson.DecodeStruct(in, &got)
	if (gotErr == nil) != wantOK || (wantOK && !reflect.DeepEqual(got, want)) {
		t.Fatalf("DecodeStruct(%q) = %+v %v; encoding/json %+v %v", in, got, gotErr, want, wantOK)
	}
}

func TestPointerFieldsAgreeWithReference(t *testing.T) {
	strictjsontest.CheckFields(t, &sPtrs{})
	for _, s := range pointerSamples {
		checkPtrs(t, []byte(s))
	}
}

func FuzzPointerFieldsAgreeWithReference(f *testing.F) {
	for _, s := range pointerSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkPtrs(t, in) })
}
