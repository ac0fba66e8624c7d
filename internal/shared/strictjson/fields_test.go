package strictjson_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

type sInner struct {
	Max  int    `json:"maxBytes"`
	Name string `json:"name"`
}

func (s *sInner) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "maxBytes", Into: &s.Max}, {Name: "name", Into: &s.Name}}
}

type sDoc struct {
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	Big    int64             `json:"big"`
	U      uint64            `json:"u"`
	P      *uint64           `json:"p"`
	F      float64           `json:"f"`
	B      bool              `json:"b"`
	Raw    json.RawMessage   `json:"raw"`
	List   []string          `json:"list"`
	Raws   []json.RawMessage `json:"raws"`
	Bounds sInner            `json:"bounds"`
	Plain  string            // no tag: its Go name
	T      time.Time         `json:"t"`
	Kind   kindName          `json:"kind"`
	Bin    []byte            `json:"bin"`
	Bins   [][]byte          `json:"bins"`
}

type kindName string

func (s *sDoc) StrictFields() []strictjson.Field {
	return []strictjson.Field{{"name", &s.Name}, {"count", &s.Count}, {"big", &s.Big}, {"u", &s.U}, {"p", &s.P},
		{"f", &s.F}, {"b", &s.B}, {"raw", &s.Raw}, {"list", &s.List}, {"raws", &s.Raws}, {"bounds", &s.Bounds},
		{"Plain", &s.Plain}, {"t", &s.T}, {"kind", (*string)(&s.Kind)}, {"bin", &s.Bin}, {"bins", &s.Bins}}
}

// refDoc is sDoc without its list of fields: Decode reads it through encoding/json, the reference.
type refDoc sDoc

func TestStructFieldsMatchTags(t *testing.T) {
	strictjsontest.CheckFields(t, &sDoc{})
}

var structSamples = []string{
	`{"name":"a","count":2,"big":-9007199254740993,"u":18446744073709551615,"p":3,"f":1.5e300,"b":true,"raw":{"x" : [1]},
	"list":["a",null,"\u00e9"],"raws":[1,"x",{}],"bounds":{"maxBytes":4,"name":"n"},"Plain":"p"}`,
	`{"NAME":"a","Count":1,"plain":"x","BOUNDS":{"MAXBYTES":1}}`, `{"name":null,"p":null,"list":null,"raw":null,"raws":null,"bounds":null}`,
	`{"list":["a","b"],"list":[null]}`, `{"list":[]}`, `{"raws":[]}`, `{"p":1,"p":null}`, `{"bounds":{"name":"a"},"bounds":{"maxBytes":2}}`,
	`{"count":"2"}`, `{"count":1.0}`, `{"count":1e2}`, `{"count":-0}`, `{"count":9223372036854775808}`, `{"u":-1}`, `{"u":-0}`,
	`{"p":-1}`, `{"f":1e400}`, `{"b":"true"}`, `{"b":1}`, `{"name":1}`, `{"name":{}}`, `{"list":"a"}`, `{"list":[1]}`, `{"list":[[]]}`,
	`{"raws":{}}`, `{"bounds":[]}`, `{"bounds":{"maxBytes":"x"}}`, `{"bounds":{"maxBytes":1,"sneaky":2}}`, `{"admin":true,"count":"x"}`,
	`{"count":"x","admin":true}`, `{"admin":{"count":"x"}}`, `{"a.b \"c\"":1}`, `{"name":"a","admin":true,"other":1}`, `{"ſ":1}`, `{"K":1}`,
	`{"name":}`, `{"name":"a"`, `{"name":"a"}{"name":"b"}`, `{"name":"a"}]`, `{} }`, "{}\nx", ``, `  `, `null`, `[]`, `"x"`, `{"name":"\x01"}`,
	`{"name":"\u12x4"}`, `{"name":tru}`, `{"name":nul`, `{"count":01}`, `{"count":-}`, `{"count":1.}`, `{"count":1e+}`, `{,}`, `{"a" 1}`, `{"a":1,}`,
	`{"raw":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, `{"raw":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"name":"\ud800 \xff <&>"}`, `{"t":"2026-12-05T23:00:00.5+01:00","kind":"k"}`, `{"t":null}`, `{"t":"yesterday"}`, `{"t":1}`,
	`{"count":"x","t":"x"}`, `{"t":"x","count":"x"}`, `{"admin":1,"t":"x"}`, `{"t":"10000-01-01T00:00:00Z"}`, `{"kind":1}`,
	`{"bin":"aGk=","bins":["","aA==",null,[1,2]]}`, `{"bin":"a"}`, `{"bin":"!!!!"}`, `{"bin":[1,256]}`, `{"bin":[-1]}`, `{"bin":[1.0]}`, `{"bin":["a"]}`,
	`{"bin":[null,1]}`, `{"bin":"AAE=","bin":[null,null,null]}`, `{"bins":"aGk="}`, `{"bins":[1]}`, `{"bins":["!"],"count":"x"}`, `{"count":"x","bin":"!"}`,
	`{"admin":1,"bin":"!"}`, `{"bin":"!","t":"x"}`, `{"bin":"aG\nk="}`, `{"bin":"aGk"}`, `{"list":["a",1,"b"]}`, `{"list":[1],"count":"x"}`, `{"bounds":{"sneaky":1},"count":"x"}`,
}

func checkStruct(t *testing.T, in []byte) {
	var got sDoc
	var want refDoc
	gotErr := strictjson.Decode(in, &got)
	wantErr := strictjson.Decode(in, &want)
	ge, _ := gotErr.(*strictjson.Error)
	we, _ := wantErr.(*strictjson.Error)
	if (ge == nil) != (we == nil) {
		t.Fatalf("Decode(%.80q) = %v; through encoding/json %v", in, gotErr, wantErr)
	}
	if ge == nil {
		if !reflect.DeepEqual(got, sDoc(want)) {
			t.Fatalf("Decode(%.80q) = %+v; through encoding/json %+v", in, got, want)
		}
		return
	}
	if ge.Kind != we.Kind || ge.Field != we.Field || ge.Offset != we.Offset || strictjson.Problem(gotErr) != strictjson.Problem(wantErr) {
		t.Fatalf("Decode(%.80q) = %v (%s); through encoding/json %v (%s)", in, gotErr, strictjson.Problem(gotErr), wantErr, strictjson.Problem(wantErr))
	}
	if gotErr.Error() != wantErr.Error() {
		t.Fatalf("Decode(%.80q) says %q; through encoding/json %q", in, gotErr.Error(), wantErr.Error())
	}
}

func TestStructsAgreeWithReference(t *testing.T) {
	for _, s := range structSamples {
		checkStruct(t, []byte(s))
		checkLoose(t, []byte(s))
	}
}

// checkLoose holds DecodeStructLoose to json.Unmarshal: the same values, an error exactly when
// json.Unmarshal has one.
func checkLoose(t *testing.T, in []byte) {
	var got sDoc
	var want refDoc
	gotErr := strictjson.DecodeStructLoose(in, &got)
	wantErr := json.Unmarshal(in, &want)
	if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, sDoc(want))) {
		t.Fatalf("DecodeStructLoose(%.80q) = %+v, %v; json.Unmarshal %+v, %v", in, got, gotErr, want, wantErr)
	}
}

func FuzzStructsAgreeWithReference(f *testing.F) {
	for _, s := range structSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkStruct(t, in)
		checkLoose(t, in)
	})
}

// selfRead reads its own member: a string other than "bad", or null (which empties it).
type selfRead struct {
	set bool
	s   string
}

var errBadValue = errors.New("bad is not a selfRead")

func (r *selfRead) UnmarshalStrict(b []byte) error {
	if string(b) == "null" {
		*r = selfRead{}
		return nil
	}
	if string(b) == `"bad"` {
		return errBadValue
	}
	*r = selfRead{true, string(b)}
	return nil
}

type selfReadDoc struct {
	V     selfRead `json:"v"`
	Count int      `json:"count"`
}

func (d *selfReadDoc) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "v", Into: &d.V}, {Name: "count", Into: &d.Count}}
}

func TestStructCallsUnmarshalStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want selfRead
		kind strictjson.Kind // 0: decodes
	}{
		{`{"v":"x"}`, selfRead{true, `"x"`}, 0},
		{`{"v":[1, 2]}`, selfRead{true, `[1, 2]`}, 0},
		{`{"v":"x","v":null}`, selfRead{}, 0},
		{`{"v":"bad"}`, selfRead{}, strictjson.Invalid},
		{`{"v":"bad","count":"x"}`, selfRead{}, strictjson.Invalid}, // its error ends the decode
		{`{"count":"x","v":"bad"}`, selfRead{}, strictjson.Invalid}, // and wins over a wrong type before it, as in encoding/json
	}
	for _, tt := range tests {
		var d selfReadDoc
		err := strictjson.DecodeStruct([]byte(tt.in), &d)
		if strictjson.KindOf(err) != tt.kind || (tt.kind == 0 && d.V != tt.want) {
			t.Errorf("DecodeStruct(%s) = %+v, %v; want %+v, kind %v", tt.in, d.V, err, tt.want, tt.kind)
		}
		if tt.kind == strictjson.Invalid && !errors.Is(err, errBadValue) {
			t.Errorf("DecodeStruct(%s) = %v, want it to wrap UnmarshalStrict's error", tt.in, err)
		}
	}
}

// jsonOnly reads itself for encoding/json only: DecodeStruct would not call its UnmarshalJSON.
type jsonOnly string

func (j *jsonOnly) UnmarshalJSON(b []byte) error { *j = jsonOnly(b); return nil }

type jsonOnlyDoc struct {
	V jsonOnly `json:"v"`
}

func (d *jsonOnlyDoc) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "v", Into: &d.V}}
}

// recorder is a testing.TB that keeps what fails it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Errorf(format string, args ...any) { r.errors = append(r.errors, format) }

func TestCheckFieldsRefusesAFieldThatReadsItselfForJSONOnly(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	strictjsontest.CheckFields(r, &jsonOnlyDoc{})
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "UnmarshalStrict") {
		t.Fatalf("CheckFields(jsonOnlyDoc) failed with %q, want one failure naming UnmarshalStrict", r.errors)
	}
	r = &recorder{TB: t}
	strictjsontest.CheckFields(r, &selfReadDoc{})
	strictjsontest.CheckFields(r, &sDoc{}) // a time.Time, a json.RawMessage
	if len(r.errors) != 0 {
		t.Fatalf("CheckFields failed a Struct whose fields all read: %q", r.errors)
	}
}
