package executor

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson/strictjsontest"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// observationSamples are values of every observation, built from s, n and flag: each field set
// and each left at its zero value (what omitempty and omitzero leave out), nil slices and empty
// ones, times within and beyond what JSON's RFC 3339 holds.
func observationSamples(s string, n int64, flag bool) []observation {
	tm := time.Unix(n, n%1e9).In(time.FixedZone("", int(n%(14*3600))))
	read := &readObserved{Path: s, Size: n, Bytes: int(n), Truncated: flag, Encoding: "utf-8", Content: s + s}
	by := Actor(s)
	tree := []*treeNode{{Name: s, Dir: flag, Size: n, More: !flag, Children: []*treeNode{{Name: s + "/x", Size: n}, nil, {Name: "e", Children: []*treeNode{}}}}, nil}
	return []observation{
		read, &readObserved{},
		&writeObserved{Path: s, Bytes: int(n), Created: flag, ParentsCreated: !flag, Undoable: flag},
		&writeObserved{Path: s, Undoable: !flag},
		&nowObserved{s, n, s}, &nowObserved{},
		&deleteObserved{Path: s, Deleted: flag, Bytes: n, Undoable: !flag}, &deleteObserved{},
		&editObserved{Path: s, Bytes: int(n), Line: int(n), Edits: int(n), DryRun: flag, Diff: s, Clipped: !flag, Undoable: flag}, &editObserved{},
		&grepObserved{Query: s, Dir: s, Count: int(n), Truncated: flag, FilesSearched: int(n), Matches: []grepMatch{{s, int(n), s}, {}}},
		&grepObserved{}, &grepObserved{Matches: []grepMatch{}},
		&listObserved{Dir: s, Count: int(n), Truncated: flag, Entries: []listEntry{{Name: s, Shown: s, Path: s, Dir: flag, Size: n, ModTime: tm}, {}}},
		&listObserved{}, &listObserved{Entries: []listEntry{}},
		folderObserved{Path: s, Created: flag, Undoable: !flag}, folderObserved{},
		removeFolderObserved{Path: s, Deleted: flag, Undoable: !flag}, removeFolderObserved{},
		&infoObserved{Path: s, Kind: s, Size: n, ModTime: tm}, &infoObserved{},
		&treeObserved{Dir: s, Depth: int(n), Entries: int(n), Truncated: flag, Tree: tree}, &treeObserved{}, &treeObserved{Tree: []*treeNode{}},
		&readManyObserved{Count: int(n), Files: []readManyEntry{{readObserved: read, Path: s + "!"}, {Path: s, Refused: "not-found", Why: s}, {}}},
		&readManyObserved{}, &readManyObserved{Files: []readManyEntry{}},
		&mediaObserved{Path: s, MIMEType: s, Kind: s, Size: n, Data: s}, &mediaObserved{},
		&undoObserved{Undone: s, Path: s, To: s, By: by, Restored: flag, Removed: !flag, Bytes: n, Resolved: s, KeptAs: s, Remaining: int(n), Redo: int(n)},
		&undoObserved{},
		&redoObserved{Redone: s, Path: s, To: s, By: by, Written: flag, Removed: !flag, Bytes: n, Remaining: int(n), Redo: int(n)}, &redoObserved{},
		&historyObserved{Entries: []HistoryEntry{{Seq: uint64(n), Time: tm, Action: s, Path: s, To: s, By: by, Created: flag, Undone: !flag}, {}}, Undo: int(n), Redo: int(n)},
		&historyObserved{}, &historyObserved{Entries: []HistoryEntry{}},
		&moveObserved{Path: s, To: s, Kind: s, Bytes: n, ParentsCreated: flag, Undoable: !flag}, &moveObserved{},
		&diffObserved{Path: s, Existed: flag, Changed: !flag, Diff: s, Truncated: flag}, &diffObserved{},
	}
}

func checkObservations(t *testing.T, s string, n int64, flag bool) {
	for _, v := range observationSamples(s, n, flag) {
		got, err := marshal(v)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		wantErr := enc.Encode(v)
		want := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		if (err == nil) != (wantErr == nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Errorf("%T wrote %.200s (%v)\nencoding/json writes %.200s (%v)", v, got, err, want, wantErr)
		}
	}
}

func TestObservationsAgreeWithJSON(t *testing.T) {
	for _, s := range []string{"", "notes/a.txt", "<b>&amp;</b> \"q\" \\ \n\t\x00\x1f", "caf\u00e9 \u2028\u2029 \U0001F600",
		"bad \xff\xed\xa0\x80", strings.Repeat("long line ", 600)} {
		for _, n := range []int64{0, 1, -1, 4096, 1 << 40, 1765000000, 1<<62 + 12345, -1 << 40} {
			checkObservations(t, s, n, n%2 == 0)
			checkObservations(t, s, n, n%2 != 0)
		}
	}
}

func FuzzObservationsAgreeWithJSON(f *testing.F) {
	f.Add("a.txt", int64(4096), true)
	f.Add("<\xff\u2028>", int64(-7), false)
	f.Fuzz(func(t *testing.T, s string, n int64, flag bool) {
		checkObservations(t, s, n, flag)
	})
}

// recordSamples are audit and history records built from s, n and flag, every field set and each
// left at its zero value.
func recordSamples(s string, n int64, flag bool) []observation {
	tm := time.Unix(n, n%1e9).In(time.FixedZone("", int(n%(14*3600))))
	return []observation{
		Record{Time: tm, CallID: s, Tool: s, DescriptorID: s, Primitive: Primitive(s), Path: s, OK: flag, Refused: refusal.Rule(s), Error: s, Bytes: n},
		Record{},
		historyRecord{Seq: uint64(n), Time: tm, Action: s, Path: s, To: s, By: Actor(s), Existed: flag, Size: n, After: s, Before: s,
			Undone: !flag, AfterSize: n, Folders: []string{s, "", s + "/x"}},
		historyRecord{}, historyRecord{Folders: []string{}},
	}
}

// checkRecords holds the records' writers to json.Marshal and their readers to json.Unmarshal,
// on what json.Marshal wrote and on in, a document from elsewhere (a newer build, a damaged disk).
func checkRecords(t *testing.T, s string, n int64, flag bool, in []byte) {
	for _, v := range recordSamples(s, n, flag) {
		got, ok := v.appendJSON(nil)
		want, err := json.Marshal(v)
		if ok != (err == nil) || (ok && !bytes.Equal(got, want)) {
			t.Errorf("%T wrote %.200s (%v)\nencoding/json writes %.200s (%v)", v, got, ok, want, err)
		}
		for _, doc := range [][]byte{want, in} {
			switch v.(type) {
			case Record:
				var got, want Record
				checkRead(t, doc, &got, &want, func() bool { return reflect.DeepEqual(got, want) })
			case historyRecord:
				var got, want historyRecord
				checkRead(t, doc, &got, &want, func() bool { return reflect.DeepEqual(got, want) })
			}
		}
	}
}

func checkRead(t *testing.T, doc []byte, got strictjson.Struct, want any, same func() bool) {
	gotErr := strictjson.DecodeStructLoose(doc, got)
	wantErr := json.Unmarshal(doc, want)
	if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !same()) {
		t.Errorf("%T read %.200q as %+v (%v); json.Unmarshal %+v (%v)", got, doc, got, gotErr, want, wantErr)
	}
}

func TestRecordsAgreeWithJSON(t *testing.T) {
	for _, in := range []string{`{"seq":1,"time":"2026-12-05T23:00:00Z","newer":{"x":[1]},"by":"person","folders":["a",null]}`,
		`{"time":"never"}`, `{"seq":-1}`, `null`, `[]`, `{"ok":"yes","path":"x"}`, `{} x`, `{"Seq":2,"PATH":"p","callid":"c"}`} {
		for _, n := range []int64{0, 1, -1, 1765000000, 1<<62 + 12345} {
			checkRecords(t, "<a&b> \u2028 \xff", n, n%2 == 0, []byte(in))
		}
	}
}

func FuzzRecordsAgreeWithJSON(f *testing.F) {
	f.Add("a.txt", int64(1765000000), true, []byte(`{"seq":1,"time":"2026-12-05T23:00:00Z","extra":1}`))
	f.Fuzz(func(t *testing.T, s string, n int64, flag bool, in []byte) {
		checkRecords(t, s, n, flag, in)
	})
}

func TestRecordFieldsMatchTags(t *testing.T) {
	strictjsontest.CheckFields(t, &Record{})
	strictjsontest.CheckFields(t, &historyRecord{})
}

func TestWasmOutputAgreesWithJSON(t *testing.T) {
	text, empty := "<hi> & \u2028 \xff", ""
	for _, o := range []*wasmabi.Output{{}, {ABI: "buffer-abi/1", Returned: 5, Bytes: 5, Hex: "3c68693e", Text: &text}, {Text: &empty, Returned: -1},
		{ABI: "buffer-abi/diff", Returned: 40, Bytes: 40, Truncated: true, Blocks: []wasmabi.Block{{Op: "equal", ALine: 1, ACount: 2, BLine: 3, BCount: 4}, {Op: "<&>", ALine: 1<<32 - 1, BCount: 7}}},
		{Blocks: []wasmabi.Block{}}} {
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendOutput(nil, o); !bytes.Equal(got, want) {
			t.Errorf("appendOutput wrote %s\nencoding/json writes %s", got, want)
		}
	}
}

func TestWasmArgsFieldsMatchTags(t *testing.T) {
	strictjsontest.CheckFields(t, &WasmArgs{})
}
