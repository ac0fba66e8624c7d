package mcphost

// This file is a remote MCP tool's input schema: compiled as full JSON Schema (draft 2020-12, or
// the draft its $schema names) with github.com/santhosh-tekuri/jsonschema/v6, the project's
// reference validator, under a loader that fetches nothing; its arguments validated against it on
// the relay before a call leaves; and the schema the model is offered, its local $refs resolved.
//
// The subset of shared/toolschema stays the contract for mini-app tools and descriptors' own
// tools, which the original Voicebox defines. A remote MCP server's schema is its author's
// contract, written as MCP servers write them (default, title, examples, format, anyOf, oneOf,
// $defs and $ref, pattern, const, $schema): the relay honours all of it, within the bounds below.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Bounds on a remote MCP tool's input schema. A schema past one leaves the tool unavailable
// (tool-unavailable, with the reason in the listing).
const (
	// MaxRemoteSchemaBytes bounds the input schema as encoded: the subset's bound.
	MaxRemoteSchemaBytes = toolschema.MaxSchemaBytes
	// MaxRemoteSchemaDepth bounds how deep the schema's JSON nests, in containers (objects and
	// arrays) on the deepest path, the root included.
	MaxRemoteSchemaDepth = 64
	// MaxRemoteSchemaNodes bounds the JSON values of the schema, the root included and object
	// keys excluded.
	MaxRemoteSchemaNodes = 8192
	// MaxOfferedSchemaNodes bounds the JSON values of the schema the model is offered once its
	// local $refs are resolved (each replaced by what it points to), so a schema whose
	// definitions refer to each other twice over cannot grow exponentially on its way to the model.
	MaxOfferedSchemaNodes = 8192
)

// remoteSchemaURL is the address the compiler knows an input schema by; nothing is ever fetched
// from it or from anything else.
const remoteSchemaURL = "urn:voicebox:mcp-tool-input"

// remoteSchema is a remote MCP tool's input schema, compiled. It is immutable and safe for
// concurrent use.
type remoteSchema struct {
	compiled *jsonschema.Schema
	server   json.RawMessage // the schema as the server listed it
	// offered is the schema the model is given: the server's, its $schema dropped and its local
	// $refs resolved; note says what was changed on the way, "" when nothing.
	offered json.RawMessage
	note    string
}

// noFetch is the compiler's loader: a schema may refer only to itself.
type noFetch struct{}

func (noFetch) Load(url string) (any, error) {
	return nil, fmt.Errorf("the relay fetches no schema (%s): only references inside the tool's own schema ($defs, #/...) are followed", clipText(url, 200))
}

// compileRemoteSchema checks raw, a remote MCP tool's input schema, against the bounds, compiles
// it and derives the schema the model is offered. A failure says why, for the listing.
func compileRemoteSchema(raw []byte) (*remoteSchema, error) {
	if len(raw) > MaxRemoteSchemaBytes {
		return nil, fmt.Errorf("its input schema is %d bytes, over the bound of %d", len(raw), MaxRemoteSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("its input schema is not JSON: %v", err)
	}
	if err := schemaShape(doc); err != nil {
		return nil, err
	}
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		return nil, errors.New(`its input schema is not an object schema ("type": "object"), as MCP requires`)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noFetch{})
	if err := c.AddResource(remoteSchemaURL, doc); err != nil {
		return nil, fmt.Errorf("its input schema cannot be read: %v", err)
	}
	compiled, err := c.Compile(remoteSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("its input schema is not valid JSON Schema: %s", clipWhy(err.Error()))
	}
	offered, note, err := offeredSchema(root)
	if err != nil {
		return nil, err
	}
	return &remoteSchema{compiled: compiled, server: raw, offered: offered, note: note}, nil
}

// schemaShape holds a decoded schema to MaxRemoteSchemaDepth and MaxRemoteSchemaNodes, and each
// number in it to the literal bounds every number of ours meets (toolschema.MaxNumberLiteralBytes,
// finite as a 64-bit float): the validator compares numbers exactly, where 1e999999 would cost a
// million digits.
func schemaShape(doc any) error {
	nodes := 0
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		nodes++
		if nodes > MaxRemoteSchemaNodes {
			return fmt.Errorf("its input schema has more than %d JSON values", MaxRemoteSchemaNodes)
		}
		switch v := v.(type) {
		case map[string]any:
			if depth+1 > MaxRemoteSchemaDepth {
				return fmt.Errorf("its input schema nests more than %d JSON levels deep", MaxRemoteSchemaDepth)
			}
			for _, x := range v {
				if err := walk(x, depth+1); err != nil {
					return err
				}
			}
		case []any:
			if depth+1 > MaxRemoteSchemaDepth {
				return fmt.Errorf("its input schema nests more than %d JSON levels deep", MaxRemoteSchemaDepth)
			}
			for _, x := range v {
				if err := walk(x, depth+1); err != nil {
					return err
				}
			}
		case json.Number:
			f, err := strconv.ParseFloat(string(v), 64)
			if len(v) > toolschema.MaxNumberLiteralBytes || err != nil || math.IsInf(f, 0) {
				return fmt.Errorf("its input schema has the number %s, longer than %d characters or not finite as a 64-bit float", clipText(string(v), 80), toolschema.MaxNumberLiteralBytes)
			}
		}
		return nil
	}
	return walk(doc, 0)
}

// validate checks a model's arguments: the bounds of every tool's arguments first
// (toolschema.DecodeArguments: size, depth, nodes, numbers), then the full schema. It returns
// them decoded, numbers as written, for the call to send on.
func (s *remoteSchema) validate(raw []byte) (map[string]any, error) {
	args, err := toolschema.DecodeArguments(raw, toolschema.MaxArgumentBytes)
	if err != nil {
		return nil, err
	}
	err = s.compiled.Validate(args)
	if err == nil {
		return args, nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil, refusal.New(refusal.InvalidArgument, "the arguments do not match the tool's input schema: %s", clipWhy(err.Error()))
	}
	leaf := firstLeaf(verr)
	return nil, refusal.New(argumentRule(leaf.ErrorKind), "%s: %s (the tool's input schema)",
		instancePointer(leaf.InstanceLocation), leaf.ErrorKind.LocalizedString(english))
}

// english prints the validator's reasons.
var english = message.NewPrinter(language.English)

// firstLeaf is the failure that names the refusal: the first with no causes under it, or an
// anyOf or oneOf, whose causes are alternatives none of which is the one failure.
func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			return e
		}
		e = e.Causes[0]
	}
	return e
}

// instancePointer spells where in the arguments a failure is, as a JSON pointer ("/" is the
// whole object).
func instancePointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// argumentRule names a failed keyword with the rules the subset's validation uses for the same
// keyword, and invalid-argument for any other.
func argumentRule(k jsonschema.ErrorKind) refusal.Rule {
	switch k.(type) {
	case *kind.Required:
		return refusal.MissingArgument
	case *kind.Type:
		return refusal.InvalidArgumentType
	case *kind.MinLength, *kind.MaxLength, *kind.MinItems, *kind.MaxItems:
		return refusal.InvalidArgumentLength
	case *kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum:
		return refusal.InvalidArgumentRange
	case *kind.Enum, *kind.Const:
		return refusal.InvalidArgumentEnum
	}
	return refusal.InvalidArgument
}

// annotationKeywords are the keywords that say something of a value without constraining it: a
// $ref beside only these is replaced by its target with them laid over it.
var annotationKeywords = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true}

// offeredSchema is the schema the model is offered of root: the server's, with what a model
// provider cannot take rewritten and said in the note. $schema, $id, $anchor, $defs and
// definitions are dropped; a local $ref ("#" or "#/...") is replaced by what it points to (beside
// other constraining keywords, as allOf of both); a $ref to an anchor, and $dynamicRef, are
// reduced to any value; a $ref that recurses leaves the tool unavailable. Annotations (title, description,
// default, examples, format, ...) stay. The relay still validates the arguments against the full
// schema.
func offeredSchema(root map[string]any) (json.RawMessage, string, error) {
	r := resolver{root: root}
	out := r.resolve(root, nil)
	if r.recursive != "" {
		return nil, "", fmt.Errorf("its input schema refers to itself ($ref %q inside what it points to): the relay does not validate recursive schemas, whose cost it cannot bound", clipText(r.recursive, 80))
	}
	if r.over {
		return nil, "", fmt.Errorf("its input schema grows past %d JSON values once its $refs are resolved for the model", MaxOfferedSchemaNodes)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, "", fmt.Errorf("its input schema does not encode: %v", err)
	}
	var notes []string
	if r.resolved > 0 {
		notes = append(notes, fmt.Sprintf("$ref resolved in place (%d)", r.resolved))
	}
	notes = append(notes, r.reduced...)
	note := ""
	if len(notes) > 0 {
		note = "the schema offered differs from the server's: " + strings.Join(notes, "; ") + "; the relay validates the arguments against the server's full schema"
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), note, nil
}

// maxReducedNotes bounds the reductions a note names one by one.
const maxReducedNotes = 4

// resolver rewrites a schema for the model (offeredSchema).
type resolver struct {
	root     map[string]any
	nodes    int
	over     bool
	resolved int
	reduced  []string
	// recursive is a $ref found to refer to itself, "" when none is.
	recursive string
}

// reduce records a reduction for the note, once each and at most maxReducedNotes.
func (r *resolver) reduce(what string) {
	if len(r.reduced) < maxReducedNotes && !contains(r.reduced, what) {
		r.reduced = append(r.reduced, what)
	}
}

// dropped are the keywords the offered schema leaves out: identifiers and the definitions every
// $ref to them is resolved from.
var dropped = map[string]bool{"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$defs": true, "definitions": true, "$vocabulary": true}

// resolve returns v rewritten; stack holds the $refs being resolved on the way here.
func (r *resolver) resolve(v any, stack []string) any {
	r.nodes++
	if r.nodes > MaxOfferedSchemaNodes {
		r.over = true
	}
	if r.over || r.recursive != "" {
		return nil
	}
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = r.resolve(x, stack)
		}
		return out
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			return r.resolveRef(v, ref, stack)
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			switch {
			case dropped[k]:
			case k == "$dynamicRef" || k == "$recursiveRef":
				r.reduce(fmt.Sprintf("%s %v reduced to any value", k, x))
			default:
				out[k] = r.resolve(x, stack)
			}
		}
		return out
	}
	return v
}

// resolveRef resolves the $ref of schema v.
func (r *resolver) resolveRef(v map[string]any, ref string, stack []string) any {
	rest := make(map[string]any, len(v))
	constraining := false
	for k, x := range v {
		if k != "$ref" && !dropped[k] {
			rest[k] = x
			constraining = constraining || !annotationKeywords[k]
		}
	}
	target, ok := pointerTarget(r.root, ref)
	switch {
	case !ok:
		r.reduce(fmt.Sprintf("$ref %q (not a pointer into the schema) reduced to any value", clipText(ref, 80)))
		target = map[string]any{}
	case contains(stack, ref):
		// A schema that refers to itself can make its validation branch at every level of the
		// arguments (anyOf of two such $refs costs 2^depth): its cost has no bound the relay
		// can hold, so the tool is not offered.
		r.recursive = ref
		return nil
	default:
		r.resolved++
	}
	inner := r.resolve(target, append(stack, ref))
	if !constraining {
		m, isMap := inner.(map[string]any)
		if !isMap { // a boolean schema
			if len(rest) == 0 {
				return inner
			}
			m = map[string]any{"allOf": []any{inner}}
		}
		out := make(map[string]any, len(m)+len(rest))
		for k, x := range m {
			out[k] = x
		}
		for k, x := range rest {
			out[k] = r.resolve(x, stack)
		}
		return out
	}
	return map[string]any{"allOf": []any{inner, r.resolve(rest, stack)}}
}

func contains(stack []string, s string) bool {
	for _, x := range stack {
		if x == s {
			return true
		}
	}
	return false
}

// pointerTarget is the value a local $ref ("#" or a JSON pointer fragment "#/...") points to in
// root, and whether there is one.
func pointerTarget(root map[string]any, ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor
	}
	var cur any = root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(unescapePercent(tok), "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			x, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = x
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// unescapePercent decodes a URI fragment's %XX escapes; a token that does not decode is taken as
// written.
func unescapePercent(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
