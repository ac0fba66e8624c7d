package toolschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Validate checks a model's arguments for a call and returns them decoded (numbers as
// json.Number). When several rules fail, the refusal is the one the original Voicebox's
// validation (validateMiniAppToolArgs) reaches first:
//
//  1. empty input or null means {}; the value must be a JSON object in valid UTF-8
//     (invalid-tool-arguments);
//  2. the walk of the value: more than MaxArgumentDepth levels or MaxArgumentNodes values
//     (invalid-argument-bounds, found while parsing, so a deep value costs only its first
//     levels); then, in the walk's order (an object's own "__proto__" key before its members,
//     members in JavaScript's order: index-like keys ascending, then the others as written), a
//     number that is not finite as a float64, such as 1e999 (invalid-argument, never delivered
//     as Infinity), an own "__proto__" key (invalid-argument), or a number literal past
//     MaxNumberLiteralBytes or MaxNumberExponent (invalid-argument-bounds, a bound of ours);
//  3. at most MaxArgumentBytes once insignificant whitespace is removed (invalid-tool-arguments);
//  4. each object, from the top: its required arguments present and not null, in the order
//     required lists them (missing-argument); then, when additionalProperties is false, no key it
//     does not declare, in the arguments' order (invalid-argument); then each argument in the
//     arguments' order, and the first that fails decides: its type (invalid-argument-type), then
//     its length in code points or its range (invalid-argument-length, invalid-argument-range),
//     then its enum (invalid-argument-enum); an object argument is checked the same way inside,
//     an array's items one by one.
//
// Every failure of step 4 is collected (see node.check) and its position in that walk decides
// which one names the refusal.
func (s *Schema) Validate(raw []byte) (map[string]any, error) {
	return s.ValidateWithin(raw, MaxArgumentBytes)
}

// ValidateWithin is Validate with maxBytes in place of MaxArgumentBytes, for a tool whose
// arguments are bounded more closely after they are read (the texts a WASM diff takes are two
// buffers of 64 KiB each, which their ABI bounds as bytes).
func (s *Schema) ValidateWithin(raw []byte, maxBytes int) (map[string]any, error) {
	return s.validate(raw, maxBytes, func(args map[string]any, found []failure) []failure { return s.root.check(args, nil, found) })
}

// validate is Validate with the step that decides the schema's keywords given as check, which
// appends the failures of the decoded, in-bounds arguments to found. The tests pass the reference
// library's verdict as check, so everything else is the same code on both sides.
func (s *Schema) validate(raw []byte, maxBytes int, check func(args map[string]any, found []failure) []failure) (map[string]any, error) {
	args, d, err := decodeArguments(raw, maxBytes)
	if err != nil {
		return nil, err
	}
	var found []failure
	if d.sawNull {
		found = nullRequired(s.doc, args, nil, found)
	}
	found = check(args, found)
	found = boundsBesideEnum(s.doc, args, found)
	switch len(found) {
	case 0:
		return args, nil
	case 1:
		return nil, refusal.New(found[0].ruleFor(), "%s", found[0].why)
	}
	orders := d.orders
	if orders == nil {
		orders = keyOrders(d.raw)
	}
	best, bestPos := found[0], position(s.doc, args, orders, found[0])
	for _, f := range found[1:] {
		pos := position(s.doc, args, orders, f)
		c := slices.Compare(pos, bestPos)
		if c == 0 {
			c = f.rank - best.rank
		}
		if c == 0 {
			c = strings.Compare(f.loc, best.loc)
		}
		if c < 0 {
			best, bestPos = f, pos
		}
	}
	return nil, refusal.New(best.ruleFor(), "%s", best.why)
}

// DecodeArguments is steps 1 to 3 of Validate with maxBytes in place of MaxArgumentBytes: the
// arguments decoded exactly (numbers as json.Number) and held to the bounds on size, depth, nodes
// and number literals, with no schema keyword checked. It is for a caller whose schema another
// validator checks (a remote MCP tool's full JSON Schema, on the relay).
func DecodeArguments(raw []byte, maxBytes int) (map[string]any, error) {
	args, _, err := decodeArguments(raw, maxBytes)
	return args, err
}

// decoded is what decodeArguments learned of the arguments besides their value.
type decoded struct {
	raw     []byte              // as read, trimmed ({} for nothing or null)
	orders  map[string][]string // key orders, when they were read
	sawNull bool                // a null is somewhere in the value
}

// decodeArguments is steps 1 to 3 of Validate.
func decodeArguments(raw []byte, maxBytes int) (map[string]any, decoded, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, decoded{}, refusal.New(refusal.InvalidToolArguments, "the arguments must be a JSON object, got %s", firstKind(raw))
	}
	if !utf8.Valid(raw) {
		return nil, decoded{}, refusal.New(refusal.InvalidToolArguments, "the arguments are not valid UTF-8")
	}
	v, st, err := parseJSON(raw, MaxArgumentDepth, MaxArgumentNodes)
	if err != nil {
		return nil, decoded{}, notJSON(err)
	}
	args := v.(map[string]any)     // raw starts with '{' and parsed
	var orders map[string][]string // key orders, read only when an order decides something
	if st.badNumber || st.sawProto {
		orders = keyOrders(raw)
		if err := firstInWalk(args, "", orders); err != nil {
			return nil, decoded{}, err
		}
	}
	if len(raw) > maxBytes {
		// Only a payload over the bound as received can be within it once compacted.
		// raw was parsed above, so it is JSON (rawjson.AppendCompact's precondition).
		if n := len(rawjson.AppendCompact(nil, raw, false)); n > maxBytes {
			return nil, decoded{}, refusal.New(refusal.InvalidToolArguments,
				"the arguments are %d bytes encoded, over the bound of %d bytes", n, maxBytes)
		}
	}
	return args, decoded{raw: raw, orders: orders, sawNull: st.sawNull}, nil
}

// The kinds of failures of step 4.
const (
	rankRequired = iota
	rankUnknown
	rankType
	rankBounds
	rankEnum
)

type failure struct {
	rank int
	rule refusal.Rule
	loc  string
	path []string // loc as steps from the top level; a required or unknown key is the last step
	why  string
}

func (f failure) ruleFor() refusal.Rule {
	if f.rule != "" {
		return f.rule
	}
	switch f.rank {
	case rankRequired:
		return refusal.MissingArgument
	case rankUnknown:
		return refusal.InvalidArgument
	case rankType:
		return refusal.InvalidArgumentType
	case rankEnum:
		return refusal.InvalidArgumentEnum
	}
	return refusal.InvalidToolArguments
}

// nullRequired appends a missing-argument failure for every required argument set to null,
// which JSON Schema counts as present and the original as missing. Only object schemas nest
// objects in the subset, so it follows properties alone.
func nullRequired(schema map[string]any, args map[string]any, at []string, found []failure) []failure {
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			name := r.(string)
			if v, ok := args[name]; ok && v == nil {
				path := append(slices.Clip(at), name)
				loc := locOf(path)
				found = append(found, failure{rank: rankRequired, loc: loc, path: path,
					why: textf.Sprintf("missing required argument %s (null counts as missing)", quoteLoc(loc))})
			}
		}
	}
	props, _ := schema["properties"].(map[string]any)
	for name, ps := range props {
		sub, ok := ps.(map[string]any)
		if !ok || sub["type"] != "object" {
			continue
		}
		if a, ok := args[name].(map[string]any); ok {
			found = nullRequired(sub, a, append(slices.Clip(at), name), found)
		}
	}
	return found
}

// boundsBesideEnum adds the length or range failure of a value that also failed its enum: the
// original checks bounds before the enum, while JSON Schema (and so check) may stop at the enum.
// A value whose bounds failure is already among found adds nothing new that could win.
func boundsBesideEnum(doc map[string]any, args map[string]any, found []failure) []failure {
	for _, f := range found {
		if f.rank != rankEnum {
			continue
		}
		schema, v, ok := lookup(doc, args, f.path)
		if !ok {
			continue
		}
		var probe []failure
		n := compileNode(schema)
		n.enum, n.enumNums = nil, nil
		probe = n.check(v, nil, probe)
		for _, b := range probe {
			if b.rank == rankBounds {
				b.loc, b.path = f.loc, f.path
				b.why = strings.Replace(b.why, quoteLoc(""), quoteLoc(f.loc), 1)
				found = append(found, b)
			}
		}
	}
	return found
}

// lookup follows path from the top level to a value and the schema that describes it.
func lookup(doc map[string]any, args map[string]any, path []string) (map[string]any, any, bool) {
	schema, v := doc, any(args)
	for _, step := range path {
		switch x := v.(type) {
		case map[string]any:
			props, _ := schema["properties"].(map[string]any)
			sub, ok := props[step].(map[string]any)
			if !ok {
				return nil, nil, false
			}
			schema, v = sub, x[step]
		case []any:
			i, err := strconv.Atoi(step)
			items, ok := schema["items"].(map[string]any)
			if err != nil || i < 0 || i >= len(x) || !ok {
				return nil, nil, false
			}
			schema, v = items, x[i]
		default:
			return nil, nil, false
		}
	}
	return schema, v, true
}

// position is where the original's walk of step 4 meets f, compared lexicographically: at an
// object, its required arguments (0, index in required), then its unknown keys (1, index in the
// arguments' order), then its arguments (2, index in the arguments' order, then what the value
// says); at a value, its type (0), its bounds (1), its enum (2), or what is inside it (1, then the
// object's steps, or the item's index and its steps).
func position(doc map[string]any, args map[string]any, orders map[string][]string, f failure) []int {
	return objectPosition(doc, args, nil, f, orders)
}

func objectPosition(schema, obj map[string]any, at []string, f failure, orders map[string][]string) []int {
	rest := f.path[len(at):]
	if len(rest) == 0 {
		return kindPosition(f)
	}
	order := orders[locOf(at)]
	if len(rest) == 1 && f.rank == rankRequired {
		req, _ := schema["required"].([]any)
		return []int{0, slices.Index(req, any(rest[0]))}
	}
	if len(rest) == 1 && f.rank == rankUnknown {
		return []int{1, slices.Index(order, rest[0])}
	}
	props, _ := schema["properties"].(map[string]any)
	sub, _ := props[rest[0]].(map[string]any)
	step := append(slices.Clip(at), rest[0])
	return append([]int{2, slices.Index(order, rest[0])}, valuePosition(sub, obj[rest[0]], step, f, orders)...)
}

func valuePosition(schema map[string]any, v any, at []string, f failure, orders map[string][]string) []int {
	if len(f.path) == len(at) {
		return kindPosition(f)
	}
	switch x := v.(type) {
	case map[string]any:
		return append([]int{1}, objectPosition(schema, x, at, f, orders)...)
	case []any:
		step := f.path[len(at)]
		i, err := strconv.Atoi(step)
		if err != nil || i < 0 || i >= len(x) {
			return []int{3}
		}
		items, _ := schema["items"].(map[string]any)
		return append([]int{1, i}, valuePosition(items, x[i], append(slices.Clip(at), step), f, orders)...)
	}
	return []int{3}
}

func kindPosition(f failure) []int {
	switch f.rank {
	case rankType:
		return []int{0}
	case rankBounds:
		return []int{1}
	case rankEnum:
		return []int{2}
	}
	return []int{3}
}

// locOf spells a path as a location, such as "settings.volume".
func locOf(path []string) string {
	loc := ""
	for _, p := range path {
		loc = join(loc, p)
	}
	return loc
}

// firstInWalk returns the first refusal of step 2 after the depth and node bounds, in the
// original's walk order: at an object, an own "__proto__" key, then its members in JavaScript's
// order; at a number, one that is not finite (invalid-argument) or past our literal bounds
// (invalid-argument-bounds).
func firstInWalk(v any, loc string, orders map[string][]string) error {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["__proto__"]; ok {
			return refusal.New(refusal.InvalidArgument, "argument %s: an own \"__proto__\" key is never accepted", quoteLoc(join(loc, "__proto__")))
		}
		keys := orders[loc]
		if len(keys) != len(x) { // the order cannot be read: fall back to a fixed one
			keys = jsOrder(sortedKeys(x))
		}
		for _, k := range keys {
			if err := firstInWalk(x[k], join(loc, k), orders); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := firstInWalk(e, join(loc, strconv.Itoa(i)), orders); err != nil {
				return err
			}
		}
	case json.Number:
		if !finite(string(x)) {
			return refusal.New(refusal.InvalidArgument, "argument %s: the number %s is not finite; a number must be within what a 64-bit float holds", quoteLoc(loc), clip(string(x)))
		}
		if !numberInBounds(string(x)) {
			return refusal.New(refusal.InvalidArgumentBounds,
				"argument %s: the number %s is longer than %d characters or has an exponent beyond %d",
				where(loc), clip(string(x)), MaxNumberLiteralBytes, MaxNumberExponent)
		}
	}
	return nil
}

// keyOrders reads the order of every object's keys in raw, which must be valid JSON: by the
// location of the object, its keys in JavaScript's order (see jsOrder), each once. Of two equal
// keys the later value wins, as in decoding, and the key keeps its first place.
func keyOrders(raw []byte) map[string][]string {
	out := map[string][]string{}
	var walk func(v []byte, loc string)
	walk = func(v []byte, loc string) {
		switch v[0] {
		case '{':
			var keys []string
			seen := map[string]bool{}
			rawjson.Members(v, func(k string, member []byte) bool {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
				walk(member, join(loc, k))
				return true
			})
			out[loc] = jsOrder(keys)
		case '[':
			i := 0
			rawjson.Elements(v, func(e []byte) {
				walk(e, join(loc, strconv.Itoa(i)))
				i++
			})
		}
	}
	if first, _, ok := rawjson.First(raw); ok {
		walk(first, "")
	}
	return out
}

// jsOrder orders keys as a JavaScript object lists them: keys that are array indices (the
// canonical decimal form of an integer from 0 to 2^32-2) first, ascending, then the others in the
// order given.
func jsOrder(keys []string) []string {
	var idx, rest []string
	for _, k := range keys {
		if arrayIndex(k) {
			idx = append(idx, k)
		} else {
			rest = append(rest, k)
		}
	}
	// sort.Slice rather than slices.SortFunc: a generic sort with a comparison function is a copy
	// of pdqsort of its own (about 20 KB of wasm code for this one); sort.Slice is one copy for
	// every type.
	sort.Slice(idx, func(i, j int) bool {
		a, b := idx[i], idx[j]
		return len(a) < len(b) || len(a) == len(b) && a < b
	})
	return append(idx, rest...)
}

func arrayIndex(k string) bool {
	if k == "" || len(k) > 10 || len(k) > 1 && k[0] == '0' {
		return false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return err == nil && n < 1<<32-1 && strconv.FormatUint(n, 10) == k
}

func notJSON(err error) error {
	switch {
	case errors.Is(err, errTooDeep):
		return refusal.New(refusal.InvalidArgumentBounds, "the arguments nest more than %d levels deep", MaxArgumentDepth)
	case errors.Is(err, errTooMany):
		return refusal.New(refusal.InvalidArgumentBounds, "the arguments have more than %d values", MaxArgumentNodes)
	}
	return refusal.New(refusal.InvalidToolArguments, "the arguments are not JSON: %v", err)
}

func firstKind(raw []byte) string {
	switch c := raw[0]; {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return "something that is not JSON"
}

// quoteLoc names an argument by its location, such as "settings.volume".
func quoteLoc(loc string) string {
	if loc == "" {
		return "(the whole object)"
	}
	return `"` + loc + `"`
}

// typeName puts an article before a JSON type name.
func typeName(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	}
	return "a " + t
}
