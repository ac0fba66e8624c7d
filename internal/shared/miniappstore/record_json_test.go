package miniappstore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
)

// checkRecord holds the record's writer to json.MarshalIndent and its reader to json.Unmarshal,
// on what MarshalIndent wrote and on in, a record from elsewhere (a newer build, a damaged shelf).
func checkRecord(t *testing.T, r Record, in []byte) {
	got, err := r.marshalIndent()
	want, wantErr := json.MarshalIndent(r, "", "  ")
	if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%+v written %s (%v); encoding/json %s (%v)", r, got, err, want, wantErr)
	}
	for _, doc := range [][]byte{want, in} {
		var got, want Record
		gotErr := strictjson.DecodeStructLoose(doc, &got)
		wantErr := json.Unmarshal(doc, &want)
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("reading %.120q: %+v (%v); json.Unmarshal %+v (%v)", doc, got, gotErr, want, wantErr)
		}
	}
}

var recordDocs = []string{`{"appId":"a","slug":"s","title":"<t>","createdAt":"2026-12-05T23:00:00Z","newer":[1,{"x":2}]}`, `{"SLUG":"s"}`,
	`{"title":1}`, `{"createdAt":"yesterday"}`, `null`, `[]`, `{"appId":"a"} x`, `{"appId":null,"folder":"f"}`}

func TestRecordAgreesWithJSON(t *testing.T) {
	strictjsontest.CheckFields(t, &Record{})
	when := time.Date(2026, 12, 5, 23, 0, 0, 123, time.FixedZone("", 3600))
	for _, in := range recordDocs {
		for _, r := range []Record{{}, {AppID: "a", Slug: "s", Title: "<a&b> \u2028 \xff", WorkspacePath: "w/x.html", Folder: "f", CreatedAt: when, UpdatedAt: when.UTC()},
			{UpdatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}} {
			checkRecord(t, r, []byte(in))
		}
	}
}

func FuzzRecord(f *testing.F) {
	for _, in := range recordDocs {
		f.Add("a", int64(1765000000), []byte(in))
	}
	f.Fuzz(func(t *testing.T, s string, n int64, in []byte) {
		checkRecord(t, Record{AppID: s, Slug: s, Title: s, Folder: s, CreatedAt: time.Unix(n, 0).UTC()}, in)
	})
}
