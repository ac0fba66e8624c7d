// Package commands is the assistant's command catalogue: the built-in tools a model is offered
// (files, mini-apps, extensions, undo), the one function that turns a model's call (name, args)
// into an Action or a named refusal, the system instruction live models get, and the offline
// resolver that turns typed commands into the same actions.
//
// The package decides what a call means, never where it runs: the relay's router
// (internal/core/assistant) sends each action to the root's executor, the page or the extension
// registry. It is portable Go, so a page-side resolver could use it too.
//
// # Mapping a call
//
// Set.Map checks, in this order: the name is a tool of the set (unknown-tool); the arguments pass
// the tool's parameter schema through internal/shared/toolschema, the same validation mini-app tools get:
// a required argument absent or null is missing-argument naming it (an empty string is present),
// an undeclared key or an own "__proto__" key is invalid-argument, a value of the wrong type
// invalid-argument-type, and so on. The built-in schemas all close their objects, so no
// argument is silently ignored.
//
// # Tool sets
//
// Builtins is the set of built-in tools. Set.With adds the open mini-apps' tools (their
// model-facing names start with app_); a declaration that does not pass the checks a mini-app
// tool passes at registration is left out and reported. A Set never changes; the router swaps
// in a new one when the page's tools change.
package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// MaxExtraTools bounds the mini-app tools a Set takes beyond the built-ins; the rest are left out.
const MaxExtraTools = 256

// AppToolPrefix starts the model-facing name of every mini-app tool (see miniapp.ModelName).
const AppToolPrefix = "app_"

// Tool is one tool of a Set.
type Tool struct {
	// Name is what the model calls it.
	Name string
	// Description is what the model is told it does.
	Description string
	// Parameters is its parameter schema in normal form.
	Parameters json.RawMessage
	// Confirm reports that a call waits for the user's approval before it runs.
	Confirm bool
	// ChangesFiles reports a built-in whose success changes the workspace's files (the page
	// refreshes its file list after one). An extension tool that writes is not marked: which
	// extension tools write is known only per call.
	ChangesFiles bool
	// Builtin reports a built-in tool; the others are mini-app tools, run by the page.
	Builtin bool
	schema  *toolschema.Schema
}

// Set is an immutable set of tools, in the order the model is offered them.
type Set struct {
	tools  []*Tool
	byName map[string]*Tool
}

var builtinSet = newBuiltinSet()

func newBuiltinSet() *Set {
	s := &Set{byName: map[string]*Tool{}}
	for _, b := range builtins {
		schema, err := toolschema.Parse([]byte(b.parameters))
		if err != nil {
			panic(fmt.Sprintf("commands: the built-in %s has a schema outside the subset: %v", b.name, err))
		}
		t := &Tool{Name: b.name, Description: b.description, Parameters: schema.JSON(), Confirm: b.confirm, ChangesFiles: b.changes, Builtin: true, schema: schema}
		s.tools = append(s.tools, t)
		s.byName[t.Name] = t
	}
	return s
}

// Builtins returns the set of built-in tools.
func Builtins() *Set { return builtinSet }

// IsBuiltin reports whether name is a built-in tool.
func IsBuiltin(name string) bool {
	t, ok := builtinSet.byName[name]
	return ok && t.Builtin
}

// With returns a new set: s and the mini-app tools in extra, each checked as the registry checks
// a declaration (name, description, schema subset) and required to carry the app_ prefix and a
// name no other tool of the set has. A declaration that fails is left out and its refusal is in
// the returned slice; past MaxExtraTools the rest are left out too.
func (s *Set) With(extra []tool.Declaration) (*Set, []error) {
	out := &Set{tools: slices.Clone(s.tools), byName: make(map[string]*Tool, len(s.byName)+len(extra))}
	for k, v := range s.byName {
		out.byName[k] = v
	}
	var errs []error
	added := 0
	for _, d := range extra {
		t, err := appTool(d)
		switch {
		case err != nil:
		case added >= MaxExtraTools:
			err = refusal.New(refusal.TooManyTools, "tool %q is left out: the set takes at most %d mini-app tools", d.Name, MaxExtraTools)
		case out.byName[t.Name] != nil:
			err = refusal.New(refusal.InvalidToolName, "tool %q is left out: another tool has that name", d.Name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.tools = append(out.tools, t)
		out.byName[t.Name] = t
		added++
	}
	return out, errs
}

func appTool(d tool.Declaration) (*Tool, error) {
	if !strings.HasPrefix(d.Name, AppToolPrefix) {
		return nil, refusal.New(refusal.InvalidToolName, "tool %q is left out: a mini-app tool's name starts with %s", d.Name, AppToolPrefix)
	}
	params := d.Parameters
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	raw, err := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}{d.Name, d.Description, params})
	if err != nil {
		return nil, refusal.New(refusal.InvalidToolParameters, "tool %q is left out: its parameters are not JSON", d.Name)
	}
	decl, err := miniapp.ParseDeclaration(raw)
	if err != nil {
		return nil, err
	}
	return &Tool{Name: decl.Name, Description: decl.Description, Parameters: decl.Parameters.JSON(), schema: decl.Parameters}, nil
}

// Tools returns the set's tools in order. The caller must not modify them.
func (s *Set) Tools() []*Tool { return slices.Clone(s.tools) }

// Lookup returns the tool called name.
func (s *Set) Lookup(name string) (*Tool, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Declarations returns the set as the live model is offered it.
func (s *Set) Declarations() []tool.Declaration {
	out := make([]tool.Declaration, len(s.tools))
	for i, t := range s.tools {
		out[i] = tool.Declaration{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

// Action is a call that passed its checks: the tool and its validated arguments.
type Action struct {
	// Tool is the tool called.
	Tool *Tool
	// Args are the validated arguments, re-encoded: a JSON object that says exactly what was
	// checked (numbers as written, no whitespace).
	Args json.RawMessage
	vals map[string]any
}

// Verb returns the tool's name.
func (a Action) Verb() string { return a.Tool.Name }

// String returns the string argument key, or "" when it is absent or not a string.
func (a Action) String(key string) string {
	s, _ := a.vals[key].(string)
	return s
}

// Int returns the integer argument key, or 0 when it is absent or not an integer that fits an
// int (the schemas bound the ones the tools read).
// Text returns the argument key as JSON text (a number as written, true or false, an array as
// [...]), or "" when it is absent; for passing a value to a primitive whose arguments are strings.
func (a Action) Text(key string) string {
	v, ok := a.vals[key]
	if !ok {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func (a Action) Int(key string) int {
	n, _ := a.vals[key].(json.Number)
	i, err := strconv.Atoi(string(n))
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != float64(int(f)) {
			return 0
		}
		return int(f)
	}
	return i
}

// Has reports whether the argument key is present.
func (a Action) Has(key string) bool {
	_, ok := a.vals[key]
	return ok
}

// MarshalJSON encodes the action as the typed turn spells one: {"verb": name, ...arguments}.
func (a Action) MarshalJSON() ([]byte, error) {
	verb, _ := json.Marshal(a.Tool.Name)
	var b bytes.Buffer
	b.WriteString(`{"verb":`)
	b.Write(verb)
	if inner := bytes.TrimSpace(a.Args); len(inner) > 2 {
		b.WriteByte(',')
		b.Write(inner[1 : len(inner)-1])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Map turns a model's call into an action, or refuses it: unknown-tool for a name the set does
// not have, and the argument rules of the tool's schema (see the package doc).
func (s *Set) Map(name string, args json.RawMessage) (Action, error) {
	t, ok := s.byName[name]
	if !ok {
		return Action{}, refusal.New(refusal.UnknownTool, "there is no tool %q; the tools are %s", clip(name), strings.Join(s.names(), ", "))
	}
	vals, err := t.schema.Validate(args)
	if err != nil {
		if r, ok := refusal.As(err); ok {
			return Action{}, refusal.New(r.Rule, "%s: %s", name, r.Why)
		}
		return Action{}, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(vals); err != nil {
		return Action{}, refusal.New(refusal.InvalidToolArguments, "%s: the arguments do not encode: %v", name, err)
	}
	return Action{Tool: t, Args: bytes.TrimRight(b.Bytes(), "\n"), vals: vals}, nil
}

// SplitAction reads a typed turn's action, {"verb": name, ...arguments}, into the name and the
// arguments object Map takes. A missing or non-string verb is missing-argument or
// invalid-argument-type; anything that is not an object is invalid-tool-arguments.
//
// The arguments are the action's own members other than "verb", byte for byte as the caller wrote
// them and in the caller's order: the size bound is measured on them and refusals follow their
// order, so nothing here may re-encode them (an encoder escapes <, > and & to six bytes each and
// sorts a map's keys).
func SplitAction(raw json.RawMessage) (name string, args json.RawMessage, err error) {
	members, ok := objectMembers(raw)
	if !ok {
		return "", nil, refusal.New(refusal.InvalidToolArguments, "an action is a JSON object: {\"verb\": tool name, ...its arguments}")
	}
	var verb json.RawMessage
	var b bytes.Buffer
	b.Grow(len(raw))
	b.WriteByte('{')
	for _, m := range members {
		if m.key == "verb" { // of two verbs the later wins, as in decoding
			verb = m.value
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(m.text)
	}
	b.WriteByte('}')
	if verb == nil || string(verb) == "null" {
		return "", nil, refusal.New(refusal.MissingArgument, "an action needs \"verb\", the tool's name")
	}
	if json.Unmarshal(verb, &name) != nil {
		return "", nil, refusal.New(refusal.InvalidArgumentType, "an action's \"verb\" is a string, the tool's name")
	}
	return name, b.Bytes(), nil
}

// member is one member of a JSON object as it was written.
type member struct {
	key   string          // decoded
	value json.RawMessage // as written
	text  []byte          // "key": value, as written
}

// objectMembers reads the members of the JSON object raw in order, each as it was written; ok is
// false when raw is not one valid JSON object.
func objectMembers(raw []byte) (out []member, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, false
	}
	for dec.More() {
		start := dec.InputOffset()
		kt, err := dec.Token()
		key, isKey := kt.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		text := bytes.TrimLeft(raw[start:dec.InputOffset()], " \t\r\n,")
		out = append(out, member{key: key, value: value, text: text})
	}
	return out, true
}

func (s *Set) names() []string {
	out := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		if t.Builtin {
			out = append(out, t.Name)
		}
	}
	if n := len(s.tools) - len(out); n > 0 {
		out = append(out, "and "+countOf(n, "mini-app tool"))
	}
	return out
}

// clip shortens untrusted text quoted in a reason.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "..."
}

// MiniAppTool is the verb of the original's typed action that runs an open mini-app's tool by
// its plain name, {"verb": "mini_app_tool", "name": tool, "args": {...}}. It is a typed action
// only; the model is offered each app tool under its own scoped name instead.
const MiniAppTool = "mini_app_tool"

// SplitAppToolCall reads the arguments of a mini_app_tool action: name, the tool's plain name (a
// string, required), and args, the tool's arguments (an object, passed on as written; {} when
// absent or null). Another key is invalid-argument.
func SplitAppToolCall(raw json.RawMessage) (plain string, args json.RawMessage, err error) {
	members, ok := objectMembers(raw)
	if !ok {
		return "", nil, refusal.New(refusal.InvalidToolArguments, "%s: the arguments are a JSON object, {\"name\": tool, \"args\": {...}}", MiniAppTool)
	}
	var name json.RawMessage
	args = json.RawMessage(`{}`)
	for _, m := range members {
		switch m.key {
		case "name":
			name = m.value
		case "args":
			if string(m.value) != "null" {
				args = m.value
			}
		default:
			return "", nil, refusal.New(refusal.InvalidArgument, "%s: unknown argument %q; it takes name and args", MiniAppTool, clip(m.key))
		}
	}
	if name == nil || string(name) == "null" {
		return "", nil, refusal.New(refusal.MissingArgument, "%s: missing required argument \"name\", the tool's name in its app", MiniAppTool)
	}
	if json.Unmarshal(name, &plain) != nil || plain == "" {
		return "", nil, refusal.New(refusal.InvalidArgumentType, "%s: \"name\" is the tool's name in its app, a string", MiniAppTool)
	}
	if args[0] != '{' {
		return "", nil, refusal.New(refusal.InvalidArgumentType, "%s: \"args\" is the tool's arguments, an object", MiniAppTool)
	}
	return plain, args, nil
}

// AppTools returns the set's mini-app tools whose name in their app is plain, in the set's
// order: one per open app that offers it.
func (s *Set) AppTools(plain string) []*Tool {
	var out []*Tool
	for _, t := range s.tools {
		if t.Builtin || len(t.Name) <= miniapp.ScopeLength {
			continue
		}
		if scope := t.Name[:miniapp.ScopeLength]; strings.HasSuffix(scope, "__") && miniapp.ScopedName(scope, plain) == t.Name {
			out = append(out, t)
		}
	}
	return out
}
