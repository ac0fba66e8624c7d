package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type inner struct {
	Max  int    `json:"maxBytes"`
	Name string `json:"name"`
}

type doc struct {
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	Bounds *inner            `json:"bounds"`
	List   []inner           `json:"list"`
	Extra  map[string]string `json:"extra"`
	Any    any               `json:"any"`
	Check  *checked          `json:"check"`
}

// checked refuses the value "bad" in its own UnmarshalJSON.
type checked string

var errBad = errors.New("bad is not a checked value")

func (c *checked) UnmarshalJSON(b []byte) error {
	if string(b) == `"bad"` {
		return errBad
	}
	*c = checked(b)
	return nil
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		kind   Kind // 0: decodes
		field  string
		offset int64
	}{
		{"an object", `{"name":"a","count":2}`, 0, "", 0},
		{"white space around it", " \n\t{\"name\":\"a\"}\r\n ", 0, "", 0},
		{"names match as encoding/json matches them", `{"NAME":"a","Count":1}`, 0, "", 0},
		{"null members leave fields as they are", `{"name":null,"bounds":null}`, 0, "", 0},
		{"a map takes any member", `{"extra":{"x":"1","y":"2"}}`, 0, "", 0},
		{"an any takes anything", `{"any":{"deep":[{"x":1}]}}`, 0, "", 0},
		{"empty", ``, NotObject, "", 0},
		{"only space", `   `, NotObject, "", 0},
		{"null", `null`, NotObject, "", 0},
		{"an array", `[{"name":"a"}]`, NotObject, "", 0},
		{"a string", `"x"`, NotObject, "", 0},
		{"a syntax error", `{"name":}`, Syntax, "", 9},
		{"ends early", `{"name":"a"`, Syntax, "", 0},
		{"wrong type", `{"count":"2"}`, WrongType, "count", 0},
		{"wrong type deep", `{"bounds":{"maxBytes":"x"}}`, WrongType, "bounds.maxBytes", 0},
		{"unknown at the top", `{"name":"a","admin":true}`, UnknownField, "admin", 0},
		{"unknown inside a member", `{"bounds":{"maxBytes":1,"sneaky":2}}`, UnknownField, "bounds.sneaky", 0},
		{"unknown inside an array", `{"list":[{"name":"a"},{"nope":1}]}`, UnknownField, "list", 0},
		{"unknown with an odd name", `{"a.b \"c\"":1}`, UnknownField, `a.b "c"`, 0},
		{"an UnmarshalJSON refuses", `{"check":"bad"}`, Invalid, "", 0},
		{"two objects", `{"name":"a"}{"name":"b"}`, Trailing, "", 12},
		{"a closing bracket after", `{"name":"a"}]`, Trailing, "", 12},
		{"a closing brace after", `{} }`, Trailing, "", 3},
		{"a word after", "{}\nx", Trailing, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d doc
			err := Decode([]byte(tt.in), &d)
			if tt.kind == 0 {
				if err != nil {
					t.Fatalf("Decode(%s) = %v", tt.in, err)
				}
				return
			}
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("Decode(%s) = %v, want an *Error", tt.in, err)
			}
			if e.Kind != tt.kind || e.Field != tt.field || (tt.offset != 0 && e.Offset != tt.offset) {
				t.Fatalf("Decode(%s) = %+v, want kind %v field %q offset %d", tt.in, e, tt.kind, tt.field, tt.offset)
			}
			if KindOf(err) != tt.kind || e.Error() == "" || Problem(err) == "" {
				t.Fatalf("KindOf, Error or Problem disagree: %v %q %q", KindOf(err), e.Error(), Problem(err))
			}
		})
	}
}

func TestDecodeKeepsTheUnmarshalersError(t *testing.T) {
	t.Parallel()
	var d doc
	if err := Decode([]byte(`{"check":"bad"}`), &d); !errors.Is(err, errBad) {
		t.Fatalf("Decode = %v, want it to wrap the UnmarshalJSON's error", err)
	}
}

func TestDecodeRefusesWhatCannotBeDecodedInto(t *testing.T) {
	t.Parallel()
	var d doc
	for _, v := range []any{d, (*doc)(nil), nil} {
		if KindOf(Decode([]byte(`{}`), v)) != Invalid {
			t.Errorf("Decode into %T did not answer Invalid", v)
		}
	}
}

// TestProbesAreBounded: a document with more members than MaxProbes before its unknown one is
// still refused UnknownField, without naming it.
func TestProbesAreBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"extra":{}`)
	for range MaxProbes {
		b.WriteString(`,"name":"a"`)
	}
	b.WriteString(`,"late":1}`)
	var d doc
	err := Decode([]byte(b.String()), &d)
	if e, ok := errors.AsType[*Error](err); !ok || e.Kind != UnknownField || e.Field != "" {
		t.Fatalf("Decode = %v", err)
	}
}

// FuzzDecode: Decode never panics, accepts exactly what encoding/json accepts with unknown
// fields refused and nothing but white space after one object, and an UnknownField it names is
// a member of the document.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"bounds":{"x":1}}`, `{}]`, `{"list":[{"q":1}]}`, `{"count":1e3}`, `{"name":"\u00e9"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		err := Decode(data, &d)
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var ref doc
		refErr := dec.Decode(&ref)
		trimmed := bytes.TrimLeft(data, " \t\r\n")
		refOK := refErr == nil && len(trimmed) > 0 && trimmed[0] == '{' && len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) == 0
		if (err == nil) != refOK {
			t.Fatalf("Decode(%q) = %v, encoding/json says ok=%v (%v)", data, err, refOK, refErr)
		}
		if e, ok := errors.AsType[*Error](err); ok && e.Kind == UnknownField && e.Field != "" {
			var top map[string]json.RawMessage
			if err := json.NewDecoder(bytes.NewReader(data)).Decode(&top); err != nil {
				t.Fatalf("Decode(%q) found an unknown member in what is not an object: %v", data, err)
			}
			named := false
			for k := range top {
				named = named || e.Field == k || strings.HasPrefix(e.Field, k+".")
			}
			if !named {
				t.Fatalf("Decode(%q) names %q, which is no member of the document", data, e.Field)
			}
		}
	})
}
