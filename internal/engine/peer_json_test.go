package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

var controlSamples = []string{
	`{"type":"holding"}`, `{"type":"standby","why":"another tab"}`, `{"v":1,"type":"x"}`, `{"type":"x","v":null}`,
	`{"TYPE":"refused","WHY":"no","Why":5}`, `{"type":5}`, `{"type":5,"type":"x"}`, `{"type":"x","type":null}`, `{"type":null}`,
	`{"type":"x"} trailing`, `{"type":"x"}{`, `{"type":"x"`, ``, `null`, `[]`, `"type"`, `{"why":{"type":"x"}}`, `{"ſype":"a"}`,
	`{"type":"\u00e9\ud800","why":"<&>"}`, `{"why":"w","type":{}}`, `{"type":"replaced","why":"a","why":"b"}`, ` {"type" : "x"} `,
}

// TestControlFramesAgreeWithJSON holds isControl's probe to the json.Decoder it read frames with,
// and the peer's read of a control frame to json.Unmarshal, into a frame that already holds an
// earlier one's fields (the peer keeps one across frames).
func TestControlFramesAgreeWithJSON(t *testing.T) {
	strictjsontest.CheckFields(t, &controlProbe{})
	for _, s := range controlSamples {
		checkControl(t, []byte(s))
	}
}

func checkControl(t *testing.T, in []byte) {
	var want controlProbe
	wantOK := json.NewDecoder(bytes.NewReader(in)).Decode(&want) == nil
	var got controlProbe
	gotOK := got.decode(in)
	if gotOK != wantOK || (gotOK && (got.Type == nil) != (want.Type == nil)) || (gotOK && (got.V == nil) != (want.V == nil)) ||
		(gotOK && got.Type != nil && *got.Type != *want.Type) || (gotOK && !bytes.Equal(got.V, want.V)) {
		t.Fatalf("probe %q = %+v %v; json.Decoder %+v %v", in, got, gotOK, want, wantOK)
	}
	before := controlFrame{Type: "earlier", Why: "earlier why"}
	wantFrame, gotFrame := before, before
	_ = json.Unmarshal(in, &wantFrame)
	gotFrame.decode(in)
	if gotFrame != wantFrame {
		t.Fatalf("control %q = %+v; json.Unmarshal %+v", in, gotFrame, wantFrame)
	}
}

func FuzzControlFramesAgreeWithJSON(f *testing.F) {
	for _, s := range controlSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkControl(t, in) })
}
