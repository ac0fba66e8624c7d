// Package extensions is the capability gate: it decides whether an extension descriptor may be
// admitted on a placement, and says what an admitted one gets (its disclosure plan).
//
// A descriptor is JSON over a closed set of host primitives (now, read-file, write-file,
// list-files, http-get, wasm); it never carries code the model wrote. Admit checks the rules in a
// fixed order and the first failing rule is the refusal:
//
//	unknown-capability, eval-not-a-tool-path, exec-absent, capability-unmediated,
//	network-unbounded, secret-reserved, no-tools, bad-tool-name, unknown-primitive,
//	under-declared, unsupported-abi, duplicate-tool
//
// A network extension may declare secrets (bounds.secrets, see Secret): environment variables
// of the relay it sends in a request header to hosts it names. The plan discloses each one in
// words; the relay's own variables (ReservedSecrets) are never admitted.
//
// The package is portable (no net/http, no syscall/js): the relay and the page compile it alike.
package extensions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/strictjson"
	"github.com/voicebox-go/voicebox/shared/toolschema"
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

// ABI is the only WASM calling convention supported.
const ABI = "buffer-abi/1"

// Bounds of a descriptor.
const (
	// MaxDescriptorBytes bounds a descriptor's JSON.
	MaxDescriptorBytes = 64 << 10
	// MaxTools bounds a descriptor's tools.
	MaxTools = 32
	// MaxRequestsLimit is the largest maxRequests a network descriptor may declare.
	MaxRequestsLimit = 1000
	// MaxBytesLimit is the largest maxBytes (response size bound) a descriptor may declare.
	MaxBytesLimit = 4 << 20
	// DefaultMaxBytes is the response bound when a descriptor declares none.
	DefaultMaxBytes = 256 << 10
	// FetchRequestTimeout bounds one request of an http-get call (each redirect hop is one),
	// from sending it to the last byte of its body; past it the call is refused fetch-timeout.
	FetchRequestTimeout = 10 * time.Second
	// FetchCallTimeout bounds a whole http-get call, every redirect hop included; past it the
	// call is refused fetch-timeout.
	FetchCallTimeout = 20 * time.Second
)

var primitiveCap = map[Primitive]string{
	Now: CapClock, ReadFile: CapRead, WriteFile: CapWrite, ListFiles: CapRead, HTTPGet: CapNetwork, Wasm: CapWasm,
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
}

// Bounds are what a descriptor is admitted with; calls echo them unchanged.
type Bounds struct {
	Hosts       []string `json:"hosts,omitempty"`
	MaxRequests int      `json:"maxRequests,omitempty"`
	MaxBytes    int      `json:"maxBytes,omitempty"`
	// Secrets are the relay's environment variables the extension's requests carry (see Secret).
	Secrets []Secret `json:"secrets,omitempty"`
}

// Tool is one tool of a descriptor.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Primitive   Primitive       `json:"primitive"`
	Params      json.RawMessage `json:"params,omitempty"`
	URL         string          `json:"url,omitempty"` // http-get: template, {name} replaced by an argument
	Wasm        *WasmTool       `json:"wasm,omitempty"`
}

// WasmTool names a WASM module by digest and its call export.
type WasmTool struct {
	Module string `json:"module"`
	SHA256 string `json:"sha256"`
	Export string `json:"export"`
	ABI    string `json:"abi,omitempty"`
}

var (
	idPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	toolPattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)
	hexDigest   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ReservedPrefix starts the ids of Voicebox's own descriptors (such as the built-in file
// primitives, "voicebox.builtin", which every executor admits); no extension may take one.
const ReservedPrefix = "voicebox."

// ValidID reports whether id can name a descriptor (and its proposals/<id>.json file).
func ValidID(id string) bool {
	return idPattern.MatchString(id) && !strings.HasPrefix(id, ReservedPrefix)
}

// Parse decodes a descriptor strictly: unknown fields, trailing data, a bad id, malformed
// secrets or an oversized document are refused bad-descriptor.
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
	if !ValidID(d.ID) {
		return nil, refusal.New(refusal.BadDescriptor, "a descriptor id is 1 to 64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, and not starting with %q", ReservedPrefix)
	}
	if r := checkSecrets(d.Bounds.Secrets); r != nil {
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
			return refusal.New(refusal.BadDescriptor, "a tool no longer fills headers from the environment; declare the secret in bounds.secrets as {\"name\": VARIABLE, \"header\": HEADER, \"hosts\": [...]}, so the plan discloses it")
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
	if caps[CapExec] || d.RunsIn == "process" {
		return refusal.New(refusal.ExecAbsent, "the descriptor needs to start a process (exec or runsIn \"process\"); Voicebox has no primitive that runs programs, on the %s placement or any other", placement)
	}
	if caps[CapImport] || caps[CapDelete] {
		return refusal.New(refusal.CapabilityUnmediated, "the descriptor declares import or delete; no host primitive mediates loading modules or deleting files")
	}
	if caps[CapNetwork] {
		b := d.Bounds
		if len(b.Hosts) == 0 || b.MaxRequests <= 0 || b.MaxRequests > MaxRequestsLimit {
			return refusal.New(refusal.NetworkUnbounded, "a network extension must list bounds.hosts and a maxRequests from 1 to %d", MaxRequestsLimit)
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
	if len(d.Tools) == 0 {
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
	for _, t := range d.Tools {
		need := primitiveCap[t.Primitive]
		if !caps[need] {
			return refusal.New(refusal.UnderDeclared, "tool %s uses %s, which needs the %s capability the descriptor does not declare", t.Name, t.Primitive, need)
		}
		if t.Primitive == HTTPGet && t.URL == "" {
			return refusal.New(refusal.UnderDeclared, "tool %s uses http-get but declares no url", t.Name)
		}
		if t.Primitive == Wasm {
			if t.Wasm == nil || !hexDigest.MatchString(t.Wasm.SHA256) || t.Wasm.Export == "" || t.Wasm.Module == "" {
				return refusal.New(refusal.UnderDeclared, "wasm tool %s must name its module, its sha256 digest (64 lower-case hex digits) and its call export", t.Name)
			}
		}
		if len(t.Params) > 0 {
			if _, err := toolschema.Parse(t.Params); err != nil {
				return refusal.New(refusal.UnderDeclared, "tool %s has parameters outside the supported schema subset: %s", t.Name, clip(err.Error()))
			}
		}
	}
	if r := underDeclaredSecret(d, caps[CapNetwork]); r != nil {
		return r
	}
	for _, t := range d.Tools {
		if t.Primitive == Wasm && t.Wasm.ABI != "" && t.Wasm.ABI != ABI {
			return refusal.New(refusal.UnsupportedABI, "wasm tool %s asks for ABI %q; only %s is supported", t.Name, clip(t.Wasm.ABI), ABI)
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

// Grant is one capability of a disclosure plan.
type Grant struct {
	Capability  string   `json:"capability"`
	Enforcement string   `json:"enforcement"`
	Gets        string   `json:"gets"`
	Tools       []string `json:"tools"`
}

// Plan is the disclosure of an admissible descriptor: what each capability gets and how it is
// enforced, and what it can never have. Hash identifies the exact descriptor the plan is of, so an
// approval bound to it fails when the proposal changes.
type Plan struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Placement string  `json:"placement"`
	Grants    []Grant `json:"grants"`
	Bounds    Bounds  `json:"bounds"`
	// Secrets says, for each declared secret, which variable goes in which header to which hosts,
	// with which tools' requests; the Summary has the same in words.
	Secrets []SecretDisclosure `json:"secrets"`
	Never   []string           `json:"never"`
	Summary []string           `json:"summary"`
	Hash    string             `json:"hash"`
}

// Disclose returns the plan of d on placement. It describes; it does not admit (call Admit).
func Disclose(d *Descriptor, placement Placement, raw []byte) Plan {
	p := Plan{ID: d.ID, Name: d.Name, Placement: string(placement), Bounds: d.Bounds, Secrets: discloseSecrets(d), Never: []string{CapExec, CapEval, CapImport}}
	if p.Secrets == nil {
		p.Secrets = []SecretDisclosure{}
	}
	byCap := map[string][]string{}
	for _, t := range d.Tools {
		c := primitiveCap[t.Primitive]
		byCap[c] = append(byCap[c], t.Name)
	}
	for _, c := range []string{CapClock, CapRead, CapWrite, CapNetwork, CapWasm} {
		tools, ok := byCap[c]
		if !ok && !slices.Contains(d.Capabilities, c) {
			continue
		}
		g := Grant{Capability: c, Tools: tools}
		switch c {
		case CapClock:
			g.Enforcement, g.Gets = "host-primitive-scope", "the current time"
		case CapRead:
			g.Enforcement, g.Gets = "host-primitive-scope", "reading and listing files inside the chosen folder (no dotfiles, no path outside it)"
		case CapWrite:
			g.Enforcement, g.Gets = "host-primitive-scope", "writing files inside the chosen folder (no dotfiles, no path outside it)"
		case CapNetwork:
			g.Enforcement = "mediated-fetch"
			g.Gets = fmt.Sprintf("GET requests through the relay to %s only, at most %d requests, responses cut at %d bytes, each request at most %s and a call at most %s", strings.Join(d.Bounds.Hosts, ", "), d.Bounds.MaxRequests, maxBytes(d.Bounds), FetchRequestTimeout, FetchCallTimeout)
		case CapWasm:
			g.Enforcement, g.Gets = "host-primitive-scope", "running its digest-pinned WASM module with no imports, bounded memory, time and output"
		}
		p.Grants = append(p.Grants, g)
		p.Summary = append(p.Summary, fmt.Sprintf("%s: %s (enforced by %s)", c, g.Gets, g.Enforcement))
	}
	for _, sd := range p.Secrets {
		p.Summary = append(p.Summary, "secret: "+sd.Says)
	}
	p.Summary = append(p.Summary, "never: running programs (exec), evaluating code (eval), loading modules (import)")
	sum := sha256.Sum256(raw)
	p.Hash = hex.EncodeToString(sum[:])
	return p
}

func maxBytes(b Bounds) int {
	if b.MaxBytes > 0 {
		return b.MaxBytes
	}
	return DefaultMaxBytes
}

// ResponseBound returns the response size bound of b.
func ResponseBound(b Bounds) int { return maxBytes(b) }

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
