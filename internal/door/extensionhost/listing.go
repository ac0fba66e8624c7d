package extensionhost

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/mcphost"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmshelf"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ToolInfo describes an admitted tool for the model.
type ToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// PromptSnippet is the descriptor's line for the model about when to use the tool.
	PromptSnippet string `json:"promptSnippet,omitempty"`
	Primitive     string `json:"primitive"`
	// Params is the schema of the arguments the model supplies (extensions.Tool.ArgumentSchema).
	Params json.RawMessage `json:"params,omitempty"`
	// SchemaNote says how Params differs from a remote MCP tool's own input schema (its $refs
	// resolved, or reduced), "" when it does not.
	SchemaNote string `json:"schemaNote,omitempty"`
	// URL is an http-get tool's URL template or bound url: where its requests go when the model
	// names no other.
	URL string `json:"url,omitempty"`
	// ReadOnly says the tool declares it changes nothing (a remote MCP tool's readOnlyHint); the
	// assistant asks the person before any other remote MCP tool runs.
	ReadOnly bool `json:"readOnly,omitempty"`
	// View is a remote MCP tool's MCP Apps view, its ui:// resource.
	View string `json:"view,omitempty"`
}

// toolInfo describes t for a listing.
func toolInfo(t *extensions.Tool) ToolInfo {
	info := ToolInfo{Name: t.Name, Description: t.Description, PromptSnippet: t.PromptSnippet, Primitive: string(t.Primitive), Params: t.ArgumentSchema(), URL: t.URL}
	if b := t.Bound(); info.URL == "" && b != nil && b.URL != nil {
		info.URL = *b.URL
	}
	return info
}

// Entry describes one extension in a listing.
type Entry struct {
	ID          string           `json:"id"`
	Name        string           `json:"name,omitempty"`
	Description string           `json:"description,omitempty"`
	Tools       []ToolInfo       `json:"tools,omitempty"`
	OK          bool             `json:"ok"`
	Refused     refusal.Rule     `json:"refused,omitempty"`
	Why         string           `json:"why,omitempty"`
	Plan        *extensions.Plan `json:"plan,omitempty"`
	// MCP is a remote MCP extension's session: its server, whether it is up, the server's tools
	// that are not offered and why, and the budget spent.
	MCP *mcphost.Status `json:"mcp,omitempty"`
	// Admitted marks a catalogue entry admitted exactly as shipped: there is nothing to propose.
	Admitted bool `json:"admitted,omitempty"`
}

// Listing is what ListExtensions returns.
type Listing struct {
	// Admitted are the loaded extensions, then the WASM shelf's offered tools (wasm-shelf-ID).
	Admitted           []Entry   `json:"admitted"`
	Pending            []Entry   `json:"pending"`
	Catalogue          []Entry   `json:"catalogue"`
	PresentNotAdmitted []Problem `json:"presentNotAdmitted"`
	// Shelf is the WASM shelf as read now: its verdict and every tool's.
	Shelf wasmshelf.Shelf `json:"shelf"`
}

func entryOf(raw []byte, id string, placement extensions.Placement, existing []string) Entry {
	d, r := extensions.Parse(raw)
	if r != nil {
		return Entry{ID: id, Refused: r.Rule, Why: r.Why}
	}
	e := Entry{ID: d.ID, Name: d.Name, Description: d.Description}
	for i := range d.Tools {
		e.Tools = append(e.Tools, toolInfo(&d.Tools[i]))
	}
	if r := extensions.Admit(d, placement, existing); r != nil {
		e.Refused, e.Why = r.Rule, r.Why
		return e
	}
	p := extensions.Disclose(d, placement, raw)
	e.OK, e.Plan = true, &p
	return e
}

// Shipped returns the shipped descriptors with their gate verdicts.
func (rt *Runtime) Shipped() []Entry {
	var out []Entry
	names, _ := fs.Glob(catalogue.Files, "*.json")
	sort.Strings(names)
	for _, n := range names {
		raw, _ := fs.ReadFile(catalogue.Files, n)
		out = append(out, entryOf(raw, strings.TrimSuffix(n, ".json"), extensions.Machine, nil))
	}
	return out
}

// runsOtherThan reports whether what runs differs from loaded, a fresh read of the store: an id
// more or less, or other bytes.
func (rt *Runtime) runsOtherThan(loaded []Loaded) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(loaded) != len(rt.loaded) {
		return true
	}
	for _, x := range loaded {
		if cur, ok := rt.loaded[x.Descriptor.ID]; !ok || !bytes.Equal(cur.Raw, x.Raw) {
			return true
		}
	}
	return false
}

func catalogueRaw(id string) ([]byte, bool) {
	if !extensions.ValidID(id) {
		return nil, false
	}
	raw, err := fs.ReadFile(catalogue.Files, id+".json")
	return raw, err == nil
}

// ListExtensions returns the admitted extensions (with their tools), the pending proposals with
// their verdicts and plans, the catalogue, and what is in the directory but not running, read
// afresh (a descriptor dropped there a moment ago is listed present-not-admitted, an admission
// whose file is gone descriptor-missing). It is what the list_extensions tool answers.
func (rt *Runtime) ListExtensions() Listing {
	loaded, problems, err := rt.Admissions.Load()
	if err == nil && rt.runsOtherThan(loaded) {
		// A descriptor was removed or edited by hand (or put back) since the last reload: what
		// runs follows the store at once, so nothing is listed both admitted and not running.
		if rerr := rt.Reload(); rerr != nil {
			rt.logger().Warn("extensions: the store changed by hand, and the reload failed", "err", rerr)
		}
	}
	rt.mu.Lock()
	if err != nil {
		problems = rt.problems // the directory could not be read now; say what the last reload saw
	}
	l := Listing{Admitted: []Entry{}, Pending: []Entry{}, PresentNotAdmitted: append([]Problem{}, problems...)}
	ids := make([]string, 0, len(rt.loaded))
	for id := range rt.loaded {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := entryOf(rt.loaded[id].Raw, id, extensions.Machine, rt.loadedTools(id))
		if c := rt.mcp[id]; c != nil {
			st, offered := c.Status()
			e.MCP, e.Tools = &st, mcpToolInfos(offered)
		}
		l.Admitted = append(l.Admitted, e)
	}
	existing := rt.loadedTools("")
	rt.mu.Unlock()
	for _, id := range rt.Admissions.ProposalIDs() {
		_, raw, err := rt.Admissions.Proposal(id)
		if err != nil {
			r, _ := refusal.As(err)
			l.Pending = append(l.Pending, Entry{ID: id, Refused: r.Rule, Why: r.Why})
			continue
		}
		l.Pending = append(l.Pending, entryOf(raw, id, extensions.Machine, existing))
	}
	l.Catalogue = rt.Shipped()
	for i, e := range l.Catalogue {
		if raw, ok := catalogueRaw(e.ID); ok {
			l.Catalogue[i].Admitted = rt.isAdmitted(e.ID, raw)
		}
	}
	l.Shelf = rt.Shelf()
	l.Admitted = append(l.Admitted, shelfEntries(l.Shelf)...)
	return l
}

// ForModel is l as the model may read it: a waiting plan of a remote MCP extension keeps the
// names, hints, views and digests of the tools it would admit, but not their server-written text
// (title and description), which only the person reads in the Extensions panel. A server's new
// or changed text reaches the model once a person admits it, as the admitted tools' definitions.
func (l Listing) ForModel() Listing {
	pending := make([]Entry, len(l.Pending))
	for i, e := range l.Pending {
		if e.Plan != nil && e.Plan.MCP != nil {
			p := *e.Plan
			m := *p.MCP
			m.Definitions = make([]extensions.MCPToolDefinition, len(p.MCP.Definitions))
			for j, d := range p.MCP.Definitions {
				d.Title, d.Description = "", ""
				if d.Annotations != nil {
					a := *d.Annotations
					a.Title, d.Annotations = "", &a
				}
				m.Definitions[j] = d
			}
			p.MCP = &m
			p.Summary = slices.DeleteFunc(slices.Clone(p.Summary), func(line string) bool { return strings.HasPrefix(line, extensions.MCPToolSaysPrefix) })
			p.Summary = append(p.Summary, "the server's text of these tools (titles, descriptions) is shown to the person in the Extensions panel, not to the model, until admitted")
			e.Plan = &p
		}
		pending[i] = e
	}
	l.Pending = pending
	return l
}
