package mcp

import (
	"context"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bridged says how the stdio bridge answers one method of /mcp: nil when its own server of the
// SDK answers as the relay's does (initialize, ping, logging/setLevel, and what it mirrors: the
// relay's tools, whose calls go to the relay), or the request made of the relay in its place.
type bridged func(ctx context.Context, remote *sdk.ClientSession, req sdk.Request) (sdk.Result, error)

// Served is every client request /mcp answers, each with how `relay mcp` answers it: the one
// table of both, so a method /mcp serves is never -32601 over stdio (TestBridgeServesWhatMCPServes
// holds the two to it, method by method).
var Served = map[string]bridged{
	"initialize":       nil,
	"ping":             nil,
	"logging/setLevel": nil, // answered by the bridge's own server; neither door sends log lines
	"tools/list":       nil, // mirrored (toolSync), list_changed followed
	"tools/call":       nil, // each mirrored tool's handler calls the relay
	"prompts/list":     nil, // none, on both
	"resources/templates/list": func(ctx context.Context, remote *sdk.ClientSession, req sdk.Request) (sdk.Result, error) {
		var cursor string
		if p, ok := req.GetParams().(*sdk.ListResourceTemplatesParams); ok && p != nil {
			cursor = p.Cursor
		}
		return remote.ListResourceTemplates(ctx, &sdk.ListResourceTemplatesParams{Cursor: cursor})
	},
	"resources/read": func(ctx context.Context, remote *sdk.ClientSession, req sdk.Request) (sdk.Result, error) {
		p := req.GetParams().(*sdk.ReadResourceParams)
		return remote.ReadResource(ctx, &sdk.ReadResourceParams{URI: p.URI})
	},
	"resources/list": func(ctx context.Context, remote *sdk.ClientSession, req sdk.Request) (sdk.Result, error) {
		var cursor string
		if p, ok := req.GetParams().(*sdk.ListResourcesParams); ok && p != nil {
			cursor = p.Cursor
		}
		return remote.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
	},
	"completion/complete": func(ctx context.Context, remote *sdk.ClientSession, req sdk.Request) (sdk.Result, error) {
		p := req.GetParams().(*sdk.CompleteParams)
		return remote.Complete(ctx, &sdk.CompleteParams{Ref: p.Ref, Argument: p.Argument, Context: p.Context})
	},
}

// ServedMethods is Served's methods, sorted.
func ServedMethods() []string {
	out := make([]string, 0, len(Served))
	for m := range Served {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// relayServed is the bridge's middleware: a method Served relays is asked of the relay as it
// came; anything else is its own server's to answer.
func relayServed(remote *sdk.ClientSession) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if relay := Served[method]; relay != nil {
				return relay(ctx, remote, req)
			}
			return next(ctx, method, req)
		}
	}
}
