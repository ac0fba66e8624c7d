package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// TestValuesAgreeWithJSON holds the worker's frames, observations and answers written with
// rawjson to what json.Marshal wrote for the same values.
func TestValuesAgreeWithJSON(t *testing.T) {
	same := func(what string, got []byte, ok bool, v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if (err == nil) != ok || !bytes.Equal(got, want) && ok {
			t.Errorf("%s wrote %s (%v); json.Marshal %s (%v)", what, got, ok, want, err)
		}
	}
	at := time.Date(2026, 12, 5, 23, 1, 2, 345678900, time.FixedZone("x", -7*3600))
	for _, s := range frameStrings {
		e := miniappstore.Entry{AppID: s, Slug: s, Title: s + "t", FileName: s, Source: s, Sandbox: s, Kind: miniappstore.Kind(s),
			StoragePath: s, Folder: s, Size: int64(len(s)) << 33, CreatedAt: at, UpdatedAt: at.UTC()}
		for _, entry := range []miniappstore.Entry{e, {Title: s}, {CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}} {
			got, ok := appendEntry(nil, entry)
			same("entry", got, ok, entry)
			for _, folder := range [][]miniappstore.FolderFile{nil, {}, {{Path: s, Size: 3}, {Path: "b", Size: -1}}} {
				l := launched{Entry: entry, HTML: "<p>" + s + "</p>", Folder: folder}
				got, ok = l.appendJSON(nil, "")
				same("launched", got, ok, l)
				got, ok = l.appendJSON(nil, "miniapp.open")
				same("miniapp.open", got, ok, struct {
					Type string `json:"type"`
					launched
				}{"miniapp.open", l})
			}
		}
		listings := []appListing{{ID: s, Title: s, Kind: "html", FileName: s, Source: s, Open: true}, {}}
		for _, ls := range [][]appListing{nil, {}, listings} {
			same("listings", appendListings(nil, ls), true, map[string]any{"count": len(ls), "apps": ls})
		}
		for _, path := range []string{"", s} {
			o := launchObserved{Launched: true, ID: s, Title: s, Kind: "folder", Path: path, Note: launchNote}
			same("launchObserved", o.AppendJSON(nil), true, o)
		}
		for _, out := range []json.RawMessage{nil, json.RawMessage(" "), json.RawMessage(`{"a" : "<b>"}`), json.RawMessage(` 5 `), json.RawMessage(`"` + s + `"`), json.RawMessage(`{`)} {
			want := out
			if t := bytes.TrimSpace(out); len(t) == 0 || t[0] != '{' {
				if len(t) == 0 {
					out = json.RawMessage("null")
				}
				want, _ = json.Marshal(map[string]json.RawMessage{"result": out})
			}
			if got := asObject(out); !bytes.Equal(got, want) {
				t.Errorf("asObject(%q) = %s; json.Marshal %s", out, got, want)
			}
		}
		decls := []tool.Declaration{{Name: s, Description: s + "<d>", Parameters: json.RawMessage(` {"type": "object"} `)}, {Name: "x"}}
		for _, external := range []json.RawMessage{nil, json.RawMessage(`{"apps" : [1]}`)} {
			for _, ds := range [][]tool.Declaration{nil, {}, decls} {
				got, ok := appendToolsFrame(nil, ds, external)
				same("tools frame", got, ok, struct {
					Type         string             `json:"type"`
					Tools        []tool.Declaration `json:"tools"`
					ExternalApps json.RawMessage    `json:"externalApps,omitempty"`
				}{"tools", ds, external})
			}
		}
		for _, apps := range [][]json.RawMessage{nil, {}, {json.RawMessage(` {"id" : "` + s + `"} `), json.RawMessage(`[]`)}} {
			p := externalAppsReportParams{Apps: apps}
			got := p.appendJSON(nil)
			same("external report", got, got != nil, p)
		}
		done := map[string]bool{s: true, s + "b": false}
		same("seeded", appendSeeded(nil, done), true, done)
	}
	if _, ok := appendToolsFrame(nil, []tool.Declaration{{Name: "x", Parameters: json.RawMessage(`{`)}}, nil); ok {
		t.Error("a tool whose parameters are not JSON was written")
	}
}

var seededSamples = []string{`{"a":true,"b":false}`, `{"a":true,"a":null}`, `{"a":1,"b":"true","c":{},"d":[true]}`, `{"A":true,"a":false}`,
	`null`, `[]`, `{`, `{"a":true} x`, ``, `{"\u00e9\ud800":true}`}

func checkSeeded(t *testing.T, in []byte) {
	want, got := map[string]bool{"before": true}, map[string]bool{"before": true}
	_ = json.Unmarshal(in, &want)
	readSeeded(in, got)
	if want == nil {
		// json.Unmarshal made the map nil for a record of null, and seedSamples then panicked
		// writing to it; readSeeded leaves the map as it was, as for any record not an object.
		want = map[string]bool{"before": true}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("readSeeded(%q) = %v; json.Unmarshal %v", in, got, want)
	}
}

func TestSeededAgreesWithJSON(t *testing.T) {
	for _, s := range seededSamples {
		checkSeeded(t, []byte(s))
	}
}

func FuzzSeededAgreesWithJSON(f *testing.F) {
	for _, s := range seededSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkSeeded(t, in) })
}

var declarationSamples = []string{`{"name":"a","parameters":{"type" : "object"}}`, `{"Parameters":1,"parameters":null}`, `{}`,
	`{"PARAMETERS":[1, 2]}`, `null`, `[]`, `{`, `{"parameters":{}} x`}

func checkParameters(t *testing.T, in []byte) {
	var want struct {
		Parameters json.RawMessage `json:"parameters"`
	}
	_ = json.Unmarshal(in, &want)
	if got := parametersOf(in); !bytes.Equal(got, want.Parameters) || (got == nil) != (want.Parameters == nil) {
		t.Fatalf("parametersOf(%q) = %q; json.Unmarshal %q", in, got, want.Parameters)
	}
}

func TestParametersOfAgreesWithJSON(t *testing.T) {
	for _, s := range declarationSamples {
		checkParameters(t, []byte(s))
	}
}

func FuzzParametersOfAgreesWithJSON(f *testing.F) {
	for _, s := range declarationSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkParameters(t, in) })
}
