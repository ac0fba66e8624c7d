// Package extensions says what an extension is and decides whether one may be admitted: the
// descriptor format, the capability gate, and the disclosure plan a person reads before
// admitting. It never runs anything; the relay's side of extensions (internal/door/extensionhost) keeps
// the admission state and runs the calls.
//
// # Where to look
//
//	extensions.go  Descriptor, Bounds and Tool; Parse (the strict decode, bad-descriptor) and
//	               Admit (the gate's rules, in order)
//	params.go      a tool's params in their two forms: the original Voicebox's bound arguments
//	               (path, content, url, headers) and a parameter schema; the arguments a model
//	               supplies (ArgumentSchema) and what a call runs with (CallArgs)
//	secrets.go     declared secrets (bounds.secrets and a header's $NAME), ReservedSecrets
//	wasm.go        a wasm tool's module, digest, export and ABI, in either form
//	plan.go        Disclose: the plan a person admits, and its hash
//	mcp.go         a remote MCP server (mcp.url, the admitted tool names and their pinned
//	               definitions), its rules and its disclosure
//
// # The descriptor
//
// A descriptor is JSON over a closed set of host primitives (now, read-file, write-file,
// list-files, http-get, wasm), or names a remote MCP server whose tools it admits by name (mcp);
// it never carries code the model wrote. Descriptors in the original
// Voicebox's format load unchanged: a tool's params may hold the primitive's bound arguments
// (such as {"path": "notes.md"} or {"url": ..., "headers": {"X-Subscription-Token":
// "$BRAVE_API_KEY"}}), where a header's $NAME names a secret the plan discloses like any other.
// Our richer form, a parameter schema for the arguments the model supplies, is the same type
// and passes the same gate.
//
// # The gate
//
// Admit checks the rules in a fixed order and the first failing rule is the refusal:
//
//	unknown-capability, eval-not-a-tool-path, exec-absent, capability-unmediated,
//	network-unbounded, secret-reserved, no-tools, bad-tool-name, unknown-primitive,
//	under-declared, unsupported-abi, duplicate-tool
//
// A capability is needed only by a primitive that consumes it: read-file and list-files need
// read, write-file write, http-get network; now and wasm need none (a wasm tool declares its
// module and digest, which is what it is given).
//
// The package is portable (no net/http, no syscall/js): the relay and the page compile it alike.
package extensions

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Placement is where an extension's tools would run.
type Placement string

// The placements.
const (
	Page    Placement = "page"
	Machine Placement = "machine"
)

// Primitive is a host operation a tool maps to.
type Primitive string

// The closed primitive set.
const (
	Now       Primitive = "now"
	ReadFile  Primitive = "read-file"
	WriteFile Primitive = "write-file"
	ListFiles Primitive = "list-files"
	HTTPGet   Primitive = "http-get"
	Wasm      Primitive = "wasm"
)

// Capabilities a descriptor may name. Only the first five can be granted; exec, eval, import and
// delete are known so that they are refused by their own rule.
const (
	CapClock   = "clock"
	CapRead    = "read"
	CapWrite   = "write"
	CapNetwork = "network"
	CapWasm    = "wasm"
	CapExec    = "exec"
	CapEval    = "eval"
	CapImport  = "import"
	CapDelete  = "delete"
)

// Sources are the values a descriptor's source may take (or none), as the original documents
// them: who proposed it.
var Sources = []string{"model", "catalogue", "builtin", "local", "sideload"}

// RunsIn are the values a descriptor's runsIn may take (or none): where its tools' work happens.
// "process" means starting a program, which the gate refuses exec-absent.
var RunsIn = []string{"host", "process", "remote"}

// Bounds of a descriptor.
const (
	// MaxDescriptorBytes bounds a descriptor's JSON: room for a remote MCP plan that pins the
	// definitions of MaxMCPTools tools.
	MaxDescriptorBytes = 256 << 10
	// MaxTools bounds a descriptor's tools.
	MaxTools = 32
	// MaxRequestsLimit is the largest maxRequests a network descriptor may declare.
	MaxRequestsLimit = 1000
	// MaxBytesLimit is the largest maxBytes a descriptor may declare: the bound of an http-get
	// response, of one response of a remote MCP server (an MCP Apps view arrives whole in one:
	// the largest example view of ext-apps 2.0.3, the PDF viewer's, is 4.3 MB of HTML), and of
	// the content a write-file call writes.
	MaxBytesLimit = 8 << 20
	// DefaultMaxBytes is the response bound when a descriptor declares none.
	DefaultMaxBytes = 256 << 10
	// FetchRequestTimeout bounds one request of an http-get call (each redirect hop is one),
	// from sending it to the last byte of its body; past it the call is refused fetch-timeout.
	FetchRequestTimeout = 10 * time.Second
	// FetchCallTimeout bounds a whole http-get call, every redirect hop included; past it the
	// call is refused fetch-timeout.
	FetchCallTimeout = 20 * time.Second
	// MaxPromptSnippetBytes bounds a tool's promptSnippet.
	MaxPromptSnippetBytes = 1024
)

// primitiveCap is the capability each primitive consumes; "" is none.
var primitiveCap = map[Primitive]string{
	Now: "", ReadFile: CapRead, WriteFile: CapWrite, ListFiles: CapRead, HTTPGet: CapNetwork, Wasm: "",
}

// Descriptor is an extension descriptor.
type Descriptor struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Description  string   `json:"description,omitempty"`
	Source       string   `json:"source,omitempty"`
	RunsIn       string   `json:"runsIn,omitempty"`
	Capabilities []string `json:"capabilities"`
	Bounds       Bounds   `json:"bounds"`
	Tools        []Tool   `json:"tools"`
	// MCP, when set, makes this a remote MCP extension: its tools are the server's (MCPServer).
	MCP *MCPServer `json:"mcp,omitempty"`
}

// Bounds are what a descriptor is admitted with; calls echo them unchanged.
type Bounds struct {
	Hosts       []string `json:"hosts,omitempty"`
	MaxRequests int      `json:"maxRequests,omitempty"`
	MaxBytes    int      `json:"maxBytes,omitempty"`
	// Secrets are the relay's environment variables the extension's requests carry (see Secret).
	Secrets []Secret `json:"secrets,omitempty"`
	// Command is the original's launch command of a process extension (a local MCP server). It
	// is read only so that such a descriptor meets its rule: one that names a command is refused
	// exec-absent, and nothing ever runs it.
	Command string `json:"command,omitempty"`
}

// Tool is one tool of a descriptor.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// PromptSnippet is the original's one line for the model about when to use the tool.
	PromptSnippet string    `json:"promptSnippet,omitempty"`
	Primitive     Primitive `json:"primitive"`
	// Params is a parameter schema for the arguments the model supplies (a JSON object with a
	// "type"), or the original's bound arguments (see BoundArgs).
	Params json.RawMessage `json:"params,omitempty"`
	URL    string          `json:"url,omitempty"` // http-get: template, {name} replaced by an argument
	Wasm   *WasmTool       `json:"wasm,omitempty"`

	bound *BoundArgs // Params in the original's form, read by Parse
}

var (
	idPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	toolPattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)
	hexDigest   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ReservedPrefix starts the ids of Voicebox's own descriptors (such as the built-in file
// primitives, "voicebox.builtin", which every executor admits); no extension may take one.
const ReservedPrefix = "voicebox."

// ShelfPrefix starts the ids the WASM shelf's tools are listed and called as (wasm-shelf-hash);
// no extension may take one.
const ShelfPrefix = "wasm-shelf"

// ValidID reports whether id can name a descriptor (and its proposals/<id>.json file).
func ValidID(id string) bool {
	return idPattern.MatchString(id) && !strings.HasPrefix(id, ReservedPrefix) && !strings.HasPrefix(id, ShelfPrefix)
}

// Parse decodes a descriptor strictly: unknown fields, trailing data, a bad id, a source or
// runsIn outside their documented values, malformed params, headers, secrets or wasm fields, or
// an oversized document are refused bad-descriptor.
// checkNames refuses, invalid-name, a descriptor whose id, name or a tool's name holds a
// character that hides or reorders text (internal/shared/names): they are what the admission plan shows a
// person. It runs before the id's and tool names' own alphabets so the refusal names the
// character.
func checkNames(d *Descriptor) *refusal.Refusal {
	if r := names.Check("the descriptor id", d.ID); r != nil {
		return r
	}
	if r := names.Check("the descriptor name", d.Name); r != nil {
		return r
	}
	for _, t := range d.Tools {
		if r := names.Check("the tool name", t.Name); r != nil {
			return r
		}
	}
	return nil
}

func Parse(raw []byte) (*Descriptor, *refusal.Refusal) {
	if len(raw) > MaxDescriptorBytes {
		return nil, refusal.New(refusal.BadDescriptor, "a descriptor is at most %d bytes; this one is %d", MaxDescriptorBytes, len(raw))
	}
	if r := toolHeaders(raw); r != nil {
		return nil, r
	}
	var d Descriptor
	if err := strictjson.Decode(raw, &d); err != nil {
		if strictjson.KindOf(err) == strictjson.Trailing {
			return nil, refusal.New(refusal.BadDescriptor, "the descriptor has data after its JSON object")
		}
		return nil, refusal.New(refusal.BadDescriptor, "the descriptor is not valid JSON of the descriptor shape: %s", strictjson.Problem(err))
	}
	if r := checkNames(&d); r != nil {
		return nil, r
	}
	if !ValidID(d.ID) {
		return nil, refusal.New(refusal.BadDescriptor, "a descriptor id is 1 to 64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, and not starting with %q or %q", ReservedPrefix, ShelfPrefix)
	}
	if d.Source != "" && !slices.Contains(Sources, d.Source) {
		return nil, refusal.New(refusal.BadDescriptor, "source is one of %s, not %q", strings.Join(Sources, ", "), clip(d.Source))
	}
	if d.RunsIn != "" && !slices.Contains(RunsIn, d.RunsIn) {
		return nil, refusal.New(refusal.BadDescriptor, "runsIn is one of %s, not %q", strings.Join(RunsIn, ", "), clip(d.RunsIn))
	}
	if r := checkSecrets(d.Bounds.Secrets); r != nil {
		return nil, r
	}
	if r := parseMCP(&d); r != nil {
		return nil, r
	}
	for i := range d.Tools {
		t := &d.Tools[i]
		if len(t.PromptSnippet) > MaxPromptSnippetBytes {
			return nil, refusal.New(refusal.BadDescriptor, "tool %s has a promptSnippet of %d bytes; at most %d", clip(t.Name), len(t.PromptSnippet), MaxPromptSnippetBytes)
		}
		if r := parseParams(t); r != nil {
			return nil, r
		}
		if r := parseWasm(t); r != nil {
			return nil, r
		}
	}
	if r := checkHeaderSecrets(&d); r != nil {
		return nil, r
	}
	return &d, nil
}

// toolHeaders refuses the earlier form of a tool's headers ({"headers":[{"name","env"}]}), which
// read any variable of the relay's environment, with a sentence that says what replaced it.
func toolHeaders(raw []byte) *refusal.Refusal {
	var peek struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(raw, &peek) != nil {
		return nil // the strict decode says what is wrong
	}
	for _, t := range peek.Tools {
		if _, ok := t["headers"]; ok {
			return refusal.New(refusal.BadDescriptor, "a tool no longer fills headers from the environment; declare the secret in bounds.secrets as {\"name\": VARIABLE, \"header\": HEADER, \"hosts\": [...]}, or as the original does, in params.headers as {HEADER: \"$VARIABLE\"}, so the plan discloses it")
		}
	}
	return nil
}

// Admit decides whether d may be admitted on placement, given the names of the tools already
// loaded (by other descriptors). It returns the first failing rule, in the documented order.
func Admit(d *Descriptor, placement Placement, existingTools []string) *refusal.Refusal {
	if placement != Page && placement != Machine {
		return refusal.New(refusal.BadDescriptor, "placement is page or machine, not %q", placement)
	}
	caps := map[string]bool{}
	for _, c := range d.Capabilities {
		switch c {
		case CapClock, CapRead, CapWrite, CapNetwork, CapWasm, CapExec, CapEval, CapImport, CapDelete:
			caps[c] = true
		default:
			return refusal.New(refusal.UnknownCapability, "%q is not a capability; the grantable ones are clock, read, write, network and wasm", clip(c))
		}
	}
	if caps[CapEval] {
		return refusal.New(refusal.EvalNotAToolPath, "the descriptor declares eval; evaluating code would bypass every host primitive, so no tool may run that way")
	}
	if caps[CapExec] || d.RunsIn == "process" || d.Bounds.Command != "" {
		return refusal.New(refusal.ExecAbsent, "the descriptor needs to start a process (exec, runsIn \"process\" or a command); Voicebox has no primitive that runs programs, on the %s placement or any other, and no container here bounds a child process", placement)
	}
	if caps[CapImport] || caps[CapDelete] {
		return refusal.New(refusal.CapabilityUnmediated, "the descriptor declares import or delete; no host primitive mediates loading modules or deleting files")
	}
	if caps[CapNetwork] {
		b := d.Bounds
		if len(b.Hosts) == 0 || b.MaxRequests <= 0 || b.MaxRequests > MaxRequestsLimit {
			return refusal.New(refusal.NetworkUnbounded, "a network extension must say where (bounds.hosts) and how much (bounds.maxRequests, from 1 to %d)", MaxRequestsLimit)
		}
		for _, h := range b.Hosts {
			if !validHost(h) {
				return refusal.New(refusal.NetworkUnbounded, "bounds.hosts names exact host names (optionally host:port), not %q", clip(h))
			}
		}
	}
	if d.Bounds.MaxBytes < 0 || d.Bounds.MaxBytes > MaxBytesLimit {
		return refusal.New(refusal.NetworkUnbounded, "bounds.maxBytes is from 1 to %d", MaxBytesLimit)
	}
	if r := admitSecrets(d); r != nil {
		return r
	}
	if r := admitMCP(d, caps); r != nil {
		return r
	}
	if len(d.Tools) == 0 && d.MCP == nil {
		return refusal.New(refusal.NoTools, "the descriptor declares no tools, so there is nothing to admit")
	}
	if len(d.Tools) > MaxTools {
		return refusal.New(refusal.NoTools, "a descriptor has at most %d tools; this one has %d", MaxTools, len(d.Tools))
	}
	for _, t := range d.Tools {
		if !toolPattern.MatchString(t.Name) {
			return refusal.New(refusal.BadToolName, "tool name %q must be 1 to 64 letters, digits, '_' or '-', starting with a letter", clip(t.Name))
		}
	}
	for _, t := range d.Tools {
		if _, ok := primitiveCap[t.Primitive]; !ok {
			return refusal.New(refusal.UnknownPrimitive, "tool %s names %q; the primitives are now, read-file, write-file, list-files, http-get and wasm", t.Name, clip(string(t.Primitive)))
		}
	}
	for i := range d.Tools {
		if r := underDeclared(&d.Tools[i], caps); r != nil {
			return r
		}
	}
	if r := underDeclaredSecret(d, caps[CapNetwork]); r != nil {
		return r
	}
	for i := range d.Tools {
		if r := wasmABI(&d.Tools[i]); r != nil {
			return r
		}
	}
	seen := map[string]bool{}
	for _, t := range d.Tools {
		if seen[t.Name] || slices.Contains(existingTools, t.Name) {
			return refusal.New(refusal.DuplicateTool, "a tool named %s is already declared or loaded", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// underDeclared is the gate's under-declared rule for one tool: the capability its primitive
// consumes, what it must name (an http-get its address, a wasm tool its module), and params the
// primitive can take.
func underDeclared(t *Tool, caps map[string]bool) *refusal.Refusal {
	if need := primitiveCap[t.Primitive]; need != "" && !caps[need] {
		return refusal.New(refusal.UnderDeclared, "tool %s uses %s, which consumes the %s capability the descriptor does not declare; an undeclared need cannot be granted", t.Name, t.Primitive, need)
	}
	if t.bound != nil {
		if r := t.bound.fits(t); r != nil {
			return r
		}
	} else if len(t.Params) > 0 {
		if _, err := toolschema.Parse(t.Params); err != nil {
			return refusal.New(refusal.UnderDeclared, "tool %s has parameters outside the supported schema subset: %s", t.Name, clip(err.Error()))
		}
		if t.Primitive == HTTPGet && t.URL == "" {
			return refusal.New(refusal.UnderDeclared, "tool %s uses http-get with a parameter schema but declares no url template for them", t.Name)
		}
	}
	if t.Primitive == Wasm {
		w := t.Wasm
		if w == nil || w.Module == "" || !hexDigest.MatchString(w.SHA256) || w.Export == "" {
			return refusal.New(refusal.UnderDeclared, "wasm tool %s must name its module, its sha256 digest (64 lower-case hex digits) and its call export; a module nobody can verify is a module nobody admitted", t.Name)
		}
	}
	return nil
}

func validHost(h string) bool {
	name, port, found := strings.Cut(h, ":")
	if name == "" || strings.ContainsAny(name, "*/@ ?#[]") || found && port == "" {
		return false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// BoundsJSON returns the bounds as the JSON object calls echo.
func BoundsJSON(b Bounds) json.RawMessage {
	out, _ := json.Marshal(b)
	return out
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// quoted joins names as "a", "b" and "c" for a sentence.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
