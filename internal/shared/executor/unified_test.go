package executor

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

// TestUnifiedDiffMatchesTheLibrary: where the change is unambiguous, diff-file's hunks are the
// ones go-udiff's Unified writes (the reference the page's build leaves out), and every diff
// turns old into new.
func TestUnifiedDiffMatchesTheLibrary(t *testing.T) {
	t.Parallel()
	many := func(n int, prefix string) string {
		var sb strings.Builder
		for i := range n {
			sb.WriteString(prefix + strconv.Itoa(i) + "\n")
		}
		return sb.String()
	}
	tests := []struct{ name, old, new string }{
		{"one line changed", "one\ntwo\nthree\n", "one\nTWO\nthree\n"},
		{"from nothing", "", "hello\nworld\n"},
		{"to nothing", "a\nb\n", ""},
		{"a line added at the end", "a\nb\n", "a\nb\nc\n"},
		{"a line added at the start", "a\nb\n", "z\na\nb\n"},
		{"the last newline removed", "a\nb\n", "a\nb"},
		{"the last newline added", "a\nb", "a\nb\n"},
		{"no newline either side", "a", "b"},
		{"two hunks far apart", many(40, "l"), strings.Replace(strings.Replace(many(40, "l"), "l3\n", "L3\n", 1), "l33\n", "L33\n", 1)},
		{"two changes merged in one hunk", many(40, "l"), strings.Replace(strings.Replace(many(40, "l"), "l10\n", "X\n", 1), "l15\n", "Y\n", 1)},
		{"a line deleted in the middle", many(20, "l"), strings.Replace(many(20, "l"), "l9\n", "", 1)},
		{"a line inserted in the middle", many(20, "l"), strings.Replace(many(20, "l"), "l9\n", "l9\nnew\n", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := unifiedDiff("a/f", "b/f", tt.old, tt.new)
			if want := udiff.Unified("a/f", "b/f", tt.old, tt.new); got != want {
				t.Errorf("diff\n%s\nwant (go-udiff)\n%s", got, want)
			}
			if err := checkApplies(got, tt.old, tt.new); err != nil {
				t.Errorf("%v in\n%s", err, got)
			}
		})
	}
}

// FuzzUnifiedDiff: any diff unifiedDiff writes turns old into new, line for line, and is empty
// exactly when they are equal.
func FuzzUnifiedDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("", "x")
	f.Add("x\ny", "x\ny\n")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n2\nthree\n4\n5\n6\n7\n8\n9\nten\n11\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		d := unifiedDiff("a/f", "b/f", old, new)
		if (d == "") != (old == new) {
			t.Fatalf("diff %q of %q and %q", d, old, new)
		}
		if err := checkApplies(d, old, new); err != nil {
			t.Fatalf("%v: diff %q of %q and %q", err, d, old, new)
		}
	})
}

// checkApplies applies the unified diff d to old, checking every context and removed line and
// each hunk's header, and compares the result with new.
func checkApplies(d, old, new string) error {
	if d == "" {
		if old != new {
			return fmt.Errorf("empty diff of different texts")
		}
		return nil
	}
	a := splitLinesKeep(old)
	lines := strings.SplitAfter(d, "\n")
	if len(lines) < 3 || lines[0] != "--- a/f\n" || lines[1] != "+++ b/f\n" {
		return fmt.Errorf("bad headers")
	}
	var out strings.Builder
	at, i := 0, 2
	for i < len(lines) && lines[i] != "" {
		var aStart, aCount, bStart, bCount int
		if err := parseHunkHeader(lines[i], &aStart, &aCount, &bStart, &bCount); err != nil {
			return err
		}
		if aCount > 0 {
			aStart-- // 1-based; an empty side names the line before
		}
		if aStart < at {
			return fmt.Errorf("hunk %q overlaps the one before", lines[i])
		}
		for ; at < aStart; at++ {
			out.WriteString(a[at])
		}
		i++
		seenA, seenB := 0, 0
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@") {
			mark, text := lines[i][0], lines[i][1:]
			i++
			if i < len(lines) && lines[i] == "\\ No newline at end of file\n" {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			if mark == ' ' || mark == '-' {
				if at >= len(a) || a[at] != text {
					return fmt.Errorf("line %d of old is not %q", at+1, text)
				}
				at++
				seenA++
			}
			if mark == ' ' || mark == '+' {
				out.WriteString(text)
				seenB++
			}
		}
		if seenA != aCount || seenB != bCount {
			return fmt.Errorf("hunk counts %d,%d, lines %d,%d", aCount, bCount, seenA, seenB)
		}
	}
	for ; at < len(a); at++ {
		out.WriteString(a[at])
	}
	if out.String() != new {
		return fmt.Errorf("applied, it gives %q", out.String())
	}
	return nil
}

func parseHunkHeader(h string, aStart, aCount, bStart, bCount *int) error {
	side := func(s string, start, count *int) error {
		n, c, found := strings.Cut(s, ",")
		*count = 1
		var err error
		if *start, err = strconv.Atoi(n); err != nil {
			return err
		}
		if found {
			*count, err = strconv.Atoi(c)
		}
		return err
	}
	f := strings.Fields(h)
	if len(f) != 4 || f[0] != "@@" || f[3] != "@@" || f[1][0] != '-' || f[2][0] != '+' {
		return fmt.Errorf("bad hunk header %q", h)
	}
	if err := side(f[1][1:], aStart, aCount); err != nil {
		return err
	}
	return side(f[2][1:], bStart, bCount)
}

// TestUnifiedDiffPastTheBoundStillApplies: when more than MaxDiffEdits lines differ, the search
// stops and the span between the first and the last difference is one change, still a diff that
// turns old into new, with the unchanged lines around it kept as context.
func TestUnifiedDiffPastTheBoundStillApplies(t *testing.T) {
	t.Parallel()
	var old, new strings.Builder
	old.WriteString("head\n")
	new.WriteString("head\n")
	for i := range MaxDiffEdits {
		fmt.Fprintf(&old, "old %d\n", i)
		fmt.Fprintf(&new, "new %d\n", i)
	}
	old.WriteString("tail\n")
	new.WriteString("tail\n")
	if blocks := lineDiff(splitLinesKeep(old.String()), splitLinesKeep(new.String())); len(blocks) != 1 || blocks[0] != (diffBlock{1, MaxDiffEdits + 1, 1, MaxDiffEdits + 1}) {
		t.Fatalf("lineDiff past the bound = %v, want the one block between head and tail", blocks)
	}
	d := unifiedDiff("a/f", "b/f", old.String(), new.String())
	if err := checkApplies(d, old.String(), new.String()); err != nil {
		t.Fatal(err)
	}
}
