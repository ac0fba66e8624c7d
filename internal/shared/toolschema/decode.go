package toolschema

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/textf"
)

// Depth and nodes are measured the same way for a parameter schema and for an argument value:
//
//   - depth is the number of containers (objects and arrays) on the deepest path from the root,
//     the root included: {} and [] have depth 1, {"a":1} has depth 1, {"a":{"b":[]}} has depth 3;
//   - nodes is the number of JSON values, containers and scalars alike, the root included (object
//     keys are not values): {} is 1 node, {"a":1} is 2, {"a":[1,2]} is 4.
type measure struct {
	depth, nodes int
}

// walker measures a decoded value, stops as soon as a bound is passed, checks every number literal
// and notes own "__proto__" keys. It keeps the path as a stack and only spells a location out when
// it has something to report, so the common case allocates nothing.
type walker struct {
	maxDepth, maxNodes int
	m                  measure
	over               bool // a bound was passed
	path               []step
	badNumber          string // location of the first number literal out of bounds
	badNumberText      string
	hasBadNumber       bool
	nonFinite          bool   // the first bad number is not finite as a float64 (1e999)
	proto              string // location of an own "__proto__" key, the smallest when several
	hasProto           bool
}

type step struct {
	key   string
	index int // -1 for an object key
}

func (w *walker) location() string {
	loc := ""
	for _, s := range w.path {
		if s.index >= 0 {
			loc = join(loc, strconv.Itoa(s.index))
		} else {
			loc = join(loc, s.key)
		}
	}
	return loc
}

func (w *walker) walk(v any, depth int) {
	if w.over {
		return
	}
	w.m.nodes++
	if w.m.nodes > w.maxNodes {
		w.over = true
		return
	}
	switch v := v.(type) {
	case map[string]any:
		depth++
		w.m.depth = max(w.m.depth, depth)
		if depth > w.maxDepth {
			w.over = true
			return
		}
		for k, e := range v {
			w.path = append(w.path, step{k, -1})
			if k == "__proto__" {
				if l := w.location(); !w.hasProto || l < w.proto {
					w.proto, w.hasProto = l, true
				}
			}
			w.walk(e, depth)
			w.path = w.path[:len(w.path)-1]
		}
	case []any:
		depth++
		w.m.depth = max(w.m.depth, depth)
		if depth > w.maxDepth {
			w.over = true
			return
		}
		for i, e := range v {
			w.path = append(w.path, step{"", i})
			w.walk(e, depth)
			w.path = w.path[:len(w.path)-1]
		}
	case json.Number:
		if !w.hasBadNumber && !numberInBounds(string(v)) {
			w.badNumber, w.badNumberText, w.hasBadNumber = w.location(), string(v), true
			w.nonFinite = !finite(string(v))
		}
	}
}

// numberInBounds reports whether a number literal is finite as a float64 (JavaScript's JSON.parse
// turns 1e999 into Infinity, which the original refuses), short enough, and with an exponent small
// enough to be compared exactly without heavy arithmetic (math/big expands 1e999999 digit by
// digit).
func numberInBounds(s string) bool {
	if len(s) > MaxNumberLiteralBytes {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true // at most 64 digits: far below the float64 range
	}
	if !finite(s) {
		return false
	}
	exp := strings.TrimLeft(s[i+1:], "+-")
	exp = strings.TrimLeft(exp, "0")
	if len(exp) > 4 {
		return false
	}
	n := 0
	for _, c := range exp {
		n = n*10 + int(c-'0')
	}
	return n <= MaxNumberExponent
}

// join extends a dotted location with one more key; keys that are not plain words are quoted.
func join(loc, key string) string {
	seg := key
	if !plainKey(key) {
		seg = textf.Sprintf("[%q]", key)
		if loc == "" {
			return seg
		}
		return loc + seg
	}
	if loc == "" {
		return seg
	}
	return loc + "." + seg
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// finite reports whether a valid JSON number literal is finite as a float64: it overflows to an
// infinity past about 1.8e308. A literal too small to hold is 0, which is finite, as in
// JavaScript. strconv reads a long exponent without expanding it.
func finite(s string) bool {
	f, _ := strconv.ParseFloat(s, 64)
	return !math.IsInf(f, 0)
}
