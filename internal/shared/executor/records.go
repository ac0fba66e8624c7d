package executor

import (
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
)

// The audit and history records are files on disk, read back by older and newer builds: each is
// written byte for byte as json.Marshal wrote it (HTML escaped) and read as json.Unmarshal read
// it, members it does not know skipped (strictjson.DecodeStructLoose), without reflection;
// TestRecordsAgreeWithJSON and FuzzRecordsAgreeWithJSON hold both to encoding/json.

// appendJSON writes the record as json.Marshal does; false for a time it refuses.
func (r Record) appendJSON(dst []byte) ([]byte, bool) {
	w := rawjson.NewObject(dst, true)
	if !w.Time("time", r.Time) {
		return dst, false
	}
	w.String("callId", r.CallID)
	w.String("tool", r.Tool)
	w.String("descriptorId", r.DescriptorID)
	if r.Primitive != "" {
		w.String("primitive", string(r.Primitive))
	}
	if r.Path != "" {
		w.String("path", r.Path)
	}
	w.Bool("ok", r.OK)
	if r.Refused != "" {
		w.String("refused", string(r.Refused))
	}
	if r.Error != "" {
		w.String("error", r.Error)
	}
	if r.Bytes != 0 {
		w.Int("bytes", r.Bytes)
	}
	return w.Close(), true
}

// StrictFields lists the record's members for strictjson.
func (r *Record) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "time", Into: &r.Time}, {Name: "callId", Into: &r.CallID}, {Name: "tool", Into: &r.Tool},
		{Name: "descriptorId", Into: &r.DescriptorID}, {Name: "primitive", Into: (*string)(&r.Primitive)}, {Name: "path", Into: &r.Path},
		{Name: "ok", Into: &r.OK}, {Name: "refused", Into: (*string)(&r.Refused)}, {Name: "error", Into: &r.Error}, {Name: "bytes", Into: &r.Bytes}}
}

// recordBytes is the room a record's JSON starts with: one allocation for the usual record.
const recordBytes = 384

// appendJSON writes the record as json.Marshal does; false for a time it refuses.
func (r historyRecord) appendJSON(dst []byte) ([]byte, bool) {
	w := rawjson.NewObject(dst, true)
	w.Uint("seq", r.Seq)
	if !w.Time("time", r.Time) {
		return dst, false
	}
	w.String("action", r.Action)
	w.String("path", r.Path)
	if r.To != "" {
		w.String("to", r.To)
	}
	if r.By != "" {
		w.String("by", string(r.By))
	}
	w.Bool("existed", r.Existed)
	w.Int("size", r.Size)
	if r.After != "" {
		w.String("after", r.After)
	}
	if r.Before != "" {
		w.String("before", r.Before)
	}
	if r.Undone {
		w.Bool("undone", true)
	}
	if r.AfterSize != 0 {
		w.Int("afterSize", r.AfterSize)
	}
	if len(r.Folders) > 0 {
		w.Value("folders", stringList(r.Folders))
	}
	return w.Close(), true
}

// stringList writes a []string as json.Marshal does.
type stringList []string

func (l stringList) AppendJSON(dst []byte) []byte {
	b, _ := rawjson.AppendValue(dst, []string(l), true)
	return b
}

// StrictFields lists the record's members for strictjson.
func (r *historyRecord) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "seq", Into: &r.Seq}, {Name: "time", Into: &r.Time}, {Name: "action", Into: &r.Action},
		{Name: "path", Into: &r.Path}, {Name: "to", Into: &r.To}, {Name: "by", Into: (*string)(&r.By)}, {Name: "existed", Into: &r.Existed},
		{Name: "size", Into: &r.Size}, {Name: "after", Into: &r.After}, {Name: "before", Into: &r.Before}, {Name: "undone", Into: &r.Undone},
		{Name: "afterSize", Into: &r.AfterSize}, {Name: "folders", Into: &r.Folders}}
}
