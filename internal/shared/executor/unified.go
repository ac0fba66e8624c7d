package executor

import (
	"strconv"
	"strings"
)

// DiffContextLines is how many unchanged lines a hunk of diff-file's unified diff shows around
// each change, as diff -u does.
const DiffContextLines = 3

// unifiedDiff returns the unified diff that turns old into new, in the form of GNU diff -u
// (headers oldLabel and newLabel, DiffContextLines of context, "\ No newline at end of file" after
// a last line without one), or "" when they are equal. The lines are matched by lineDiff; the
// hunks are written here as go-udiff's Unified writes them (its tests' reference), whose package
// would link regexp into the page's wasm, and its lcs package log with it.
func unifiedDiff(oldLabel, newLabel, old, new string) string {
	a, b := splitLinesKeep(old), splitLinesKeep(new)
	diffs := lineDiff(a, b)
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

// MaxDiffEdits bounds the search of diff-file's line matching: past this many lines deleted and
// inserted between the first and the last difference, the whole span between them is written as
// one change (still a diff that turns old into new). The search keeps one row of at most
// 2*MaxDiffEdits+1 positions per edit, so this also bounds its memory: about 1 MB at 500.
const MaxDiffEdits = 500

// diffBlock is one change: a[Start:End] is replaced by b[ReplStart:ReplEnd].
type diffBlock struct{ Start, End, ReplStart, ReplEnd int }

// lineDiff returns the changes that turn a into b, in order, with the fewest lines deleted and
// inserted (Myers' greedy search of the edit graph) when that number is at most MaxDiffEdits.
// Written here rather than taken from go-udiff's lcs package, whose log.Fatalf links the log
// package and os's file writer into the page's wasm (19 KB of brotli with the package itself,
// measured 2026-12-05).
func lineDiff(a, b []string) []diffBlock {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	a, b = a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	var out []diffBlock
	x, y := 0, 0 // how far out reaches in a and b
	for _, m := range matchLines(a, b) {
		if m[0] > x || m[1] > y {
			out = append(out, diffBlock{pre + x, pre + m[0], pre + y, pre + m[1]})
		}
		x, y = m[0]+1, m[1]+1
	}
	if x < len(a) || y < len(b) {
		out = append(out, diffBlock{pre + x, pre + len(a), pre + y, pre + len(b)})
	}
	return out
}

// matchLines returns the pairs (i, j) with a[i] == b[j] that a shortest edit script keeps, in
// order, or none when that script is longer than MaxDiffEdits.
func matchLines(a, b []string) [][2]int {
	n, m := len(a), len(b)
	limit := min(n+m, MaxDiffEdits)
	// v[limit+k] is the furthest x reached on diagonal k (y = x-k); trace[d] is v's row for
	// -d <= k <= d as it stood before step d, which the walk back reads.
	v := make([]int32, 2*limit+3)
	var trace [][]int32
	for d := 0; d <= limit; d++ {
		trace = append(trace, append([]int32(nil), v[limit-d:limit+d+1]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[limit+k-1] < v[limit+k+1] {
				x = int(v[limit+k+1]) // down: b[y-1] inserted
			} else {
				x = int(v[limit+k-1]) + 1 // right: a[x-1] deleted
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[limit+k] = int32(x)
			if x >= n && y >= m {
				return walkBack(trace, n, m)
			}
		}
	}
	return nil
}

// walkBack follows the search's rows from (n, m) back to (0, 0) and returns the diagonal moves
// it passes, in order.
func walkBack(trace [][]int32, n, m int) [][2]int {
	var rev [][2]int
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		px, py := 0, 0
		if d > 0 {
			row := trace[d] // row[k+d] is how far diagonal k reached before step d
			k := x - y
			pk := k - 1 // step d deleted a[px]
			if k == -d || k != d && row[k-1+d] < row[k+1+d] {
				pk = k + 1 // step d inserted b[py]
			}
			px = int(row[pk+d])
			py = px - pk
		}
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, [2]int{x, y})
		}
		x, y = px, py
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
