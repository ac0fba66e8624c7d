package toolschema

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/rematch"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The closed keyword lists of the subset, by place.
var (
	topKeywords = []string{"additionalProperties", "properties", "required", "type"}

	typeKeywords = map[string][]string{
		"string":  {"description", "enum", "maxLength", "minLength", "type"},
		"number":  {"description", "enum", "maximum", "minimum", "type"},
		"integer": {"description", "enum", "maximum", "minimum", "type"},
		"boolean": {"description", "type"},
		"array":   {"description", "items", "type"},
		"object":  {"additionalProperties", "description", "properties", "required", "type"},
	}

	// draftKeywords are the keywords the WebMCP draft's subset adds, by type (Dialect WebMCPDraft).
	draftKeywords = map[string][]string{
		"string": {"pattern"},
		"array":  {"prefixItems"},
	}

	itemKeywords = []string{"description", "enum", "type"}
	itemTypes    = []string{"boolean", "integer", "number", "string"}
	allTypes     = []string{"array", "boolean", "integer", "number", "object", "string"}
)

func bad(loc, format string, args ...any) error {
	return refusal.New(refusal.InvalidToolParameters, "%s: %s", where(loc), textf.Sprintf(format, args...))
}

// keywordsOK refuses the first key of obj (in sorted order) that is not in allowed.
func keywordsOK(obj map[string]any, loc, what string, allowed []string) error {
	keys := sortedKeys(obj)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return bad(join(loc, k), "keyword %q is not allowed %s (allowed: %s)", k, what, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkTop(v any, d Dialect) (map[string]any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, bad("", "the parameter schema must be an object, got %s", jsonKind(v))
	}
	if err := keywordsOK(obj, "", "at the top level", topKeywords); err != nil {
		return nil, err
	}
	t, ok := obj["type"]
	if !ok {
		return nil, bad("type", `the top level must declare type "object"`)
	}
	if s, ok := t.(string); !ok || s != "object" {
		return nil, bad("type", `the top level must be type "object", got %s`, show(t))
	}
	if err := checkObjectBody(obj, "", 0, new(int), d); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkObjectBody checks properties, required and additionalProperties of an object schema at loc,
// whose property schemas are at the given schema depth (0 for the top level's); nodes counts the
// property schemas met so far (see MaxSchemaDepth and MaxSchemaNodes).
func checkObjectBody(obj map[string]any, loc string, depth int, nodes *int, d Dialect) error {
	var props map[string]any
	if p, ok := obj["properties"]; ok {
		props, ok = p.(map[string]any)
		if !ok {
			return bad(join(loc, "properties"), "properties must be an object, got %s", jsonKind(p))
		}
		for _, name := range sortedKeys(props) {
			ploc := join(join(loc, "properties"), name)
			switch name {
			case "":
				return bad(ploc, "a property name must not be empty")
			case "__proto__":
				return bad(ploc, `"__proto__" cannot be a property name`)
			}
			if err := checkProperty(props[name], ploc, depth, nodes, d); err != nil {
				return err
			}
		}
	}
	closed := false
	if a, ok := obj["additionalProperties"]; ok {
		b, ok := a.(bool)
		if !ok {
			return bad(join(loc, "additionalProperties"), "additionalProperties must be true or false, got %s", show(a))
		}
		if b && d == WebMCPDraft {
			return bad(join(loc, "additionalProperties"), "the WebMCP draft's subset allows additionalProperties only as false")
		}
		closed = !b
	}
	if r, ok := obj["required"]; ok {
		rloc := join(loc, "required")
		list, ok := r.([]any)
		if !ok {
			return bad(rloc, "required must be an array of names, got %s", jsonKind(r))
		}
		seen := make(map[string]bool, len(list))
		for i, e := range list {
			name, ok := e.(string)
			switch {
			case !ok:
				return bad(textf.Sprintf("%s.%d", rloc, i), "a required name must be a string, got %s", show(e))
			case name == "":
				return bad(textf.Sprintf("%s.%d", rloc, i), "a required name must not be empty")
			case name == "__proto__":
				return bad(textf.Sprintf("%s.%d", rloc, i), `"__proto__" cannot be required`)
			case seen[name]:
				return bad(textf.Sprintf("%s.%d", rloc, i), "%q is required twice", name)
			case closed && props[name] == nil:
				return bad(textf.Sprintf("%s.%d", rloc, i),
					"%q is required but not declared under properties, and additionalProperties is false", name)
			}
			seen[name] = true
		}
	}
	return nil
}

// checkProperty checks one property schema at schema depth depth; like the original Voicebox it
// counts the schema, then refuses past MaxSchemaNodes schemas or MaxSchemaDepth, then checks it.
func checkProperty(v any, loc string, depth int, nodes *int, d Dialect) error {
	*nodes++
	if *nodes > MaxSchemaNodes {
		return bad(loc, "the parameter schema declares more than %d property schemas", MaxSchemaNodes)
	}
	if depth > MaxSchemaDepth {
		return bad(loc, "property schemas nest more than %d levels below the top level's", MaxSchemaDepth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return bad(loc, "a property schema must be an object, got %s", show(v))
	}
	typ, err := typeOf(obj, loc, allTypes)
	if err != nil {
		return err
	}
	allowed := typeKeywords[typ]
	if d == WebMCPDraft && draftKeywords[typ] != nil {
		allowed = append(slices.Clone(allowed), draftKeywords[typ]...)
		slices.Sort(allowed)
	}
	if err := keywordsOK(obj, loc, "for type "+typ, allowed); err != nil {
		return err
	}
	if err := checkDescription(obj, loc); err != nil {
		return err
	}
	switch typ {
	case "string":
		if err := checkPattern(obj, loc); err != nil {
			return err
		}
		return checkString(obj, loc)
	case "number", "integer":
		return checkNumber(obj, loc, typ)
	case "array":
		if err := checkPrefixItems(obj, loc); err != nil {
			return err
		}
		if items, ok := obj["items"]; ok {
			return checkItems(items, join(loc, "items"))
		}
	case "object":
		return checkObjectBody(obj, loc, depth+1, nodes, d)
	}
	return nil
}

func typeOf(obj map[string]any, loc string, allowed []string) (string, error) {
	t, ok := obj["type"]
	if !ok {
		return "", bad(join(loc, "type"), "a property schema must declare a type (one of %s)", strings.Join(allowed, ", "))
	}
	s, ok := t.(string)
	if !ok || !slices.Contains(allowed, s) {
		return "", bad(join(loc, "type"), "type must be one of %s, got %s", strings.Join(allowed, ", "), show(t))
	}
	return s, nil
}

func checkDescription(obj map[string]any, loc string) error {
	if d, ok := obj["description"]; ok {
		if _, ok := d.(string); !ok {
			return bad(join(loc, "description"), "description must be a string, got %s", show(d))
		}
	}
	return nil
}

func checkItems(v any, loc string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return bad(loc, "items must be a schema object, got %s", show(v))
	}
	typ, err := typeOf(obj, loc, itemTypes)
	if err != nil {
		return err
	}
	if err := keywordsOK(obj, loc, "in items", itemKeywords); err != nil {
		return err
	}
	if err := checkDescription(obj, loc); err != nil {
		return err
	}
	_, err = enumOf(obj, loc, typ)
	return err
}

// enumOf checks that an enum, when present, is a non-empty array of members of type typ.
func enumOf(obj map[string]any, loc, typ string) ([]any, error) {
	e, ok := obj["enum"]
	if !ok {
		return nil, nil
	}
	eloc := join(loc, "enum")
	list, ok := e.([]any)
	if !ok {
		return nil, bad(eloc, "enum must be an array, got %s", show(e))
	}
	if len(list) == 0 {
		return nil, bad(eloc, "enum must list at least one value")
	}
	for i, m := range list {
		if !memberOf(m, typ) {
			return nil, bad(textf.Sprintf("%s.%d", eloc, i), "enum member %s is not of type %s", show(m), typ)
		}
	}
	return list, nil
}

func memberOf(m any, typ string) bool {
	switch typ {
	case "string":
		_, ok := m.(string)
		return ok
	case "boolean":
		_, ok := m.(bool)
		return ok
	case "number":
		_, ok := m.(json.Number)
		return ok
	case "integer":
		n, ok := m.(json.Number)
		if !ok {
			return false
		}
		d, ok := parseDecimal(string(n))
		return ok && d.isInt()
	}
	return false
}

func checkString(obj map[string]any, loc string) error {
	minL, hasMin, err := lengthOf(obj, loc, "minLength")
	if err != nil {
		return err
	}
	maxL, hasMax, err := lengthOf(obj, loc, "maxLength")
	if err != nil {
		return err
	}
	if hasMin && hasMax && minL > maxL {
		return bad(join(loc, "minLength"), "minLength %d is greater than maxLength %d", minL, maxL)
	}
	enum, err := enumOf(obj, loc, "string")
	if err != nil || enum == nil || !hasMin && !hasMax {
		return err
	}
	for _, m := range enum {
		n := utf8.RuneCountInString(m.(string))
		if (!hasMin || n >= minL) && (!hasMax || n <= maxL) {
			return nil
		}
	}
	return bad(join(loc, "enum"), "no enum member has a length between minLength and maxLength")
}

func lengthOf(obj map[string]any, loc, key string) (int, bool, error) {
	v, ok := obj[key]
	if !ok {
		return 0, false, nil
	}
	kloc := join(loc, key)
	n, ok := v.(json.Number)
	if !ok {
		return 0, false, bad(kloc, "%s must be a non-negative integer, got %s", key, show(v))
	}
	d, ok := parseDecimal(string(n))
	if !ok || !d.isInt() || d.sign() < 0 {
		return 0, false, bad(kloc, "%s must be a non-negative integer, got %s", key, n)
	}
	x, fits := d.int64()
	if !fits || x > MaxLengthKeyword {
		return 0, false, bad(kloc, "%s %s is over the bound of %d", key, n, MaxLengthKeyword)
	}
	return int(x), true, nil
}

func boundOf(obj map[string]any, loc, key, typ string) (*decimal, error) {
	v, ok := obj[key]
	if !ok {
		return nil, nil
	}
	kloc := join(loc, key)
	n, ok := v.(json.Number)
	if !ok {
		return nil, bad(kloc, "%s must be a number, got %s", key, show(v))
	}
	d, ok := parseDecimal(string(n))
	if !ok {
		return nil, bad(kloc, "%s must be a number, got %s", key, n)
	}
	if typ == "integer" && !d.isInt() {
		return nil, bad(kloc, "%s of an integer must be an integer, got %s", key, n)
	}
	return &d, nil
}

func checkNumber(obj map[string]any, loc, typ string) error {
	minV, err := boundOf(obj, loc, "minimum", typ)
	if err != nil {
		return err
	}
	maxV, err := boundOf(obj, loc, "maximum", typ)
	if err != nil {
		return err
	}
	if minV != nil && maxV != nil && minV.cmp(*maxV) > 0 {
		return bad(join(loc, "minimum"), "minimum %s is greater than maximum %s", obj["minimum"], obj["maximum"])
	}
	enum, err := enumOf(obj, loc, typ)
	if err != nil || enum == nil || minV == nil && maxV == nil {
		return err
	}
	for _, m := range enum {
		d, ok := parseDecimal(string(m.(json.Number)))
		if ok && (minV == nil || d.cmp(*minV) >= 0) && (maxV == nil || d.cmp(*maxV) <= 0) {
			return nil
		}
	}
	return bad(join(loc, "enum"), "no enum member lies between minimum and maximum")
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return textf.Sprintf("a %T", v)
}

// show renders a decoded value for a reason: scalars as JSON, containers by kind.
func show(v any) string {
	switch v.(type) {
	case []any, map[string]any:
		return jsonKind(v)
	}
	b, ok := rawjson.AppendValue(nil, v, true)
	if !ok {
		return jsonKind(v)
	}
	return clip(string(b))
}

// checkPattern checks a pattern, present only in the WebMCP draft's dialect: a string of at most
// MaxPatternLength code points that internal/shared/rematch compiles (RE2's syntax, less Unicode
// classes and octal escapes, within rematch.MaxInstructions). The host matches patterns with
// rematch, whose time is linear in the argument, never with a backtracking engine: a pattern is
// the app's and the argument the model's, and a backtracking match of the two could hold the
// worker for minutes. What RE2 refuses (lookaround, backreferences) is refused here; the page's
// SDK also compiles each pattern with its JavaScript RegExp, so a pattern both engines take is
// one whose meaning they share.
func checkPattern(obj map[string]any, loc string) error {
	p, ok := obj["pattern"]
	if !ok {
		return nil
	}
	ploc := join(loc, "pattern")
	s, ok := p.(string)
	if !ok {
		return bad(ploc, "pattern must be a string, got %s", show(p))
	}
	if n := utf8.RuneCountInString(s); n > MaxPatternLength {
		return bad(ploc, "the pattern is %d characters, over the bound of %d", n, MaxPatternLength)
	}
	if _, err := rematch.Compile(s); err != nil {
		return bad(ploc, "the pattern %q is not one the host matches (RE2 syntax without Unicode classes, no lookaround or backreferences): %v", clip(s), err)
	}
	return nil
}

// checkPrefixItems checks prefixItems, present only in the WebMCP draft's dialect: a non-empty
// array of at most MaxPrefixItems item schemas (the subset of items).
func checkPrefixItems(obj map[string]any, loc string) error {
	p, ok := obj["prefixItems"]
	if !ok {
		return nil
	}
	ploc := join(loc, "prefixItems")
	list, ok := p.([]any)
	if !ok {
		return bad(ploc, "prefixItems must be an array of schemas, got %s", jsonKind(p))
	}
	if len(list) == 0 || len(list) > MaxPrefixItems {
		return bad(ploc, "prefixItems lists %d schemas; it must list 1 to %d", len(list), MaxPrefixItems)
	}
	for i, it := range list {
		if err := checkItems(it, textf.Sprintf("%s.%d", ploc, i)); err != nil {
			return err
		}
	}
	return nil
}
