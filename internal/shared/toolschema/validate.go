package toolschema

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/rematch"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// node is one schema of the subset, compiled from a document that passed checkTop: every keyword
// is present in its checked form, so compiling cannot fail.
//
// Its semantics are JSON Schema draft 2020-12's for these keywords, in the evaluation order of the
// reference implementation the tests hold it to (santhosh-tekuri/jsonschema/v6): type first, and a
// value of the wrong type is checked no further; then enum, and a value outside it is checked no
// further; then every type-specific keyword, each failure collected.
type node struct {
	typ            string
	enum           []any     // string, bool or json.Number members; nil for none
	enumNums       []decimal // the numeric members, exactly, for a number or integer enum
	minLen, maxLen int       // -1 when absent
	minimum        *decimal  // nil when absent
	maximum        *decimal  // nil when absent
	intBounds      bool      // every bound present is an integer that fits an int64
	minInt, maxInt int64     // the bounds as int64, when intBounds
	props          map[string]*node
	required       []string
	closed         bool // additionalProperties is false
	items          *node
	prefix         []*node         // prefixItems, by position (the WebMCP draft's dialect)
	pattern        *rematch.Regexp // nil when absent (the WebMCP draft's dialect)
}

// compileNode builds the node of a checked schema.
func compileNode(obj map[string]any) *node {
	n := &node{typ: obj["type"].(string), minLen: -1, maxLen: -1}
	if e, ok := obj["enum"].([]any); ok {
		n.enum = e
		if n.typ == "number" || n.typ == "integer" {
			for _, m := range e {
				d, _ := parseDecimal(string(m.(json.Number)))
				n.enumNums = append(n.enumNums, d)
			}
		}
	}
	if v, ok := obj["minLength"].(json.Number); ok {
		x, _ := strconv.Atoi(string(v))
		n.minLen = x
	}
	if v, ok := obj["maxLength"].(json.Number); ok {
		x, _ := strconv.Atoi(string(v))
		n.maxLen = x
	}
	if v, ok := obj["minimum"].(json.Number); ok {
		d, _ := parseDecimal(string(v))
		n.minimum = &d
	}
	if v, ok := obj["maximum"].(json.Number); ok {
		d, _ := parseDecimal(string(v))
		n.maximum = &d
	}
	n.intBounds = n.minimum != nil || n.maximum != nil
	for _, b := range []struct {
		d *decimal
		i *int64
	}{{n.minimum, &n.minInt}, {n.maximum, &n.maxInt}} {
		if b.d == nil {
			continue
		}
		if x, ok := b.d.int64(); ok {
			*b.i = x
		} else {
			n.intBounds = false
		}
	}
	if p, ok := obj["properties"].(map[string]any); ok {
		n.props = make(map[string]*node, len(p))
		for name, ps := range p {
			n.props[name] = compileNode(ps.(map[string]any))
		}
	}
	if r, ok := obj["required"].([]any); ok {
		for _, name := range r {
			n.required = append(n.required, name.(string))
		}
	}
	if a, ok := obj["additionalProperties"].(bool); ok {
		n.closed = !a
	}
	if it, ok := obj["items"].(map[string]any); ok {
		n.items = compileNode(it)
	}
	if list, ok := obj["prefixItems"].([]any); ok {
		for _, it := range list {
			n.prefix = append(n.prefix, compileNode(it.(map[string]any)))
		}
	}
	if p, ok := obj["pattern"].(string); ok {
		n.pattern, _ = rematch.Compile(p) // checkPattern compiled it
	}
	return n
}

// place is the location of a value being checked, spelled out only when it fails: a step from its
// parent by key, or by index when key is "".
type place struct {
	parent *place
	key    string
	index  int
}

func (w *place) String() string {
	if w == nil {
		return ""
	}
	if w.key == "" {
		return join(w.parent.String(), strconv.Itoa(w.index))
	}
	return join(w.parent.String(), w.key)
}

// tokens returns the location as its steps from the top level, indices in decimal.
func (w *place) tokens() []string {
	if w == nil {
		return nil
	}
	step := w.key
	if step == "" {
		step = strconv.Itoa(w.index)
	}
	return append(w.parent.tokens(), step)
}

// check appends to found every failure of v against n at at (nil for the top level).
func (n *node) check(v any, at *place, found []failure) []failure {
	if !n.hasType(v) {
		loc := at.String()
		return append(found, failure{rank: rankType, loc: loc, path: at.tokens(),
			why: textf.Sprintf("argument %s must be %s, got %s", quoteLoc(loc), typeName(n.typ), typeName(valueType(v)))})
	}
	if n.enum != nil && !n.inEnum(v) {
		loc := at.String()
		want := make([]string, len(n.enum))
		for i, w := range n.enum {
			want[i] = show(w)
		}
		return append(found, failure{rank: rankEnum, loc: loc, path: at.tokens(),
			why: textf.Sprintf("argument %s is %s, not one of %s", quoteLoc(loc), show(v), clip(strings.Join(want, ", ")))})
	}
	switch v := v.(type) {
	case string:
		if n.pattern != nil {
			if ok, err := n.pattern.MatchString(v); err != nil {
				loc := at.String()
				found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentPattern, loc: loc, path: at.tokens(),
					why: textf.Sprintf("argument %s is too long to match against the pattern %s within the host's bound of %d steps; send a shorter string", quoteLoc(loc), clip(n.pattern.String()), rematch.MaxSteps)})
			} else if !ok {
				loc := at.String()
				found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentPattern, loc: loc, path: at.tokens(),
					why: textf.Sprintf("argument %s does not match the pattern %s", quoteLoc(loc), clip(n.pattern.String()))})
			}
		}
		if n.minLen < 0 && n.maxLen < 0 {
			return found
		}
		l := utf8.RuneCountInString(v)
		if n.minLen >= 0 && l < n.minLen {
			loc := at.String()
			found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentLength, loc: loc, path: at.tokens(),
				why: textf.Sprintf("argument %s is %s long, under the minimum of %d", quoteLoc(loc), characters(l), n.minLen)})
		}
		if n.maxLen >= 0 && l > n.maxLen {
			loc := at.String()
			found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentLength, loc: loc, path: at.tokens(),
				why: textf.Sprintf("argument %s is %s long, over the maximum of %d", quoteLoc(loc), characters(l), n.maxLen)})
		}
	case json.Number:
		if n.minimum == nil && n.maximum == nil {
			return found
		}
		below, above := n.outside(v)
		if below || above {
			loc := at.String()
			d, _ := parseDecimal(string(v))
			if below {
				found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentRange, loc: loc, path: at.tokens(),
					why: textf.Sprintf("argument %s is %s, under the minimum of %s", quoteLoc(loc), d.String(), n.minimum.String())})
			}
			if above {
				found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentRange, loc: loc, path: at.tokens(),
					why: textf.Sprintf("argument %s is %s, over the maximum of %s", quoteLoc(loc), d.String(), n.maximum.String())})
			}
		}
	case []any:
		for i, e := range v {
			switch {
			case i < len(n.prefix):
				found = n.prefix[i].check(e, &place{parent: at, index: i}, found)
			case n.items != nil:
				found = n.items.check(e, &place{parent: at, index: i}, found)
			}
		}
	case map[string]any:
		for _, name := range n.required {
			if _, ok := v[name]; !ok {
				loc := join(at.String(), name)
				found = append(found, failure{rank: rankRequired, loc: loc, path: append(at.tokens(), name),
					why: textf.Sprintf("missing required argument %s", quoteLoc(loc))})
			}
		}
		for name, e := range v {
			if p, ok := n.props[name]; ok {
				found = p.check(e, &place{parent: at, key: name}, found)
			} else if n.closed {
				loc := join(at.String(), name)
				found = append(found, failure{rank: rankUnknown, loc: loc, path: append(at.tokens(), name),
					why: textf.Sprintf("unknown argument %s: the tool declares no such parameter", quoteLoc(loc))})
			}
		}
	}
	return found
}

// outside reports whether num is under n's minimum or over its maximum. A plain integer literal
// against integer bounds that fit an int64, the common case, is compared without arithmetic on
// fractions.
func (n *node) outside(num json.Number) (below, above bool) {
	if n.intBounds && len(num) <= 18 && !strings.ContainsAny(string(num), ".eE") {
		if x, err := strconv.ParseInt(string(num), 10, 64); err == nil {
			return n.minimum != nil && x < n.minInt, n.maximum != nil && x > n.maxInt
		}
	}
	d, _ := parseDecimal(string(num))
	return n.minimum != nil && d.cmp(*n.minimum) < 0, n.maximum != nil && d.cmp(*n.maximum) > 0
}

// hasType reports whether v is of n's type; an integer is a number with no fractional part, however
// it is written (2.0 and 2e0 are integers).
func (n *node) hasType(v any) bool {
	switch v := v.(type) {
	case string:
		return n.typ == "string"
	case bool:
		return n.typ == "boolean"
	case json.Number:
		return n.typ == "number" || n.typ == "integer" && isInteger(v)
	case []any:
		return n.typ == "array"
	case map[string]any:
		return n.typ == "object"
	}
	return false
}

// inEnum reports whether v equals a member of n's enum, numbers compared by value (1 equals 1.0).
// v already has n's type.
func (n *node) inEnum(v any) bool {
	num, isNum := v.(json.Number)
	if !isNum {
		for _, m := range n.enum {
			if m == v {
				return true
			}
		}
		return false
	}
	for _, m := range n.enum {
		if m.(json.Number) == num {
			return true
		}
	}
	d, ok := parseDecimal(string(num))
	if !ok {
		return false
	}
	for _, m := range n.enumNums {
		if d.cmp(m) == 0 {
			return true
		}
	}
	return false
}

// isInteger reports whether a number literal has no fractional part. Literals without a fraction
// or exponent, the common case, need no arithmetic.
func isInteger(n json.Number) bool {
	if !strings.ContainsAny(string(n), ".eE") {
		return true
	}
	d, ok := parseDecimal(string(n))
	return ok && d.isInt()
}

// valueType names the JSON type of a decoded argument value; every number is "number".
func valueType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// characters says a length in characters in words: "1 character", "3 characters".
func characters(n int) string {
	if n == 1 {
		return "1 character"
	}
	return strconv.Itoa(n) + " characters"
}
