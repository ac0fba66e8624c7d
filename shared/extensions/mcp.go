package extensions

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/voicebox-go/voicebox/shared/names"
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
}

// Bounds of a remote MCP extension.
const (
	// MaxMCPTools bounds how many of a server's tools a descriptor admits (and how many of a
	// listing are read).
	MaxMCPTools = 64
	// MaxMCPToolNameBytes bounds a server's tool name.
	MaxMCPToolNameBytes = 128
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
	return nil
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
	Says  string   `json:"says"`
}

// discloseMCP says, in words, where d's session goes and which of its tools the plan admits.
func discloseMCP(d *Descriptor) *MCPDisclosure {
	m := d.MCP
	if m == nil {
		return nil
	}
	out := &MCPDisclosure{URL: m.URL, Tools: []string{}}
	for _, t := range m.Tools {
		out.Tools = append(out.Tools, MCPModelName(d.ID, t))
	}
	if len(m.Tools) == 0 {
		out.Says = fmt.Sprintf("remote MCP server %s: no tools are admitted yet; once admitted, the relay connects, lists the server's tools and asks you again with them", m.URL)
	} else {
		out.Says = fmt.Sprintf("remote MCP server %s: admits its tools %s as the server listed them; the list comes from the server and may change: a tool it adds waits for you to admit a new plan, one it removes is no longer offered", m.URL, strings.Join(m.Tools, ", "))
	}
	return out
}
