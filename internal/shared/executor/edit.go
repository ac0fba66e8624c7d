package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
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
	out, err := marshal(&deleteObserved{Path: name, Deleted: true, Bytes: max(size, 0), Undoable: undoable})
	return out, note, err
}

type editObserved struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
	// Line is where the first edit begins, counted from 1.
	Line int `json:"line"`
	// Edits is how many replacements were made (or, in a dry run, would be).
	Edits int `json:"edits"`
	// DryRun reports that nothing was written: Diff says what the edits would change.
	DryRun   bool   `json:"dryRun,omitempty"`
	Diff     string `json:"diff,omitempty"`
	Clipped  bool   `json:"diffTruncated,omitempty"`
	Undoable bool   `json:"undoable"`
}

// MaxEdits bounds the replacements one edit-file makes.
const MaxEdits = 32

// textEdit is one replacement of edit-file.
type textEdit struct{ old, new string }

// editArgs reads edit-file's replacements: oldText and newText for one, or oldTexts and
// newTexts (JSON arrays of strings, as text, of one length) for several, not both.
func editArgs(args map[string]string) ([]textEdit, error) {
	_, one := args["oldText"]
	_, many := args["oldTexts"]
	switch {
	case one && many:
		return nil, refusal.New(refusal.InvalidArgument, "give oldText and newText for one replacement or oldTexts and newTexts for several, not both")
	case one:
		nt, ok := args["newText"]
		if !ok {
			return nil, refusal.New(refusal.MissingArgument, "missing required argument \"newText\" (the text to put in oldText's place)")
		}
		return []textEdit{{args["oldText"], nt}}, nil
	case many:
		olds, okOld := rawjson.Strings([]byte(args["oldTexts"]))
		news, okNew := rawjson.Strings([]byte(args["newTexts"]))
		if !okOld || !okNew {
			return nil, refusal.New(refusal.InvalidArgumentType, "oldTexts and newTexts must be JSON arrays of strings, as text")
		}
		if len(olds) != len(news) {
			return nil, refusal.New(refusal.InvalidArgument, "oldTexts has %d entries and newTexts %d; each replacement needs both", len(olds), len(news))
		}
		if len(olds) == 0 || len(olds) > MaxEdits {
			return nil, refusal.New(refusal.InvalidArgumentRange, "edit-file makes 1 to %d replacements at once, not %d", MaxEdits, len(olds))
		}
		edits := make([]textEdit, len(olds))
		for i := range olds {
			edits[i] = textEdit{olds[i], news[i]}
		}
		return edits, nil
	}
	return nil, refusal.New(refusal.MissingArgument, "missing required argument \"oldText\" (or oldTexts for several replacements)")
}

// applyEdits makes each replacement in turn, on the text as the previous ones left it: each
// oldText must occur exactly once then. It returns the result and the line of the first edit.
func applyEdits(name string, before []byte, edits []textEdit) ([]byte, int, error) {
	text, line := before, 0
	for i, ed := range edits {
		which := ""
		if len(edits) > 1 {
			which = textf.Sprintf(" (replacement %d of %d)", i+1, len(edits))
		}
		if ed.old == "" {
			return nil, 0, refusal.New(refusal.OldTextAmbiguous, "oldText%s is empty, which is everywhere in %q; give the exact text to replace", which, name)
		}
		old := []byte(ed.old)
		at := bytes.Index(text, old)
		if at < 0 {
			return nil, 0, refusal.New(refusal.OldTextNotFound, "oldText%s does not occur in %q; read the file and copy the text exactly", which, name)
		}
		// A second occurrence may overlap the first ("aa" in "aaa"), which bytes.Count does not
		// see; either way the text names more than one place.
		if bytes.Contains(text[at+1:], old) {
			return nil, 0, refusal.New(refusal.OldTextAmbiguous, "oldText%s occurs %d times in %q; include more of its surroundings so it occurs once", which, max(bytes.Count(text, old), 2), name)
		}
		if i == 0 {
			line = bytes.Count(text[:at], []byte{'\n'}) + 1
		}
		next := make([]byte, 0, len(text)-len(old)+len(ed.new))
		text = append(append(append(next, text[:at]...), ed.new...), text[at+len(old):]...)
	}
	return text, line, nil
}

// editFile replaces text in a file: each oldText must occur exactly once (in the text as the
// replacements before it left it), or nothing changes (old-text-not-found, old-text-ambiguous
// for one that repeats or is empty). With dryRun "true" it writes nothing and returns the
// unified diff of what it would change; a real edit returns it too.
func (e *Executor) editFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw, argSpec{name: "oldText"}, argSpec{name: "newText"}, argSpec{name: "oldTexts"},
		argSpec{name: "newTexts"}, argSpec{name: "dryRun", enum: []string{"true", "false"}})
	if err != nil {
		return nil, note, err
	}
	name := args["path"]
	edits, err := editArgs(args)
	if err != nil {
		return nil, note, err
	}
	limit := e.opts.MaxWriteBytes
	obs := editObserved{Path: name, Edits: len(edits), DryRun: args["dryRun"] == "true"}
	prepare := func(before []byte, existed bool) ([]byte, error) {
		if !existed {
			return nil, refusal.New(refusal.NotFound, "there is no file %q", name)
		}
		after, line, err := applyEdits(name, before, edits)
		if err != nil {
			return nil, err
		}
		if len(after) > limit {
			return nil, tooLarge(len(after), limit)
		}
		obs.Line, obs.Bytes = line, len(after)
		if len(before) <= MaxDiffInputBytes && len(after) <= MaxDiffInputBytes {
			obs.Diff, obs.Clipped = clipLines(unifiedDiff("a/"+name, "b/"+name, string(before), string(after)), MaxDiffBytes)
		}
		if obs.DryRun {
			return nil, errDryRun
		}
		return after, nil
	}
	apply := func(after []byte) error {
		if err := e.root.WriteFile(ctx, name, after); err != nil {
			return FileRefusal(err, name)
		}
		return nil
	}
	undoable, err := e.change(ctx, change{action: actionEdit, name: name, readLimit: int64(limit), prepare: prepare, apply: apply})
	if err != nil && err != errDryRun {
		return nil, note, err
	}
	obs.Undoable = undoable
	note.Bytes = int64(obs.Bytes)
	out, err := marshal(&obs)
	return out, note, err
}

// errDryRun stops a change after prepare: a dry run computes the edit and keeps nothing.
var errDryRun = errors.New("executor: dry run")

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
	out, err := marshal(&g.obs)
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
