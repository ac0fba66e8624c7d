package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// appToolByPlainName finds the open app tool called plain in its app, for the original's typed
// action {"verb": "mini_app_tool", "name", "args"}: its scoped name, and args passed on as they
// are. No open app offering it is unknown-tool; more than one is ambiguous-tool, naming them.
func (c *Tools) appToolByPlainName(ctx context.Context, plain string, args json.RawMessage) (string, json.RawMessage, error) {
	found := c.set.Load().AppTools(plain)
	switch len(found) {
	case 0:
		return "", nil, refusal.New(refusal.UnknownTool, "no open mini-app offers a tool %q; launch_mini_app opens one, and list_tools lists the open apps' tools", clipText(plain, 80))
	case 1:
		return found[0].Name, args, nil
	}
	apps := c.appNames(ctx)
	var named []string
	for _, t := range found {
		scope := t.Name[:miniapp.ScopeLength]
		if n, ok := apps[scope]; ok {
			named = append(named, n)
		} else {
			named = append(named, fmt.Sprintf("the app of %s", t.Name))
		}
	}
	return "", nil, refusal.New(refusal.AmbiguousTool, "%d open mini-apps offer a tool %q: %s; close all but one of them, or call the tool by its full name (%s)",
		len(found), clipText(plain, 80), strings.Join(named, ", "), found[0].Name)
}

// appNames asks the page for its mini-apps and returns the open ones' names, "Title (id)", by
// the scope of their tools; empty when the page cannot say.
func (c *Tools) appNames(ctx context.Context) map[string]string {
	out := map[string]string{}
	raw, err := c.onPage(ctx, pageListMiniApps, json.RawMessage(`{}`))
	if err != nil {
		return out
	}
	var listing struct {
		Apps []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
			Open  bool   `json:"open"`
		} `json:"apps"`
	}
	json.Unmarshal(raw, &listing)
	for _, a := range listing.Apps {
		if a.Open {
			out[miniapp.Scope(a.ID)] = fmt.Sprintf("%s (%s)", clipText(a.Title, 80), a.ID)
		}
	}
	return out
}
