package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// encodeString is encoding/json's spelling of s, with or without HTML escaping.
func encodeString(t testing.TB, s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var stringCases = []string{
	"", "plain", `quote " and \ backslash`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<a href='x'>&amp;</a>",
	"caf\u00e9 \u65e5\u672c \U0001F600", "\u2028\u2029", "bad \xff\xfe utf-8 \xed\xa0\x80 surrogate",
	"trailing \xe2\x80", strings.Repeat("x", 5000),
}

func TestAppendStringAgreesWithJSON(t *testing.T) {
	for _, s := range stringCases {
		for _, html := range []bool{true, false} {
			if got, want := string(AppendString(nil, s, html)), encodeString(t, s, html); got != want {
				t.Errorf("AppendString(%q, html=%v) = %s, encoding/json writes %s", s, html, got, want)
			}
		}
	}
}

var floatCases = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.5, 123456789, 1e20, 1e21, 1.2345e21, 1e-6, 9.99e-7,
	1e-7, 5e-324, math.MaxFloat64, -math.MaxFloat64, 1e100, 3.0000000000000004, 1 << 53, 4096, 1e-10, 12e-9}

func TestAppendFloatAgreesWithJSON(t *testing.T) {
	for _, f := range floatCases {
		want, _ := json.Marshal(f)
		got, ok := AppendFloat(nil, f)
		if !ok || string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s %v, encoding/json writes %s", f, got, ok, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := json.Marshal(f); err == nil {
			t.Fatalf("encoding/json wrote %v", f)
		}
		if got, ok := AppendFloat([]byte("x"), f); ok || string(got) != "x" {
			t.Errorf("AppendFloat(%v) = %q %v; want refused, nothing written", f, got, ok)
		}
	}
}

var documents = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a" : [1, 2.5e3, -0, true, false, null, "s"], "b":{"c":{}}}`, `[]`, `"x"`, `1`,
	`-`, `01`, `1.`, `1e`, `.5`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a"}`, `{a:1}`, `[1,]`, `"\x"`, `"\u12"`, `"` + "\x01" + `"`,
	`{"a":1}x`, `{"a":1}{}`, `tru`, `nul`, `{"a":"<&>\u2028` + "\u2028" + `"}`, `{"a":1,"a":2}`, `{"A":1,"a":2}`,
	`{"\u00e9\ud83d\ude00":1, "\ud800":2, "\udc00x":3}`, "{\"bad\xff\":\"\xfe\"}", "{\n\t\"a\" :\r 1 }", ``, ` `,
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	`{"a":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat("}", 101),
}

func TestValidAgreesWithJSON(t *testing.T) {
	for _, d := range documents {
		if got, want := Valid([]byte(d)), json.Valid([]byte(d)); got != want {
			t.Errorf("Valid(%.60q) = %v, json.Valid says %v", d, got, want)
		}
	}
}

func TestCompactAgreesWithJSON(t *testing.T) {
	for _, d := range documents {
		checkCompact(t, []byte(d))
	}
}

func TestIndentAgreesWithJSON(t *testing.T) {
	for _, d := range documents {
		checkIndent(t, []byte(d))
	}
	checkIndent(t, []byte(" \t{\"a\": [ ], \"b\":{},\"c\":[1, {\"d\":\"x\\\"y\"}]} \n "))
}

// checkIndent holds AppendIndent to json.Indent, with the store's prefix and indent and with
// others, on every valid document.
func checkIndent(t *testing.T, d []byte) {
	if !json.Valid(d) {
		return
	}
	variants := [][2]string{{"", ""}, {"", "  "}, {">", "\t"}}
	if bytes.Count(d, []byte("["))+bytes.Count(d, []byte("{")) > 1000 {
		variants = variants[:1] // indented, the MaxDepth document is some hundred megabytes
	}
	for _, pi := range variants {
		var want bytes.Buffer
		if err := json.Indent(&want, d, pi[0], pi[1]); err != nil {
			t.Fatal(err)
		}
		if got := AppendIndent([]byte("x"), d, pi[0], pi[1]); !bytes.Equal(got[1:], want.Bytes()) || got[0] != 'x' {
			t.Fatalf("AppendIndent(%.60q, %q, %q) = %.80q, json.Indent writes %.80q", d, pi[0], pi[1], got[1:], want.Bytes())
		}
	}
}

func checkCompact(t *testing.T, d []byte) {
	if !json.Valid(d) {
		return
	}
	var want bytes.Buffer
	if err := json.Compact(&want, d); err != nil {
		t.Fatal(err)
	}
	if got := AppendCompact(nil, d, false); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("AppendCompact(%.60q) = %.60q, json.Compact writes %.60q", d, got, want.Bytes())
	}
	if bytes.HasPrefix(bytes.TrimSpace(d), []byte("{")) {
		html, err := json.Marshal(struct{ V json.RawMessage }{d})
		if err != nil {
			t.Fatal(err)
		}
		o := NewObject(nil, true)
		if !o.Raw("V", d) {
			t.Fatalf("Raw refused %q", d)
		}
		if got := o.Close(); !bytes.Equal(got, html) {
			t.Errorf("Object.Raw(%.60q) = %.60q, json.Marshal writes %.60q", d, got, html)
		}
	}
}

func TestUnquoteAgreesWithJSON(t *testing.T) {
	literals := []string{`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u65E5"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`,
		`"\ud83dx"`, `"\ud83d\u0041"`, "\"bad \xff \xed\xa0\x80\"", `"unterminated`, `"\q"`, `x`, `"a" `, "\"\x01\"", `"a"b"`}
	for _, s := range stringCases {
		literals = append(literals, encodeString(t, s, true))
	}
	for _, l := range literals {
		checkUnquote(t, []byte(l))
	}
}

func checkUnquote(t *testing.T, raw []byte) {
	var want string
	err := json.Unmarshal(raw, &want)
	got, ok := Unquote(raw)
	if isString := len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] == '"'; isString && bytes.Equal(bytes.TrimSpace(raw), raw) {
		if ok != (err == nil) || got != want {
			t.Errorf("Unquote(%q) = %q %v; json.Unmarshal: %q %v", raw, got, ok, want, err)
		}
	} else if ok {
		t.Errorf("Unquote(%q) = %q; want refused (not exactly one string)", raw, got)
	}
}

func TestMembersAgreesWithJSON(t *testing.T) {
	for _, d := range documents {
		checkMembers(t, []byte(d))
	}
}

func checkMembers(t *testing.T, d []byte) {
	var want map[string]json.RawMessage
	trimmed := bytes.TrimSpace(d)
	err := json.Unmarshal(d, &want)
	isObject := len(trimmed) > 0 && trimmed[0] == '{'
	got := map[string]json.RawMessage{}
	ok := Members(d, func(name string, value []byte) bool {
		got[name] = value
		return true
	})
	if !isObject {
		if ok {
			t.Errorf("Members(%.60q) accepted what is not an object", d)
		}
		return
	}
	if ok != (err == nil) {
		t.Fatalf("Members(%.60q) = %v; json.Unmarshal into a map: %v", d, ok, err)
	}
	if !ok {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("Members(%.60q) gave %d members, json.Unmarshal %d", d, len(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Errorf("Members(%.60q)[%q] = %q, json.Unmarshal %q", d, k, got[k], v)
		}
	}
}

func TestObjectAgreesWithJSON(t *testing.T) {
	type shape struct {
		Path  string          `json:"path"`
		Size  int64           `json:"size"`
		OK    bool            `json:"ok"`
		Ratio float64         `json:"ratio"`
		Raw   json.RawMessage `json:"raw"`
		None  json.RawMessage `json:"none"`
	}
	for _, s := range stringCases {
		for _, f := range floatCases {
			v := shape{Path: s, Size: -int64(len(s)), OK: len(s)%2 == 0, Ratio: f, Raw: json.RawMessage(` {"a" : "<` + "\u2028" + `>"} `)}
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			o := NewObject(nil, true)
			o.String("path", v.Path)
			o.Int("size", v.Size)
			o.Bool("ok", v.OK)
			o.Float("ratio", v.Ratio)
			o.Raw("raw", v.Raw)
			o.Raw("none", v.None)
			if got := o.Close(); !bytes.Equal(got, want) {
				t.Fatalf("Object wrote %.80s\nencoding/json %.80s", got, want)
			}
		}
	}
	o := NewObject(nil, false)
	if o.Raw("bad", []byte(`{"a":}`)) || o.Float("nan", math.NaN()) || string(o.Close()) != "{}" {
		t.Error("Object wrote a member that is not JSON")
	}
}

func FuzzRawJSON(f *testing.F) {
	for _, d := range documents {
		f.Add([]byte(d))
	}
	for _, s := range stringCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
		checkCompact(t, b)
		checkIndent(t, b)
		checkMembers(t, b)
		checkUnquote(t, b)
		checkDecode(t, b)
		checkStrings(t, b)
		for _, html := range []bool{true, false} {
			if got, want := string(AppendString(nil, string(b), html)), encodeString(t, string(b), html); got != want {
				t.Fatalf("AppendString(%q) = %s, encoding/json %s", b, got, want)
			}
		}
		if len(b) == 8 {
			f := math.Float64frombits(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
			want, err := json.Marshal(f)
			got, ok := AppendFloat(nil, f)
			if ok != (err == nil) || (ok && string(got) != string(want)) {
				t.Fatalf("AppendFloat(%v) = %s, encoding/json %s", f, got, want)
			}
		}
	})
}

func checkDecode(t *testing.T, d []byte) {
	if runtime.GOOS == "js" && bytes.Count(d, []byte("[")) > 1000 {
		// Under js/wasm reflect.DeepEqual and encoding/json's encoder recurse on the browser's
		// WebAssembly stack and overflow it (a RangeError) on the MaxDepth document, which
		// Decode must not: that document is nested arrays alone, so it is held to its own
		// compact form.
		got, ok := Decode(d)
		if ok != json.Valid(d) {
			t.Fatalf("Decode(%.60q) ok %v; json.Valid %v", d, ok, !ok)
		}
		if out, written := AppendValue(nil, got, true); ok && (!written || !bytes.Equal(out, AppendCompact(nil, d, true))) {
			t.Fatalf("Decode(%.60q) then AppendValue wrote %.60q %v", d, out, written)
		}
		return
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	var want any
	err := dec.Decode(&want)
	if err == nil && !json.Valid(d) { // trailing data, which Decode leaves unread
		err = errTrailing
	}
	got, ok := Decode(d)
	if ok != (err == nil) || (ok && !reflect.DeepEqual(got, want)) {
		t.Fatalf("Decode(%.60q) = %v %v; encoding/json: %v %v", d, got, ok, want, err)
	}
	if !ok {
		return
	}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(got); err != nil {
			t.Fatal(err)
		}
		out, ok := AppendValue(nil, got, html)
		if w := bytes.TrimSuffix(b.Bytes(), []byte("\n")); !ok || !bytes.Equal(out, w) {
			t.Fatalf("AppendValue(%.60q) = %.60q %v; encoding/json %.60q", d, out, ok, w)
		}
	}
}

var errTrailing = errors.New("trailing data")

func TestDecodeAgreesWithJSON(t *testing.T) {
	for _, d := range documents {
		checkDecode(t, []byte(d))
	}
}

func TestAppendValueAgreesWithJSON(t *testing.T) {
	values := []any{nil, true, "s<>", 1.5, 7, int64(-3), json.Number("12e3"), json.Number(""), json.RawMessage(` [1, "<"] `),
		json.RawMessage(nil), map[string]any{"b": 1, "a": []any{"x", nil}}, map[string]string{"z": "&", "y": ""}, []string{"a"},
		[]string(nil), map[string]any(nil), []any(nil)}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := AppendValue(nil, v, true); !ok || !bytes.Equal(got, want) {
			t.Errorf("AppendValue(%#v) = %s %v; json.Marshal %s", v, got, ok, want)
		}
	}
	for _, v := range []any{math.NaN(), json.Number("1."), json.RawMessage(`{`), struct{}{}, []int{1}} {
		if _, err := json.Marshal(v); err == nil && v != nil {
			if _, ok := v.(struct{}); !ok {
				if _, ok := v.([]int); !ok {
					t.Fatalf("encoding/json wrote %#v", v)
				}
			}
		}
		if _, ok := AppendValue(nil, v, true); ok {
			t.Errorf("AppendValue(%#v) accepted what it does not write", v)
		}
	}
}

func TestFoldAgreesWithJSONMatching(t *testing.T) {
	names := []string{"id", "ID", "Id", "ıd", "\u212Aey", "key", "KEY", "ſtate", "state", "STATE", "caf\u00e9", "CAF\u00c9", "\u00df", "SS"}
	for _, field := range names {
		// A struct with one field of this json name, as encoding/json sees it.
		typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"` + field + `"`)}})
		for _, member := range names {
			v := reflect.New(typ)
			doc, _ := json.Marshal(map[string]int{member: 1})
			if err := json.Unmarshal(doc, v.Interface()); err != nil {
				t.Fatal(err)
			}
			taken := v.Elem().Field(0).Int() == 1
			if got := field == member || FoldEqual(field, member); got != taken {
				t.Errorf("member %q to field %q: FoldEqual says %v, encoding/json %v", member, field, got, taken)
			}
			if got := field == member || Fold(field) == Fold(member); got != taken {
				t.Errorf("member %q to field %q: Fold says %v, encoding/json %v", member, field, got, taken)
			}
		}
	}
}

func checkStrings(t *testing.T, d []byte) {
	var want []string
	err := json.Unmarshal(d, &want)
	got, ok := Strings(d)
	if ok != (err == nil) || (ok && !reflect.DeepEqual(got, want)) {
		t.Fatalf("Strings(%.60q) = %q %v; encoding/json: %q %v", d, got, ok, want, err)
	}
}

func TestStringsAgreesWithJSON(t *testing.T) {
	for _, d := range append(documents, `["a",null,"b"]`, ` null `, `[]`, `["a",1]`, `["a"] x`, `"a"`, `[["a"]]`, `[{"a":1}]`,
		`["\u00e9\ud800"]`, ` [ "x" , "y" ] `) {
		checkStrings(t, []byte(d))
	}
}

func TestAppendTimeAgreesWithJSON(t *testing.T) {
	for _, tm := range []time.Time{{}, time.Unix(0, 0), time.Unix(1765000000, 123456789).UTC(),
		time.Date(2026, 12, 5, 23, 0, 0, 1, time.FixedZone("", 5*3600+30*60)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -8*3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600+60)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600+7))} {
		want, err := json.Marshal(tm)
		got, ok := AppendTime([]byte("x"), tm)
		if ok != (err == nil) || (ok && string(got) != "x"+string(want)) || (!ok && string(got) != "x") {
			t.Errorf("AppendTime(%v) = %s %v; encoding/json %s %v", tm, got, ok, want, err)
		}
		o := NewObject(nil, true)
		o.Int("a", 1)
		if o.Time("t", tm) != ok {
			t.Errorf("Object.Time(%v) reports %v, AppendTime %v", tm, !ok, ok)
		}
	}
}

func TestAppendArrayAgreesWithJSON(t *testing.T) {
	for _, s := range [][]string{nil, {}, {"a"}, {"a", "<b>", ""}} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendArray([]byte("x"), s, func(dst []byte, e string) []byte { return AppendString(dst, e, true) })
		if string(got) != "x"+string(want) {
			t.Errorf("AppendArray(%q) = %s, json.Marshal writes %s", s, got[1:], want)
		}
	}
}

// BenchmarkAppendString writes 4 KiB of text as a JSON string, as a read-file observation's
// content is written (a line end every 64 bytes, one quote in each line).
func BenchmarkAppendString(b *testing.B) {
	line := strings.Repeat("text of a file, ", 3) + `"quoted" it` + "\n"
	s := strings.Repeat(line, 4096/len(line))
	dst := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = AppendString(dst[:0], s, false)
	}
}
