package channel

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
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

// StrictFields lists the entry's members for strictjson.
func (e *AdmittedEntry) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "bounds", Into: &e.Bounds}, {Name: "primitives", Into: &e.Primitives}}
}

// The admitted frame is written and read without reflection (the executor in the page reads
// every one), with encoding/json's bytes and verdicts: TestAdmittedAgreesWithJSON and
// FuzzAdmittedFrames hold the three functions below to the encoding/json code they replace.

// MarshalAdmitted returns the admitted frame of set (json.Marshal's bytes: ids sorted, HTML
// escaped), or nil when an entry's bounds are not JSON.
func MarshalAdmitted(set map[string]AdmittedEntry) []byte {
	w := rawjson.NewObject(nil, true)
	w.String("type", AdmittedType)
	exts := rawjson.NewObject(nil, true)
	for _, id := range slices.Sorted(maps.Keys(set)) {
		e := set[id]
		entry := rawjson.NewObject(nil, true)
		if !entry.Raw("bounds", e.Bounds) {
			return nil
		}
		entry.Any("primitives", e.Primitives)
		exts.Raw(id, entry.Close())
	}
	w.Raw("extensions", exts.Close())
	return w.Close()
}

// controlProbe is what ControlType reads of a frame, as json.Unmarshal reads it: type a string or
// null (the last one given counts), v present or not.
type controlProbe struct {
	Type nullableString  `json:"type"`
	V    json.RawMessage `json:"v"`
}

func (p *controlProbe) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "type", Into: &p.Type}, {Name: "v", Into: &p.V}}
}

// nullableString is a *string member as encoding/json reads one: null unsets it.
type nullableString struct {
	set bool
	s   string
}

var errNotString = errors.New("channel: not a string")

func (n *nullableString) UnmarshalStrict(b []byte) error {
	if string(b) == "null" {
		*n = nullableString{}
		return nil
	}
	s, ok := rawjson.Unquote(b)
	if !ok {
		return errNotString
	}
	*n = nullableString{true, s}
	return nil
}

// ControlType returns the "type" of a control frame (a JSON object with a string "type" and no
// "v"), or "" for any other frame, such as a call envelope.
func ControlType(frame []byte) string {
	if Envelope(frame) {
		return ""
	}
	var probe controlProbe
	if strictjson.DecodeStructLoose(frame, &probe) != nil || !probe.Type.set || probe.V != nil {
		return ""
	}
	return probe.Type.s
}

// Envelope reports whether frame begins with a "v" member, as every call and answer the wire
// writes does (wire.Call.MarshalJSON, wire.Answer.MarshalJSON): it is then no control frame,
// whatever follows (a control frame has no "v"; a frame that is no JSON object is none either),
// and saying so reads its first bytes instead of decoding it. A frame it does not recognise is
// not necessarily a control frame: ControlType decides.
func Envelope(frame []byte) bool {
	return len(frame) > len(`{"v":`) && string(frame[:len(`{"v":`)]) == `{"v":`
}

var errAdmittedFrame = errors.New("channel: an admitted frame is {\"type\":\"admitted\",\"extensions\":{ID:{\"bounds\":{...},\"primitives\":[...]}}} and nothing else")

// admittedFrame is an admitted frame as ParseAdmitted reads it.
type admittedFrame struct {
	Type       string      `json:"type"`
	Extensions admittedSet `json:"extensions"`
}

func (f *admittedFrame) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "type", Into: &f.Type}, {Name: "extensions", Into: &f.Extensions}}
}

// admittedSet reads the extensions member as encoding/json reads a map of entries: null empties
// it, a second object adds to the first, each entry strictly.
type admittedSet map[string]AdmittedEntry

func (m *admittedSet) UnmarshalStrict(b []byte) error {
	if string(b) == "null" {
		*m = nil
		return nil
	}
	if b[0] != '{' {
		return errAdmittedFrame
	}
	if *m == nil {
		*m = admittedSet{}
	}
	var err error
	rawjson.Members(b, func(id string, v []byte) bool {
		var e AdmittedEntry
		if string(v) != "null" {
			err = strictjson.DecodeStruct(v, &e)
		}
		(*m)[id] = e
		return err == nil
	})
	return err
}

// ParseAdmitted reads an admitted frame strictly: no unknown field anywhere, every bounds a JSON
// object, every primitive a string, at most wire.MaxFrameBytes.
func ParseAdmitted(frame []byte) (map[string]AdmittedEntry, error) {
	if len(frame) > wire.MaxFrameBytes {
		return nil, textf.Errorf("channel: an admitted frame of %d bytes is over the bound of %d", len(frame), wire.MaxFrameBytes)
	}
	var f admittedFrame
	if strictjson.DecodeStruct(frame, &f) != nil || f.Type != AdmittedType || f.Extensions == nil {
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
