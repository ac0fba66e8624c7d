package engine

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
)

// The worker's answers and frames that carry the shelf's and the registry's values write them
// with rawjson, as json.Marshal writes them (TestValuesAgreeWithJSON).

// appendEntry writes a shelf entry as json.Marshal writes a miniappstore.Entry; false when one
// of its times cannot be written.
func appendEntry(dst []byte, e miniappstore.Entry) ([]byte, bool) {
	w := rawjson.NewObject(dst, true)
	w.String("appId", e.AppID)
	w.String("slug", e.Slug)
	w.String("title", e.Title)
	w.String("fileName", e.FileName)
	w.String("source", e.Source)
	if e.Sandbox != "" {
		w.String("sandbox", e.Sandbox)
	}
	w.String("kind", string(e.Kind))
	w.String("storagePath", e.StoragePath)
	if e.Folder != "" {
		w.String("folder", e.Folder)
	}
	w.Int("size", e.Size)
	ok := true
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"createdAt", e.CreatedAt}, {"updatedAt", e.UpdatedAt}} {
		if !t.at.IsZero() {
			w.Value(t.name, appendFunc(func(b []byte) []byte {
				b, tok := rawjson.AppendTime(b, t.at)
				ok = ok && tok
				return b
			}))
		}
	}
	return w.Close(), ok
}

// appendFunc is a function that appends JSON, as a rawjson.Appender.
type appendFunc func(dst []byte) []byte

func (f appendFunc) AppendJSON(dst []byte) []byte { return f(dst) }

// appendJSON writes the launch as json.Marshal writes it, with a "type" member of typ first
// when typ is set (the miniapp.open frame); false when the entry cannot be written.
func (l launched) appendJSON(dst []byte, typ string) ([]byte, bool) {
	w := rawjson.NewObject(grow(dst, 256+len(l.HTML)+64*len(l.Folder)), true)
	if typ != "" {
		w.String("type", typ)
	}
	ok := true
	w.Value("entry", appendFunc(func(b []byte) []byte {
		b, ok = appendEntry(b, l.Entry)
		return b
	}))
	w.String("html", l.HTML)
	if len(l.Folder) > 0 {
		w.Value("folder", appendFunc(func(b []byte) []byte {
			b = append(b, '[')
			for i, f := range l.Folder {
				if i > 0 {
					b = append(b, ',')
				}
				fw := rawjson.NewObject(b, true)
				fw.String("path", f.Path)
				fw.Int("size", f.Size)
				b = fw.Close()
			}
			return append(b, ']')
		}))
	}
	return w.Close(), ok
}

// answerValue is a method's value that writes itself, as json.Marshal writes it; false when
// encoding/json refuses it (a time it cannot write). answer.appendJSON takes it, then any value
// rawjson.AppendValue knows: there is no reflection behind them.
type answerValue interface {
	appendValue(dst []byte) ([]byte, bool)
}

func (l launched) appendValue(dst []byte) ([]byte, bool) { return l.appendJSON(dst, "") }

// entryValue is a shelf entry as a method's value.
type entryValue miniappstore.Entry

func (e entryValue) appendValue(dst []byte) ([]byte, bool) {
	return appendEntry(dst, miniappstore.Entry(e))
}

// entriesValue is {name: entries}, as json.Marshal writes that map (nil entries: null).
type entriesValue struct {
	name    string
	entries []miniappstore.Entry
}

func (v entriesValue) appendValue(dst []byte) ([]byte, bool) {
	b := rawjson.AppendString(append(grow(dst, 16+256*len(v.entries)), '{'), v.name, true)
	b = append(b, ':')
	if v.entries == nil {
		return append(b, "null}"...), true
	}
	b = append(b, '[')
	ok := true
	for i, e := range v.entries {
		if i > 0 {
			b = append(b, ',')
		}
		var eok bool
		b, eok = appendEntry(b, e)
		ok = ok && eok
	}
	return append(b, "]}"...), ok
}

// conflictValue is history.conflict's value.
type conflictValue executor.Conflict

func (c conflictValue) appendValue(dst []byte) ([]byte, bool) {
	w := rawjson.NewObject(grow(dst, 256+len(c.Current.Text)+len(c.Earlier.Text)), true)
	w.Bool("inConflict", c.InConflict)
	ok := true
	w.Value("change", appendFunc(func(b []byte) []byte {
		h := c.Change
		hw := rawjson.NewObject(b, true)
		hw.Uint("seq", h.Seq)
		hw.Value("time", appendFunc(func(b []byte) []byte {
			b, ok = rawjson.AppendTime(b, h.Time)
			return b
		}))
		hw.String("action", h.Action)
		hw.String("path", h.Path)
		if h.To != "" {
			hw.String("to", h.To)
		}
		hw.String("by", string(h.By))
		hw.Bool("created", h.Created)
		hw.Bool("undone", h.Undone)
		return hw.Close()
	}))
	for _, v := range []struct {
		name string
		v    executor.Version
	}{{"current", c.Current}, {"earlier", c.Earlier}} {
		w.Value(v.name, appendFunc(func(b []byte) []byte {
			vw := rawjson.NewObject(b, true)
			vw.Bool("exists", v.v.Exists)
			if v.v.Folder {
				vw.Bool("folder", true)
			}
			vw.Int("size", v.v.Size)
			vw.String("text", v.v.Text)
			vw.Bool("binary", v.v.Binary)
			vw.Bool("truncated", v.v.Truncated)
			return vw.Close()
		}))
	}
	w.Any("resolutions", c.Resolutions)
	return w.Close(), ok
}

// AppendJSON writes the root's description as json.Marshal does.
func (r RootInfo) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.String("kind", r.Kind)
	w.String("name", r.Name)
	w.Bool("syncHandles", r.SyncHandles)
	return w.Close()
}

// AppendJSON writes the status as json.Marshal does.
func (s statusValue) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.String("build", s.Build)
	w.String("go", s.Go)
	w.Int("uptimeMs", s.UptimeMs)
	if s.Root != nil {
		w.Value("root", *s.Root)
	}
	return w.Close()
}

// AppendJSON writes files.read's value as json.Marshal does.
func (v viewValue) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(grow(dst, 128+len(v.Path)+len(v.Text)), true)
	w.String("path", v.Path)
	w.Int("size", v.Size)
	w.String("text", v.Text)
	w.Bool("binary", v.Binary)
	w.Bool("truncated", v.Truncated)
	if v.Digest != "" {
		w.String("digest", v.Digest)
	}
	return w.Close()
}

// AppendJSON writes the tool as json.Marshal does; its parameters are the registry's JSON (a
// value that is not JSON, which the registry never holds, is written null).
func (v toolView) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(grow(dst, 128+len(v.AppID)+len(v.Description)+len(v.Parameters)), true)
	w.String("appId", v.AppID)
	w.String("name", v.Name)
	w.String("modelName", v.ModelName)
	w.String("description", v.Description)
	if v.ReadOnly {
		w.Bool("readOnly", true)
	}
	if !w.Raw("parameters", v.Parameters) {
		w.Raw("parameters", nil)
	}
	return w.Close()
}

// toolViews are miniapps.tools' tools.
type toolViews []toolView

// AppendJSON is not inlined (nor portStatsList's): the linker keeps the (*T).AppendJSON wrapper
// of a type in an interface, and the compiler inlined the whole method and its closures into it,
// a second copy (4.7 KB of code for the two).
//
//go:noinline
func (vs toolViews) AppendJSON(dst []byte) []byte {
	return rawjson.AppendArray(dst, vs, func(dst []byte, v toolView) []byte { return v.AppendJSON(dst) })
}

// portStatsList are miniapps.ports' ports.
type portStatsList []PortStats

//go:noinline
func (ps portStatsList) AppendJSON(dst []byte) []byte {
	return rawjson.AppendArray(dst, ps, func(dst []byte, s PortStats) []byte {
		w := rawjson.NewObject(dst, true)
		w.String("appId", s.AppID)
		w.Uint("doc", s.Doc)
		w.Int("sent", int64(s.Sent))
		w.Int("answered", int64(s.Answered))
		w.Int("dropped", int64(s.Dropped))
		if len(s.Refused) > 0 {
			w.Value("refused", appendFunc(func(b []byte) []byte {
				rw := rawjson.NewObject(b, true)
				for _, rule := range slices.Sorted(maps.Keys(s.Refused)) {
					rw.Int(string(rule), int64(s.Refused[rule]))
				}
				return rw.Close()
			}))
		}
		if len(s.Samples) > 0 {
			w.Value("samples", appendFunc(func(b []byte) []byte {
				return rawjson.AppendArray(b, s.Samples, func(b []byte, r PortRefusal) []byte {
					rw := rawjson.NewObject(b, true)
					rw.String("rule", string(r.Rule))
					rw.String("why", r.Why)
					return rw.Close()
				})
			}))
		}
		return w.Close()
	})
}

// jsonUint is a uint64 in a map[string]any value (rawjson.AppendValue writes no uint64).
type jsonUint uint64

func (u jsonUint) AppendJSON(dst []byte) []byte { return strconv.AppendUint(dst, uint64(u), 10) }
