package extensions

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Bounds of a tool's bound arguments.
const (
	// MaxToolHeaders bounds the headers one tool's params.headers names.
	MaxToolHeaders = 8
	// MaxHeaderValueBytes bounds a literal header value.
	MaxHeaderValueBytes = 256
	// MaxBoundBytes bounds a bound path, url or content.
	MaxBoundBytes = 8192
)

// BoundArgs are a tool's params in the original Voicebox's form: the primitive's arguments, fixed
// by the descriptor. A read-file or list-files tool binds a path, a write-file tool a path and
// content, an http-get tool a url and headers. As in the original, the model's arguments win
// over them: a bound path or url is where the tool goes when the model names none, and the
// primitive's own checks (the folder's walls, bounds.hosts) hold wherever it goes.
type BoundArgs struct {
	Path    *string           `json:"path,omitempty"`
	Content *string           `json:"content,omitempty"`
	URL     *string           `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	headers []ToolHeader // Headers, read, in name order
}

// ToolHeader is one header of a tool's params.headers: a literal value, or a secret named by
// "$NAME" (with what stands before it, such as "Bearer ", as Prefix).
type ToolHeader struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Secret string `json:"secret,omitempty"`
	Prefix string `json:"prefix,omitempty"`
}

// Bound returns the tool's params in the original's form, or nil when it has none or a
// parameter schema.
func (t *Tool) Bound() *BoundArgs { return t.bound }

// Headers returns the tool's params.headers, read, in name order.
func (t *Tool) Headers() []ToolHeader {
	if t.bound == nil {
		return nil
	}
	return t.bound.headers
}

// parseParams reads t.Params: nothing, a parameter schema (an object with "type", which Admit
// checks), or bound arguments, which it decodes strictly.
func parseParams(t *Tool) *refusal.Refusal {
	if len(t.Params) == 0 || string(t.Params) == "null" {
		return nil
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(t.Params, &keys) != nil || keys == nil {
		return refusal.New(refusal.BadDescriptor, "tool %s: params is a JSON object (a parameter schema, or the primitive's bound arguments)", clip(t.Name))
	}
	if _, schema := keys["type"]; schema {
		return nil
	}
	var b BoundArgs
	if err := strictjson.Decode(t.Params, &b); err != nil {
		return refusal.New(refusal.BadDescriptor, "tool %s: bound params are path, content, url (strings) and headers (an object of strings): %s", clip(t.Name), strictjson.Problem(err))
	}
	for name, v := range map[string]*string{"path": b.Path, "content": b.Content, "url": b.URL} {
		if v != nil && (len(*v) > MaxBoundBytes || name != "content" && *v == "") {
			return refusal.New(refusal.BadDescriptor, "tool %s: params.%s is 1 to %d bytes", clip(t.Name), name, MaxBoundBytes)
		}
	}
	if len(b.Headers) > MaxToolHeaders {
		return refusal.New(refusal.BadDescriptor, "tool %s names %d headers; at most %d", clip(t.Name), len(b.Headers), MaxToolHeaders)
	}
	for _, name := range slices.Sorted(maps.Keys(b.Headers)) {
		h, r := readHeader(t.Name, name, b.Headers[name])
		if r != nil {
			return r
		}
		b.headers = append(b.headers, h)
	}
	t.bound = &b
	return nil
}

// readHeader reads one header of params.headers: a literal value of printable ASCII without '$',
// or PREFIX$NAME, a secret.
func readHeader(tool, name, value string) (ToolHeader, *refusal.Refusal) {
	if !headerName.MatchString(name) || slices.Contains(forbiddenHeaders, strings.ToLower(name)) {
		return ToolHeader{}, refusal.New(refusal.BadDescriptor, "tool %s fills header %q, which is not a header a tool may fill", clip(tool), clip(name))
	}
	printable := func(s string) bool {
		return !strings.ContainsFunc(s, func(c rune) bool { return c < ' ' || c > '~' })
	}
	i := strings.IndexByte(value, '$')
	if i < 0 {
		if len(value) > MaxHeaderValueBytes || !printable(value) {
			return ToolHeader{}, refusal.New(refusal.BadDescriptor, "tool %s: header %s has a value of at most %d printable ASCII characters", clip(tool), name, MaxHeaderValueBytes)
		}
		return ToolHeader{Name: name, Value: value}, nil
	}
	prefix, secret := value[:i], value[i+1:]
	if !secretName.MatchString(secret) || len(prefix) > MaxSecretPrefixBytes || !printable(prefix) {
		return ToolHeader{}, refusal.New(refusal.BadDescriptor, "tool %s: header %s names a secret as $NAME at the end of its value (NAME upper-case letters, digits or '_', after at most %d printable characters such as \"Bearer \"), not %q", clip(tool), name, MaxSecretPrefixBytes, clip(value))
	}
	return ToolHeader{Name: name, Secret: secret, Prefix: prefix}, nil
}

// takes lists the bound arguments each primitive takes.
var takes = map[Primitive][]string{
	Now: nil, ReadFile: {"path"}, ListFiles: {"path"}, WriteFile: {"path", "content"}, HTTPGet: {"url", "headers"}, Wasm: nil,
}

// fits is the under-declared rule for bound arguments: each is one t's primitive takes.
func (b *BoundArgs) fits(t *Tool) *refusal.Refusal {
	for key, set := range map[string]bool{"path": b.Path != nil, "content": b.Content != nil, "url": b.URL != nil, "headers": len(b.Headers) > 0} {
		if set && !slices.Contains(takes[t.Primitive], key) {
			return refusal.New(refusal.UnderDeclared, "tool %s binds %s, which %s does not take (it takes %s)", t.Name, key, t.Primitive, orNothing(takes[t.Primitive]))
		}
	}
	if b.URL != nil && t.URL != "" {
		return refusal.New(refusal.UnderDeclared, "tool %s names two addresses, url and params.url; keep one", t.Name)
	}
	return nil
}

func orNothing(keys []string) string {
	if len(keys) == 0 {
		return "nothing"
	}
	return quoted(keys)
}

// says describes the bound arguments for the plan, or "" for none.
func (b *BoundArgs) says() string {
	if b == nil {
		return ""
	}
	var parts []string
	if b.Path != nil {
		parts = append(parts, fmt.Sprintf("path %s unless the model names another in the folder", *b.Path))
	}
	if b.Content != nil {
		unit := "bytes"
		if len(*b.Content) == 1 {
			unit = "byte"
		}
		parts = append(parts, fmt.Sprintf("content of %d %s unless the model gives its own", len(*b.Content), unit))
	}
	if b.URL != nil {
		parts = append(parts, fmt.Sprintf("url %s unless the model names another on the allowed hosts", *b.URL))
	}
	for _, h := range b.headers {
		if h.Secret == "" {
			parts = append(parts, fmt.Sprintf("sends %s: %s", h.Name, h.Value))
		}
	}
	return strings.Join(parts, "; ")
}

// ArgumentSchema returns the parameter schema of the arguments the model supplies: the tool's
// own, when its params is one; otherwise the primitive's arguments, each required unless the
// descriptor binds it: read-file {path}, write-file {path, content}, http-get {url} (none for a
// tool with a url template), wasm {input} (buffer-abi/1) or {a, b} (buffer-abi/diff), now and
// list-files nothing.
func (t *Tool) ArgumentSchema() json.RawMessage {
	if t.bound == nil && len(t.Params) > 0 && string(t.Params) != "null" {
		return t.Params
	}
	b := t.bound
	if b == nil {
		b = &BoundArgs{}
	}
	props := map[string]any{}
	var required []string
	arg := func(name string, bound bool, schema map[string]any) {
		props[name] = schema
		if !bound {
			required = append(required, name)
		}
	}
	str := func(desc string, maxLen int) map[string]any {
		return map[string]any{"type": "string", "description": desc, "maxLength": maxLen}
	}
	switch t.Primitive {
	case ReadFile:
		arg("path", b.Path != nil, str("the file's path in the folder", MaxBoundBytes))
	case WriteFile:
		arg("path", b.Path != nil, str("the file's path in the folder", MaxBoundBytes))
		arg("content", b.Content != nil, map[string]any{"type": "string", "description": "what to write"})
	case HTTPGet:
		if t.URL == "" {
			arg("url", b.URL != nil, str("the http or https address to GET, on one of the extension's hosts", MaxBoundBytes))
		}
	case Wasm:
		if t.Wasm != nil && t.Wasm.ABI == wasmabi.ABIDiff {
			arg("a", false, str("the old text", wasmabi.DiffMaxInputBytes))
			arg("b", false, str("the new text", wasmabi.DiffMaxInputBytes))
		} else {
			arg("input", false, str("the input text", wasmabi.MaxInputBytes))
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	out, _ := json.Marshal(s)
	return out
}

// CallArgs returns the arguments a call of t runs with: the model's (validated against
// ArgumentSchema), over the bound ones.
func (t *Tool) CallArgs(model map[string]any) map[string]any {
	out := map[string]any{}
	if b := t.bound; b != nil {
		for name, v := range map[string]*string{"path": b.Path, "content": b.Content, "url": b.URL} {
			if v != nil {
				out[name] = *v
			}
		}
	}
	maps.Copy(out, model)
	return out
}
