package engine

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

func TestParamsListTheirFields(t *testing.T) {
	for _, p := range []strictjson.Struct{&pathParam{}, &dirParam{}, &writeParam{}, &moveParam{}, &undoParam{}, &uploadParam{}} {
		strictjsontest.CheckFields(t, p)
	}
}

// TestParamsAreDecodedWithoutReflection checks that decodeParams takes the Struct path for them
// with strictjson's verdicts (the path itself is held to encoding/json in strictjson's tests).
func TestParamsAreDecodedWithoutReflection(t *testing.T) {
	var p writeParam
	if r := decodeParams(request{Method: "files.write", Params: []byte(`{"path":"a.txt","Content":"x","mode":"create"}`)}, &p); r != nil {
		t.Fatalf("refused: %v", r)
	}
	if p != (writeParam{Path: "a.txt", Content: "x", Mode: "create"}) {
		t.Errorf("decoded %+v", p)
	}
	r := decodeParams(request{Method: "files.write", Params: []byte(`{"path":"a.txt","admin":true}`)}, &p)
	if r == nil || r.Why != `the parameters of files.write do not fit it: it has the member "admin", which is not taken here` {
		t.Errorf("an unknown member: %v", r)
	}
}
