package extensions

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MCPServer is a remote MCP server a descriptor admits (runsIn "remote"): the relay holds a
// client session with it over the Streamable HTTP transport, every request through the mediated
// fetch of the descriptor's bounds. Its tools come from the server, not from the descriptor.
type MCPServer struct {
	// URL is the server's MCP endpoint, http or https, on a host of bounds.hosts.
	URL string `json:"url"`
	// Tools are the server's tool names a person admitted, as the server listed them when the plan
	// was made. Absent means none yet: once admitted, the relay lists the server's tools and stages
	// the same descriptor with them, which waits for a second admission. A tool the server lists
	// later waits the same way; one it stops listing is no longer offered.
	Tools []string `json:"tools,omitempty"`
	// Definitions pin what a person admitted of each tool in Tools: what the model and the
	// approval gate are given of it (MCPToolDefinition). The plan's hash is over the descriptor's
	// bytes, so it binds them: a tool the server lists otherwise now, or one without a
	// definition here, is not offered until a person admits a plan that pins it as it is.
	Definitions []MCPToolDefinition `json:"definitions,omitempty"`
}

// MCPToolDefinition is one admitted tool of a remote MCP server as the server listed it when the
// plan was made. SHA256 binds everything the model or the gate reads of the tool (its name,
// title, description, input and output schema, annotations and _meta.ui); the other fields are
// what the plan shows the person of it, and what the model is given.
type MCPToolDefinition struct {
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
	// Description is the tool's description as the model is given it: at most
	// MaxMCPDescriptionBytes, cut with "...".
	Description string          `json:"description,omitempty"`
	Annotations *MCPAnnotations `json:"annotations,omitempty"`
	// View is the tool's MCP Apps view (its ui:// resource), and ViewSHA256 the digest of that
	// resource's content when the plan was made ("" when it could not be read then): a view that
	// reads otherwise later is not shown until a plan with its new digest is admitted.
	View       string `json:"view,omitempty"`
	ViewSHA256 string `json:"viewSha256,omitempty"`
	SHA256     string `json:"sha256"`
}

// MCPAnnotations are a tool's behaviour hints as the server declared them. ReadOnlyHint is what
// the gate reads: a tool that declares it runs without asking the person.
type MCPAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ReadOnly reports whether a declares the tool changes nothing.
func (a *MCPAnnotations) ReadOnly() bool { return a != nil && a.ReadOnlyHint }

// Definition returns the pinned definition of tool name, or nil.
func (m *MCPServer) Definition(name string) *MCPToolDefinition {
	for i := range m.Definitions {
		if m.Definitions[i].Name == name {
			return &m.Definitions[i]
		}
	}
	return nil
}

// Bounds of a remote MCP extension.
const (
	// MaxMCPTools bounds how many of a server's tools a descriptor admits (and how many of a
	// listing are read).
	MaxMCPTools = 64
	// MaxMCPToolNameBytes bounds a server's tool name.
	MaxMCPToolNameBytes = 128
	// MaxMCPDescriptionBytes bounds a server tool's description as the model is given it and a
	// plan pins it; the rest is cut (the digest binds the whole).
	MaxMCPDescriptionBytes = 1024
	// MaxMCPTitleBytes bounds a pinned tool's title (and its annotations' title).
	MaxMCPTitleBytes = 256
	// MaxMCPViewURIBytes bounds a pinned tool's view URI.
	MaxMCPViewURIBytes = 2048
	// MCPCallTimeout bounds one tools/call (or resources/read) of a remote MCP server, every
	// request it makes included; past it the call is refused tool-timeout.
	MCPCallTimeout = 30 * time.Second
	// MCPConnectTimeout bounds making a session: initialize, its notification and the first
	// tools/list.
	MCPConnectTimeout = 20 * time.Second
)

// MCPToolSeparator joins a remote MCP extension's id and a server tool's name into the name the
// model calls it by (see MCPModelName).
const MCPToolSeparator = "__"

// MCPModelName is the name tool of remote MCP extension id is offered to the model under: the
// id, MCPToolSeparator, the server's name. Two servers' tools of one name never meet.
func MCPModelName(id, tool string) string { return id + MCPToolSeparator + tool }

// parseMCP checks the mcp field of d: an http(s) URL with a host, no tools of the descriptor's own
// (they come from the server), runsIn "remote" or none, and bounded, distinct tool names.
func parseMCP(d *Descriptor) *refusal.Refusal {
	m := d.MCP
	if m == nil {
		return nil
	}
	u, err := url.Parse(m.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return refusal.New(refusal.BadDescriptor, "mcp.url is the server's http or https endpoint, such as https://mcp.example.com/mcp, without a user or password; not %q", clip(m.URL))
	}
	if len(d.Tools) > 0 {
		return refusal.New(refusal.BadDescriptor, "a remote MCP descriptor's tools come from its server; list the admitted ones by name in mcp.tools, not in tools")
	}
	if d.RunsIn != "" && d.RunsIn != "remote" {
		return refusal.New(refusal.BadDescriptor, "a remote MCP descriptor runs in \"remote\", not %q", d.RunsIn)
	}
	if len(m.Tools) > MaxMCPTools {
		return refusal.New(refusal.BadDescriptor, "mcp.tools names at most %d tools; this one names %d", MaxMCPTools, len(m.Tools))
	}
	seen := map[string]bool{}
	for _, t := range m.Tools {
		if t == "" || len(t) > MaxMCPToolNameBytes {
			return refusal.New(refusal.BadDescriptor, "an MCP tool name in mcp.tools is 1 to %d bytes, not %q", MaxMCPToolNameBytes, clip(t))
		}
		if r := names.Check("an MCP tool name in mcp.tools", t); r != nil {
			return r
		}
		if seen[t] {
			return refusal.New(refusal.BadDescriptor, "mcp.tools names %q twice", clip(t))
		}
		seen[t] = true
	}
	return parseDefinitions(m)
}

// parseDefinitions checks m's pinned definitions: each of an admitted tool, once, bounded, with
// its digests as lower-case hex.
func parseDefinitions(m *MCPServer) *refusal.Refusal {
	if len(m.Definitions) > MaxMCPTools {
		return refusal.New(refusal.BadDescriptor, "mcp.definitions pins at most %d tools; this one pins %d", MaxMCPTools, len(m.Definitions))
	}
	seen := map[string]bool{}
	for _, d := range m.Definitions {
		switch {
		case !slices.Contains(m.Tools, d.Name) || seen[d.Name]:
			return refusal.New(refusal.BadDescriptor, "mcp.definitions pins each tool of mcp.tools at most once; %q is not one, or is pinned twice", clip(d.Name))
		case len(d.Description) > MaxMCPDescriptionBytes+len("...") || len(d.Title) > MaxMCPTitleBytes+len("...") || d.Annotations != nil && len(d.Annotations.Title) > MaxMCPTitleBytes+len("..."):
			return refusal.New(refusal.BadDescriptor, "the pinned definition of %s has a description over %d bytes or a title over %d", clip(d.Name), MaxMCPDescriptionBytes, MaxMCPTitleBytes)
		case d.View != "" && (!strings.HasPrefix(d.View, "ui://") || len(d.View) > MaxMCPViewURIBytes):
			return refusal.New(refusal.BadDescriptor, "the pinned view of %s is a ui:// URI of at most %d bytes", clip(d.Name), MaxMCPViewURIBytes)
		case !isDigest(d.SHA256) || d.ViewSHA256 != "" && !isDigest(d.ViewSHA256):
			return refusal.New(refusal.BadDescriptor, "the pinned digests of %s are 64 lower-case hex digits", clip(d.Name))
		}
		seen[d.Name] = true
	}
	return nil
}

func isDigest(s string) bool {
	return len(s) == 64 && !strings.ContainsFunc(s, func(r rune) bool { return (r < '0' || r > '9') && (r < 'a' || r > 'f') })
}

// admitMCP is the gate's under-declared rule for a remote MCP descriptor: it reaches its server
// over the network, so it declares network, and the server's host is one of bounds.hosts.
func admitMCP(d *Descriptor, caps map[string]bool) *refusal.Refusal {
	if d.MCP == nil {
		return nil
	}
	if !caps[CapNetwork] {
		return refusal.New(refusal.UnderDeclared, "a remote MCP server is reached over the network; the descriptor must declare the network capability")
	}
	u, _ := url.Parse(d.MCP.URL)
	if !slices.Contains(d.Bounds.Hosts, u.Host) && !slices.Contains(d.Bounds.Hosts, u.Hostname()) {
		return refusal.New(refusal.UnderDeclared, "mcp.url's host %s is not among bounds.hosts (%s)", u.Host, strings.Join(d.Bounds.Hosts, ", "))
	}
	return nil
}

// MCPDisclosure is what a plan says of a remote MCP server.
type MCPDisclosure struct {
	URL string `json:"url"`
	// Tools are the admitted tools by the names the model calls them (MCPModelName).
	Tools []string `json:"tools"`
	// Definitions are the admitted tools as the plan pins them (MCPServer.Definitions).
	Definitions []MCPToolDefinition `json:"definitions"`
	Says        string              `json:"says"`
}

// discloseMCP says, in words, where d's session goes and which of its tools the plan admits.
func discloseMCP(d *Descriptor) *MCPDisclosure {
	m := d.MCP
	if m == nil {
		return nil
	}
	out := &MCPDisclosure{URL: m.URL, Tools: []string{}, Definitions: append([]MCPToolDefinition{}, m.Definitions...)}
	for _, t := range m.Tools {
		out.Tools = append(out.Tools, MCPModelName(d.ID, t))
	}
	if len(m.Tools) == 0 {
		out.Says = fmt.Sprintf("remote MCP server %s: no tools are admitted yet; once admitted, the relay connects, lists the server's tools and asks you again with them", m.URL)
	} else {
		out.Says = fmt.Sprintf("remote MCP server %s: admits its tools %s exactly as pinned below; the list comes from the server and may change: a tool it adds, or one whose description, schema, annotations or view change, waits for you to admit a new plan; one it removes is no longer offered", m.URL, strings.Join(m.Tools, ", "))
	}
	return out
}

// MCPToolSaysPrefix begins the plan's line on each pinned tool of a remote MCP server.
const MCPToolSaysPrefix = "MCP tool "

// mcpToolSays is the plan's line on the pinned tool t of a remote MCP server: what the model
// reads of it and whether the gate asks before it runs.
func mcpToolSays(t MCPToolDefinition) string {
	var hints []string
	if t.Annotations.ReadOnly() {
		hints = append(hints, "declares it changes nothing (readOnlyHint), so it runs without asking you")
	} else {
		hints = append(hints, "asks you before each call (no readOnlyHint)")
	}
	if a := t.Annotations; a != nil {
		if a.DestructiveHint != nil && *a.DestructiveHint {
			hints = append(hints, "destructiveHint")
		}
		if a.IdempotentHint {
			hints = append(hints, "idempotentHint")
		}
		if a.OpenWorldHint != nil && *a.OpenWorldHint {
			hints = append(hints, "openWorldHint")
		}
	}
	if t.View != "" {
		hints = append(hints, "view "+t.View)
	}
	title := ""
	if t.Title != "" {
		title = fmt.Sprintf(" (%q)", t.Title)
	}
	return fmt.Sprintf("%s%s%s: %s; description %q; definition sha256 %s", MCPToolSaysPrefix, t.Name, title, strings.Join(hints, ", "), t.Description, t.SHA256)
}
