package assistant

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/commands"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Extensions is what the extension tools need of the extension door (internal/door/extensionhost
// supplies one): the catalogue knows nothing of how extensions are kept or run.
type Extensions interface {
	// ListExtensions returns the listing as the model may read it, as JSON: list_extensions'
	// answer. Its admitted, pending and catalogue entries carry at least the fields of Listing.
	ListExtensions() json.RawMessage
	// CallExtension runs an admitted extension's tool.
	CallExtension(ctx context.Context, id, tool string, args json.RawMessage) (json.RawMessage, error)
	// Propose stages a descriptor as a proposal and returns its id; nothing in it runs.
	Propose(raw []byte) (id string, err error)
}

// MCPPrimitive is the primitive of a remote MCP server's tools in a listing.
const MCPPrimitive = "mcp"

// Listing is what the catalogue reads of an extension listing (Extensions.ListExtensions).
type Listing struct {
	Admitted  []ListingEntry `json:"admitted"`
	Pending   []ListingEntry `json:"pending"`
	Catalogue []ListingEntry `json:"catalogue"`
}

// ListingEntry is one extension of a Listing, as the catalogue reads it; Raw is the entry as the
// door wrote it, with every field.
type ListingEntry struct {
	ID          string        `json:"id"`
	Name        string        `json:"name"`
	Description string        `json:"description"`
	OK          bool          `json:"ok"`
	Tools       []ListingTool `json:"tools"`
	// MCP is a remote MCP extension's session: the server's tools that are not offered, and why.
	MCP *struct {
		Unavailable []struct {
			Name string       `json:"name"`
			Rule refusal.Rule `json:"refused"`
			Why  string       `json:"why"`
		} `json:"unavailable"`
	} `json:"mcp"`
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the entry's raw JSON beside the fields the catalogue reads.
func (e *ListingEntry) UnmarshalJSON(b []byte) error {
	type plain ListingEntry
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// ListingTool is one tool of a ListingEntry.
type ListingTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Primitive   string `json:"primitive"`
	ReadOnly    bool   `json:"readOnly"`
}

// listing reads x's listing; an unreadable one is empty.
func listing(x Extensions) Listing {
	var l Listing
	json.Unmarshal(x.ListExtensions(), &l)
	return l
}

// writePrimitives are the extension primitives whose calls wait for the user's approval (and a
// remote MCP tool that does not declare readOnlyHint).
var writePrimitives = map[string]bool{string(extensions.WriteFile): true}

func (c *Tools) extension(ctx context.Context, a commands.Action) (json.RawMessage, error) {
	x := c.opts.Extensions
	if x == nil {
		return nil, refusal.New(refusal.NotAdmitted, "this relay runs no extensions")
	}
	switch a.Verb() {
	case commands.ListExtensions:
		return x.ListExtensions(), nil
	case commands.ProposeExtension:
		return c.propose(x, a.String("descriptor"))
	}
	name, id := a.String("name"), a.String("extension")
	args := json.RawMessage(`{}`)
	var probe map[string]json.RawMessage
	if a.Has("arguments") {
		args = json.RawMessage(strings.TrimSpace(a.String("arguments")))
		if len(args) == 0 || args[0] != '{' || json.Unmarshal(args, &probe) != nil {
			return nil, refusal.New(refusal.InvalidArgumentType, "call_extension: arguments is a JSON object written as text, such as {\"query\":\"weather\"}")
		}
	}
	type found1 struct {
		id, primitive string
		readOnly      bool
	}
	var found []found1
	for _, e := range listing(x).Admitted {
		if !e.OK || (id != "" && e.ID != id) {
			continue
		}
		for _, t := range e.Tools {
			if t.Name == name {
				found = append(found, found1{e.ID, t.Primitive, t.ReadOnly})
			}
		}
	}
	switch len(found) {
	case 0:
		if r := unavailable(x, id, name); r != nil {
			return nil, r
		}
		if id != "" {
			return nil, refusal.New(refusal.UnknownTool, "no admitted extension %q has a tool %q; list_extensions shows the admitted ones", id, name)
		}
		return nil, refusal.New(refusal.UnknownTool, "no admitted extension has a tool %q; list_extensions shows the admitted ones", name)
	case 1:
	default:
		return nil, refusal.New(refusal.InvalidArgument, "several admitted extensions have a tool %q; say which with extension", name)
	}
	t := found[0]
	approved := false
	if writePrimitives[t.primitive] {
		// The file comes first: the arguments are clipped, and the content may come before it.
		var path string
		json.Unmarshal(probe["path"], &path) // the exact key the executor reads
		summary := fmt.Sprintf("Let extension %s write %q with its tool %s (%s)?", t.id, path, name, clipText(string(args), 200))
		asked := c.opts.Holder.Holding()
		if err := c.approvals.wait(ctx, commands.CallExtension, summary, c.opts.ApprovalTimeout); err != nil {
			return nil, err
		}
		if r := c.sameRoot(asked); r != nil {
			return nil, r
		}
		approved = true
	}
	if t.primitive == MCPPrimitive && !t.readOnly {
		// A remote server's tool may change anything the server reaches; only one that declares
		// readOnlyHint runs without asking, as a mini-app's tools do.
		summary := fmt.Sprintf("Let extension %s run %s on its MCP server (%s)?", t.id, name, clipText(string(args), 200))
		if err := c.approvals.wait(ctx, commands.CallExtension, summary, c.opts.ApprovalTimeout); err != nil {
			return nil, err
		}
		approved = true
	}
	out, err := x.CallExtension(ctx, t.id, name, args)
	if err != nil {
		if _, ok := refusal.As(err); !ok {
			err = refusal.New(refusal.ExecThrew, "the extension failed: %s", clipText(err.Error(), 300))
		}
		return nil, err
	}
	if len(bytes.TrimSpace(out)) == 0 || out[0] != '{' {
		wrapped, _ := json.Marshal(map[string]json.RawMessage{"result": orNull(out)})
		out = wrapped
	}
	if approved {
		out = withApproval(out)
	}
	return out, nil
}

// unavailable is the refusal of tool name when an admitted remote MCP extension (id, or any)
// lists it but does not offer it, with the reason: the model learns it waits for a person.
func unavailable(x Extensions, id, name string) *refusal.Refusal {
	for _, e := range listing(x).Admitted {
		if e.MCP == nil || (id != "" && e.ID != id) {
			continue
		}
		for _, u := range e.MCP.Unavailable {
			if extensions.MCPModelName(e.ID, u.Name) == name {
				return refusal.New(u.Rule, "%s of extension %s is not offered: %s", name, e.ID, u.Why)
			}
		}
	}
	return nil
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// propose stages a descriptor and answers with its verdict and plan, as the Extensions panel shows
// them.
func (c *Tools) propose(x Extensions, descriptor string) (json.RawMessage, error) {
	id, err := x.Propose([]byte(descriptor))
	if err != nil {
		if _, ok := refusal.As(err); !ok {
			err = refusal.New(refusal.InternalError, "the proposal could not be staged")
		}
		return nil, err
	}
	out := map[string]any{"staged": id, "note": "Nothing in it runs until a person reads its plan and admits it in the Extensions panel."}
	for _, e := range listing(x).Pending {
		if e.ID == id {
			out["verdict"] = e.Raw
		}
	}
	return json.Marshal(out)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
