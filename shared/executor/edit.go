package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of grep-files.
const (
	// MaxGrepMatches is the most matching lines grep-files returns; past it the search stops and
	// is flagged truncated.
	MaxGrepMatches = 100
	// MaxGrepFiles is the most files one search reads; past it the search stops, truncated.
	MaxGrepFiles = 2000
	// MaxGrepFileBytes is how much of each file is searched; the rest of a longer file is not.
	MaxGrepFileBytes = 1 << 20
	// MaxGrepLineBytes bounds a matching line as returned; a longer one is cut (at a character).
	MaxGrepLineBytes = 240
	// MaxGrepDirs is the most folders one search reads; past it the search stops, truncated.
	// Empty folders cost no file, and folder links that lead back up (which a disk may hold)
	// would otherwise be walked again at every depth.
	MaxGrepDirs = 2000
	// MaxGrepDuration bounds one search by the executor's clock; past it the search stops,
	// truncated, so its answer comes well within the relay's wait for a call.
	MaxGrepDuration = 10 * time.Second
)

func primitiveList() string {
	names := make([]string, 0, 8)
	for _, p := range Primitives() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

type deleteObserved struct {
	Path     string `json:"path"`
	Deleted  bool   `json:"deleted"`
	Bytes    int64  `json:"bytes"`
	Undoable bool   `json:"undoable"`
}

// deleteFile removes one file (never a folder), keeping it in the history first.
func (e *Executor) deleteFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw)
	if err != nil {
		return nil, note, err
	}
	name := args["path"]
	if _, err := e.root.Stat(ctx, name); err != nil {
		return nil, note, FileRefusal(err, name)
	}
	var size int64
	prepare := func(before []byte, existed bool) ([]byte, error) {
		if !existed {
			return nil, refusal.New(refusal.NotFound, "there is no file %q", name)
		}
		size = int64(len(before))
		return nil, nil
	}
	apply := func([]byte) error {
		if err := e.root.Remove(ctx, name); err != nil {
			return FileRefusal(err, name)
		}
		return nil
	}
	undoable, err := e.change(ctx, change{action: actionDelete, name: name, prepare: prepare, apply: apply})
	if err != nil {
		return nil, note, err
	}
	if !undoable {
		size = -1 // unknown: nothing read it
	}
	note.Bytes = max(size, 0)
	out, err := marshal(deleteObserved{Path: name, Deleted: true, Bytes: max(size, 0), Undoable: undoable})
	return out, note, err
}

type editObserved struct {
	Path     string `json:"path"`
	Bytes    int    `json:"bytes"`
	Line     int    `json:"line"`
	Undoable bool   `json:"undoable"`
}

// editFile replaces the one occurrence of oldText in a file with newText. Nothing changes when
// oldText occurs nowhere (old-text-not-found) or more than once, or is empty
// (old-text-ambiguous).
func (e *Executor) editFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw, argSpec{name: "oldText", required: true}, argSpec{name: "newText", required: true})
	if err != nil {
		return nil, note, err
	}
	name, oldText, newText := args["path"], args["oldText"], args["newText"]
	if oldText == "" {
		return nil, note, refusal.New(refusal.OldTextAmbiguous, "oldText is empty, which is everywhere in %q; give the exact text to replace", name)
	}
	limit := e.opts.MaxWriteBytes
	var line, size int
	prepare := func(before []byte, existed bool) ([]byte, error) {
		if !existed {
			return nil, refusal.New(refusal.NotFound, "there is no file %q", name)
		}
		old := []byte(oldText)
		at := bytes.Index(before, old)
		if at < 0 {
			return nil, refusal.New(refusal.OldTextNotFound, "oldText does not occur in %q; read the file and copy the text exactly", name)
		}
		// A second occurrence may overlap the first ("aa" in "aaa"), which bytes.Count does not
		// see; either way the text names more than one place.
		if bytes.Contains(before[at+1:], old) {
			return nil, refusal.New(refusal.OldTextAmbiguous, "oldText occurs %d times in %q; include more of its surroundings so it occurs once", max(bytes.Count(before, old), 2), name)
		}
		after := make([]byte, 0, len(before)-len(old)+len(newText))
		after = append(append(append(after, before[:at]...), newText...), before[at+len(old):]...)
		if len(after) > limit {
			return nil, tooLarge(len(after), limit)
		}
		line, size = bytes.Count(before[:at], []byte{'\n'})+1, len(after)
		return after, nil
	}
	apply := func(after []byte) error {
		if err := e.root.WriteFile(ctx, name, after); err != nil {
			return FileRefusal(err, name)
		}
		return nil
	}
	undoable, err := e.change(ctx, change{action: actionEdit, name: name, readLimit: int64(limit), prepare: prepare, apply: apply})
	if err != nil {
		return nil, note, err
	}
	note.Bytes = int64(size)
	out, err := marshal(editObserved{Path: name, Bytes: size, Line: line, Undoable: undoable})
	return out, note, err
}

type grepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type grepObserved struct {
	Query         string      `json:"query"`
	Dir           string      `json:"dir"`
	Count         int         `json:"count"`
	Truncated     bool        `json:"truncated"`
	FilesSearched int         `json:"filesSearched"`
	Matches       []grepMatch `json:"matches"`
}

// grepFiles looks for a piece of text, ignoring case, in the text files under dir (the first
// MaxGrepFileBytes of each; files that are not UTF-8 text are passed over), folders in name
// order, and returns the matching lines.
func (e *Executor) grepFiles(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, err := parseArgs(raw, []argSpec{{name: "query", required: true}, {name: "dir"}})
	if err != nil {
		return nil, auditNote{}, err
	}
	query, dir := args["query"], args["dir"]
	note := auditNote{Path: dir}
	if query == "" {
		return nil, note, refusal.New(refusal.InvalidArgumentLength, "query is empty; give the text to look for")
	}
	if err := fsroot.CheckDir(dir); err != nil {
		return nil, note, err
	}
	g := grep{e: e, needle: strings.ToLower(query), deadline: e.opts.Clock().Add(MaxGrepDuration),
		obs: grepObserved{Query: query, Dir: dir, Matches: []grepMatch{}}}
	if err := g.walk(ctx, dir, true); err != nil {
		return nil, note, err
	}
	g.obs.Count = len(g.obs.Matches)
	note.Bytes = int64(g.obs.Count)
	out, err := marshal(g.obs)
	return out, note, err
}

type grep struct {
	e        *Executor
	needle   string
	deadline time.Time
	dirs     int
	obs      grepObserved
	done     bool
}

// spent reports, and records, that the search reached its folder or time bound.
func (g *grep) spent() bool {
	if g.dirs >= MaxGrepDirs || g.e.opts.Clock().After(g.deadline) {
		g.obs.Truncated, g.done = true, true
	}
	return g.done
}

func (g *grep) walk(ctx context.Context, dir string, top bool) error {
	if !top && g.spent() {
		return nil
	}
	g.dirs++
	entries, err := g.e.root.ReadDir(ctx, dir)
	if err != nil {
		if top {
			return FileRefusal(err, dir)
		}
		return nil // a folder that vanished or cannot be read is passed over
	}
	for _, en := range entries {
		if g.done {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		p := en.Name
		if dir != "" {
			p = dir + "/" + en.Name
		}
		if en.Dir {
			if fsroot.Check(p+"/x") == nil { // a folder too deep to hold a file is not entered
				if err := g.walk(ctx, p, false); err != nil {
					return err
				}
			}
			continue
		}
		if g.obs.FilesSearched >= MaxGrepFiles {
			g.obs.Truncated, g.done = true, true
			return nil
		}
		if g.spent() {
			return nil
		}
		g.obs.FilesSearched++
		data, _, err := fsroot.ReadPrefix(ctx, g.e.root, p, MaxGrepFileBytes)
		if err != nil {
			continue
		}
		text, ok := cutUTF8(data, len(data) == MaxGrepFileBytes)
		if !ok || bytes.IndexByte(text, 0) >= 0 {
			continue
		}
		g.search(p, string(text))
	}
	return nil
}

func (g *grep) search(p, text string) {
	for n := 1; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		if !strings.Contains(strings.ToLower(line), g.needle) {
			continue
		}
		if len(g.obs.Matches) >= MaxGrepMatches {
			g.obs.Truncated, g.done = true, true
			return
		}
		g.obs.Matches = append(g.obs.Matches, grepMatch{Path: p, Line: n, Text: clipAt(strings.TrimRight(line, "\r"), MaxGrepLineBytes)})
	}
}
