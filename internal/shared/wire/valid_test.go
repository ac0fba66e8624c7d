package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var validSeeds = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, ` { "a" : [ 1 , 2.5e-3 , -0 , true , false , null , "x\"\\\/\b\f\n\r\t\u00e9" ] } `,
	`{"a":{"b":{"c":[[[]]]}}}`, `"just a string"`, `12`, `-`, `01`, `1.`, `.5`, `1e`, `1e+`, `1E-7`, `-0.0e0`,
	`{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1}}`, `[[]`, `{"a":1}x`,
	`"\u12"`, `"\u12G4"`, `"\x"`, "\"\x01\"", "\"\xff\xfe\"", `tru`, `nul`, `falsey`, `{1:2}`, `{"a" 1}`,
	`"unterminated`, `"\`, "\t[\r\n]\n", `[1,{"a":[2,{"b":null}]},"c"]`, `{"":""}`, `1 2`, `[-]`, `[--1]`, `[+1]`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100), strings.Repeat("[", 100) + strings.Repeat("]", 99),
}

// TestValidAgreesWithJSON holds valid and compactValid to encoding/json's Valid and Compact.
func TestValidAgreesWithJSON(t *testing.T) {
	for _, s := range validSeeds {
		checkValid(t, []byte(s))
	}
}

// FuzzValid compares valid with json.Valid, and compactValid with json.Compact, on any input.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkValid(t, b) })
}

func checkValid(t *testing.T, b []byte) {
	t.Helper()
	want := json.Valid(b)
	if got := valid(b); got != want {
		t.Fatalf("valid(%q) = %v, json.Valid %v", b, got, want)
	}
	if !want {
		return
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("json.Compact(%q): %v", b, err)
	}
	if got := compactValid([]byte("prefix"), b); string(got) != "prefix"+buf.String() {
		t.Fatalf("compactValid(%q) = %q, json.Compact %q", b, got[len("prefix"):], buf.Bytes())
	}
}

func BenchmarkValid(b *testing.B) {
	obs, _ := json.Marshal(map[string]any{"path": "bench-4k.txt", "size": 4096, "content": strings.Repeat("x y\n", 1024)})
	b.Run("own", func(b *testing.B) {
		b.SetBytes(int64(len(obs)))
		for b.Loop() {
			valid(obs)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(obs)))
		for b.Loop() {
			json.Valid(obs)
		}
	})
}
