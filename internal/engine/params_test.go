package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

func TestParamsListTheirFields(t *testing.T) {
	for _, p := range []strictjson.Struct{&pathParam{}, &dirParam{}, &writeParam{}, &moveParam{}, &undoParam{}, &uploadParam{},
		&uploadBeginParam{}, &appParam{}, &controlProbe{}, &portAnswer{}, &noParams{}, &miniAppsLaunchParams{}, &miniAppsFileParams{}, &miniAppsResetParams{}, &miniAppsCloseParams{}, &miniAppsRegisterParams{}, &miniAppsUnregisterParams{}, &miniAppsCallParams{}, &miniAppsValidateParams{}, &miniAppsResultParams{}, &miniAppsPortParams{}, &miniAppsSaveParams{}, &miniAppsDeleteParams{}, &exportNextParams{}, &rootOpenParams{}, &toolLaunchMiniAppParams{}, &toolCreateMiniAppParams{}, &externalAppsReportParams{}} {
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

// TestRunArgumentsAgreeWithJSON holds what the file methods hand the executor to what
// json.Marshal wrote for the same parameters.
func TestRunArgumentsAgreeWithJSON(t *testing.T) {
	for _, s := range []string{"", "a.txt", "<a & b>/caf\u00e9 \u2028 \xff \x01\"\\"} {
		for _, v := range []any{noParams{}, &dirParam{s}, &pathParam{s}, &moveParam{s, s + "x"}, &undoParam{}, &undoParam{s},
			&writeParam{Path: s, Content: s}, &writeParam{Path: s, Content: s, Mode: s + "m", Expect: s + "e"}} {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.(interface{ AppendJSON([]byte) []byte }).AppendJSON(nil); !bytes.Equal(got, want) {
				t.Errorf("%T wrote %s; json.Marshal %s", v, got, want)
			}
		}
	}
}
