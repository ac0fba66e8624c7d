// Package miniapp holds the tools mini-apps declare: the declaration check, a registry of tools per
// app, the declarations the live model is offered (shared/tool), and the dispatch of the model's calls
// back to the app that owns the tool.
//
// Declarations and arguments are untrusted: a declaration is checked field by field (its parameter
// schema through package toolschema), and a call reaches an app only after its arguments pass that
// schema. Every call gets exactly one answer: the app's result, or a *refusal.Refusal.
//
// # Names the model sees
//
// A tool named T in the app with id A is offered to the model as
//
//	app_HHHHHHHH__T
//
// where HHHHHHHH is tool.Digest(A), the first 8 hex digits of SHA-256(A). The name stays within
// what vendors accept (tool.ModelName: at most 64 characters of [a-zA-Z0-9_-]); when T is longer
// than 50 characters, it is cut to 41 and followed by "_" and tool.Digest(T); a T with a dot (the
// WebMCP name rule allows one) keeps at most its first 41 characters, each dot spelled _, followed
// by "_" and tool.Digest(T). The registry keeps the map from
// model-facing names back to (app, tool) and refuses a registration whose name would be taken by
// another app's tool or by a built-in tool, so a name always resolves to exactly one tool or to
// unknown-tool. Built-in tools should not start with "app_".
//
// # Wasm
//
// The package is portable Go and behaves the same under GOOS=js GOARCH=wasm; in the page it runs in
// the worker, and App is the adapter that carries a call to the app's frame.
package miniapp

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Bounds on a declaration.
const (
	// MaxToolNameLength bounds a tool name of the host's own vocabulary (external apps' tools, the
	// built-ins): 1 to 64 of [a-zA-Z0-9_-], what the live vendors take as a function name.
	MaxToolNameLength = 64
	// MaxWebMCPToolNameLength bounds the name a sandboxed mini-app registers, which follows the
	// WebMCP draft's name rule: 1 to 128 of [a-zA-Z0-9_.-]. ModelName turns such a name into one
	// the vendors take.
	MaxWebMCPToolNameLength = 128
	// MaxDescriptionLength bounds a tool description, counted in code points; it must not be empty.
	MaxDescriptionLength = 1024
	// MaxDeclarationBytes bounds one encoded declaration.
	MaxDeclarationBytes = 65536
)

// Declaration is a tool as an app declared it, after its checks. It is immutable.
type Declaration struct {
	Name        string
	Description string
	// ReadOnly is the WebMCP annotations.readOnlyHint: the app says the tool changes nothing. It is
	// a hint from untrusted code, never a grant.
	ReadOnly bool
	// UntrustedContent is the WebMCP annotations.untrustedContentHint: the app says the tool's
	// output carries content it does not vouch for.
	UntrustedContent bool
	Parameters       *toolschema.Schema
	// Draft is whether the schema was checked against the WebMCP draft's subset (a declaration
	// with "dialect": DraftDialect, which the SDK sends for document.modelContext) rather than
	// the original's.
	Draft bool
}

// DraftDialect is the value of a declaration's "dialect" that asks for the WebMCP draft's schema
// subset (toolschema.WebMCPDraft): the SDK sends it for tools registered through
// document.modelContext; window.voicebox and window.webMcp keep the original's subset.
const DraftDialect = "webmcp-draft"

// noParameters is the schema of a tool that declares none.
var noParameters = []byte(`{"type":"object"}`)

// ParseDeclaration checks one declaration, {name, description, parameters} or the WebMCP spelling
// {name, description, inputSchema, annotations: {readOnlyHint, untrustedContentHint}}: parameters
// and inputSchema are the same schema under two names, and a declaration may give one of them.
// The checks run: a JSON object (invalid-tool-declaration), name (invalid-tool-name, the WebMCP
// rule: ValidWebMCPToolName), description (invalid-tool-description), then parameters
// (invalid-tool-parameters); a declaration without a schema takes no arguments.
func ParseDeclaration(raw []byte) (*Declaration, error) {
	if len(raw) > MaxDeclarationBytes {
		return nil, refusal.New(refusal.InvalidToolParameters,
			"the declaration is %d bytes, over the bound of %d", len(raw), MaxDeclarationBytes)
	}
	fields, ok := members(raw)
	if !ok {
		return nil, refusal.New(refusal.InvalidToolDeclaration, "a tool declaration must be a JSON object {name, description, parameters}")
	}
	// Field names match exactly (encoding/json alone would also take "NAME"); fields other than
	// these (the SDK's execute, WebMCP's title or outputSchema) are ignored and not carried.
	var name, description string
	if err := stringField(fields, "name", &name); err != nil {
		return nil, refusal.New(refusal.InvalidToolName, "the declaration %s", err)
	}
	if r := names.Check("the tool name", name); r != nil {
		return nil, r
	}
	if !ValidWebMCPToolName(name) {
		return nil, refusal.New(refusal.InvalidToolName,
			"tool name %q must be 1 to %d of a-z, A-Z, 0-9, _, - and . (the WebMCP name rule)", clip(name), MaxWebMCPToolNameLength)
	}
	if err := stringField(fields, "description", &description); err != nil {
		return nil, refusal.New(refusal.InvalidToolDescription, "tool %q: the declaration %s", name, err)
	}
	if n := utf8.RuneCountInString(description); n == 0 || n > MaxDescriptionLength {
		return nil, refusal.New(refusal.InvalidToolDescription,
			"the description of tool %q is %d characters; it must be 1 to %d", name, n, MaxDescriptionLength)
	}
	dj := struct{ Parameters, InputSchema, Annotations json.RawMessage }{
		fields["parameters"], fields["inputSchema"], fields["annotations"]}
	params := dj.Parameters
	switch {
	case params != nil && dj.InputSchema != nil:
		return nil, refusal.New(refusal.InvalidToolParameters,
			"tool %q declares both parameters and inputSchema; declare one", name)
	case params == nil:
		params = dj.InputSchema
	}
	if params == nil {
		params = noParameters
	}
	dialect, draft := toolschema.Original, false
	if raw, ok := fields["dialect"]; ok {
		if s, ok := rawjson.Unquote(raw); !ok || s != DraftDialect {
			return nil, refusal.New(refusal.InvalidToolDeclaration, "tool %q: dialect must be %q or absent", name, DraftDialect)
		}
		dialect, draft = toolschema.WebMCPDraft, true
	}
	schema, err := toolschema.ParseDialect(params, dialect)
	if err != nil {
		r, _ := refusal.As(err)
		return nil, refusal.New(r.Rule, "tool %q: %s", name, r.Why)
	}
	d := &Declaration{Name: name, Description: description, Parameters: schema, Draft: draft}
	if dj.Annotations != nil {
		var ann annotationHints
		if err := strictjson.DecodeStructLoose(dj.Annotations, &ann); err != nil {
			return nil, refusal.New(refusal.InvalidToolParameters, "tool %q: annotations must be an object", name)
		}
		for _, h := range []struct {
			key string
			raw optionalRaw
			out *bool
		}{{"readOnlyHint", ann.ReadOnlyHint, &d.ReadOnly}, {"untrustedContentHint", ann.UntrustedContentHint, &d.UntrustedContent}} {
			if h.raw == nil {
				continue
			}
			if b := string(h.raw); b != "true" && b != "false" {
				return nil, refusal.New(refusal.InvalidToolParameters,
					"tool %q: annotations.%s must be true or false", name, h.key)
			} else {
				*h.out = b == "true"
			}
		}
	}
	return d, nil
}

// AtIndex names the place of a declaration in a list in its refusal: the same rule, and a reason
// that starts with "declaration I" (counting from 0). Other errors pass unchanged.
func AtIndex(i int, err error) error {
	if r, ok := refusal.As(err); ok {
		return refusal.New(r.Rule, "declaration %d: %s", i, r.Why)
	}
	return err
}

// JSON returns the declaration in normal form: {name, description, parameters} with the schema in
// its normal form, and annotations only when a hint is true; the bytes an encoding/json Encoder
// without HTML escaping wrote (TestDeclarationJSONAgreesWithJSON).
func (d *Declaration) JSON() json.RawMessage {
	w := rawjson.NewObject(nil, false)
	w.String("name", d.Name)
	w.String("description", d.Description)
	w.Raw("parameters", d.Parameters.JSON()) // a schema's normal form is JSON
	if d.ReadOnly || d.UntrustedContent {
		ann := rawjson.NewObject(nil, false)
		if d.ReadOnly {
			ann.Bool("readOnlyHint", true)
		}
		if d.UntrustedContent {
			ann.Bool("untrustedContentHint", true)
		}
		w.Raw("annotations", ann.Close())
	}
	if d.Draft {
		w.String("dialect", DraftDialect)
	}
	return w.Close()
}

// members reads raw as json.Unmarshal reads it into a map[string]json.RawMessage that must not
// be nil: one JSON object, a name given twice keeping its last value.
func members(raw []byte) (map[string]json.RawMessage, bool) {
	fields := map[string]json.RawMessage{}
	ok := rawjson.Members(raw, func(name string, v []byte) bool {
		fields[name] = append(json.RawMessage(nil), v...)
		return true
	})
	return fields, ok
}

// annotationHints are the WebMCP hints of a declaration's annotations, read as json.Unmarshal
// reads them into *json.RawMessage fields: names matched without regard to case, other members
// ignored, null the same as absent.
type annotationHints struct {
	ReadOnlyHint         optionalRaw `json:"readOnlyHint"`
	UntrustedContentHint optionalRaw `json:"untrustedContentHint"`
}

func (a *annotationHints) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "readOnlyHint", Into: &a.ReadOnlyHint}, {Name: "untrustedContentHint", Into: &a.UntrustedContentHint}}
}

// optionalRaw is a member's value as written, nil when it is null or absent.
type optionalRaw []byte

// UnmarshalStrict keeps b, or nothing for null.
func (o *optionalRaw) UnmarshalStrict(b []byte) error {
	if string(b) == "null" {
		*o = nil
		return nil
	}
	*o = append((*o)[:0:0], b...)
	return nil
}

// stringField reads fields[key] as json.Unmarshal reads it into a string (null leaves out as it
// is); the error completes "the declaration ...".
func stringField(fields map[string]json.RawMessage, key string, out *string) error {
	v, ok := fields[key]
	if !ok {
		return textf.Errorf("has no %s", key)
	}
	if string(v) == "null" {
		return nil
	}
	s, isString := rawjson.Unquote(v)
	if !isString {
		return textf.Errorf("has a %s that is not a string", key)
	}
	*out = s
	return nil
}

// ValidToolName reports whether s is a tool name: 1 to MaxToolNameLength of a-z, A-Z, 0-9, _ and -.
func ValidToolName(s string) bool { return validToolName(s) }

func validToolName(s string) bool { return nameOf(s, MaxToolNameLength, false) }

// ValidWebMCPToolName reports whether s is a tool name by the WebMCP draft's rule, the one a
// sandboxed mini-app registers under: 1 to MaxWebMCPToolNameLength of a-z, A-Z, 0-9, _, - and ..
func ValidWebMCPToolName(s string) bool { return nameOf(s, MaxWebMCPToolNameLength, true) }

func nameOf(s string, max int, dot bool) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c == '.' && dot || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// clip shortens untrusted text quoted in a reason.
func clip(s string) string {
	const max = 80
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "..."
}
