package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/shared/refusal"
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

// TestEveryMethodsValueIsWritten holds the answer of every kind of value a method answers with
// (api.go's, files.go's, export.go's, miniapps.go's results) to what json.Marshal wrote for it:
// no value reaches encoding/json now, so one rawjson cannot write would be refused
// internal-error.
func TestEveryMethodsValueIsWritten(t *testing.T) {
	at := time.Date(2026, 12, 5, 23, 1, 2, 3, time.UTC)
	entry := miniappstore.Entry{AppID: "a1", Title: "<T>", Kind: "html", Size: 5, CreatedAt: at}
	root := RootInfo{Kind: "opfs", Name: "caf\u00e9", SyncHandles: true}
	conflict := executor.Conflict{InConflict: true,
		Change:  executor.HistoryEntry{Seq: 1 << 63, Time: at, Action: "write", Path: "a", To: "b", By: "person", Created: true},
		Current: executor.Version{Exists: true, Folder: true, Size: 3, Text: "<x>"}, Resolutions: []string{"keep-current"}}
	stats := []PortStats{{AppID: "a", Doc: 2, Sent: 3, Refused: map[refusal.Rule]int{"z": 1, "a": 2}, Samples: []PortRefusal{{"a", "<why>"}}}, {AppID: "b"}}
	views := []toolView{{AppID: "a", Name: "t", ModelName: "mini_a_t", Description: "d", ReadOnly: true, Parameters: json.RawMessage(` {"type" : "object"} `)}, {Name: "u"}}
	for _, c := range []struct{ value, reference any }{
		{statusValue{Build: "dev", Go: "go1", UptimeMs: 7}, nil},
		{statusValue{Build: "dev", Root: &root}, nil},
		{root, nil},
		{viewValue{Path: "a<b>", Size: 3, Text: "x\u2028", Digest: "ab"}, nil},
		{viewValue{Binary: true, Truncated: true}, nil},
		{conflictValue(conflict), conflict},
		{conflictValue(executor.Conflict{}), executor.Conflict{}},
		{entriesValue{"entries", []miniappstore.Entry{entry, {}}}, map[string]any{"entries": []miniappstore.Entry{entry, {}}}},
		{entriesValue{"restored", nil}, map[string]any{"restored": []miniappstore.Entry(nil)}},
		{entryValue(entry), entry},
		{launched{Entry: entry, HTML: "<p>"}, nil},
		{views[0], nil},
		{map[string]any{"tools": toolViews(views)}, map[string]any{"tools": views}},
		{map[string]any{"tools": toolViews(nil)}, map[string]any{"tools": []toolView(nil)}},
		{map[string]any{"ports": portStatsList(stats)}, map[string]any{"ports": stats}},
		{map[string]any{"bound": true, "doc": jsonUint(1<<64 - 1)}, map[string]any{"bound": true, "doc": uint64(1<<64 - 1)}},
		{map[string]any{"exportId": "export-1", "files": 2, "bytes": int64(1) << 40}, nil},
		{map[string]any{"result": json.RawMessage(` {"a" : 1} `)}, nil},
		{map[string]any{"args": json.RawMessage(nil)}, nil},
		{map[string]any{"path": "p", "size": int64(3), "created": true, "undoable": false}, nil},
		{json.RawMessage(`{"ok" : true}`), nil},
	} {
		if c.reference == nil {
			c.reference = c.value
		}
		want, err := json.Marshal(answer{Type: "result", ID: 1, OK: true, Value: c.reference})
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(answer{Type: "result", ID: 1, OK: true, Value: c.value}); !bytes.Equal(got, want) {
			t.Errorf("%T:\nwrote          %s\njson.Marshal %s", c.value, got, want)
		}
	}
	bad := entryValue{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if got := encode(answer{Type: "result", ID: 2, OK: true, Value: bad}); !bytes.Contains(got, []byte(`"refused":"internal-error"`)) {
		t.Errorf("an entry encoding/json cannot write was answered %s", got)
	}
}
