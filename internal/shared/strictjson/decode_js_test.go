//go:build js

package strictjson

import (
	"errors"
	"testing"
)

// TestPageDecodesOnlyStructs: in the page, a type that is not a Struct is refused, not decoded.
func TestPageDecodesOnlyStructs(t *testing.T) {
	var m map[string]any
	err := Decode([]byte(`{"a":1}`), &m)
	if KindOf(err) != Invalid || !errors.Is(err, errNotStruct) || m != nil {
		t.Fatalf("Decode into a map in the page: %v, %v", err, m)
	}
}
