package extensions

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

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
	// Secrets says, for each declared secret (in bounds.secrets or a header's $NAME), which
	// variable goes in which header to which hosts, with which tools' requests; the Summary has
	// the same in words.
	Secrets []SecretDisclosure `json:"secrets"`
	// MCP is what the plan says of a remote MCP server: its URL and the admitted tools.
	MCP     *MCPDisclosure `json:"mcp,omitempty"`
	Never   []string       `json:"never"`
	Summary []string       `json:"summary"`
	Hash    string         `json:"hash"`
}

// disclosedCap is the grant a primitive's tools are listed under: the capability it consumes,
// or for the two that consume none, what they are given (the time; their own module).
func disclosedCap(p Primitive) string {
	switch p {
	case Now:
		return CapClock
	case Wasm:
		return CapWasm
	}
	return primitiveCap[p]
}

// Disclose returns the plan of d on placement. It describes; it does not admit (call Admit).
func Disclose(d *Descriptor, placement Placement, raw []byte) Plan {
	p := Plan{ID: d.ID, Name: d.Name, Placement: string(placement), Bounds: d.Bounds, Secrets: discloseSecrets(d), MCP: discloseMCP(d), Never: []string{CapExec, CapEval, CapImport}}
	if p.Secrets == nil {
		p.Secrets = []SecretDisclosure{}
	}
	byCap := map[string][]string{}
	for _, t := range d.Tools {
		c := disclosedCap(t.Primitive)
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
			if d.Bounds.MaxBytes > 0 {
				g.Gets += fmt.Sprintf(", at most %d bytes a call", d.Bounds.MaxBytes)
			}
		case CapNetwork:
			g.Enforcement = "mediated-fetch"
			if d.MCP != nil {
				g.Tools = p.MCP.Tools
				g.Gets = fmt.Sprintf("an MCP session (Streamable HTTP: POST, DELETE, and a GET stream for the server's notifications) with %s through the relay, to %s only (every redirect hop too), at most %d requests in all, each response cut at %d bytes, each request but the stream at most %s and a tool call at most %s", d.MCP.URL, strings.Join(d.Bounds.Hosts, ", "), d.Bounds.MaxRequests, maxBytes(d.Bounds), FetchRequestTimeout, MCPCallTimeout)
				break
			}
			g.Gets = fmt.Sprintf("GET requests through the relay to %s only (every redirect hop too), at most %d requests, responses cut at %d bytes, each request at most %s and a call at most %s", strings.Join(d.Bounds.Hosts, ", "), d.Bounds.MaxRequests, maxBytes(d.Bounds), FetchRequestTimeout, FetchCallTimeout)
		case CapWasm:
			g.Enforcement, g.Gets = "host-primitive-scope", "running its digest-pinned WASM module with no imports; the digest binds the bytes, not what they do, so the host bounds their memory, time and output"
		}
		p.Grants = append(p.Grants, g)
		p.Summary = append(p.Summary, fmt.Sprintf("%s: %s (enforced by %s)", c, g.Gets, g.Enforcement))
	}
	for _, t := range d.Tools {
		if s := t.bound.says(); s != "" {
			p.Summary = append(p.Summary, fmt.Sprintf("tool %s: %s", t.Name, s))
		}
	}
	if p.MCP != nil {
		p.Summary = append(p.Summary, p.MCP.Says)
		for _, t := range p.MCP.Definitions {
			p.Summary = append(p.Summary, mcpToolSays(t))
		}
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
