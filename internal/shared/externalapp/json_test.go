package externalapp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

// checkWithheld holds selectionLine's reading of a withheld payload to json.Unmarshal's.
func checkWithheld(t *testing.T, raw []byte) {
	var got, want withheldPayload
	gotErr := strictjson.DecodeStructLoose(raw, &got)
	wantErr := json.Unmarshal(raw, &want)
	if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && got != want) {
		t.Fatalf("reading %.120q: %+v %v; json.Unmarshal %+v %v", raw, got, gotErr, want, wantErr)
	}
}

var selections = []string{`{"withheld":true,"note":"n"}`, `{"Withheld":true,"extra":[1]}`, `{"withheld":"true"}`, `{"withheld":1}`,
	`{"withheld":true} x`, `[1]`, `null`, `"s"`, `{"withheld":null}`, `{"withheld":true,"withheld":false}`, `{`}

func TestAppJSONAgreesWithJSON(t *testing.T) {
	strictjsontest.CheckFields(t, &withheldPayload{})
	for _, s := range selections {
		checkWithheld(t, []byte(s))
	}
	for _, ids := range [][]string{{"a"}, {"<x>&", "\u2028", "\xff"}} {
		want, _ := json.Marshal(ids)
		if got, _ := rawjson.AppendValue(nil, ids, true); string(got) != string(want) {
			t.Errorf("the ids %q are written %s; encoding/json %s", ids, got, want)
		}
	}
	big := json.RawMessage(`"` + strings.Repeat("<", MaxContextPayloadChars) + `"`)
	note, _ := json.Marshal(fmt.Sprintf("withheld: %d characters, over the %d-character bound", len(big), MaxContextPayloadChars))
	if got, want := string(BoundPayload(big)), `{"withheld":true,"note":`+string(note)+`}`; got != want {
		t.Errorf("BoundPayload wrote %s; encoding/json's note %s", got, want)
	}
}

func FuzzSelectionLine(f *testing.F) {
	for _, s := range selections {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkWithheld(t, raw)
		selectionLine(raw)
	})
}
