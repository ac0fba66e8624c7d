package mcp

import (
	"path/filepath"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/core/server"
)

// Door is the MCP server as a door of the relay (core.Door): /mcp serves the catalogue the model
// calls (core.Model, with what the doors mounted before it add) to MCP clients admitted by the
// bearers the host minted, and /api/mcp/clients mints, lists and revokes them.
type Door struct {
	// Handler is /mcp, once mounted.
	Handler *Handler
}

// Name implements core.Door.
func (d *Door) Name() string { return "mcp" }

// StateFiles implements core.Door: the MCP clients' bearers.
func (d *Door) StateFiles() []string { return []string{ClientsFile} }

// Mount implements core.Door. The clients' bearers are the fleet's when it shares them
// (core.Shared.MCPClients), else the state directory's ClientsFile.
func (d *Door) Mount(c *core.Core) error {
	clients := c.Shared.MCPClients
	if clients == nil {
		clients = NewFileClients(filepath.Join(c.State.Path(), ClientsFile))
	}
	d.Handler = New(Options{Catalogue: c.Model, Clients: clients, Attribute: assistant.WithMCPClient,
		PageOrigin: c.Server.PageOrigin, Build: c.Build(), Log: c.Log})
	c.Server.Handle("GET "+Path, d.Handler)
	c.Server.Handle("POST "+Path, d.Handler) // JSON-RPC: a JSON body, as every state-changing route
	// Ending a session (DELETE) carries no body; it is a method no page may send without a
	// preflight, and the bearer admits it.
	c.Server.HandleBody("DELETE "+Path, server.NoBody, d.Handler)
	d.Handler.RegisterClients(c.Server, clients, c.State.CheckHostToken)
	// A live MCP client's connection is not held to its address's bound.
	c.AddBearer(func(bearer string) bool {
		cl, ok, err := clients.Lookup(bearer)
		return err == nil && ok && cl.Live()
	})
	return nil
}

// Close implements core.Door.
func (d *Door) Close() {
	if d.Handler != nil {
		d.Handler.Close()
	}
}
