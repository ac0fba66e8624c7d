package wire

import (
	"bytes"
	"encoding/json"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Admitted is the receiver's own record of what has been admitted: for each descriptor id, the
// bounds it was admitted with, as a JSON object. It must be safe for concurrent use when the
// receiver verifies calls concurrently.
type Admitted interface {
	// Bounds returns the admitted bounds of descriptorID, and false when it is not admitted.
	Bounds(descriptorID string) (json.RawMessage, bool)
}

// AdmittedMap is an Admitted held in a map from descriptor id to admitted bounds. It must not be
// written while calls are verified against it.
type AdmittedMap map[string]json.RawMessage

// Bounds implements Admitted.
func (m AdmittedMap) Bounds(descriptorID string) (json.RawMessage, bool) {
	b, ok := m[descriptorID]
	return b, ok
}

// Verify re-checks the attribution of a parsed call against the receiver's own admitted set. It
// returns unattributed-call when the descriptor is not admitted (or admitted is nil) and
// bounds-mismatch when the echoed bounds are not the same JSON value as the admitted ones.
func Verify(c Call, admitted Admitted) *refusal.Refusal {
	var bounds json.RawMessage
	ok := false
	if admitted != nil {
		bounds, ok = admitted.Bounds(c.DescriptorID)
	}
	if !ok {
		return refusal.New(refusal.UnattributedCall, "descriptor %s is not admitted here, so its tools cannot run", quoteName([]byte(c.DescriptorID)))
	}
	if !SameJSON(c.BoundsEcho, bounds) {
		return refusal.New(refusal.BoundsMismatch, "the call echoes bounds that differ from those descriptor %s was admitted with; it must echo them unchanged", quoteName([]byte(c.DescriptorID)))
	}
	return nil
}

// SameJSON reports whether a and b hold the same JSON value: objects compare by their members
// whatever their order, numbers by value, strings after unescaping. Invalid JSON equals nothing.
func SameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return valid(a)
	}
	va, okA := decodeValue(a)
	vb, okB := decodeValue(b)
	return okA && okB && sameValue(va, vb)
}

func decodeValue(raw []byte) (any, bool) {
	return rawjson.Decode(raw)
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !sameValue(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && sameNumber(string(a), string(b))
	case string:
		b, ok := b.(string)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return false
}
