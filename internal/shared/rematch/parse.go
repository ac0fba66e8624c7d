package rematch

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// MaxRepeat bounds a repetition count ({n}, {n,}, {n,m}) and the product of nested counts, as
	// RE2 bounds them.
	MaxRepeat = 1000
	// maxNesting bounds how deep groups nest, so the parser's recursion is bounded whatever the
	// pattern's length (RE2 bounds it at 1000 too).
	maxNesting = 1000
)

// Error is a pattern Compile refuses: Construct names what in it (a piece of the pattern) and
// Why says what is wrong with it.
type Error struct {
	Why       string
	Construct string
}

func (e *Error) Error() string {
	if e.Construct == "" {
		return "rematch: " + e.Why
	}
	return "rematch: " + e.Why + ": `" + e.Construct + "`"
}

type nodeKind uint8

const (
	nLiteral nodeKind = iota // r, fold
	nClass                   // class
	nAny                     // any rune; nl says whether '\n' too
	nAssert                  // assert
	nConcat                  // subs
	nAlt                     // subs
	nRepeat                  // subs[0], min, max (-1: no upper bound)
	nEmpty                   // matches the empty string
)

// node is one piece of a parsed pattern.
type node struct {
	kind     nodeKind
	r        rune
	fold     bool
	nl       bool
	assert   assertion
	class    *class
	subs     []*node
	min, max int
}

// assertion is an empty-width condition, a set of bits of position context that must hold.
type assertion uint8

const (
	atBeginText assertion = 1 << iota
	atEndText
	atBeginLine
	atEndLine
	atWordBoundary
	atNoWordBoundary
)

type flags uint8

const (
	flagFold     flags = 1 << iota // (?i)
	flagMultLine                   // (?m): ^ and $ at line ends
	flagDotNL                      // (?s): . matches \n
	flagUngreedy                   // (?U): no effect on a verdict
)

// parser reads a pattern by recursive descent; s is what is left of it.
type parser struct {
	s     string
	depth int
	names map[string]bool
}

func errorf(construct, why string) error { return &Error{Why: why, Construct: construct} }

func parse(pattern string) (*node, error) {
	if !utf8.ValidString(pattern) {
		return nil, errorf("", "the pattern is not valid UTF-8")
	}
	p := &parser{s: pattern}
	n, err := p.alternation(0)
	if err != nil {
		return nil, err
	}
	if p.s != "" { // only a ')' stops alternation before the end
		return nil, errorf(p.s[:1], "unexpected )")
	}
	return n, nil
}

// alternation reads alternatives separated by | up to a ')' or the end. Flags set by (?flags)
// hold to the end of the group, across |, as RE2 reads them.
func (p *parser) alternation(f flags) (*node, error) {
	var alts []*node
	for {
		seq, nf, err := p.sequence(f)
		if err != nil {
			return nil, err
		}
		f = nf
		alts = append(alts, seq)
		if p.s == "" || p.s[0] != '|' {
			break
		}
		p.s = p.s[1:]
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &node{kind: nAlt, subs: alts}, nil
}

// sequence reads atoms with their quantifiers up to a '|', a ')' or the end.
func (p *parser) sequence(f flags) (*node, flags, error) {
	var items []*node
	quantifiable := false // whether the last item may take a quantifier
	quantified := false   // whether the last thing read was a quantifier
	for p.s != "" && p.s[0] != '|' && p.s[0] != ')' {
		start := p.s
		if lo, hi, rest, ok, err := quantifier(p.s); err != nil {
			return nil, f, err
		} else if ok {
			op := start[:len(start)-len(rest)]
			if quantified {
				return nil, f, errorf(op, "a quantifier cannot follow a quantifier")
			}
			if !quantifiable {
				return nil, f, errorf(op, "the quantifier has nothing before it to repeat")
			}
			if strings.HasPrefix(rest, "?") { // lazy: the same verdict
				rest = rest[1:]
			}
			last := items[len(items)-1]
			if (lo > 1 || hi > 1) && product(last)*max(lo, hi) > MaxRepeat {
				return nil, f, errorf(op, "a repetition count is over the bound of "+strconv.Itoa(MaxRepeat)+" (nested counts multiply)")
			}
			items[len(items)-1] = &node{kind: nRepeat, subs: []*node{last}, min: lo, max: hi}
			p.s = rest
			quantified = true
			continue
		}
		quantified = false
		n, nf, err := p.atom(f)
		if err != nil {
			return nil, f, err
		}
		f = nf
		if n == nil { // a flag group: nothing to repeat
			quantifiable = false
			continue
		}
		items = append(items, n...)
		quantifiable = len(n) > 0
	}
	switch len(items) {
	case 0:
		return &node{kind: nEmpty}, f, nil
	case 1:
		return items[0], f, nil
	}
	return &node{kind: nConcat, subs: items}, f, nil
}

// product is the largest count of the repetitions nested in n, multiplied down: RE2 refuses a
// pattern whose nested counts multiply past MaxRepeat.
func product(n *node) int {
	best := 1
	for _, s := range n.subs {
		best = max(best, product(s))
	}
	if n.kind == nRepeat {
		best *= max(n.min, n.max, 1)
	}
	return best
}

// quantifier reads *, +, ? or a counted repetition at the start of s. A '{' that does not open
// a well-formed count is a literal, as in RE2.
func quantifier(s string) (min, max int, rest string, ok bool, err error) {
	switch s[0] {
	case '*':
		return 0, -1, s[1:], true, nil
	case '+':
		return 1, -1, s[1:], true, nil
	case '?':
		return 0, 1, s[1:], true, nil
	case '{':
	default:
		return 0, 0, s, false, nil
	}
	t := s[1:]
	if len(t) > 1 && t[0] == '0' && '0' <= t[1] && t[1] <= '9' {
		return 0, 0, s, false, errorf(s[:2], "a repetition count with a leading zero (RE2 would read the brace as a literal); write \\{ for a brace")
	}
	lo, t, ok := number(t)
	if !ok {
		return 0, 0, s, false, nil
	}
	hi := lo
	if strings.HasPrefix(t, ",") {
		t = t[1:]
		hi = -1
		if t != "" && t[0] != '}' {
			if hi, t, ok = number(t); !ok {
				return 0, 0, s, false, nil
			}
		}
	}
	if !strings.HasPrefix(t, "}") {
		return 0, 0, s, false, nil
	}
	op := s[:len(s)-len(t)+1]
	if lo < 0 || hi < -1 || lo > MaxRepeat || hi > MaxRepeat || hi >= 0 && lo > hi {
		return 0, 0, s, false, errorf(op, "the repetition count is not between 0 and "+strconv.Itoa(MaxRepeat)+" (or its bounds are reversed)")
	}
	return lo, hi, t[1:], true, nil
}

// number reads decimal digits, failing on a leading zero (RE2 would read the brace as a
// literal, a meaning no schema intends); more than 7 digits read as an overlong count.
func number(s string) (int, string, bool) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 1 && s[0] == '0' {
		return 0, s, false
	}
	if i > 7 {
		return MaxRepeat + 1, s[i:], true
	}
	n, _ := strconv.Atoi(s[:i])
	return n, s[i:], true
}

// atom reads one atom; it returns no nodes for a flag group and several for \Q...\E.
func (p *parser) atom(f flags) ([]*node, flags, error) {
	c, w := utf8.DecodeRuneInString(p.s)
	switch c {
	case '(':
		n, nf, err := p.group(f)
		if err != nil || n == nil {
			return nil, nf, err
		}
		return []*node{n}, nf, nil
	case '[':
		cl, err := p.bracket(f)
		if err != nil {
			return nil, f, err
		}
		return []*node{{kind: nClass, class: cl}}, f, nil
	case '.':
		p.s = p.s[1:]
		return []*node{{kind: nAny, nl: f&flagDotNL != 0}}, f, nil
	case '^':
		p.s = p.s[1:]
		if f&flagMultLine != 0 {
			return []*node{{kind: nAssert, assert: atBeginLine}}, f, nil
		}
		return []*node{{kind: nAssert, assert: atBeginText}}, f, nil
	case '$':
		p.s = p.s[1:]
		if f&flagMultLine != 0 {
			return []*node{{kind: nAssert, assert: atEndLine}}, f, nil
		}
		return []*node{{kind: nAssert, assert: atEndText}}, f, nil
	case '\\':
		return p.escapeAtom(f)
	}
	p.s = p.s[w:]
	return []*node{literal(c, f)}, f, nil
}

func literal(c rune, f flags) *node {
	return &node{kind: nLiteral, r: c, fold: f&flagFold != 0 && hasFold(c)}
}

func (p *parser) escapeAtom(f flags) ([]*node, flags, error) {
	if len(p.s) < 2 {
		return nil, f, errorf(`\`, "the pattern ends with a lone backslash")
	}
	switch p.s[1] {
	case 'A':
		p.s = p.s[2:]
		return []*node{{kind: nAssert, assert: atBeginText}}, f, nil
	case 'z':
		p.s = p.s[2:]
		return []*node{{kind: nAssert, assert: atEndText}}, f, nil
	case 'b':
		p.s = p.s[2:]
		return []*node{{kind: nAssert, assert: atWordBoundary}}, f, nil
	case 'B':
		p.s = p.s[2:]
		return []*node{{kind: nAssert, assert: atNoWordBoundary}}, f, nil
	case 'Q':
		lit, rest, _ := strings.Cut(p.s[2:], `\E`)
		p.s = rest
		var out []*node
		for _, c := range lit {
			out = append(out, literal(c, f))
		}
		return out, f, nil
	}
	if it, ok := perlClass(p.s); ok {
		p.s = p.s[2:]
		return []*node{{kind: nClass, class: &class{items: []classItem{it}, fold: f&flagFold != 0}}}, f, nil
	}
	c, err := p.escape()
	if err != nil {
		return nil, f, err
	}
	return []*node{literal(c, f)}, f, nil
}

// escape reads an escape that stands for one rune (p.s starts with the backslash).
func (p *parser) escape() (rune, error) {
	if len(p.s) < 2 {
		return 0, errorf(`\`, "the pattern ends with a lone backslash")
	}
	c, w := utf8.DecodeRuneInString(p.s[1:])
	esc := p.s[:1+w]
	rest := p.s[1+w:]
	switch c {
	case 'a':
		p.s = rest
		return '\a', nil
	case 'f':
		p.s = rest
		return '\f', nil
	case 't':
		p.s = rest
		return '\t', nil
	case 'n':
		p.s = rest
		return '\n', nil
	case 'r':
		p.s = rest
		return '\r', nil
	case 'v':
		p.s = rest
		return '\v', nil
	case 'x':
		return p.hexEscape(rest)
	case 'p', 'P':
		return 0, errorf(esc, "Unicode classes (\\p, \\P) are not matched by the host; write the class out, e.g. [a-zA-Z]")
	}
	if '0' <= c && c <= '9' {
		return 0, errorf(esc, "backreferences and octal escapes are not matched by the host; write \\xHH for a byte")
	}
	if c < utf8.RuneSelf && !isAlnum(byte(c)) {
		p.s = rest
		return c, nil
	}
	return 0, errorf(esc, "not an escape RE2 knows")
}

func (p *parser) hexEscape(rest string) (rune, error) {
	if strings.HasPrefix(rest, "{") {
		end := strings.IndexByte(rest, '}')
		digits := ""
		if end > 0 {
			digits = rest[1:end]
		}
		v, err := strconv.ParseUint(digits, 16, 32)
		if end < 0 || digits == "" || err != nil || v > utf8.MaxRune {
			return 0, errorf(`\x`+rest[:min(len(rest), max(end+1, 1))], "not a hexadecimal escape of a code point")
		}
		p.s = rest[end+1:]
		return rune(v), nil
	}
	if len(rest) >= 2 && isHex(rest[0]) && isHex(rest[1]) {
		v, _ := strconv.ParseUint(rest[:2], 16, 8)
		p.s = rest[2:]
		return rune(v), nil
	}
	return 0, errorf(`\x`+rest[:min(len(rest), 2)], "\\x takes two hexadecimal digits or {digits}")
}

// group reads a parenthesised group or a flag group (no node, the flags changed).
func (p *parser) group(f flags) (*node, flags, error) {
	start := p.s
	t := p.s[1:]
	inner := f
	if strings.HasPrefix(t, "?") {
		switch {
		case strings.HasPrefix(t, "?P<") || strings.HasPrefix(t, "?<") && !strings.HasPrefix(t, "?<=") && !strings.HasPrefix(t, "?<!"):
			t = t[strings.IndexByte(t, '<')+1:]
			end := strings.IndexByte(t, '>')
			if end < 0 || !validName(t[:end]) {
				return nil, f, errorf(start[:min(len(start), 16)], "a group's name must be letters, digits and _, closed by >")
			}
			if p.names[t[:end]] {
				return nil, f, errorf(t[:end], "two groups have the same name")
			}
			if p.names == nil {
				p.names = map[string]bool{}
			}
			p.names[t[:end]] = true
			t = t[end+1:]
		default:
			nf, rest, open, err := flagGroup(t[1:], f)
			if err != nil {
				return nil, f, err
			}
			if !open {
				p.s = rest
				return nil, nf, nil
			}
			inner, t = nf, rest
		}
	}
	p.depth++
	if p.depth > maxNesting {
		return nil, f, errorf("(", "groups nest deeper than "+strconv.Itoa(maxNesting))
	}
	p.s = t
	n, err := p.alternation(inner)
	if err != nil {
		return nil, f, err
	}
	if p.s == "" {
		return nil, f, errorf(start, "a group is not closed: missing )")
	}
	p.s = p.s[1:]
	p.depth--
	return n, f, nil
}

// flagGroup reads what follows "(?": flags, then ')' (they hold on) or ':' (a group with them).
func flagGroup(t string, f flags) (flags, string, bool, error) {
	start := "(?" + t
	on := true
	saw := false
	for i := 0; i < len(t); i++ {
		var bit flags
		switch t[i] {
		case 'i':
			bit = flagFold
		case 'm':
			bit = flagMultLine
		case 's':
			bit = flagDotNL
		case 'U':
			bit = flagUngreedy
		case '-':
			if !on {
				return f, t, false, errorf(start[:i+3], "a flag group takes one -")
			}
			on, saw = false, false
			continue
		case ':', ')':
			if !on && !saw {
				return f, t, false, errorf(start[:i+3], "no flag after -")
			}
			return f, t[i+1:], t[i] == ':', nil
		case '=', '!':
			return f, t, false, errorf(start[:i+3], "lookahead is not matched by the host (RE2 has none)")
		case '<':
			return f, t, false, errorf(start[:min(len(start), i+4)], "lookbehind is not matched by the host (RE2 has none)")
		default:
			return f, t, false, errorf(start[:min(len(start), i+4)], "not a group or flag RE2 knows")
		}
		saw = true
		if on {
			f |= bit
		} else {
			f &^= bit
		}
	}
	return f, t, false, errorf(start, "a flag group is not closed")
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '_' && !isAlnum(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// bracket reads a class [...] (p.s starts with '[').
func (p *parser) bracket(f flags) (*class, error) {
	start := p.s
	t := p.s[1:]
	cl := &class{fold: f&flagFold != 0}
	if strings.HasPrefix(t, "^") {
		cl.negated = true
		t = t[1:]
	}
	var own []rune // the ranges written out, lo and hi pairs
	first := true
	for t == "" || t[0] != ']' || first {
		if t == "" {
			return nil, errorf(start, "a class is not closed: missing ]")
		}
		first = false
		if strings.HasPrefix(t, "[:") {
			if it, rest, found, err := posixClass(t); err != nil {
				return nil, err
			} else if found {
				cl.items = append(cl.items, it)
				t = rest
				continue
			}
		}
		if it, ok := perlClass(t); ok {
			cl.items = append(cl.items, it)
			t = t[2:]
			continue
		}
		lo, rest, err := p.classChar(t, start)
		if err != nil {
			return nil, err
		}
		hi := lo
		if len(rest) >= 2 && rest[0] == '-' && rest[1] != ']' {
			if hi, rest, err = p.classChar(rest[1:], start); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, errorf(t[:len(t)-len(rest)], "the range's ends are reversed")
			}
		}
		own = append(own, lo, hi)
		t = rest
	}
	p.s = t[1:]
	if len(own) > 0 {
		cl.items = append(cl.items, classItem{ranges: own})
	}
	return cl, nil
}

func (p *parser) classChar(t, whole string) (rune, string, error) {
	if t == "" {
		return 0, t, errorf(whole, "a class is not closed: missing ]")
	}
	if t[0] == '\\' {
		saved := p.s
		p.s = t
		c, err := p.escape()
		rest := p.s
		p.s = saved
		return c, rest, err
	}
	c, w := utf8.DecodeRuneInString(t)
	return c, t[w:], nil
}
