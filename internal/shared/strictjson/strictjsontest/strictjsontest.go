// Package strictjsontest holds a strictjson.Struct's list of fields to its struct tags, for the
// tests of the packages that declare one: a field added to the struct and not to the list (which
// strictjson.DecodeStruct would then refuse as an unknown member), a list entry of the wrong name
// or for the wrong field, or a field whose type reads itself for encoding/json only (a
// json.Unmarshaler that is not a strictjson.Unmarshaler) fails the test. It uses reflection and
// is for tests only.
package strictjsontest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
)

// CheckFields fails t unless s, a pointer to a struct, lists each of its exported fields under
// the name encoding/json gives it (the json tag's name, else the Go name; "-" is skipped), with
// Into pointing at that field, and nothing else; nested Structs are checked the same way.
func CheckFields(t testing.TB, s strictjson.Struct) {
	t.Helper()
	rv := reflect.ValueOf(s)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		t.Fatalf("%T: a Struct must be a pointer to a struct", s)
	}
	want := map[string]uintptr{}
	st := rv.Elem()
	for i := range st.NumField() {
		f := st.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		want[name] = st.Field(i).Addr().Pointer()
		if nested, ok := st.Field(i).Addr().Interface().(strictjson.Struct); ok {
			CheckFields(t, nested)
		}
	}
	got := s.StrictFields()
	seen := map[string]bool{}
	for _, f := range got {
		addr, ok := want[f.Name]
		switch {
		case !ok:
			t.Errorf("%T lists %q, which is not one of its fields' names", s, f.Name)
		case seen[f.Name]:
			t.Errorf("%T lists %q twice", s, f.Name)
		case reflect.ValueOf(f.Into).Pointer() != addr:
			t.Errorf("%T lists %q with a pointer to another field", s, f.Name)
		case readsItselfForJSONOnly(f.Into):
			t.Errorf("%T lists %q, a %T, which has an UnmarshalJSON and no UnmarshalStrict: strictjson would not call it", s, f.Name, f.Into)
		}
		seen[f.Name] = true
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%T does not list its field %q", s, name)
		}
	}
}

// readsItselfForJSONOnly reports whether into has its own UnmarshalJSON that DecodeStruct would
// not call (it calls a *time.Time's reader of its own and an Unmarshaler's UnmarshalStrict).
func readsItselfForJSONOnly(into any) bool {
	switch into.(type) {
	case *time.Time, *json.RawMessage, strictjson.Unmarshaler:
		return false
	case json.Unmarshaler:
		return true
	}
	return false
}
