package rematch

import (
	"errors"
	"strconv"
	"sync"
	"unicode/utf8"
)

const (
	// MaxInstructions bounds a compiled pattern. Matching costs up to one step per instruction
	// per rune of the string, so this bounds the work a pattern asks for each rune: a schema's
	// `.{0,1000}` is 2,000 instructions; RE2 would take a pattern of a few million.
	MaxInstructions = 8192
	// MaxSteps bounds one match: a string that would take more steps is answered ErrTooCostly
	// rather than held. A step is a few tens of nanoseconds in the page's wasm, so the worker is
	// held a fraction of a second at worst (BenchmarkWorstMatch). A schema's pattern of a few
	// dozen instructions matches any string an argument can hold within it; one that keeps 2,000
	// instructions live (`[a-z]{0,1000}!` unanchored) a string of about 2,000 runes.
	MaxSteps = 1 << 23
)

// ErrTooCostly is a match that would take more than MaxSteps steps.
var ErrTooCostly = errors.New("rematch: the string is too long to match against this pattern within " + strconv.Itoa(MaxSteps) + " steps")

type opcode uint8

const (
	opRune   opcode = iota // one rune (r, fold)
	opClass                // a rune of class
	opAny                  // any rune
	opAnyNL                // any rune but '\n'
	opAssert               // the position meets assert
	opSplit                // go to out and to alt
	opJump                 // go to out
	opMatch
)

type inst struct {
	op     opcode
	fold   bool
	assert assertion
	r      rune
	class  *class
	out    int32
	alt    int32
}

// Regexp is a compiled pattern, safe for concurrent use.
type Regexp struct {
	source   string
	prog     []inst
	start    int32
	anchored bool // the pattern can only match at the string's start
	asserts  bool // the program holds an assertion, so positions need their context
	machines sync.Pool
}

// Compile parses and compiles a pattern; the error is an *Error naming the construct refused.
func Compile(pattern string) (*Regexp, error) {
	tree, err := parse(pattern)
	if err != nil {
		return nil, err
	}
	c := &compiler{}
	f := c.compile(tree)
	m := c.emit(inst{op: opMatch})
	if c.tooBig {
		return nil, &Error{Why: "the pattern compiles to more than " + strconv.Itoa(MaxInstructions) + " instructions (each repetition is written out); use smaller counts"}
	}
	c.patch(f.outs, m)
	re := &Regexp{source: pattern, prog: c.prog, start: f.start, anchored: anchoredAtStart(tree)}
	for _, i := range re.prog {
		re.asserts = re.asserts || i.op == opAssert
	}
	return re, nil
}

// String is the pattern's source.
func (re *Regexp) String() string { return re.source }

func anchoredAtStart(n *node) bool {
	switch n.kind {
	case nAssert:
		return n.assert == atBeginText
	case nConcat:
		return anchoredAtStart(n.subs[0])
	case nRepeat:
		return n.min > 0 && anchoredAtStart(n.subs[0])
	case nAlt:
		for _, s := range n.subs {
			if !anchoredAtStart(s) {
				return false
			}
		}
		return true
	}
	return false
}

// frag is a compiled piece: where it starts and the dangling exits to patch (pc<<1 | 1 for alt).
type frag struct {
	start int32
	outs  []int32
}

type compiler struct {
	prog   []inst
	tooBig bool
}

func (c *compiler) emit(i inst) int32 {
	if len(c.prog) >= MaxInstructions {
		c.tooBig = true
		return 0
	}
	c.prog = append(c.prog, i)
	return int32(len(c.prog) - 1)
}

func (c *compiler) patch(outs []int32, to int32) {
	if c.tooBig {
		return
	}
	for _, o := range outs {
		if o&1 == 1 {
			c.prog[o>>1].alt = to
		} else {
			c.prog[o>>1].out = to
		}
	}
}

func (c *compiler) one(i inst) frag {
	pc := c.emit(i)
	return frag{start: pc, outs: []int32{pc << 1}}
}

func (c *compiler) compile(n *node) frag {
	if c.tooBig {
		return frag{}
	}
	switch n.kind {
	case nLiteral:
		return c.one(inst{op: opRune, r: n.r, fold: n.fold})
	case nClass:
		n.class.settle()
		return c.one(inst{op: opClass, class: n.class})
	case nAny:
		if n.nl {
			return c.one(inst{op: opAny})
		}
		return c.one(inst{op: opAnyNL})
	case nAssert:
		return c.one(inst{op: opAssert, assert: n.assert})
	case nEmpty:
		return c.one(inst{op: opJump})
	case nConcat:
		f := c.compile(n.subs[0])
		for _, s := range n.subs[1:] {
			g := c.compile(s)
			c.patch(f.outs, g.start)
			f.outs = g.outs
		}
		return f
	case nAlt:
		f := c.compile(n.subs[0])
		for _, s := range n.subs[1:] {
			g := c.compile(s)
			sp := c.emit(inst{op: opSplit, out: f.start, alt: g.start})
			f = frag{start: sp, outs: append(f.outs, g.outs...)}
		}
		return f
	case nRepeat:
		return c.repeat(n.subs[0], n.min, n.max)
	}
	panic("rematch: unknown node")
}

// repeat writes x{min,max} out: min copies, then x* or max-min optional copies.
func (c *compiler) repeat(x *node, min, max int) frag {
	f := c.one(inst{op: opJump})
	for i := 0; i < min && !c.tooBig; i++ {
		g := c.compile(x)
		c.patch(f.outs, g.start)
		f.outs = g.outs
	}
	if max < 0 { // a loop: split to x and on; x's exits come back to the split
		sp := c.emit(inst{op: opSplit})
		g := c.compile(x)
		if c.tooBig {
			return f
		}
		c.prog[sp].out = g.start
		c.patch(g.outs, sp)
		c.patch(f.outs, sp)
		f.outs = []int32{sp<<1 | 1}
		return f
	}
	for i := min; i < max && !c.tooBig; i++ {
		sp := c.emit(inst{op: opSplit})
		g := c.compile(x)
		if c.tooBig {
			return f
		}
		c.prog[sp].out = g.start
		c.patch(f.outs, sp)
		f.outs = append(g.outs, sp<<1|1)
	}
	return f
}

// context is what assertions see at pos, with before the rune that ends there (-1 at the start).
func context(s string, pos int, before rune) assertion {
	var a assertion
	after := rune(-1)
	if pos < len(s) {
		after, _ = utf8.DecodeRuneInString(s[pos:])
	}
	if pos == 0 {
		a |= atBeginText | atBeginLine
	} else if before == '\n' {
		a |= atBeginLine
	}
	if pos == len(s) {
		a |= atEndText | atEndLine
	} else if after == '\n' {
		a |= atEndLine
	}
	if isWord(before) != isWord(after) {
		a |= atWordBoundary
	} else {
		a |= atNoWordBoundary
	}
	return a
}

func isWord(r rune) bool {
	return '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_'
}

// threads is a sparse set of program counters, in the order added.
type threads struct {
	dense  []int32
	sparse []int32
}

func (t *threads) has(pc int32) bool {
	i := t.sparse[pc]
	return int(i) < len(t.dense) && t.dense[i] == pc
}

func (t *threads) add(pc int32) {
	t.sparse[pc] = int32(len(t.dense))
	t.dense = append(t.dense, pc)
}

// machine is one match's state, kept in the Regexp's pool between matches.
type machine struct {
	re        *Regexp
	cur, next threads
	stack     []int32
	steps     int
}

// follow adds pc and what it reaches without a rune to set; it reports reaching the match.
func (m *machine) follow(set *threads, pc int32, ctx assertion) bool {
	if op := m.re.prog[pc].op; op <= opAnyNL { // a rune-consuming instruction: nothing to follow
		if !set.has(pc) {
			set.add(pc)
			m.steps++
		}
		return false
	}
	m.stack = append(m.stack[:0], pc)
	matched := false
	for len(m.stack) > 0 {
		pc := m.stack[len(m.stack)-1]
		m.stack = m.stack[:len(m.stack)-1]
		if set.has(pc) {
			continue
		}
		set.add(pc)
		m.steps++
		i := &m.re.prog[pc]
		switch i.op {
		case opJump:
			m.stack = append(m.stack, i.out)
		case opSplit:
			m.stack = append(m.stack, i.alt, i.out)
		case opAssert:
			if i.assert&ctx == i.assert {
				m.stack = append(m.stack, i.out)
			}
		case opMatch:
			matched = true
		}
	}
	return matched
}

// MatchString reports whether the pattern matches somewhere in s, or ErrTooCostly when finding
// out would take more than MaxSteps steps. Invalid UTF-8 reads as U+FFFD a byte at a time, as
// Go's regexp reads it.
func (re *Regexp) MatchString(s string) (bool, error) {
	m, _ := re.machines.Get().(*machine)
	if m == nil {
		n := len(re.prog)
		buf := make([]int32, 4*n)
		m = &machine{re: re, cur: threads{dense: buf[0:0:n], sparse: buf[n : 2*n]},
			next: threads{dense: buf[2*n : 2*n : 3*n], sparse: buf[3*n : 4*n]}}
	}
	ok, err := m.match(s)
	m.cur.dense, m.next.dense, m.steps = m.cur.dense[:0], m.next.dense[:0], 0
	re.machines.Put(m)
	return ok, err
}

func (m *machine) match(s string) (bool, error) {
	re := m.re
	cur, next := &m.cur, &m.next
	var ctx assertion
	if re.asserts {
		ctx = context(s, 0, -1)
	}
	for pos := 0; ; {
		if pos == 0 || !re.anchored {
			if m.follow(cur, re.start, ctx) {
				return true, nil
			}
		}
		if len(cur.dense) == 0 && re.anchored || pos >= len(s) {
			return false, nil
		}
		r, w := utf8.DecodeRuneInString(s[pos:])
		pos += w
		if re.asserts {
			ctx = context(s, pos, r)
		}
		for _, pc := range cur.dense {
			m.steps++
			i := &re.prog[pc]
			var ok bool
			switch i.op {
			case opRune:
				ok = r == i.r || i.fold && foldEqual(i.r, r)
			case opClass:
				ok = i.class.has(r)
			case opAny:
				ok = true
			case opAnyNL:
				ok = r != '\n'
			}
			if ok && m.follow(next, i.out, ctx) {
				return true, nil
			}
		}
		if m.steps > MaxSteps {
			return false, ErrTooCostly
		}
		cur, next = next, cur
		next.dense = next.dense[:0]
	}
}
