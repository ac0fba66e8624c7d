//go:build !js

package channel

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

// The encoding/json code the admitted frame's functions replace, kept as their reference.

func referenceMarshalAdmitted(set map[string]AdmittedEntry) []byte {
	if set == nil {
		set = map[string]AdmittedEntry{}
	}
	b, _ := json.Marshal(struct {
		Type       string                   `json:"type"`
		Extensions map[string]AdmittedEntry `json:"extensions"`
	}{AdmittedType, set})
	return b
}

func referenceControlType(frame []byte) string {
	var probe struct {
		Type *string         `json:"type"`
		V    json.RawMessage `json:"v"`
	}
	if json.Unmarshal(frame, &probe) != nil || probe.Type == nil || probe.V != nil {
		return ""
	}
	return *probe.Type
}

// referenceEntry is AdmittedEntry without its list of fields, read through encoding/json.
type referenceEntry struct {
	Bounds     json.RawMessage `json:"bounds"`
	Primitives []string        `json:"primitives"`
}

func referenceParseAdmitted(frame []byte) (map[string]referenceEntry, bool) {
	var f struct {
		Type       string                    `json:"type"`
		Extensions map[string]referenceEntry `json:"extensions"`
	}
	if strictjson.Decode(frame, &f) != nil || f.Type != AdmittedType || f.Extensions == nil {
		return nil, false
	}
	for id, e := range f.Extensions {
		if id == "" || len(e.Bounds) == 0 || e.Bounds[0] != '{' {
			return nil, false
		}
	}
	return f.Extensions, true
}

var admittedFrames = []string{
	`{"type":"admitted","extensions":{"a":{"bounds":{"maxBytes":1},"primitives":["read-file",null]},"<b>":{"bounds":{ "x" : "<&>" },"primitives":null}}}`,
	`{"type":"admitted","extensions":{"a":{"bounds":{},"primitives":[]}},"extensions":{"b":{"bounds":{},"primitives":[]}}}`,
	`{"type":"admitted","extensions":{"a":{"bounds":{},"primitives":[]}},"extensions":null}`,
	`{"type":"admitted","extensions":{"a":{"bounds":{},"primitives":[]},"a":{"bounds":{"y":1}}}}`,
	`{"type":"admitted","extensions":{"a":null}}`, `{"TYPE":"admitted","Extensions":{"a":{"BOUNDS":{},"Primitives":[]}}}`,
	`{"type":"admitted","extensions":{"a":{"bounds":{},"primitives":[],"x":1}}}`, `{"type":"admitted","extensions":[]}`,
	`{"type":"admitted","extensions":{"a":[]}}`, `{"type":null,"extensions":{}}`, `{"type":"admitted","extensions":{}} x`,
	`{"type":"replaced","why":"w"}`, `{"v":1,"type":"admitted"}`, `{"v":null,"type":"a"}`, `{"type":"a","type":null}`, `{"type":1,"type":"a"}`,
	`{"Type":"a"}`, `null`, `[1]`, `{"type":"a"} x`, `{"v":1,"type":"a"} x`, `{"v":`, `{"type":"a\u00e9\ud800"}`, `{"type":"a"`, ``,
}

func checkAdmitted(t *testing.T, frame []byte) {
	if got, want := ControlType(frame), referenceControlType(frame); got != want {
		t.Fatalf("ControlType(%.120q) = %q; encoding/json %q", frame, got, want)
	}
	got, err := ParseAdmitted(frame)
	want, ok := referenceParseAdmitted(frame)
	if (err == nil) != ok {
		t.Fatalf("ParseAdmitted(%.120q): %v; through encoding/json ok %v", frame, err, ok)
	}
	if !ok {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("ParseAdmitted(%.120q) = %v; through encoding/json %v", frame, got, want)
	}
	for id, e := range want {
		if !reflect.DeepEqual(got[id], AdmittedEntry(e)) {
			t.Fatalf("ParseAdmitted(%.120q)[%q] = %+v; through encoding/json %+v", frame, id, got[id], e)
		}
	}
	set := map[string]AdmittedEntry{}
	for id, e := range want {
		set[id] = AdmittedEntry(e)
	}
	set["bad"] = AdmittedEntry{Bounds: json.RawMessage(frame)} // JSON or not
	if got, want := MarshalAdmitted(set), referenceMarshalAdmitted(set); string(got) != string(want) {
		t.Fatalf("MarshalAdmitted wrote %.200s; encoding/json %.200s", got, want)
	}
}

func TestAdmittedAgreesWithJSON(t *testing.T) {
	t.Parallel()
	for _, f := range admittedFrames {
		checkAdmitted(t, []byte(f))
	}
	for _, set := range []map[string]AdmittedEntry{nil, {}, {"a": {}}, {"a": {Bounds: json.RawMessage(" { } "), Primitives: []string{}}}} {
		if got, want := MarshalAdmitted(set), referenceMarshalAdmitted(set); string(got) != string(want) {
			t.Errorf("MarshalAdmitted(%v) wrote %s; encoding/json %s", set, got, want)
		}
	}
	strictjsontest.CheckFields(t, &AdmittedEntry{})
}

func FuzzAdmittedFrames(f *testing.F) {
	for _, s := range admittedFrames {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) { checkAdmitted(t, frame) })
}

// TestEnvelopeIsNoControlFrame: a frame Envelope recognises is one ControlType, which decodes
// it, finds no control frame in, and a frame it does not recognise may be either.
func TestEnvelopeIsNoControlFrame(t *testing.T) {
	t.Parallel()
	for frame, want := range map[string]bool{
		`{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":{},"boundsEcho":{}}`: true,
		`{"v":null,"type":"admitted"}`: true,
		`{"v":`:                        false,
		`{"v" :1}`:                     false,
		`{"type":"admitted","v":1}`:    false,
		`{"type":"replaced"}`:          false,
		` {"v":1}`:                     false,
	} {
		if got := Envelope([]byte(frame)); got != want {
			t.Errorf("Envelope(%s) = %v, want %v", frame, got, want)
		}
		if want {
			if got := referenceControlType([]byte(frame)); got != "" {
				t.Errorf("encoding/json reads %s as a control frame %q", frame, got)
			}
		}
	}
}
