package mcphost

// This file is a remote MCP extension's client session (the official Go SDK's client over its
// Streamable HTTP transport, every request through mediatedTransport): connecting after
// admission, the server's tool list and what of it is offered, staging a new plan when the server
// adds or redefines tools, and calls.
//
// What a person admits is what runs: the plan pins each admitted tool's definition (its digest
// over every field the model or the gate reads, and the content digest of its view) in the
// descriptor, whose bytes the plan's hash covers. A listing is judged against those pins by one
// function (definitionOf); a tool that differs is not offered, and the model never reads its new
// text, until a person admits the plan staged with it.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/pace"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxMCPResultText bounds the text of a remote MCP tool's result the model is given; the rest
// is cut, and the answer says so.
const MaxMCPResultText = 64 << 10

// MCPRetryInterval is how long a remote MCP extension without a session waits before a call
// tries to make one again (Config.RetryInterval, when set, replaces it).
const MCPRetryInterval = 5 * time.Second

// mcpConnectRetries is how often the SDK tries the notification stream again before it gives
// up; each try spends a request of the budget.
const mcpConnectRetries = 2

// MCPReconnectAttempts bounds how often a session that broke by itself (its connection or a
// listing failed, with no call waiting) is made again without being asked; the wait before each
// attempt doubles from the retry interval up to MCPReconnectMaxWait. Past them a call makes it
// again (revive). Each attempt spends requests of the budget.
const MCPReconnectAttempts = 5

// MCPReconnectMaxWait caps the wait between two attempts of MCPReconnectAttempts.
const MCPReconnectMaxWait = time.Minute

// MaxMCPSessionLogLines bounds the log lines one remote MCP extension's session writes in each
// MCPLogWindow; past it lines are counted, not written, and a line says how many were
// suppressed when the window ends (or the session closes).
const MaxMCPSessionLogLines = 40

// MCPLogWindow is the window of MaxMCPSessionLogLines.
const MCPLogWindow = time.Minute

// Status is what a listing says of a remote MCP extension's session.
type Status struct {
	URL string `json:"url"`
	// Connected says whether a session is up and its tools listed.
	Connected bool `json:"connected"`
	// Refused and Why say why there is no session, or why its last listing failed.
	Refused refusal.Rule `json:"refused,omitempty"`
	Why     string       `json:"why,omitempty"`
	// Unavailable are the server's tools that are not offered, each with its reason: outside the
	// schema subset, or listed or redefined since the admission and waiting for a new plan
	// (tool-unavailable).
	Unavailable []UnavailableTool `json:"unavailable"`
	// Requests is how many requests of the budget the session has spent, as "7/50".
	Requests string `json:"requests"`
	// Reconnect says, while the relay makes a broken session again by itself, which attempt of
	// MCPReconnectAttempts comes next and when.
	Reconnect string `json:"reconnect,omitempty"`
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
	schema *remoteSchema // nil when it cannot be offered
	why    string        // why it cannot be offered
	// def is the tool as a plan pins it (definitionOf), its view's digest not yet known.
	def extensions.MCPToolDefinition
}

// Session is the client session of one loaded remote MCP extension. It is safe for concurrent use.
type Session struct {
	host       Host
	background *sync.WaitGroup // Config.Background
	retry      time.Duration   // Config.RetryInterval
	redact     func(string) string
	id, url    string // the extension and its server, which no plan c is given changes
	bounds     extensions.Bounds
	transport  *mediatedTransport
	ready      chan struct{} // closed once the first connection attempt ended
	done       chan struct{} // closed when the session is closed for good
	listMu     sync.Mutex    // one listing at a time
	dialMu     sync.Mutex    // one attempt to make the session at a time
	log        *slog.Logger
	logs       lineBudget // the session's log lines (MaxMCPSessionLogLines)

	mu      sync.Mutex
	d       *extensions.Descriptor // the admitted plan
	hash    string                 // its hash
	session *mcp.ClientSession
	tools   []mcpTool
	err     *refusal.Refusal
	closed  bool
	tried   time.Time // when the session was last made, or tried
	// listing and relist coalesce listings: at most one runs and one more is asked for,
	// however many list_changed notifications arrive meanwhile.
	listing, relist bool
	// viewSeen is the content digest of each tool's view as last read (by ReadView, or when a
	// plan was staged), by the server's tool name.
	viewSeen map[string]string
	// reconnecting is set while reconnectLater runs; attempt and next say where it is.
	reconnecting bool
	attempt      int
	next         time.Time
}

// New returns the session of cfg's admitted descriptor, not yet connected (Connect).
func New(cfg Config) *Session {
	c := &Session{host: cfg.Host, background: cfg.Background, retry: cfg.RetryInterval, redact: cfg.Redact, id: cfg.Descriptor.ID, url: cfg.Descriptor.MCP.URL, bounds: cfg.Descriptor.Bounds, d: cfg.Descriptor, hash: extensions.Disclose(cfg.Descriptor, extensions.Machine, cfg.Raw).Hash,
		ready: make(chan struct{}), done: make(chan struct{}), log: cfg.Log.With("extension", cfg.Descriptor.ID), viewSeen: map[string]string{}}
	c.transport = &mediatedTransport{d: cfg.Descriptor, budget: cfg.Budget, base: cfg.Base, headers: cfg.Headers, maxRedirects: cfg.MaxRedirects, redact: cfg.Redact, requestTimeout: cfg.RequestTimeout,
		log: func(method, url, request string, err error) {
			if err != nil {
				c.logf(slog.LevelInfo, "mcp request refused", "method", method, "url", url, "request", request, "refused", refusal.RuleOf(err), "err", err.Error())
				return
			}
			c.logf(slog.LevelDebug, "mcp request", "method", method, "url", url, "request", request)
		}}
	return c
}

// lineBudget counts one session's log lines in the current MCPLogWindow.
type lineBudget struct {
	mu            sync.Mutex
	start         time.Time
	n, suppressed int
}

// logf writes a line of c's log, unless MaxMCPSessionLogLines are written in this window: a
// server cannot fill the relay's log however much it makes the session say.
func (c *Session) logf(level slog.Level, msg string, args ...any) {
	b := &c.logs
	b.mu.Lock()
	now := time.Now()
	var suppressed int
	if now.Sub(b.start) >= MCPLogWindow {
		suppressed = b.suppressed
		b.start, b.n, b.suppressed = now, 0, 0
	}
	write := b.n < MaxMCPSessionLogLines
	if write {
		b.n++
	} else {
		b.suppressed++
	}
	b.mu.Unlock()
	if suppressed > 0 {
		c.log.Warn("mcp session log lines suppressed", "suppressed", suppressed, "bound", MaxMCPSessionLogLines, "window", MCPLogWindow.String())
	}
	if write {
		c.log.Log(context.Background(), level, msg, args...)
	}
}

// flushLog writes how many lines of the window were suppressed, if any.
func (c *Session) flushLog() {
	b := &c.logs
	b.mu.Lock()
	suppressed := b.suppressed
	b.suppressed = 0
	b.mu.Unlock()
	if suppressed > 0 {
		c.log.Warn("mcp session log lines suppressed", "suppressed", suppressed, "bound", MaxMCPSessionLogLines, "window", MCPLogWindow.String())
	}
}

// Connect makes the session and lists the server's tools; it runs once, in its own goroutine.
func (c *Session) Connect() {
	defer close(c.ready)
	c.dial()
}

// revive makes the session again when there is none (the first attempt failed, or a call found
// it broken), at most once every retry interval: each attempt spends requests of the budget, so
// a server that is down is not asked again on every call. It returns once the attempt ended.
func (c *Session) revive() {
	c.dialMu.Lock()
	defer c.dialMu.Unlock()
	c.mu.Lock()
	wait := c.retry
	if wait <= 0 {
		wait = MCPRetryInterval
	}
	skip := c.session != nil || c.closed || time.Since(c.tried) < wait
	c.mu.Unlock()
	if !skip {
		c.dial()
	}
}

// retryInterval is Config.RetryInterval, or the default.
func (c *Session) retryInterval() time.Duration {
	if c.retry > 0 {
		return c.retry
	}
	return MCPRetryInterval
}

// reconnectLater makes a session that broke by itself again, in the background: at most
// MCPReconnectAttempts attempts, the wait before each doubling from the retry interval up to
// MCPReconnectMaxWait, and none once the session is up, the budget is spent or c is closed.
// One runs at a time.
func (c *Session) reconnectLater() {
	c.mu.Lock()
	if c.reconnecting || c.closed {
		c.mu.Unlock()
		return
	}
	c.reconnecting = true
	c.mu.Unlock()
	c.background.Go(func() {
		defer func() {
			c.mu.Lock()
			c.reconnecting, c.attempt = false, 0
			c.mu.Unlock()
		}()
		paced := pace.Backoff{First: c.retryInterval(), Max: MCPReconnectMaxWait}
		for attempt := 1; attempt <= MCPReconnectAttempts; attempt++ {
			wait := paced.Delay(attempt - 1)
			c.mu.Lock()
			c.attempt, c.next = attempt, time.Now().Add(wait)
			c.mu.Unlock()
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-c.done:
				timer.Stop()
				return
			}
			c.dialMu.Lock()
			c.mu.Lock()
			up, closed := c.session != nil, c.closed
			c.mu.Unlock()
			if !up && !closed {
				c.dial()
			}
			c.dialMu.Unlock()
			c.mu.Lock()
			up, spent := c.session != nil && c.err == nil, c.err != nil && c.err.Rule == refusal.BudgetExhausted
			c.mu.Unlock()
			if up || spent || closed {
				return
			}
		}
	})
}

// broke drops session, which failed a call with no answer from the server, so the next call
// makes a new one (revive).
func (c *Session) broke(session *mcp.ClientSession, r *refusal.Refusal) {
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
func (c *Session) dial() {
	c.mu.Lock()
	c.tried = time.Now()
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), extensions.MCPConnectTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "voicebox", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) { c.toolsChanged(req.Session) },
	})
	transport := &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: mediatedClient(c.transport), MaxRetries: mcpConnectRetries,
		MaxEventSize: extensions.ResponseBound(c.bounds)}
	c.transport.last.Store(nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		r := c.refusalOf(ctx, err, "connecting to")
		c.fail(r)
		if r.Rule != refusal.BudgetExhausted {
			c.reconnectLater()
		}
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
	c.list(false)
}

// fail records why there is no session.
func (c *Session) fail(r *refusal.Refusal) {
	c.mu.Lock()
	c.err = r
	c.mu.Unlock()
	c.logf(slog.LevelWarn, "mcp session", "refused", r.Rule, "why", r.Why)
}

// toolsChanged hears the server's notifications/tools/list_changed on session. Each spends a
// request of the budget, as the listing it may cause does; one the budget has no request for
// ends the session (budget-exhausted), so a server that floods is stopped, and one that comes
// while a listing runs only asks for one more (requestList).
func (c *Session) toolsChanged(session *mcp.ClientSession) {
	c.mu.Lock()
	current := c.session == session && session != nil
	c.mu.Unlock()
	if !current {
		return // the session was ended: what else it says is not read
	}
	if _, err := c.transport.budget.Take(); err != nil {
		r := c.changesSpentTheBudget()
		c.mu.Lock()
		stop := c.session == session
		if stop {
			c.session, c.err = nil, r
		}
		c.mu.Unlock()
		if stop {
			c.logf(slog.LevelWarn, "mcp session stopped", "refused", r.Rule, "why", r.Why)
			go session.Close() // not from the SDK's own handler, which Close waits for
		}
		return
	}
	c.requestList()
}

// changesSpentTheBudget is why a session is ended when its tools/list_changed notifications, or
// the listings they asked for, spend the last request of the budget: one wording whichever of the
// two reached the end first, which depends only on timing.
func (c *Session) changesSpentTheBudget() *refusal.Refusal {
	return refusal.New(refusal.BudgetExhausted, "the server's tools/list_changed notifications and the listings they asked for spent %s's request budget (each spends a request, %s spent); the session is ended and no further listing is made", c.id, c.transport.budget.Spent())
}

// requestList asks for a listing: it starts one when none runs, or has the running one followed
// by exactly one more. At most one listing runs and one waits, per session.
func (c *Session) requestList() {
	c.mu.Lock()
	if c.listing {
		c.relist = true
		c.mu.Unlock()
		return
	}
	c.listing = true
	c.mu.Unlock()
	c.background.Go(func() {
		for {
			c.list(true)
			c.mu.Lock()
			again := c.relist && !c.closed
			c.relist, c.listing = false, again
			c.mu.Unlock()
			if !again {
				return
			}
		}
	})
}

// refusalOf names the failure err of an exchange with the server: the transport's own refusal
// when it made one (the SDK words a transport's failure its own way), a deadline as tool-timeout,
// anything else mcp-unreachable.
func (c *Session) refusalOf(ctx context.Context, err error, doing string) *refusal.Refusal {
	if r, ok := refusal.As(err); ok {
		return r
	}
	if r := c.transport.last.Load(); r != nil {
		return r
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return refusal.New(refusal.ToolTimeout, "%s did not answer within %s", c.redact(c.url), extensions.MCPCallTimeout)
	}
	return refusal.New(refusal.MCPUnreachable, "%s %s failed: %s", doing, c.redact(c.url), clipWhy(err.Error()))
}

func clipWhy(s string) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// list reads the server's tools again (at most extensions.MaxMCPTools), judges each, and tells
// the host, which stages a new plan when the server added tools. afterChange says a
// tools/list_changed notification asked for it.
func (c *Session) list(afterChange bool) {
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
			c.mu.Lock()
			ended := c.session != session
			c.mu.Unlock()
			if ended {
				// The session ended while it listed (stopped, broken or closed), which is why
				// the listing failed: what ended it says why, and this failure (often a request
				// of its teardown refused) must not take its place.
				return
			}
			// A session whose listing failed is dropped and made again by itself: a server that
			// died mid-listing is not left with a session that never lists.
			r := c.refusalOf(ctx, err, "listing the tools of")
			if afterChange && r.Rule == refusal.BudgetExhausted {
				r = c.changesSpentTheBudget()
			}
			c.fail(r)
			c.broke(session, r)
			if r.Rule != refusal.BudgetExhausted {
				c.reconnectLater()
			}
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
	if c.session != session {
		c.mu.Unlock()
		return // the session ended while it listed (stopped, broken or closed): its listing is not read
	}
	c.tools, c.err = tools, nil
	c.mu.Unlock()
	c.listed()
}

// judgeTool checks t's name, input schema and view against what can be offered.
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
	if len(viewURI(t)) > extensions.MaxMCPViewURIBytes {
		out.why = fmt.Sprintf("its view's URI is over %d bytes", extensions.MaxMCPViewURIBytes)
		return out
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		out.why = "its input schema cannot be read"
		return out
	}
	s, err := compileRemoteSchema(raw)
	if err != nil {
		out.why = clipWhy(err.Error())
		return out
	}
	out.schema, out.def = s, definitionOf(t)
	return out
}

// definitionOf is t as a plan pins it: SHA256 over every field of it the model or the gate
// reads (name, title, description, input and output schema, annotations, _meta.ui), and what
// the plan shows the person of them. It is the one judge of "the same tool" for staging,
// admission (the pins are in the admitted bytes) and every listing.
func definitionOf(t *mcp.Tool) extensions.MCPToolDefinition {
	bound, _ := json.Marshal(struct {
		Name         string               `json:"name"`
		Title        string               `json:"title"`
		Description  string               `json:"description"`
		InputSchema  any                  `json:"inputSchema"`
		OutputSchema any                  `json:"outputSchema"`
		Annotations  *mcp.ToolAnnotations `json:"annotations"`
		UI           any                  `json:"ui"`
	}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations, t.Meta["ui"]})
	sum := sha256.Sum256(bound)
	def := extensions.MCPToolDefinition{Name: t.Name, Title: clipText(t.Title, extensions.MaxMCPTitleBytes), Description: clipText(t.Description, extensions.MaxMCPDescriptionBytes),
		View: viewURI(t), SHA256: hex.EncodeToString(sum[:])}
	if a := t.Annotations; a != nil {
		def.Annotations = &extensions.MCPAnnotations{Title: clipText(a.Title, extensions.MaxMCPTitleBytes), ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return def
}

// Why a listed tool is not offered, when its schema can be.
const (
	whyListedLater  = "the server listed it after the admission; it waits for a person to admit the new plan"
	whyNotPinned    = "it was admitted before the plan pinned its definition; it waits for a person to admit the new plan, which pins it"
	whyChanged      = "the server changed it since the admission (its title, description, input or output schema, annotations or view); it waits for a person to admit the new plan, and the model is not given the new definition before"
	whyViewChanged  = "its view's content changed since the admission; it waits for a person to admit the new plan"
	whyViewUnpinned = "its view could not be read when its plan was made, so the plan does not pin the view's content; it waits for a person to admit the new plan, which does"
)

// pinned returns the admitted definition of t when the server lists t as it was admitted, or
// why t is not offered. c.mu is held.
func (c *Session) pinned(t *mcpTool) (*extensions.MCPToolDefinition, string) {
	name := t.tool.Name
	switch a := c.d.MCP.Definition(name); {
	case t.schema == nil:
		return nil, t.why
	case !slices.Contains(c.d.MCP.Tools, name):
		return nil, whyListedLater
	case a == nil:
		return nil, whyNotPinned
	case a.SHA256 != t.def.SHA256:
		return nil, whyChanged
	default:
		if seen, ok := c.viewSeen[name]; ok && a.View != "" && seen != a.ViewSHA256 {
			if a.ViewSHA256 == "" {
				return nil, whyViewUnpinned
			}
			return nil, whyViewChanged
		}
		return a, ""
	}
}

// Status says what a listing shows of c, and the tools it offers now: those the plan admits
// that the server still lists, with a schema that can be offered.
func (c *Session) Status() (Status, []Offered) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{URL: c.d.MCP.URL, Connected: c.session != nil && c.err == nil, Unavailable: []UnavailableTool{}, Requests: c.transport.budget.Spent()}
	if c.err != nil {
		st.Refused, st.Why = c.err.Rule, c.err.Why
	}
	if c.reconnecting && c.attempt > 0 {
		st.Reconnect = fmt.Sprintf("the session broke; the relay makes it again by itself: attempt %d of %d at %s", c.attempt, MCPReconnectAttempts, c.next.UTC().Format(time.RFC3339))
	}
	var offered []Offered
	for i := range c.tools {
		t := &c.tools[i]
		a, why := c.pinned(t)
		if a == nil {
			st.Unavailable = append(st.Unavailable, UnavailableTool{t.tool.Name, refusal.ToolUnavailable, why})
			continue
		}
		// What the model and the gate read is the admitted definition, which the listing matches.
		offered = append(offered, Offered{Name: extensions.MCPModelName(c.d.ID, a.Name), Description: a.Description,
			Params: t.schema.offered, SchemaNote: t.schema.note, URL: c.d.MCP.URL, ReadOnly: a.Annotations.ReadOnly(), View: a.View})
	}
	return st, offered
}

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

// SameServer reports whether d is a plan of c's server with c's bounds: only its admitted tools
// may differ, so the session can stay.
func (c *Session) SameServer(d *extensions.Descriptor) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return d.MCP != nil && d.MCP.URL == c.url && string(extensions.BoundsJSON(d.Bounds)) == string(extensions.BoundsJSON(c.bounds))
}

// Admit makes d (whose admitted bytes are raw), a new plan of c's server (SameServer), the one
// c offers tools by.
func (c *Session) Admit(d *extensions.Descriptor, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d, c.hash = d, extensions.Disclose(d, extensions.Machine, raw).Hash
}

// Hash is the hash of the plan c offers tools by.
func (c *Session) Hash() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hash
}

// Close ends the session.
func (c *Session) Close() {
	c.mu.Lock()
	if !c.closed {
		close(c.done)
	}
	c.closed = true
	session := c.session
	c.session = nil
	c.mu.Unlock()
	if session != nil {
		session.Close()
	}
	c.flushLog()
}

// listed stages a new plan of c's descriptor when the server lists a tool that can be offered
// that the plan does not pin as it is listed now (definitionOf, and its view's content): a tool
// added, or one redefined. The plan pins every tool the server lists that can be offered; the views
// of those whose content is not known yet are read for it. Nothing new or changed runs until a
// person admits it; tools the server no longer lists leave the plan.
func (c *Session) listed() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	d := c.d
	var tools []string
	var defs []extensions.MCPToolDefinition
	changed := false
	for _, t := range c.tools {
		if t.schema == nil {
			continue
		}
		def := t.def
		a := d.MCP.Definition(def.Name)
		if seen, ok := c.viewSeen[def.Name]; ok && def.View != "" {
			def.ViewSHA256 = seen
		} else if a != nil && a.View == def.View {
			def.ViewSHA256 = a.ViewSHA256 // not read since: taken as admitted until a read says otherwise
		}
		if a == nil || a.SHA256 != def.SHA256 || a.ViewSHA256 != def.ViewSHA256 {
			changed = true
		}
		tools, defs = append(tools, def.Name), append(defs, def)
	}
	c.mu.Unlock()
	c.host.Changed(d.ID)
	if !changed {
		return
	}
	for i := range defs {
		if defs[i].View != "" && defs[i].ViewSHA256 == "" {
			defs[i].ViewSHA256 = c.viewDigest(defs[i].Name, defs[i].View) // "" when it cannot be read: the view waits
		}
	}
	next := *d
	next.MCP = &extensions.MCPServer{URL: d.MCP.URL, Tools: tools, Definitions: defs}
	raw, err := json.Marshal(&next)
	if err != nil {
		return
	}
	if staged, err := c.host.Proposal(d.ID); err == nil && string(staged) == string(raw) {
		return
	}
	if err := c.host.Stage(raw); err != nil {
		c.logf(slog.LevelWarn, "mcp new plan not staged", "err", err.Error())
	}
}

// viewDigest reads view, the ui:// resource of tool name, and returns its content's digest
// (viewContentDigest), recording it as seen; "" when it cannot be read as a view.
func (c *Session) viewDigest(name, view string) string {
	c.mu.Lock()
	session := c.session
	c.mu.Unlock()
	if session == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), extensions.MCPCallTimeout)
	defer cancel()
	res, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: view})
	if err != nil {
		return ""
	}
	html := viewContent(res, view)
	if html == nil {
		return ""
	}
	digest := viewContentDigest(html)
	c.mu.Lock()
	c.viewSeen[name] = digest
	c.mu.Unlock()
	return digest
}

// viewContent is the item of res that is view uri's HTML, or nil.
func viewContent(res *mcp.ReadResourceResult, uri string) *mcp.ResourceContents {
	for _, item := range res.Contents {
		if item != nil && item.URI == uri && strings.EqualFold(strings.ReplaceAll(item.MIMEType, " ", ""), ViewMIMEType) && item.Text != "" {
			return item
		}
	}
	return nil
}

// viewContentDigest binds what of a view's resource the page is given: its HTML and its _meta.ui
// (the domains it declares).
func viewContentDigest(html *mcp.ResourceContents) string {
	b, _ := json.Marshal(struct {
		Text string `json:"text"`
		UI   any    `json:"ui"`
	}{html.Text, html.Meta["ui"]})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Call calls name, the server's tool, with args, and answers its Result as JSON. observed is
// the call's record for the audit: the requests of the budget spent are added to it.
func (c *Session) Call(ctx context.Context, name string, args json.RawMessage, observed map[string]any) (json.RawMessage, error) {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, refusal.New(refusal.ToolTimeout, "the session with %s was not ready before the call's deadline", c.redact(c.url))
	}
	c.revive()
	t, session, err := c.callable(name)
	if err != nil {
		return nil, err
	}
	argMap, err := t.schema.validate(args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, extensions.MCPCallTimeout)
	defer cancel()
	c.transport.last.Store(nil)
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: argMap})
	observed["requests"] = c.transport.budget.Spent()
	if err != nil {
		r := c.refusalOf(ctx, err, "calling "+name+" of")
		if r.Rule == refusal.MCPUnreachable {
			c.broke(session, r) // the server is gone or forgot the session: the next call makes one
		}
		c.log.Info("extension call refused", "tool", name, "refused", r.Rule, "why", r.Why)
		return nil, r
	}
	out, r := mcpResult(res)
	if r != nil {
		return nil, r
	}
	c.log.Info("extension call", "tool", name, "requests", observed["requests"])
	out.Server, out.Tool, out.Requests = c.redact(c.url), name, c.transport.budget.Spent()
	out.Extension, out.View = c.id, t.def.View
	return json.Marshal(out)
}

// CheckArguments validates args for name, the server's tool, as Call would (the tool's full
// JSON Schema), calling nothing: nil when they pass, or when the tool cannot be called now (the
// call answers that).
func (c *Session) CheckArguments(name string, args json.RawMessage) error {
	t, _, err := c.callable(name)
	if err != nil {
		return nil
	}
	_, err = t.schema.validate(args)
	return err
}

// callable returns tool name of c's listing and the session, or why it cannot be called.
func (c *Session) callable(name string) (*mcpTool, *mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == nil {
		if c.err != nil {
			return nil, nil, c.err
		}
		return nil, nil, refusal.New(refusal.MCPUnreachable, "there is no session with %s", c.redact(c.d.MCP.URL))
	}
	for i := range c.tools {
		t := &c.tools[i]
		if t.tool.Name != name {
			continue
		}
		if a, why := c.pinned(t); a == nil {
			return nil, nil, refusal.New(refusal.ToolUnavailable, "%s of %s is not offered: %s (in the Extensions panel)", name, c.d.ID, why)
		}
		return t, c.session, nil
	}
	return nil, nil, refusal.New(refusal.UnknownTool, "the server of %s does not list a tool %q now", c.d.ID, name)
}

// Result is the answer of a remote MCP tool: its text content joined, its images and audio
// as media, its structured content, and where it came from.
type Result struct {
	Text       string  `json:"text"`
	Truncated  bool    `json:"truncated,omitempty"`
	Media      []Media `json:"media,omitempty"`
	Structured any     `json:"structuredContent,omitempty"`
	Server     string  `json:"server"`
	Tool       string  `json:"tool"`
	// Extension is the admitted extension that answered, and View the ui:// resource of the tool's
	// MCP Apps view ("" when it has none): whoever called it (the model, an MCP client, with or
	// without call_extension's optional extension), the page opens that view from these two.
	Extension string `json:"extension"`
	View      string `json:"view,omitempty"`
	// Requests is how many requests of the budget are spent after the call, as "7/50".
	Requests string `json:"requests"`
}

// Media is an image or audio item of a result.
type Media struct {
	Kind     string `json:"kind"` // image or audio
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

// mcpResult maps res to the assistant's result shape; a result marked isError is a refusal
// (mcp-tool-error) with its text.
func mcpResult(res *mcp.CallToolResult) (*Result, *refusal.Refusal) {
	out := &Result{Structured: res.StructuredContent}
	var text []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ImageContent:
			out.Media = append(out.Media, Media{"image", c.MIMEType, base64.StdEncoding.EncodeToString(c.Data)})
		case *mcp.AudioContent:
			out.Media = append(out.Media, Media{"audio", c.MIMEType, base64.StdEncoding.EncodeToString(c.Data)})
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

// ViewContent is a tool's MCP Apps view as the server answered it, matched to its plan's pin.
type ViewContent struct {
	// Server is the server's own name of the tool; URI its ui:// resource.
	Server string
	URI    string
	HTML   string
	// Meta is the resource's _meta (the domains the view declares, in _meta.ui.csp).
	Meta map[string]any
	// Description and InputSchema are the tool's as admitted.
	Description string
	InputSchema json.RawMessage
}

// ReadView reads the view of tool (the model's name of it): resources/read of its ui://
// resource through the session, which must answer one text item of ViewMIMEType, within the
// descriptor's response bound. Only a tool that is offered has a view. observed is non-nil once
// the server was asked (the read is audited): the view's URI and the requests spent.
func (c *Session) ReadView(ctx context.Context, tool string) (v *ViewContent, observed map[string]any, err error) {
	name, _ := strings.CutPrefix(tool, c.id+extensions.MCPToolSeparator)
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, nil, refusal.New(refusal.ToolTimeout, "the session with %s was not ready", c.redact(c.url))
	}
	c.revive()
	t, session, err := c.callable(name)
	if err != nil {
		return nil, nil, err
	}
	uri := t.def.View
	if uri == "" {
		return nil, nil, refusal.New(refusal.NotFound, "%s has no MCP Apps view (no ui:// resource in its _meta.ui.resourceUri)", tool)
	}
	ctx, cancel := context.WithTimeout(ctx, extensions.MCPCallTimeout)
	defer cancel()
	c.transport.last.Store(nil)
	res, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	observed = map[string]any{"view": uri, "requests": c.transport.budget.Spent()}
	if err != nil {
		return nil, observed, c.refusalOf(ctx, err, "reading the view of "+name+" from")
	}
	html := viewContent(res, uri)
	if html == nil {
		return nil, observed, refusal.New(refusal.UnsupportedContentType, "the server answered no %s text for %s", ViewMIMEType, uri)
	}
	// The view shown is the one the plan pins: content read otherwise stages a new plan.
	digest := viewContentDigest(html)
	c.mu.Lock()
	c.viewSeen[name] = digest
	a, why := c.pinned(t) // nil unless digest is the one the plan pins
	c.mu.Unlock()
	if a == nil {
		c.background.Go(func() { c.listMu.Lock(); defer c.listMu.Unlock(); c.listed() })
		return nil, observed, refusal.New(refusal.ToolUnavailable, "the view of %s is not shown: %s", tool, why)
	}
	return &ViewContent{Server: name, URI: uri, HTML: html.Text, Meta: html.Meta, Description: a.Description, InputSchema: t.schema.server}, observed, nil
}
