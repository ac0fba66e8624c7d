package rematch

import (
	"strings"
	"unicode"
)

// class is a character class: a rune is in it when one of its items takes the rune, unless the
// class is negated. Under (?i) an item takes a rune when it takes any rune of the rune's case
// orbit (unicode.SimpleFold), which is how RE2 folds a class: every item is then closed under
// case folding, so negating one keeps it closed.
type class struct {
	items   []classItem
	negated bool
	fold    bool
	ascii   [2]uint64 // the verdicts for runes below 128, filled by settle
}

// classItem is a set of ranges (lo, hi pairs), or its complement when negated (\D, [:^alpha:]).
type classItem struct {
	ranges  []rune
	negated bool
}

// settle fills the ASCII verdicts, the common case of matching.
func (c *class) settle() {
	for r := rune(0); r < 128; r++ {
		if c.slow(r) {
			c.ascii[r>>6] |= 1 << (r & 63)
		}
	}
}

func (c *class) has(r rune) bool {
	if r >= 0 && r < 128 {
		return c.ascii[r>>6]&(1<<(r&63)) != 0
	}
	return c.slow(r)
}

func (c *class) slow(r rune) bool {
	in := false
	for _, it := range c.items {
		found := inRanges(it.ranges, r)
		if c.fold {
			for f := unicode.SimpleFold(r); f != r && !found; f = unicode.SimpleFold(f) {
				found = inRanges(it.ranges, f)
			}
		}
		if found != it.negated {
			in = true
			break
		}
	}
	return in != c.negated
}

func inRanges(ranges []rune, r rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] <= r && r <= ranges[i+1] {
			return true
		}
	}
	return false
}

// hasFold reports whether r has another case (a literal of it under (?i) matches its orbit).
func hasFold(r rune) bool { return unicode.SimpleFold(r) != r }

// foldEqual reports whether c is lit or in lit's case orbit.
func foldEqual(lit, c rune) bool {
	if c == lit {
		return true
	}
	for f := unicode.SimpleFold(lit); f != lit; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

var (
	digitRanges = []rune{'0', '9'}
	spaceRanges = []rune{'\t', '\n', '\f', '\r', ' ', ' '} // Perl's \s: no \v
	wordRanges  = []rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
)

// perlClass reads \d \s \w or their negations at the start of s.
func perlClass(s string) (classItem, bool) {
	if len(s) < 2 || s[0] != '\\' {
		return classItem{}, false
	}
	switch s[1] {
	case 'd', 'D':
		return classItem{ranges: digitRanges, negated: s[1] == 'D'}, true
	case 's', 'S':
		return classItem{ranges: spaceRanges, negated: s[1] == 'S'}, true
	case 'w', 'W':
		return classItem{ranges: wordRanges, negated: s[1] == 'W'}, true
	}
	return classItem{}, false
}

// posixClasses are the ASCII classes [:name:] of RE2.
var posixClasses = map[string][]rune{
	"alnum":  {'0', '9', 'A', 'Z', 'a', 'z'},
	"alpha":  {'A', 'Z', 'a', 'z'},
	"ascii":  {0, 0x7f},
	"blank":  {'\t', '\t', ' ', ' '},
	"cntrl":  {0, 0x1f, 0x7f, 0x7f},
	"digit":  digitRanges,
	"graph":  {'!', '~'},
	"lower":  {'a', 'z'},
	"print":  {' ', '~'},
	"punct":  {'!', '/', ':', '@', '[', '`', '{', '~'},
	"space":  {'\t', '\r', ' ', ' '},
	"upper":  {'A', 'Z'},
	"word":   wordRanges,
	"xdigit": {'0', '9', 'A', 'F', 'a', 'f'},
}

// posixClass reads [:name:] or [:^name:] at the start of t; found is false when t holds no
// closing ":]" (then '[' is a plain rune of the class, as in RE2).
func posixClass(t string) (it classItem, rest string, found bool, err error) {
	i := strings.Index(t[2:], ":]")
	if i < 0 {
		return classItem{}, t, false, nil
	}
	whole := t[:i+4]
	name := t[2 : i+2]
	negated := strings.HasPrefix(name, "^")
	ranges, ok := posixClasses[strings.TrimPrefix(name, "^")]
	if !ok {
		return classItem{}, t, false, errorf(whole, "not a character class RE2 knows")
	}
	return classItem{ranges: ranges, negated: negated}, t[i+4:], true, nil
}
