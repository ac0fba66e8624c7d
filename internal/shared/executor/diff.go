package executor

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of diff-file.
const (
	// MaxDiffInputBytes bounds each side of a comparison: the file on disk and the proposed
	// content. A larger file or proposal is refused diff-too-large, so one call never holds or
	// compares more than this twice.
	MaxDiffInputBytes = 256 << 10
	// MaxDiffBytes bounds the unified diff returned; a longer one is cut at a line and flagged
	// truncated. It fits an answer frame even escaped.
	MaxDiffBytes = 64 << 10
)

type diffObserved struct {
	Path      string `json:"path"`
	Existed   bool   `json:"existed"`
	Changed   bool   `json:"changed"`
	Diff      string `json:"diff"`
	Truncated bool   `json:"truncated"`
}

// diffFile compares proposed content with a file as it is now and writes nothing: a unified diff
// (headers a/PATH and b/PATH, three lines of context) of what write-file would change. A file that
// does not exist compares as empty, as in the original Voicebox; identical content is an empty
// diff with changed false.
func (e *Executor) diffFile(ctx context.Context, raw json.RawMessage) (json.RawMessage, auditNote, error) {
	args, note, err := pathArgs(raw, argSpec{name: "content", required: true})
	if err != nil {
		return nil, note, err
	}
	name, proposed := args["path"], args["content"]
	if len(proposed) > MaxDiffInputBytes {
		return nil, note, refusal.New(refusal.DiffTooLarge, "the proposed content is %d bytes; diff-file compares at most %d bytes a side", len(proposed), MaxDiffInputBytes)
	}
	current, size, err := fsroot.ReadPrefix(ctx, e.root, name, MaxDiffInputBytes)
	existed := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
		current = nil
	case err != nil:
		return nil, note, FileRefusal(err, name)
	case size > int64(len(current)):
		return nil, note, refusal.New(refusal.DiffTooLarge, "%s is %d bytes; diff-file compares at most %d bytes a side", name, size, MaxDiffInputBytes)
	}
	obs := diffObserved{Path: name, Existed: existed, Changed: string(current) != proposed || !existed && proposed != ""}
	if string(current) != proposed {
		d := unifiedDiff("a/"+name, "b/"+name, string(current), proposed)
		obs.Diff, obs.Truncated = clipLines(d, MaxDiffBytes)
	}
	note.Bytes = int64(len(proposed))
	out, err := marshal(&obs)
	return out, note, err
}

// clipLines cuts s to at most n bytes, at the end of a line when there is one.
func clipLines(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := s[:n]
	for i := len(cut) - 1; i >= 0; i-- {
		if cut[i] == '\n' {
			return cut[:i+1], true
		}
	}
	return cut, true
}
