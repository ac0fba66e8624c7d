package engine

import (
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
)

// The worker's answers and frames that carry the shelf's and the registry's values write them
// with rawjson, as json.Marshal writes them (TestValuesAgreeWithJSON).

// appendTime writes t as json.Marshal writes a time.Time (RFC 3339 with nanoseconds, quoted);
// false when encoding/json refuses it (a year outside 0-9999, a zone offset of 24 hours or
// more).
func appendTime(dst []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return dst, false
	}
	if _, off := t.Zone(); off <= -24*60*60 || off >= 24*60*60 {
		return dst, false
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"'), true
}

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
				b, tok := appendTime(b, t.at)
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
