package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// AdmittedType is the "type" of the control frame that carries the admitted set from the relay
// to the executor holding the root:
//
//	{"type":"admitted","extensions":{"notes-reader":{"bounds":{},"primitives":["read-file"]}}}
//
// The relay sends it when an executor connects, before any call, and again whenever the set
// changes (an admission, a revocation, a reload). Each entry is an admitted descriptor's bounds,
// which its calls must echo unchanged, and the primitives its tools may call on the executor.
const AdmittedType = "admitted"

// AdmittedEntry is one admitted descriptor in an admitted frame.
type AdmittedEntry struct {
	Bounds     json.RawMessage `json:"bounds"`
	Primitives []string        `json:"primitives"`
}

// MarshalAdmitted returns the admitted frame of set.
func MarshalAdmitted(set map[string]AdmittedEntry) []byte {
	if set == nil {
		set = map[string]AdmittedEntry{}
	}
	b, _ := json.Marshal(struct {
		Type       string                   `json:"type"`
		Extensions map[string]AdmittedEntry `json:"extensions"`
	}{AdmittedType, set})
	return b
}

// ControlType returns the "type" of a control frame (a JSON object with a string "type" and no
// "v"), or "" for any other frame, such as a call envelope.
func ControlType(frame []byte) string {
	var probe struct {
		Type *string         `json:"type"`
		V    json.RawMessage `json:"v"`
	}
	if json.Unmarshal(frame, &probe) != nil || probe.Type == nil || probe.V != nil {
		return ""
	}
	return *probe.Type
}

var errAdmittedFrame = errors.New("channel: an admitted frame is {\"type\":\"admitted\",\"extensions\":{ID:{\"bounds\":{...},\"primitives\":[...]}}} and nothing else")

// ParseAdmitted reads an admitted frame strictly: no unknown field anywhere, every bounds a JSON
// object, every primitive a string, at most wire.MaxFrameBytes.
func ParseAdmitted(frame []byte) (map[string]AdmittedEntry, error) {
	if len(frame) > wire.MaxFrameBytes {
		return nil, fmt.Errorf("channel: an admitted frame of %d bytes is over the bound of %d", len(frame), wire.MaxFrameBytes)
	}
	var f struct {
		Type       string                   `json:"type"`
		Extensions map[string]AdmittedEntry `json:"extensions"`
	}
	if strictjson.Decode(frame, &f) != nil || f.Type != AdmittedType || f.Extensions == nil {
		return nil, errAdmittedFrame
	}
	for id, e := range f.Extensions {
		if id == "" || len(e.Bounds) == 0 || e.Bounds[0] != '{' {
			return nil, errAdmittedFrame
		}
	}
	return f.Extensions, nil
}

// ToolScope is implemented by an admitted set that also knows which tools each descriptor may
// call. A Door checks it after attribution: a call for a tool its descriptor was not admitted with
// is refused under-declared.
type ToolScope interface {
	Allows(descriptorID, tool string) bool
}

// LiveAdmitted is an executor's own copy of the admitted set: fixed entries it always admits (the
// built-in descriptor), and the set the relay sent last, replaced whole by Replace. It implements
// wire.Admitted and ToolScope, and is safe for concurrent use.
type LiveAdmitted struct {
	fixed wire.AdmittedMap
	set   atomic.Pointer[map[string]AdmittedEntry]
}

// NewLiveAdmitted returns a set holding fixed (whose descriptors may call any tool) and nothing
// from the relay yet.
func NewLiveAdmitted(fixed wire.AdmittedMap) *LiveAdmitted {
	return &LiveAdmitted{fixed: fixed}
}

// Replace makes set the relay's part of the admitted set; nil empties it.
func (l *LiveAdmitted) Replace(set map[string]AdmittedEntry) {
	if set == nil {
		set = map[string]AdmittedEntry{}
	}
	l.set.Store(&set)
}

// Bounds implements wire.Admitted. A fixed entry wins over one of the same id from the relay.
func (l *LiveAdmitted) Bounds(id string) (json.RawMessage, bool) {
	if b, ok := l.fixed[id]; ok {
		return b, true
	}
	if set := l.set.Load(); set != nil {
		if e, ok := (*set)[id]; ok {
			return e.Bounds, true
		}
	}
	return nil, false
}

// Allows implements ToolScope.
func (l *LiveAdmitted) Allows(id, tool string) bool {
	if _, ok := l.fixed[id]; ok {
		return true
	}
	if set := l.set.Load(); set != nil {
		return slices.Contains((*set)[id].Primitives, tool)
	}
	return false
}

// IDs returns the ids the relay's part of the set holds now.
func (l *LiveAdmitted) IDs() []string {
	var ids []string
	if set := l.set.Load(); set != nil {
		for id := range *set {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func refuseScope(call wire.Call) *refusal.Refusal {
	return refusal.New(refusal.UnderDeclared, "descriptor %q was not admitted with a tool that runs %q here", call.DescriptorID, call.Tool)
}
