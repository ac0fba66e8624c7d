// Package toolschema is the parameter-schema subset a tool may declare, checked when the tool
// registers, and the validation of a model's arguments before a call reaches the tool.
//
// A parameter schema comes from untrusted code and its arguments from an untrusted model, so the
// host registers only schemas it can verify completely, and refuses a bad call before dispatch.
// Every "no" is a *refusal.Refusal with a stable rule id.
//
// # The subset
//
// The top level is an object schema with type "object" and at most properties, required and
// additionalProperties. Each property has one type, and each type has a closed keyword list:
//
//	string           description, enum, minLength, maxLength
//	number, integer  description, enum, minimum, maximum
//	boolean          description
//	array            description, items (type string, number, integer or boolean;
//	                 with at most description and enum besides)
//	object           description, properties, required, additionalProperties
//
// Values are checked as written and never coerced ("3" is not a length, 2.0 is an integer),
// bounds must be ordered, enum members must have the declared type, and an enum beside bounds
// must keep at least one member inside them. Anything else is refused invalid-tool-parameters with
// a reason naming the keyword and where it is, such as "properties.count.pattern".
//
// The semantics are JSON Schema draft 2020-12's. The package validates the subset itself rather than
// through a general JSON Schema library, because it runs in the page, where such a library would
// cost about a third of the page's download; the subset is small and closed. Its tests hold it to
// github.com/santhosh-tekuri/jsonschema/v6, the reference: the official JSON Schema test suite's
// cases for these keywords, the table tests and a differential fuzz target compare the two on
// every input. Beyond JSON Schema it adds bounds on size and shape, treats null for a required
// argument as missing, refuses an own "__proto__" key, and names each failure with a rule id.
//
// # Depth and nodes
//
// A schema's bounds count schemas, as the original Voicebox does: depth is how deep property
// schemas nest (the top level's properties at depth 0, an object property's properties one
// deeper), nodes how many property schemas there are, nested ones included. Arguments' bounds are
// measured on the JSON value: depth counts containers (objects and arrays) on the deepest path,
// the root included, so {} has depth 1 and {"a":{"b":[1]}} has depth 3; nodes counts every JSON
// value, the root included and object keys excluded, so {} is 1 node and {"a":[1,2]} is 4.
//
// # Numbers
//
// A number must be finite as a 64-bit float: 1e999, which JavaScript reads as Infinity, is
// refused in a schema (invalid-tool-parameters) and in arguments (invalid-argument), never
// handed on.
//
// # Decoding
//
// Schemas and arguments are decoded exactly: numbers stay as written (json.Number), so 1.0 is an
// integer and 6.0000000000000001 is over a maximum of 6. Of two equal keys in one object the later
// wins, as with encoding/json and JavaScript's JSON.parse; a caller that hands arguments on should
// pass the value Validate returns, re-encoded, so the receiver reads exactly what was checked
// (miniapp.Registry.Dispatch does).
//
// # Wasm
//
// The package is portable Go and behaves the same under GOOS=js GOARCH=wasm.
package toolschema

import (
	"encoding/json"
	"errors"
	"math"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Bounds on a parameter schema. Passing one is refused invalid-tool-parameters.
const (
	// MaxSchemaBytes bounds the encoded parameter schema, as received.
	MaxSchemaBytes = 65536
	// MaxSchemaDepth bounds how deep property schemas nest, counted in schemas as the original
	// Voicebox counts them: the top level's properties are at depth 0, the properties of an object
	// property at depth 1, and so on; a property schema deeper than this is refused.
	MaxSchemaDepth = 16
	// MaxSchemaNodes bounds the property schemas a parameter schema declares, nested ones
	// included (items schemas and the top level are not counted), as the original counts them.
	MaxSchemaNodes = 512
	// MaxPatternLength bounds a pattern (the WebMCP draft's dialect), in code points: a regular
	// expression runs on every call's argument, so its text stays short.
	MaxPatternLength = 512
	// MaxPrefixItems bounds the schemas of one prefixItems (the WebMCP draft's dialect).
	MaxPrefixItems = 64
	// MaxSchemaJSONDepth bounds the raw JSON nesting the parser reads of a schema: enough for a
	// schema at MaxSchemaDepth (each level is a schema object inside a properties object, and the
	// deepest may hold an items object and an enum array), so anything deeper is refused before
	// it is decoded, and can never be a valid schema anyway.
	MaxSchemaJSONDepth = 2*(MaxSchemaDepth+1) + 4
	// MaxLengthKeyword bounds the value of minLength and maxLength, so the library can hold it in
	// an int on every platform.
	MaxLengthKeyword = math.MaxInt32
)

// Bounds on arguments. Passing the byte bound is refused invalid-tool-arguments, the others
// invalid-argument-bounds.
const (
	// MaxArgumentBytes bounds the arguments as UTF-8 JSON with insignificant whitespace removed.
	MaxArgumentBytes = 65536
	// MaxArgumentDepth bounds the nesting of the argument object (see the package doc for depth).
	MaxArgumentDepth = 32
	// MaxArgumentNodes bounds the JSON values in the argument object (see the package doc).
	MaxArgumentNodes = 2048
)

// Bounds on every number literal, in a schema or in arguments. Exact comparison goes through
// math/big, where 1e999999 costs a million-digit expansion; no float64 needs more than this.
const (
	// MaxNumberLiteralBytes bounds the length of one number as written.
	MaxNumberLiteralBytes = 64
	// MaxNumberExponent bounds the absolute value of a number's written exponent.
	MaxNumberExponent = 400
)

// Schema is a parameter schema that passed the subset check and compiled. It is immutable and safe
// for concurrent use.
type Schema struct {
	doc  map[string]any
	norm json.RawMessage
	root *node
}

// Parse checks raw against the subset and compiles it. Any failure is a refusal with rule
// invalid-tool-parameters.
func Parse(raw []byte) (*Schema, error) { return ParseDialect(raw, Original) }

// Dialect is the subset a schema is checked against.
type Dialect int

const (
	// Original is the original Voicebox's subset, described above: what tools registered through
	// window.voicebox and window.webMcp, external apps and extensions declare.
	Original Dialect = iota
	// WebMCPDraft is the WebMCP draft's subset, for tools registered through
	// document.modelContext: Original's, plus pattern on a string (a regular expression both
	// RE2 and the page's JavaScript RegExp take; the host matches it with internal/shared/rematch,
	// linear in the string like RE2, see checkPattern)
	// and prefixItems on an array (item schemas by position, items for the rest), with
	// additionalProperties only false.
	WebMCPDraft
)

// ParseDialect is Parse against the subset of dialect d.
func ParseDialect(raw []byte, d Dialect) (*Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, refusal.New(refusal.InvalidToolParameters,
			"the parameter schema is %d bytes, over the bound of %d", len(raw), MaxSchemaBytes)
	}
	if !utf8.Valid(raw) {
		return nil, refusal.New(refusal.InvalidToolParameters, "the parameter schema is not valid UTF-8")
	}
	// Every JSON value takes at least a byte, so the byte bound bounds the values too.
	v, _, err := parseJSON(raw, MaxSchemaJSONDepth, MaxSchemaBytes)
	if err != nil {
		if errors.Is(err, errTooDeep) {
			return nil, refusal.New(refusal.InvalidToolParameters,
				"the parameter schema nests more than %d JSON levels deep; property schemas nest at most %d levels", MaxSchemaJSONDepth, MaxSchemaDepth)
		}
		return nil, refusal.New(refusal.InvalidToolParameters, "the parameter schema is not JSON: %v", err)
	}
	return fromValue(v, d)
}

// fromValue is Parse for a value decoded with json.Number numbers. The value must not change afterwards.
func fromValue(v any, d Dialect) (*Schema, error) {
	w := walker{maxDepth: MaxSchemaJSONDepth, maxNodes: MaxSchemaBytes}
	w.walk(v, 0)
	switch {
	case w.over:
		return nil, refusal.New(refusal.InvalidToolParameters,
			"the parameter schema nests more than %d JSON levels deep; property schemas nest at most %d levels", MaxSchemaJSONDepth, MaxSchemaDepth)
	case w.hasBadNumber && w.nonFinite:
		return nil, refusal.New(refusal.InvalidToolParameters,
			"%s: the number %s is not finite (it is beyond what a 64-bit float holds)", where(w.badNumber), clip(w.badNumberText))
	case w.hasBadNumber:
		return nil, refusal.New(refusal.InvalidToolParameters,
			"%s: the number %s is longer than %d characters or has an exponent beyond %d",
			where(w.badNumber), clip(w.badNumberText), MaxNumberLiteralBytes, MaxNumberExponent)
	}
	top, err := checkTop(v, d)
	if err != nil {
		return nil, err
	}
	norm, ok := rawjson.AppendValue(nil, top, false)
	if !ok {
		return nil, refusal.New(refusal.InvalidToolParameters, "the parameter schema does not encode")
	}
	return &Schema{doc: top, norm: norm, root: compileNode(top)}, nil
}

// JSON returns the schema in normal form: keys sorted, no insignificant whitespace, numbers as
// written. The caller must not modify it.
func (s *Schema) JSON() json.RawMessage { return s.norm }

// where spells a location for a reason: "the top level" for the root.
func where(loc string) string {
	if loc == "" {
		return "the top level"
	}
	return loc
}

// clip shortens a value quoted in a reason.
func clip(s string) string {
	const max = 80
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "..."
}
