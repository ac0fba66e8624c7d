package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Bridge is `relay mcp`: it serves an MCP client that speaks only stdio (or any local transport)
// by relaying each of its requests to a running relay's /mcp, with a bearer. It is an MCP client
// of the relay and an MCP server to the local client, both of the SDK: every method /mcp serves is
// answered, as the table Served says (tools mirrored; their calls, resources/list, resources/read,
// the resource templates and completion/complete relayed as they come); the relay's
// notifications/tools/list_changed and its log lines come back. The local client sees the
// relay's tools, instructions, refusals and approvals unchanged.
type Bridge struct {
	// Endpoint is the relay's MCP URL, such as http://127.0.0.1:8787/mcp.
	Endpoint string
	// Bearer is the client's bearer (`relay mcp-token NAME`).
	Bearer string
	// Build is the version the bridge reports as a client and as a server.
	Build string
	// Log receives the bridge's own troubles; never the bearer. Nil discards.
	Log *slog.Logger
}

// bearerTransport adds the bearer to every request to the relay.
type bearerTransport struct {
	bearer string
	next   http.RoundTripper
}

// RoundTrip sends r with the bearer. A refusal of the relay's door (401 or 403 with
// {"refused", "why"}) comes back as an error naming its rule, which the SDK would not read.
func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.bearer)
	resp, err := t.next.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	defer resp.Body.Close()
	var rf refusal.Refusal
	if json.NewDecoder(io.LimitReader(resp.Body, maxRefusalBytes)).Decode(&rf) != nil || rf.Rule == "" {
		return nil, fmt.Errorf("the relay answered %s", resp.Status)
	}
	return nil, &rf
}

// relayReadBuffer is the size of the buffers the bridge reads and writes its connections to the
// relay through: an answer to a 4 KiB read (about 5 KB with its header) is read in one system
// call, where net/http's default of 4 KiB took two.
const relayReadBuffer = 32 << 10

// relayTransport is net/http's client transport (http.DefaultTransport's settings) set for the
// one relay the bridge talks to: a kept connection for each call it may have running and its
// notification stream (net/http keeps 2 a host), buffers an answer fits in, and no gzip asked
// for (the relay sends /mcp's answers as they are, so no answer is read through a decompressor).
func relayTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxBridgedCalls + 1
	t.ReadBufferSize, t.WriteBufferSize = relayReadBuffer, relayReadBuffer
	t.DisableCompression = true
	return t
}

// maxRefusalBytes bounds the refusal body the bridge reads.
const maxRefusalBytes = 16 << 10

// Run connects to the relay, then serves local until the local client goes away or ctx ends.
// It returns an error when the relay cannot be reached or refuses the bearer.
func (b *Bridge) Run(ctx context.Context, local sdk.Transport) error {
	log := b.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var srv *sdk.Server
	var ready sync.WaitGroup // the local server exists before a notification is forwarded to it
	ready.Add(1)
	var remote *sdk.ClientSession
	var tools *toolSync
	client := sdk.NewClient(&sdk.Implementation{Name: "voicebox-mcp-bridge", Version: b.Build}, &sdk.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, _ *sdk.ToolListChangedRequest) {
			ready.Wait()
			if err := b.syncTools(ctx, remote, tools); err != nil {
				log.Warn("mcp bridge: the relay's tools could not be listed again", "err", err)
			}
		},
	})
	toRelay := relayTransport()
	defer toRelay.CloseIdleConnections()
	httpClient := &http.Client{Transport: bearerTransport{bearer: b.Bearer, next: toRelay}}
	var err error
	remote, err = client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: b.Endpoint, HTTPClient: httpClient, MaxRetries: -1}, nil)
	if err != nil {
		ready.Done()
		return fmt.Errorf("mcp bridge: the relay at %s did not take the connection: %w", b.Endpoint, err)
	}
	defer remote.Close()
	init := remote.InitializeResult()
	srv = sdk.NewServer(&sdk.Implementation{Name: "voicebox", Title: "Voicebox", Version: b.Build}, &sdk.ServerOptions{
		Instructions: init.Instructions,
		// The protocol the relay speaks with the bridge, and no newer one: the local client is
		// served as /mcp serves it, and what is relayed is asked in that version.
		SupportedProtocolVersions: []string{init.ProtocolVersion},
		// Served relays completion/complete before this is reached; that there is one advertises
		// the capability, as /mcp does.
		CompletionHandler: func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			return remote.Complete(ctx, req.Params)
		},
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{},
		},
	})
	tools = &toolSync{server: srv, have: map[string]string{}, handler: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return remote.CallTool(ctx, &sdk.CallToolParams{Name: req.Params.Name, Arguments: json.RawMessage(orEmpty(req.Params.Arguments))})
	}}
	srv.AddReceivingMiddleware(relayServed(remote))
	srv.AddReceivingMiddleware(withRefusalErrors) // the local client's errors read as the relay's do
	if err := b.syncTools(ctx, remote, tools); err != nil {
		ready.Done()
		return fmt.Errorf("mcp bridge: the relay's tools could not be listed: %w", err)
	}
	if lt, ok := local.(*LineTransport); ok {
		// A client on lines has its tools/call passed to the relay as bytes (passer).
		pctx, stop := context.WithCancel(ctx)
		pass := &passer{endpoint: b.Endpoint, session: remote.ID(), bearer: b.Bearer, protocol: init.ProtocolVersion,
			http: &http.Client{Transport: toRelay}, log: log, ctx: pctx, calls: map[string]*passedCall{}, idle: make(chan func())}
		local = &LineTransport{In: lt.In, Out: lt.Out, pass: pass}
		defer pass.wg.Wait()
		defer stop()
	}
	ready.Done()
	err = srv.Run(ctx, local)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// syncTools lists the relay's tools, every page of them, and makes them the local server's.
func (b *Bridge) syncTools(ctx context.Context, remote *sdk.ClientSession, tools *toolSync) error {
	var all []*sdk.Tool
	for t, err := range remote.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		all = append(all, t)
	}
	tools.syncTools(all)
	return nil
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}
