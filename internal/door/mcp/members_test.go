package mcp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzTopMembers: on valid JSON, topMembers agrees with encoding/json: an object splits into the
// same members, each value the same JSON; anything else is no object.
func FuzzTopMembers(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { } `, `[1]`, `"text"`, `12`, `null`,
		`{"path":"a.md","content":"say \"hi\" \\ then }]","size":11}`,
		`{"content":[{"type":"text","text":"a]b}c"}],"isError":true,"_meta":{"k":[1,{"x":null}]}}`,
		"{\n\t\"refused\" : \"outside-root\" ,\r\n \"why\":\"no\"\n}",
		`{"a\"b":1,"\u0041":false,"n":-1.5e3,"t":true}`,
		`{"dup":1,"dup":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		got, ok := topMembers(b)
		var want map[string]json.RawMessage
		isObject := json.Unmarshal(b, &want) == nil && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
		if ok != isObject {
			t.Fatalf("topMembers(%s) reported %v, encoding/json %v", b, ok, isObject)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("topMembers(%s) = %d members, encoding/json %d", b, len(got), len(want))
		}
		for k, v := range want {
			var a, b2 any
			json.Unmarshal(v, &a)
			if json.Unmarshal(got[k], &b2) != nil {
				t.Fatalf("member %q is %s", k, got[k])
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b2)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("member %q: %s, encoding/json %s", k, got[k], v)
			}
		}
	})
}
