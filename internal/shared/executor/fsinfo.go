package executor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of the filesystem-server primitives (file-info, directory-tree, read-files,
// read-media, and read-file's head and tail). read-media reads a file's type from its first bytes
// (sniff.go: the image and audio signatures of h2non/filetype).
const (
	// MaxTreeDepth is the deepest directory-tree goes below its folder; DefaultTreeDepth is the
	// depth when none is asked for.
	MaxTreeDepth     = 8
	DefaultTreeDepth = 3
	// MaxTreeEntries is the most entries one directory-tree returns, all levels together; past
	// it the tree is flagged truncated.
	MaxTreeEntries = 500
	// MaxReadFiles is the most files one read-files reads.
	MaxReadFiles = 8
	// MaxReadFilesBytes is the most content read-files returns of each file (cut at a UTF-8
	// character and flagged truncated, as read-file does), so that all of them fit an answer
	// frame even escaped.
	MaxReadFilesBytes = 16 << 10
	// MaxLines bounds the lines head or tail may ask for.
	MaxLines = 10000
	// MaxTailFileBytes is the largest file tail reads (the last lines need the whole file read);
	// a larger one is refused write-too-large's sibling, file-too-large.
	MaxTailFileBytes = 16 << 20
	// MaxMediaBytes is the largest file read-media returns; in base64 it still fits an answer
	// frame.
	MaxMediaBytes = 512 << 10
	// mediaSniffBytes is how much of a file its type is read from.
	mediaSniffBytes = 3072
)

type infoObserved struct {
	Path    string    `json:"path"`
	Kind    string    `json:"kind"` // "file" or "folder"
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime,omitzero"`
}

// fileInfo describes one file or folder: its kind, size and, where the root knows it, the time
// of its last change.
func (e *Executor) fileInfo(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw)
	if err != nil {
		return nil, note, err
	}
	name := args["path"]
	st, err := e.root.Stat(ctx, name)
	if err != nil {
		return nil, note, FileRefusal(err, name)
	}
	obs := infoObserved{Path: name, Kind: "file", Size: st.Size, ModTime: st.ModTime.UTC()}
	if st.Dir {
		obs.Kind, obs.Size = "folder", 0
	}
	out, err := marshal(&obs)
	return out, note, err
}

type treeNode struct {
	Name     string      `json:"name"`
	Dir      bool        `json:"dir,omitempty"`
	Size     int64       `json:"size,omitempty"`
	Children []*treeNode `json:"children,omitempty"`
	// More is set on a folder at the depth bound whose entries were not read.
	More bool `json:"more,omitempty"`
}

type treeObserved struct {
	Dir       string      `json:"dir"`
	Depth     int         `json:"depth"`
	Entries   int         `json:"entries"`
	Truncated bool        `json:"truncated"`
	Tree      []*treeNode `json:"tree"`
}

// directoryTree lists a folder and its folders, breadth first, down to depth levels and at most
// MaxTreeEntries entries in all.
func (e *Executor) directoryTree(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, err := parseArgs(raw, []argSpec{{name: "dir"}, {name: "depth"}})
	if err != nil {
		return nil, auditNote{}, err
	}
	dir := args["dir"]
	note := auditNote{Path: dir}
	if err := fsroot.CheckDir(dir); err != nil {
		return nil, note, err
	}
	depth, err := intArg(args, "depth", DefaultTreeDepth, 1, MaxTreeDepth)
	if err != nil {
		return nil, note, err
	}
	obs := treeObserved{Dir: dir, Depth: depth, Tree: []*treeNode{}}
	type pending struct {
		path  string
		level int
		into  *[]*treeNode
	}
	queue := []pending{{dir, 1, &obs.Tree}}
	for len(queue) > 0 && !obs.Truncated {
		p := queue[0]
		queue = queue[1:]
		entries, err := e.root.ReadDir(ctx, p.path)
		if err != nil {
			if p.path == dir {
				return nil, note, FileRefusal(err, dir)
			}
			continue // a folder that went away while walking, or a link that cannot be read
		}
		for _, en := range entries {
			if obs.Entries == MaxTreeEntries {
				obs.Truncated = true
				break
			}
			obs.Entries++
			n := &treeNode{Name: en.Name, Dir: en.Dir, Size: en.Size}
			*p.into = append(*p.into, n)
			if !en.Dir {
				continue
			}
			n.Size = 0
			if p.level == depth {
				n.More = true
				continue
			}
			child := en.Name
			if p.path != "" {
				child = p.path + "/" + en.Name
			}
			queue = append(queue, pending{child, p.level + 1, &n.Children})
		}
		if err := ctx.Err(); err != nil {
			return nil, note, err
		}
	}
	note.Bytes = int64(obs.Entries)
	out, err := marshal(&obs)
	return out, note, err
}

// intArg reads the decimal integer argument key (a string on the wire), def when it is absent,
// and refuses one outside [lo, hi].
func intArg(args map[string]string, key string, def, lo, hi int) (int, error) {
	s, ok := args[key]
	if !ok || s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, refusal.New(refusal.InvalidArgumentType, "argument %q must be a whole number written in decimal", key)
	}
	if n < lo || n > hi {
		return 0, refusal.New(refusal.InvalidArgumentRange, "argument %q must be from %d to %d, not %d", key, lo, hi, n)
	}
	return n, nil
}

type readManyEntry struct {
	*readObserved
	Path    string       `json:"path"`
	Refused refusal.Rule `json:"refused,omitempty"`
	Why     string       `json:"why,omitempty"`
}

type readManyObserved struct {
	Count int             `json:"count"`
	Files []readManyEntry `json:"files"`
}

// readFiles reads several files, each answered on its own: its content as read-file gives it
// (at most MaxReadFilesBytes), or its refusal. The paths are a JSON array of strings.
func (e *Executor) readFiles(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, err := parseArgs(raw, []argSpec{{name: "paths", required: true}})
	if err != nil {
		return nil, auditNote{}, err
	}
	paths, ok := rawjson.Strings([]byte(args["paths"]))
	if !ok {
		return nil, auditNote{}, refusal.New(refusal.InvalidArgumentType, "argument \"paths\" must be a JSON array of paths, as text")
	}
	if len(paths) == 0 || len(paths) > MaxReadFiles {
		return nil, auditNote{}, refusal.New(refusal.InvalidArgumentRange, "read-files reads 1 to %d files at once, not %d", MaxReadFiles, len(paths))
	}
	obs := readManyObserved{Count: len(paths), Files: make([]readManyEntry, 0, len(paths))}
	var note auditNote
	for _, p := range paths {
		entry := readManyEntry{Path: p}
		r, err := e.read(ctx, p, MaxReadFilesBytes)
		if rf, ok := refusal.As(err); ok {
			entry.Refused, entry.Why = rf.Rule, rf.Why
		} else if err != nil {
			return nil, note, err
		} else {
			entry.readObserved = r
			note.Bytes += int64(r.Bytes)
		}
		obs.Files = append(obs.Files, entry)
	}
	out, err := marshal(&obs)
	return out, note, err
}

// read is read-file's reading of one file, at most limit bytes of it.
func (e *Executor) read(ctx context.Context, name string, limit int) (*readObserved, error) {
	if err := fsroot.Check(name); err != nil {
		return nil, err
	}
	data, size, err := fsroot.ReadPrefix(ctx, e.root, name, limit)
	if err != nil {
		return nil, FileRefusal(err, name)
	}
	truncated := size > int64(len(data))
	obs := &readObserved{Path: name, Size: size, Truncated: truncated, Encoding: "utf-8"}
	if text, ok := cutUTF8(data, truncated); ok {
		obs.Bytes, obs.Content = len(text), string(text)
	} else {
		obs.Bytes, obs.Encoding, obs.Content = len(data), "base64", base64.StdEncoding.EncodeToString(data)
	}
	return obs, nil
}

// lines keeps the first n lines of data (head) or the last n (tail); a final line without a
// newline counts as a line.
func lines(data []byte, n int, tail bool) []byte {
	if !tail {
		at := 0
		for i := 0; i < n; i++ {
			j := bytes.IndexByte(data[at:], '\n')
			if j < 0 {
				return data
			}
			at += j + 1
		}
		return data[:at]
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end-- // the last newline ends the last line, it does not start another
	}
	at := end
	for i := 0; i < n; i++ {
		j := bytes.LastIndexByte(data[:at], '\n')
		if j < 0 {
			return data
		}
		at = j
		if i == n-1 {
			return data[j+1:]
		}
	}
	return data
}

// readLines is read-file with head or tail: the first or last n lines of a text file, at most
// MaxReadBytes of them.
func (e *Executor) readLines(ctx context.Context, name string, n int, tail bool) (*readObserved, error) {
	var data []byte
	var size int64
	var err error
	if tail {
		st, serr := e.root.Stat(ctx, name)
		switch {
		case serr != nil:
			return nil, FileRefusal(serr, name)
		case st.Dir:
			return nil, refusal.New(refusal.IsADirectory, "%q is a folder, not a file", name)
		case st.Size > MaxTailFileBytes:
			return nil, refusal.New(refusal.FileTooLarge, "%q is %d bytes; tail reads files of at most %d bytes (head reads any)", name, st.Size, MaxTailFileBytes)
		}
		data, err = e.root.ReadFile(ctx, name)
		size = int64(len(data))
	} else {
		data, size, err = fsroot.ReadPrefix(ctx, e.root, name, MaxReadBytes)
	}
	if err != nil {
		return nil, FileRefusal(err, name)
	}
	picked := lines(data, n, tail)
	truncated := len(picked) > MaxReadBytes
	if truncated {
		picked = picked[:MaxReadBytes]
	}
	text, ok := cutUTF8(picked, truncated || (!tail && size > int64(len(data))))
	if !ok {
		return nil, refusal.New(refusal.InvalidArgument, "%q is not text, so it has no lines; read it without head or tail", name)
	}
	return &readObserved{Path: name, Size: size, Truncated: truncated, Encoding: "utf-8", Bytes: len(text), Content: string(text)}, nil
}

type mediaObserved struct {
	Path     string `json:"path"`
	MIMEType string `json:"mimeType"`
	Kind     string `json:"kind"` // "image" or "audio"
	Size     int64  `json:"size"`
	Data     string `json:"data"` // base64
}

// readMedia returns an image or audio file whole, in base64, with its type read from its bytes
// (never from its name). Anything else is refused not-media.
func (e *Executor) readMedia(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw)
	if err != nil {
		return nil, note, err
	}
	name := args["path"]
	data, size, err := fsroot.ReadPrefix(ctx, e.root, name, MaxMediaBytes)
	if err != nil {
		return nil, note, FileRefusal(err, name)
	}
	if size > int64(len(data)) {
		return nil, note, refusal.New(refusal.FileTooLarge, "%q is %d bytes; media files are read whole, at most %d bytes", name, size, MaxMediaBytes)
	}
	head := data[:min(len(data), mediaSniffBytes)]
	kind, t := sniffMedia(head)
	if t == "" {
		return nil, note, refusal.New(refusal.NotMedia, "%q is not an image or audio file its bytes say (PNG, JPEG, GIF, WebP, BMP, TIFF, ICO, HEIF, AVIF; MP3, WAV, OGG, FLAC, M4A, AMR, AIFF, MIDI); read it with read_file", name)
	}
	mt := t
	note.Bytes = size
	out, err := marshal(&mediaObserved{Path: name, MIMEType: mt, Kind: kind, Size: size, Data: base64.StdEncoding.EncodeToString(data)})
	return out, note, err
}
