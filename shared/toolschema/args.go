package toolschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Validate checks a model's arguments for a call and returns them decoded (numbers as
// json.Number). The checks run in this order and the first failure wins:
//
//  1. empty input or null means {};
//  2. the value must be a JSON object in valid UTF-8 (invalid-tool-arguments);
//  3. at most MaxArgumentBytes once insignificant whitespace is removed (invalid-tool-arguments);
//  4. depth (checked while parsing, so a deep value costs only its first levels), nodes and
//     number literals within their bounds (invalid-argument-bounds);
//  5. every required argument present and not null (missing-argument);
//  6. no key the schema does not declare when additionalProperties is false, and no own
//     "__proto__" key anywhere (invalid-argument);
//  7. each value of its declared type (invalid-argument-type);
//  8. lengths, counted in code points, and numbers within their bounds (invalid-argument-length,
//     invalid-argument-range);
//  9. each value in its enum (invalid-argument-enum).
//
// Every failure is collected (see node.check) and the order decides which one names the refusal.
func (s *Schema) Validate(raw []byte) (map[string]any, error) {
	return s.validate(raw, func(args map[string]any, found []failure) []failure { return s.root.check(args, nil, found) })
}

// validate is Validate with the step that decides steps 6 to 9 given as check, which appends the
// failures of the decoded, in-bounds arguments to found. The tests pass the reference library's
// verdict as check, so everything else is the same code on both sides.
func (s *Schema) validate(raw []byte, check func(args map[string]any, found []failure) []failure) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, refusal.New(refusal.InvalidToolArguments, "the arguments must be a JSON object, got %s", firstKind(raw))
	}
	if !utf8.Valid(raw) {
		return nil, refusal.New(refusal.InvalidToolArguments, "the arguments are not valid UTF-8")
	}
	if len(raw) > MaxArgumentBytes {
		// Only a payload over the bound as received can be within it once compacted.
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, notJSON(err)
		}
		if buf.Len() > MaxArgumentBytes {
			return nil, refusal.New(refusal.InvalidToolArguments,
				"the arguments are %d bytes encoded, over the bound of %d bytes", buf.Len(), MaxArgumentBytes)
		}
	}
	v, st, err := parseJSON(raw, MaxArgumentDepth, MaxArgumentNodes)
	if err != nil {
		return nil, notJSON(err)
	}
	args := v.(map[string]any) // raw starts with '{' and parsed
	var w walker               // locates what the parser noticed; most calls need none of it
	if st.badNumber || st.sawProto {
		w = walker{maxDepth: MaxArgumentDepth, maxNodes: MaxArgumentNodes}
		w.walk(args, 0)
	}
	if w.hasBadNumber {
		return nil, refusal.New(refusal.InvalidArgumentBounds,
			"argument %s: the number %s is longer than %d characters or has an exponent beyond %d",
			where(w.badNumber), clip(w.badNumberText), MaxNumberLiteralBytes, MaxNumberExponent)
	}
	if st.sawNull {
		if loc, ok := nullRequired(s.doc, args, ""); ok {
			return nil, refusal.New(refusal.MissingArgument, "missing required argument %s (null counts as missing)", quoteLoc(loc))
		}
	}
	var found []failure
	if w.hasProto { // first, so it names the refusal over an unknown-key failure at the same place
		found = append(found, failure{rank: rankUnknown, loc: w.proto,
			why: fmt.Sprintf("argument %s: an own \"__proto__\" key is never accepted", quoteLoc(w.proto))})
	}
	found = check(args, found)
	if len(found) == 0 {
		return args, nil
	}
	best := slices.MinFunc(found, func(a, b failure) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.loc, b.loc)
	})
	return nil, refusal.New(best.ruleFor(), "%s", best.why)
}

// The ranks of failures, in the order Validate documents.
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

// nullRequired finds a required argument set to null, which the library counts as present. Only
// object schemas nest objects in the subset, so it follows properties alone.
func nullRequired(schema map[string]any, args map[string]any, loc string) (string, bool) {
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			name := r.(string)
			if v, ok := args[name]; ok && v == nil {
				return join(loc, name), true
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
			if l, ok := nullRequired(sub, a, join(loc, name)); ok {
				return l, true
			}
		}
	}
	return "", false
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

// ratString writes a decimal number exactly: every JSON number is a finite decimal.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	for prec := 1; prec <= MaxNumberLiteralBytes+MaxNumberExponent; prec++ {
		s := r.FloatString(prec)
		if back, ok := new(big.Rat).SetString(s); ok && back.Cmp(r) == 0 {
			return s
		}
	}
	return r.FloatString(MaxNumberLiteralBytes)
}

// typeName puts an article before a JSON type name.
func typeName(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	}
	return "a " + t
}
