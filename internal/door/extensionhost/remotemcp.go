package extensionhost

// This file is the extension door's side of the MCP host (mcphost): a session for each loaded
// remote MCP extension, the door as the sessions' Host (tools-changed, the staged plans), and
// calls and MCP Apps views routed to the session, with the door's record of them (the audit,
// the views' network grants).

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/mcphost"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MCPPrimitive is what a remote MCP extension's tools are listed and audited as.
const MCPPrimitive = assistant.MCPPrimitive

// mcpHost is the runtime as its sessions' mcphost.Host.
type mcpHost struct{ rt *Runtime }

func (h mcpHost) Changed(id string) { h.rt.changed("tools-changed", id) }

func (h mcpHost) Proposal(id string) ([]byte, error) {
	_, raw, err := h.rt.Admissions.Proposal(id)
	return raw, err
}

func (h mcpHost) Stage(raw []byte) error {
	_, err := h.rt.Stage(raw)
	return err
}

// newMCPSession returns the session of loaded descriptor x, not yet connected.
func (rt *Runtime) newMCPSession(x Loaded, budget *Budget) *mcphost.Session {
	getenv := os.Getenv
	if rt.Fetcher != nil && rt.Fetcher.Getenv != nil {
		getenv = rt.Fetcher.Getenv
	}
	d := x.Descriptor
	return mcphost.New(mcphost.Config{Descriptor: d, Raw: x.Raw, Budget: budget, Host: mcpHost{rt},
		Base: rt.Fetcher.baseTransport(), RequestTimeout: rt.Fetcher.requestTimeout(), MaxRedirects: MaxRedirects, Redact: Redact,
		Headers:       func(u *url.URL) (http.Header, error) { return requestHeaders(d, nil, u, getenv) },
		RetryInterval: rt.MCPRetryInterval, Background: &rt.bg, Log: rt.logger()})
}

// mcpToolInfos lists the tools a session offers as a listing shows them.
func mcpToolInfos(offered []mcphost.Offered) []ToolInfo {
	var out []ToolInfo
	for _, t := range offered {
		out = append(out, ToolInfo{Name: t.Name, Description: t.Description, Primitive: MCPPrimitive, Params: t.Params, SchemaNote: t.SchemaNote, URL: t.URL, ReadOnly: t.ReadOnly, View: t.View})
	}
	return out
}

// callMCP calls tool (the model's name, MCPModelName) of remote MCP extension d with args.
func (rt *Runtime) callMCP(ctx context.Context, d *extensions.Descriptor, tool string, args json.RawMessage, note *callNote) (json.RawMessage, error) {
	note.primitive = MCPPrimitive
	rt.mu.Lock()
	c := rt.mcp[d.ID]
	rt.mu.Unlock()
	name, ok := strings.CutPrefix(tool, d.ID+extensions.MCPToolSeparator)
	if c == nil || !ok {
		return nil, refusal.New(refusal.UnknownTool, "extension %s has no tool %q; its tools are named %s<tool>", d.ID, tool, d.ID+extensions.MCPToolSeparator)
	}
	note.observed = map[string]any{"server": Redact(d.MCP.URL), "tool": name}
	return c.Call(ctx, name, args, note.observed)
}

// View is an MCP Apps view of a remote MCP tool, as the page shows it in the mini-app sandbox.
type View struct {
	Extension string `json:"extension"`
	// Tool is the name the model calls the tool by; Server the server's own name of it.
	Tool   string `json:"tool"`
	Server string `json:"serverTool"`
	URI    string `json:"uri"`
	HTML   string `json:"html"`
	// Description and InputSchema are the tool's, for the view's host context (toolInfo).
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// CSP is what of the view's declared domains (_meta.ui.csp) it is given: those within the
	// extension's bounds.hosts (extensions.ViewPolicy). Policy is the token the page frames the
	// view's bridge with (?view=) for them, "" when nothing is given. Dropped are the declared
	// domains it is not given, each with why, for the view's card.
	CSP     extensions.ViewCSP         `json:"csp"`
	Policy  string                     `json:"policy,omitempty"`
	Dropped []extensions.DroppedDomain `json:"dropped,omitempty"`
}

// ReadView reads the view of tool (the model's name of it) of admitted remote MCP extension id
// through its session (mcphost.Session.ReadView), audits the read, and gives the view the
// network grants of its declared domains within the extension's bounds.
func (rt *Runtime) ReadView(ctx context.Context, id, tool string) (*View, error) {
	rt.mu.Lock()
	x, ok := rt.loaded[id]
	c := rt.mcp[id]
	rt.mu.Unlock()
	if !ok || c == nil {
		return nil, refusal.New(refusal.NotAdmitted, "extension %q is not an admitted remote MCP extension", id)
	}
	content, observed, err := c.ReadView(ctx, tool)
	if observed == nil {
		return nil, err // the server was not asked
	}
	rec := AuditRecord{Act: ActCall, ID: id, Tool: tool, Primitive: MCPPrimitive, Observed: observed}
	defer func() { rt.Admissions.Audit(rec) }()
	if err != nil {
		r, _ := refusal.As(err)
		rec.Rule, rec.Why = r.Rule, r.Why
		return nil, err
	}
	v := &View{Extension: x.Descriptor.ID, Tool: tool, Server: content.Server, URI: content.URI, HTML: content.HTML, Description: content.Description, InputSchema: content.InputSchema}
	declared, dropped := extensions.DeclaredViewCSP(content.Meta)
	v.CSP, v.Dropped = extensions.ViewPolicy(x.Descriptor.Bounds.Hosts, declared)
	v.Dropped = append(dropped, v.Dropped...)
	if len(v.CSP.Directives()) > 0 {
		v.Policy = rt.views.issue(viewGrant{extension: x.Descriptor.ID, serverTool: content.Server, declared: declared})
	}
	if len(v.Dropped) > 0 {
		rec.Observed["viewDomainsDropped"] = len(v.Dropped)
	}
	return v, nil
}
