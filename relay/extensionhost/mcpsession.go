package extensionhost

// This file is a remote MCP extension's client session (the official Go SDK's client over its
// Streamable HTTP transport, every request through mediatedTransport): connecting after
// admission, the server's tool list and what of it is offered, staging a new plan when the server
// adds tools, and calls.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/names"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/toolschema"
)

// MCPPrimitive is what a remote MCP extension's tools are listed and audited as.
const MCPPrimitive = "mcp"

// MaxMCPResultText bounds the text of a remote MCP tool's result the model is given; the rest
// is cut, and the answer says so.
const MaxMCPResultText = 64 << 10

// MCPRetryInterval is how long a remote MCP extension without a session waits before a call
// tries to make one again (Runtime.MCPRetryInterval, when set, replaces it).
const MCPRetryInterval = 5 * time.Second

// mcpConnectRetries is how often the SDK tries the notification stream again before it gives
// up; each try spends a request of the budget.
const mcpConnectRetries = 2

// draftURIs are the $schema values a server's input schema may carry: the annotation is dropped
// (the subset's keywords mean the same in both drafts), any other keyword outside the subset
// makes the tool unavailable.
var draftURIs = []string{
	"https://json-schema.org/draft/2020-12/schema",
	"http://json-schema.org/draft-07/schema#",
	"http://json-schema.org/draft-07/schema",
}

// MCPStatus is what a listing says of a remote MCP extension's session.
type MCPStatus struct {
	URL string `json:"url"`
	// Connected says whether a session is up and its tools listed.
	Connected bool `json:"connected"`
	// Refused and Why say why there is no session, or why its last listing failed.
	Refused refusal.Rule `json:"refused,omitempty"`
	Why     string       `json:"why,omitempty"`
	// Unavailable are the server's tools that are not offered, each with its reason: outside the
	// schema subset, or listed since the admission and waiting for a new plan (tool-unavailable).
	Unavailable []UnavailableTool `json:"unavailable"`
	// Requests is how many requests of the budget the session has spent, as "7/50".
	Requests string `json:"requests"`
}

// UnavailableTool is a server's tool that is not offered, and why.
type UnavailableTool struct {
	Name string       `json:"name"`
	Rule refusal.Rule `json:"refused"`
	Why  string       `json:"why"`
}

// mcpTool is a tool of a server's latest listing, with its verdict.
type mcpTool struct {
	tool   *mcp.Tool
	params json.RawMessage    // the input schema as offered (its $schema dropped)
	schema *toolschema.Schema // nil when outside the subset
	why    string             // why it is outside the subset
}

// mcpConn is the client session of one loaded remote MCP extension. It is safe for concurrent use.
type mcpConn struct {
	rt        *Runtime
	id, url   string // the extension and its server, which no plan c is given changes
	bounds    extensions.Bounds
	transport *mediatedTransport
	ready     chan struct{} // closed once the first connection attempt ended
	listMu    sync.Mutex    // one listing at a time
	dialMu    sync.Mutex    // one attempt to make the session at a time

	mu      sync.Mutex
	d       *extensions.Descriptor // the admitted plan
	hash    string                 // its hash
	session *mcp.ClientSession
	tools   []mcpTool
	err     *refusal.Refusal
	closed  bool
	tried   time.Time // when the session was last made, or tried
}

// newMCPConn returns the session of loaded descriptor x, not yet connected.
func (rt *Runtime) newMCPConn(x Loaded, budget *Budget) *mcpConn {
	getenv := os.Getenv
	if rt.Fetcher != nil && rt.Fetcher.Getenv != nil {
		getenv = rt.Fetcher.Getenv
	}
	c := &mcpConn{rt: rt, id: x.Descriptor.ID, url: x.Descriptor.MCP.URL, bounds: x.Descriptor.Bounds, d: x.Descriptor, hash: extensions.Disclose(x.Descriptor, extensions.Machine, x.Raw).Hash, ready: make(chan struct{})}
	log := rt.logger().With("extension", x.Descriptor.ID)
	c.transport = &mediatedTransport{d: x.Descriptor, budget: budget, base: rt.Fetcher.baseTransport(), getenv: getenv, requestTimeout: rt.Fetcher.requestTimeout(),
		log: func(method, url, request string, err error) {
			if err != nil {
				log.Info("mcp request refused", "method", method, "url", url, "request", request, "refused", refusal.RuleOf(err), "err", err.Error())
				return
			}
			log.Debug("mcp request", "method", method, "url", url, "request", request)
		}}
	return c
}

// connect makes the session and lists the server's tools; it runs once, in its own goroutine.
func (c *mcpConn) connect() {
	defer close(c.ready)
	c.dial()
}

// revive makes the session again when there is none (the first attempt failed, or a call found
// it broken), at most once every retry interval: each attempt spends requests of the budget, so
// a server that is down is not asked again on every call. It returns once the attempt ended.
func (c *mcpConn) revive() {
	c.dialMu.Lock()
	defer c.dialMu.Unlock()
	c.mu.Lock()
	wait := c.rt.MCPRetryInterval
	if wait <= 0 {
		wait = MCPRetryInterval
	}
	skip := c.session != nil || c.closed || time.Since(c.tried) < wait
	c.mu.Unlock()
	if !skip {
		c.dial()
	}
}

// broke drops session, which failed a call with no answer from the server, so the next call
// makes a new one (revive).
func (c *mcpConn) broke(session *mcp.ClientSession, r *refusal.Refusal) {
	c.mu.Lock()
	if c.session != session {
		c.mu.Unlock()
		return
	}
	c.session, c.err = nil, r
	c.mu.Unlock()
	session.Close()
}

// dial makes the session and lists the server's tools, or records why it could not.
func (c *mcpConn) dial() {
	c.mu.Lock()
	c.tried = time.Now()
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), extensions.MCPConnectTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "voicebox", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go c.list() },
	})
	transport := &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: mediatedClient(c.transport), MaxRetries: mcpConnectRetries,
		MaxEventSize: extensions.ResponseBound(c.bounds)}
	c.transport.last.Store(nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		c.fail(c.refusalOf(ctx, err, "connecting to"))
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		session.Close()
		return
	}
	c.session, c.err = session, nil
	c.mu.Unlock()
	c.list()
}

// fail records why there is no session.
func (c *mcpConn) fail(r *refusal.Refusal) {
	c.mu.Lock()
	c.err = r
	c.mu.Unlock()
	c.rt.logger().Warn("mcp session", "extension", c.id, "refused", r.Rule, "why", r.Why)
}

// refusalOf names the failure err of an exchange with the server: the transport's own refusal
// when it made one (the SDK words a transport's failure its own way), a deadline as tool-timeout,
// anything else mcp-unreachable.
func (c *mcpConn) refusalOf(ctx context.Context, err error, doing string) *refusal.Refusal {
	if r, ok := refusal.As(err); ok {
		return r
	}
	if r := c.transport.last.Load(); r != nil {
		return r
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return refusal.New(refusal.ToolTimeout, "%s did not answer within %s", Redact(c.url), extensions.MCPCallTimeout)
	}
	return refusal.New(refusal.MCPUnreachable, "%s %s failed: %s", doing, Redact(c.url), clipWhy(err.Error()))
}

func clipWhy(s string) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// list reads the server's tools again (at most extensions.MaxMCPTools), judges each, and tells
// the runtime, which stages a new plan when the server added tools.
func (c *mcpConn) list() {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	c.mu.Lock()
	session := c.session
	c.mu.Unlock()
	if session == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), extensions.MCPConnectTimeout)
	defer cancel()
	var tools []mcpTool
	seen := map[string]bool{}
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			c.fail(c.refusalOf(ctx, err, "listing the tools of"))
			return
		}
		if len(tools) == extensions.MaxMCPTools {
			break
		}
		if t == nil || seen[t.Name] {
			continue // a server that lists a tool twice is read once
		}
		seen[t.Name] = true
		tools = append(tools, judgeTool(t))
	}
	c.mu.Lock()
	c.tools, c.err = tools, nil
	c.mu.Unlock()
	c.rt.mcpListed(c)
}

// judgeTool checks t's name and input schema against what can be offered.
func judgeTool(t *mcp.Tool) mcpTool {
	out := mcpTool{tool: t}
	if t.Name == "" || len(t.Name) > extensions.MaxMCPToolNameBytes {
		out.why = fmt.Sprintf("its name is not 1 to %d bytes", extensions.MaxMCPToolNameBytes)
		return out
	}
	if r := names.Check("its name", t.Name); r != nil {
		shown := *t
		shown.Name = names.Escape(t.Name) // listed as it is, without reordering the panel
		out.tool, out.why = &shown, r.Error()
		return out
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		out.why = "its input schema cannot be read"
		return out
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) == nil {
		var draft string
		if json.Unmarshal(doc["$schema"], &draft) == nil && slices.Contains(draftURIs, draft) {
			delete(doc, "$schema")
			raw, _ = json.Marshal(doc)
		}
	}
	s, err := toolschema.Parse(raw)
	if err != nil {
		out.why = "its input schema is outside the supported subset: " + clipWhy(err.Error())
		return out
	}
	out.params, out.schema = raw, s
	return out
}

// status says what a listing shows of c, and the tools it offers now: those the plan admits
// that the server still lists, inside the subset.
func (c *mcpConn) status() (MCPStatus, []ToolInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := MCPStatus{URL: c.d.MCP.URL, Connected: c.session != nil && c.err == nil, Unavailable: []UnavailableTool{}, Requests: c.transport.budget.spent()}
	if c.err != nil {
		st.Refused, st.Why = c.err.Rule, c.err.Why
	}
	var offered []ToolInfo
	for _, t := range c.tools {
		admitted := slices.Contains(c.d.MCP.Tools, t.tool.Name)
		switch {
		case t.schema == nil:
			st.Unavailable = append(st.Unavailable, UnavailableTool{t.tool.Name, refusal.ToolUnavailable, t.why})
		case !admitted:
			st.Unavailable = append(st.Unavailable, UnavailableTool{t.tool.Name, refusal.ToolUnavailable, "the server listed it after the admission; it waits for a person to admit the new plan"})
		default:
			offered = append(offered, ToolInfo{Name: extensions.MCPModelName(c.d.ID, t.tool.Name), Description: clipText(t.tool.Description, maxToolDescription),
				Primitive: MCPPrimitive, Params: t.params, URL: c.d.MCP.URL, ReadOnly: t.tool.Annotations != nil && t.tool.Annotations.ReadOnlyHint, View: viewURI(t.tool)})
		}
	}
	return st, offered
}

// maxToolDescription bounds a server tool's description as the model is given it.
const maxToolDescription = 1024

func clipText(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// viewURI is the ui:// resource of t's MCP Apps view (its _meta.ui.resourceUri), or "".
func viewURI(t *mcp.Tool) string {
	ui, _ := t.Meta["ui"].(map[string]any)
	uri, _ := ui["resourceUri"].(string)
	if !strings.HasPrefix(uri, "ui://") {
		return ""
	}
	return uri
}

// sameServer reports whether d is a plan of c's server with c's bounds: only its admitted tools
// may differ, so the session can stay.
func (c *mcpConn) sameServer(d *extensions.Descriptor) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return d.MCP != nil && d.MCP.URL == c.url && string(extensions.BoundsJSON(d.Bounds)) == string(extensions.BoundsJSON(c.bounds))
}

// admit makes x, a new plan of c's server (sameServer), the one c offers tools by.
func (c *mcpConn) admit(x Loaded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d, c.hash = x.Descriptor, extensions.Disclose(x.Descriptor, extensions.Machine, x.Raw).Hash
}

// close ends the session.
func (c *mcpConn) close() {
	c.mu.Lock()
	c.closed = true
	session := c.session
	c.session = nil
	c.mu.Unlock()
	if session != nil {
		session.Close()
	}
}

// mcpListed stages a new plan of c's descriptor when the server lists tools inside the subset
// that the plan does not admit: the admitted ones it still lists and the new ones. Nothing new
// runs until a person admits it; tools the server no longer lists leave the plan.
func (rt *Runtime) mcpListed(c *mcpConn) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	d := c.d
	var tools []string
	added := false
	for _, t := range c.tools {
		if t.schema == nil {
			continue
		}
		tools = append(tools, t.tool.Name)
		if !slices.Contains(d.MCP.Tools, t.tool.Name) {
			added = true
		}
	}
	c.mu.Unlock()
	rt.changed("tools-changed", d.ID)
	if !added {
		return
	}
	next := *d
	next.MCP = &extensions.MCPServer{URL: d.MCP.URL, Tools: tools}
	raw, err := json.Marshal(&next)
	if err != nil {
		return
	}
	if _, staged, err := rt.Admissions.Proposal(d.ID); err == nil && string(staged) == string(raw) {
		return
	}
	if _, err := rt.Stage(raw); err != nil {
		rt.logger().Warn("mcp new plan not staged", "extension", d.ID, "err", err.Error())
	}
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
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, refusal.New(refusal.ToolTimeout, "the session with %s was not ready before the call's deadline", Redact(d.MCP.URL))
	}
	c.revive()
	t, session, err := c.callable(name)
	if err != nil {
		return nil, err
	}
	argMap, err := t.schema.Validate(args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, extensions.MCPCallTimeout)
	defer cancel()
	c.transport.last.Store(nil)
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: argMap})
	note.observed["requests"] = c.transport.budget.spent()
	if err != nil {
		r := c.refusalOf(ctx, err, "calling "+name+" of")
		if r.Rule == refusal.MCPUnreachable {
			c.broke(session, r) // the server is gone or forgot the session: the next call makes one
		}
		rt.logger().Info("extension call refused", "extension", d.ID, "tool", name, "refused", r.Rule, "why", r.Why)
		return nil, r
	}
	out, r := mcpResult(res)
	if r != nil {
		return nil, r
	}
	rt.logger().Info("extension call", "extension", d.ID, "tool", name, "requests", note.observed["requests"])
	out.Server, out.Tool, out.Requests = Redact(d.MCP.URL), name, c.transport.budget.spent()
	return json.Marshal(out)
}

// callable returns tool name of c's listing and the session, or why it cannot be called.
func (c *mcpConn) callable(name string) (*mcpTool, *mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == nil {
		if c.err != nil {
			return nil, nil, c.err
		}
		return nil, nil, refusal.New(refusal.MCPUnreachable, "there is no session with %s", Redact(c.d.MCP.URL))
	}
	for i := range c.tools {
		t := &c.tools[i]
		if t.tool.Name != name {
			continue
		}
		if t.schema == nil {
			return nil, nil, refusal.New(refusal.ToolUnavailable, "%s of %s is not offered: %s", name, c.d.ID, t.why)
		}
		if !slices.Contains(c.d.MCP.Tools, name) {
			return nil, nil, refusal.New(refusal.ToolUnavailable, "%s of %s was listed by the server after the admission; it waits for a person to admit the new plan in the Extensions panel", name, c.d.ID)
		}
		return t, c.session, nil
	}
	return nil, nil, refusal.New(refusal.UnknownTool, "the server of %s does not list a tool %q now", c.d.ID, name)
}

// MCPResult is the answer of a remote MCP tool: its text content joined, its images and audio
// as media, its structured content, and where it came from.
type MCPResult struct {
	Text       string     `json:"text"`
	Truncated  bool       `json:"truncated,omitempty"`
	Media      []MCPMedia `json:"media,omitempty"`
	Structured any        `json:"structuredContent,omitempty"`
	Server     string     `json:"server"`
	Tool       string     `json:"tool"`
	// Requests is how many requests of the budget are spent after the call, as "7/50".
	Requests string `json:"requests"`
}

// MCPMedia is an image or audio item of a result.
type MCPMedia struct {
	Kind     string `json:"kind"` // image or audio
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

// mcpResult maps res to the assistant's result shape; a result marked isError is a refusal
// (mcp-tool-error) with its text.
func mcpResult(res *mcp.CallToolResult) (*MCPResult, *refusal.Refusal) {
	out := &MCPResult{Structured: res.StructuredContent}
	var text []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ImageContent:
			out.Media = append(out.Media, MCPMedia{"image", c.MIMEType, base64.StdEncoding.EncodeToString(c.Data)})
		case *mcp.AudioContent:
			out.Media = append(out.Media, MCPMedia{"audio", c.MIMEType, base64.StdEncoding.EncodeToString(c.Data)})
		case *mcp.ResourceLink:
			text = append(text, "resource: "+c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				text = append(text, c.Resource.Text)
			}
		}
	}
	out.Text = strings.Join(text, "\n")
	if len(out.Text) > MaxMCPResultText {
		out.Text, out.Truncated = strings.ToValidUTF8(out.Text[:MaxMCPResultText], ""), true
	}
	if res.IsError {
		return nil, refusal.New(refusal.MCPToolError, "the tool answered with an error: %s", clipText(out.Text, 1000))
	}
	return out, nil
}

// ViewMIMEType is the MIME type of an MCP Apps view (a ui:// resource of HTML).
const ViewMIMEType = "text/html;profile=mcp-app"

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

// ReadView reads the view of tool (the model's name of it) of admitted remote MCP extension id:
// resources/read of its ui:// resource through the session, which must answer one text item of
// ViewMIMEType, within the descriptor's response bound. Only a tool that is offered has a view.
func (rt *Runtime) ReadView(ctx context.Context, id, tool string) (*View, error) {
	rt.mu.Lock()
	x, ok := rt.loaded[id]
	c := rt.mcp[id]
	rt.mu.Unlock()
	if !ok || c == nil {
		return nil, refusal.New(refusal.NotAdmitted, "extension %q is not an admitted remote MCP extension", id)
	}
	name, _ := strings.CutPrefix(tool, id+extensions.MCPToolSeparator)
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, refusal.New(refusal.ToolTimeout, "the session with %s was not ready", Redact(c.url))
	}
	c.revive()
	t, session, err := c.callable(name)
	if err != nil {
		return nil, err
	}
	uri := viewURI(t.tool)
	if uri == "" {
		return nil, refusal.New(refusal.NotFound, "%s has no MCP Apps view (no ui:// resource in its _meta.ui.resourceUri)", tool)
	}
	ctx, cancel := context.WithTimeout(ctx, extensions.MCPCallTimeout)
	defer cancel()
	c.transport.last.Store(nil)
	res, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	rec := AuditRecord{Act: ActCall, ID: id, Tool: tool, Primitive: MCPPrimitive, Observed: map[string]any{"view": uri, "requests": c.transport.budget.spent()}}
	defer func() { rt.Admissions.Audit(rec) }()
	if err != nil {
		r := c.refusalOf(ctx, err, "reading the view of "+name+" from")
		rec.Rule, rec.Why = r.Rule, r.Why
		return nil, r
	}
	var html *mcp.ResourceContents
	for _, item := range res.Contents {
		if item != nil && item.URI == uri && strings.EqualFold(strings.ReplaceAll(item.MIMEType, " ", ""), ViewMIMEType) && item.Text != "" {
			html = item
			break
		}
	}
	if html == nil {
		r := refusal.New(refusal.UnsupportedContentType, "the server answered no %s text for %s", ViewMIMEType, uri)
		rec.Rule, rec.Why = r.Rule, r.Why
		return nil, r
	}
	v := &View{Extension: x.Descriptor.ID, Tool: tool, Server: name, URI: uri, HTML: html.Text, Description: t.tool.Description, InputSchema: t.params}
	declared, dropped := extensions.DeclaredViewCSP(html.Meta)
	v.CSP, v.Dropped = extensions.ViewPolicy(x.Descriptor.Bounds.Hosts, declared)
	v.Dropped = append(dropped, v.Dropped...)
	if len(v.CSP.Directives()) > 0 {
		v.Policy = rt.views.issue(viewGrant{extension: x.Descriptor.ID, serverTool: name, declared: declared})
	}
	if len(v.Dropped) > 0 {
		rec.Observed["viewDomainsDropped"] = len(v.Dropped)
	}
	return v, nil
}
