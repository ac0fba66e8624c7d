package executor

import (
	"strconv"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// DiffContextLines is how many unchanged lines a hunk of diff-file's unified diff shows around
// each change, as diff -u does.
const DiffContextLines = 3

// unifiedDiff returns the unified diff that turns old into new, in the form of GNU diff -u
// (headers oldLabel and newLabel, DiffContextLines of context, "\ No newline at end of file" after
// a last line without one), or "" when they are equal. The lines are matched by go-udiff's lcs
// package, whose search is bounded; the hunks are written here because the package's own Unified
// keeps a package-level regular expression (for its patch parser) that links regexp into the
// page's wasm, about 100 KB of brotli.
func unifiedDiff(oldLabel, newLabel, old, new string) string {
	a, b := splitLinesKeep(old), splitLinesKeep(new)
	diffs := lcs.DiffLines(a, b)
	if len(diffs) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("--- " + oldLabel + "\n+++ " + newLabel + "\n")
	for i := 0; i < len(diffs); {
		// A hunk holds the changes whose unchanged gaps are at most twice the context.
		j := i
		for j+1 < len(diffs) && diffs[j+1].Start-diffs[j].End <= 2*DiffContextLines {
			j++
		}
		aStart := max(diffs[i].Start-DiffContextLines, 0)
		aEnd := min(diffs[j].End+DiffContextLines, len(a))
		bStart := diffs[i].ReplStart - (diffs[i].Start - aStart)
		bEnd := diffs[j].ReplEnd + (aEnd - diffs[j].End)
		sb.WriteString("@@ -" + hunkRange(aStart, aEnd-aStart) + " +" + hunkRange(bStart, bEnd-bStart) + " @@\n")
		at := aStart
		for _, d := range diffs[i : j+1] {
			for ; at < d.Start; at++ {
				writeDiffLine(&sb, ' ', a[at])
			}
			for _, l := range a[d.Start:d.End] {
				writeDiffLine(&sb, '-', l)
			}
			for _, l := range b[d.ReplStart:d.ReplEnd] {
				writeDiffLine(&sb, '+', l)
			}
			at = d.End
		}
		for ; at < aEnd; at++ {
			writeDiffLine(&sb, ' ', a[at])
		}
		i = j + 1
	}
	return sb.String()
}

// hunkRange writes a hunk's side as diff -u does: the first line (1-based) and the count, the
// count left out when it is 1, and an empty side named by the line before it.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(count)
}

// writeDiffLine writes one line of a hunk after its mark; a line without a newline (the last of
// its file) is followed by diff's note that says so.
func writeDiffLine(sb *strings.Builder, mark byte, line string) {
	sb.WriteByte(mark)
	sb.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		sb.WriteString("\n\\ No newline at end of file\n")
	}
}

// splitLinesKeep splits s into lines that keep their newline; the last has none when s does not
// end with one, and an empty s has no lines.
func splitLinesKeep(s string) []string {
	var lines []string
	for s != "" {
		i := strings.IndexByte(s, '\n') + 1
		if i == 0 {
			i = len(s)
		}
		lines = append(lines, s[:i])
		s = s[i:]
	}
	return lines
}
