package executor

import (
	"encoding/json"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
)

// observation is what a primitive answers. Each writes its own JSON, byte for byte what
// encoding/json writes for it without HTML escaping (TestObservationsAgreeWithJSON), so neither
// the page nor the relay spends reflection on a tool call's answer; ok is false where encoding/json
// refuses the value (a time outside the years 0 to 9999). An observation marshal is given is a
// pointer (&obs) with a pointer receiver: a value method of a type put in an interface keeps a
// (*T) wrapper beside it in the page's wasm as well (the elements appendSlice takes stay values).
type observation interface {
	appendJSON(dst []byte) (b []byte, ok bool)
}

var errObservation = errorString("executor: encode the observation: a time outside the years 0 to 9999")

type errorString string

func (e errorString) Error() string { return string(e) }

// observationBytes is the room marshal starts with: a small observation's JSON fits, so it is
// written with one allocation (one with content grows its buffer once, to its size).
const observationBytes = 512

// marshal writes an observation's JSON.
func marshal(o observation) (json.RawMessage, error) {
	b, ok := o.appendJSON(make([]byte, 0, observationBytes))
	if !ok {
		return nil, errObservation
	}
	return b, nil
}

func newObject(dst []byte) rawjson.Object { return rawjson.NewObject(dst, false) }

func (o *nowObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("now", o.Now)
	w.Int("unixMs", o.UnixMs)
	w.String("zone", o.Zone)
	return w.Close(), true
}

func (o *readObserved) appendJSON(dst []byte) ([]byte, bool) { return o.AppendJSON(dst), true }

func (o *writeObserved) appendJSON(dst []byte) ([]byte, bool) { return o.AppendJSON(dst), true }

func (o *deleteObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.Bool("deleted", o.Deleted)
	w.Int("bytes", o.Bytes)
	w.Bool("undoable", o.Undoable)
	return w.Close(), true
}

func (o *editObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.Int("bytes", int64(o.Bytes))
	w.Int("line", int64(o.Line))
	w.Int("edits", int64(o.Edits))
	if o.DryRun {
		w.Bool("dryRun", true)
	}
	if o.Diff != "" {
		w.String("diff", o.Diff)
	}
	if o.Clipped {
		w.Bool("diffTruncated", true)
	}
	w.Bool("undoable", o.Undoable)
	return w.Close(), true
}

func (o grepMatch) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.Int("line", int64(o.Line))
	w.String("text", o.Text)
	return w.Close(), true
}

func (o *grepObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("query", o.Query)
	w.String("dir", o.Dir)
	w.Int("count", int64(o.Count))
	w.Bool("truncated", o.Truncated)
	w.Int("filesSearched", int64(o.FilesSearched))
	w.Value("matches", appendSlice(o.Matches))
	return w.Close(), true
}

// jsonSlice writes a slice of observations as encoding/json does: null when nil; ok reports,
// once AppendJSON has run, whether every element was written.
type jsonSlice[E observation] struct {
	s  []E
	ok *bool
}

func appendSlice[E observation](s []E) jsonSlice[E] { return jsonSlice[E]{s: s, ok: new(bool)} }

// AppendJSON writes the slice.
func (j jsonSlice[E]) AppendJSON(dst []byte) []byte {
	*j.ok = true
	return rawjson.AppendArray(dst, j.s, func(dst []byte, e E) []byte {
		dst, ok := e.appendJSON(dst)
		*j.ok = *j.ok && ok
		return dst
	})
}

func (o listEntry) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("name", o.Name)
	if o.Shown != "" {
		w.String("shown", o.Shown)
	}
	w.String("path", o.Path)
	w.Bool("dir", o.Dir)
	w.Int("size", o.Size)
	if !o.ModTime.IsZero() && !w.Time("modTime", o.ModTime) {
		return dst, false
	}
	return w.Close(), true
}

func (o *listObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("dir", o.Dir)
	w.Int("count", int64(o.Count))
	w.Bool("truncated", o.Truncated)
	entries := appendSlice(o.Entries)
	w.Value("entries", entries)
	return w.Close(), *entries.ok
}

func (o folderObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.Bool("created", o.Created)
	w.Bool("undoable", o.Undoable)
	return w.Close(), true
}

func (o removeFolderObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.Bool("deleted", o.Deleted)
	w.Bool("undoable", o.Undoable)
	return w.Close(), true
}

func (o *infoObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.String("kind", o.Kind)
	w.Int("size", o.Size)
	if !o.ModTime.IsZero() && !w.Time("modTime", o.ModTime) {
		return dst, false
	}
	return w.Close(), true
}

// appendJSON writes a node and its children; the recursion is as deep as the tree, at most
// MaxTreeDepth.
func (n *treeNode) appendJSON(dst []byte) ([]byte, bool) {
	if n == nil {
		return append(dst, "null"...), true
	}
	w := newObject(dst)
	w.String("name", n.Name)
	if n.Dir {
		w.Bool("dir", true)
	}
	if n.Size != 0 {
		w.Int("size", n.Size)
	}
	if len(n.Children) > 0 {
		w.Value("children", appendSlice(n.Children))
	}
	if n.More {
		w.Bool("more", true)
	}
	return w.Close(), true
}

func (o *treeObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("dir", o.Dir)
	w.Int("depth", int64(o.Depth))
	w.Int("entries", int64(o.Entries))
	w.Bool("truncated", o.Truncated)
	w.Value("tree", appendSlice(o.Tree))
	return w.Close(), true
}

// appendJSON writes the entry as encoding/json writes a struct that embeds *readObserved: the
// embedded fields first (when the pointer is set), except path, which the entry's own shadows.
func (o readManyEntry) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	if r := o.readObserved; r != nil {
		w.Int("size", r.Size)
		w.Int("bytes", int64(r.Bytes))
		w.Bool("truncated", r.Truncated)
		w.String("encoding", r.Encoding)
		w.String("content", r.Content)
	}
	w.String("path", o.Path)
	if o.Refused != "" {
		w.String("refused", string(o.Refused))
	}
	if o.Why != "" {
		w.String("why", o.Why)
	}
	return w.Close(), true
}

func (o *readManyObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.Int("count", int64(o.Count))
	w.Value("files", appendSlice(o.Files))
	return w.Close(), true
}

func (o *mediaObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.String("mimeType", o.MIMEType)
	w.String("kind", o.Kind)
	w.Int("size", o.Size)
	w.String("data", o.Data)
	return w.Close(), true
}

func (o *undoObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("undone", o.Undone)
	w.String("path", o.Path)
	if o.To != "" {
		w.String("to", o.To)
	}
	if o.By != "" {
		w.String("by", string(o.By))
	}
	w.Bool("restored", o.Restored)
	w.Bool("removed", o.Removed)
	w.Int("bytes", o.Bytes)
	if o.Resolved != "" {
		w.String("resolved", o.Resolved)
	}
	if o.KeptAs != "" {
		w.String("keptAs", o.KeptAs)
	}
	w.Int("remaining", int64(o.Remaining))
	w.Int("redo", int64(o.Redo))
	return w.Close(), true
}

func (o *redoObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("redone", o.Redone)
	w.String("path", o.Path)
	if o.To != "" {
		w.String("to", o.To)
	}
	if o.By != "" {
		w.String("by", string(o.By))
	}
	w.Bool("written", o.Written)
	w.Bool("removed", o.Removed)
	w.Int("bytes", o.Bytes)
	w.Int("remaining", int64(o.Remaining))
	w.Int("redo", int64(o.Redo))
	return w.Close(), true
}

func (o HistoryEntry) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.Uint("seq", o.Seq)
	if !w.Time("time", o.Time) {
		return dst, false
	}
	w.String("action", o.Action)
	w.String("path", o.Path)
	if o.To != "" {
		w.String("to", o.To)
	}
	w.String("by", string(o.By))
	w.Bool("created", o.Created)
	w.Bool("undone", o.Undone)
	return w.Close(), true
}

func (o *historyObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	entries := appendSlice(o.Entries)
	w.Value("entries", entries)
	w.Int("undo", int64(o.Undo))
	w.Int("redo", int64(o.Redo))
	return w.Close(), *entries.ok
}

func (o *moveObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.String("to", o.To)
	w.String("kind", o.Kind)
	w.Int("bytes", o.Bytes)
	w.Bool("parentsCreated", o.ParentsCreated)
	w.Bool("undoable", o.Undoable)
	return w.Close(), true
}

func (o *diffObserved) appendJSON(dst []byte) ([]byte, bool) {
	w := newObject(dst)
	w.String("path", o.Path)
	w.Bool("existed", o.Existed)
	w.Bool("changed", o.Changed)
	w.String("diff", o.Diff)
	w.Bool("truncated", o.Truncated)
	return w.Close(), true
}
