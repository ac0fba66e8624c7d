// Package relay assembles a serving relay from configuration: the core (internal/core: the page,
// the gate and sessions, /channel, /live with the vendor keys) and the doors Config asks for,
// mounted on it in order. The command (the relay binary's main) only reads flags and the
// environment into a Config and listens.
//
// # The doors, in the order they are mounted
//
//	Extensions    proposals, admissions, the WASM shelf, remote MCP servers (internal/door/extensionhost)
//	ExternalApps  the open external mini-apps added to the catalogue, their tokens (internal/door/externalapps)
//	MCP           the /mcp door: the model's catalogue to MCP clients, with their bearers (internal/door/mcp)
//	Workspace     a folder of this machine served as a machine root in-process, when Config.Workspace names one (internal/door/workspace)
//
// With Config.Fleet the relay is one of a fleet on NATS (internal/door/fleet): the fleet backs the
// core's stores (core.Shared: sessions, pairings, MCP clients, settings) and the extension door's,
// routes calls to the executor on whichever relay holds it (Router, given the Hub), and fans the
// event stream out (Events, given Tools).
//
// # The fleet is not a core.Door
//
// A door is mounted on a built core and closed before the core's own parts; the fleet's life
// encloses the core's instead, so the assembly runs it in three named steps around the core
// (docs/architecture.md, "The fleet: beneath the core"):
//
//	joinFleet    before core.New: connect, and back the core's stores and the extension door's
//	attachFleet  after core.New: the Router under the Hub's slot, the Events under Tools' stream
//	closeFleet   after the core's shutdown (its doors, Tools and Hub closed, the requests in
//	             flight given their grace): release the lease, say this relay leaves, disconnect
package relay

import (
	"context"
	"fmt"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/externalapps"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/mcp"
	"github.com/voicebox-go/voicebox/internal/door/workspace"
)

// ACME says where a relay's certificates come from when an ACME CA issues them (core.ACME).
type ACME = core.ACME

// ControlSocketFile is the Unix socket in the state directory on which a serving relay also
// answers its API (core.ControlSocketFile).
const ControlSocketFile = core.ControlSocketFile

// Config is what a relay runs with: the core's configuration, which doors to mount and their
// options, and the fleet. Only Listener and StateDir are required.
type Config struct {
	core.Config
	// NoDoors mounts no door: the minimal relay (the page, the gate, /channel, /live).
	NoDoors bool
	// WasmShelfDir is the WASM shelf's directory; "" means wasm-shelf in the state directory.
	WasmShelfDir string
	// WasmPlacement is where WebAssembly modules run: extensionhost.WasmInRelay ("" too) or
	// extensionhost.WasmInPage.
	WasmPlacement string
	// MiniApps is the external mini-app registry; nil means none. No app may share the page's
	// origin (SharesPageOrigin): the caller checks that before New.
	MiniApps *externalapps.Registry
	// Workspace, when set, is a folder of this machine the relay serves as a machine root
	// in-process (internal/door/workspace), mounted last, with NoDoors too.
	Workspace string
	// Fleet, when its URL is set, makes this relay one of a fleet on NATS (internal/door/fleet): the
	// gate's sessions and tickets and the pairings are shared, calls reach the executor on
	// whichever relay holds it, and the event stream fans out. Its Log defaults to Log. Without
	// it the relay keeps everything in its state directory and memory, as alone.
	Fleet fleet.Config
}

// Relay is a relay's running parts: the core's, the doors', and the fleet's. Its fields are for
// tests; replacing one after New changes nothing.
type Relay struct {
	*core.Core

	// The doors; nil when Config.NoDoors.
	Extensions   *extensionhost.Runtime
	ExternalApps *externalapps.Model // the model's tools: Tools with the open external apps
	MCP          *mcp.Handler

	// The fleet's parts; nil for a relay alone.
	Fleet  *fleet.Fleet
	Router *fleet.Router
	Events *fleet.Events
}

// New builds the core with the doors cfg asks for, then joins the fleet's routing and events.
// It serves nothing until Serve. On an error it has started nothing that needs stopping.
func New(cfg Config) (*Relay, error) {
	r := &Relay{}
	if err := r.joinFleet(&cfg); err != nil {
		return nil, err
	}
	var ext *extensionhost.Door
	var apps *externalapps.Door
	var mcpDoor *mcp.Door
	if !cfg.NoDoors {
		ext = &extensionhost.Door{ShelfDir: cfg.WasmShelfDir, WasmPlacement: cfg.WasmPlacement}
		if r.Fleet != nil {
			ext.Store, ext.Watch, ext.Away = r.Fleet.Extensions(), r.Fleet.WatchExtensions, fleet.Unavailable
		}
		apps = &externalapps.Door{Registry: cfg.MiniApps}
		mcpDoor = &mcp.Door{}
		cfg.Doors = append([]core.Door{ext, apps, mcpDoor}, cfg.Doors...)
	}
	if cfg.Workspace != "" {
		cfg.Doors = append(cfg.Doors, &workspace.Door{Dir: cfg.Workspace})
	}
	c, err := core.New(cfg.Config)
	if err != nil {
		r.closeFleet()
		return nil, err
	}
	r.Core = c
	if !cfg.NoDoors {
		r.Extensions, r.ExternalApps, r.MCP = ext.Runtime, apps.Model, mcpDoor.Handler
	}
	if err := r.attachFleet(c); err != nil {
		c.Close() // the doors mounted, the catalogue and the hub built: none will serve
		r.closeFleet()
		return nil, err
	}
	return r, nil
}

// joinFleet connects to the fleet cfg names, if any, and has it back the core's stores
// (cfg.Shared); New has it back the extension door's store too. It runs before the core is
// built, since the core opens its stores as it is.
func (r *Relay) joinFleet(cfg *Config) error {
	if cfg.Fleet.URL == "" {
		return nil
	}
	fc := cfg.Fleet
	if fc.Log == nil {
		fc.Log = cfg.Log
	}
	f, err := fleet.Connect(fc)
	if err != nil {
		return err
	}
	r.Fleet = f
	if cfg.Log != nil {
		cfg.Log.Info("fleet: joining", "relay", f.ID())
	}
	if cfg.Deployment == "" {
		cfg.Deployment = "fleet-" + f.Prefix() // what the fleet's relays share, so its sessions pass on each
	}
	cfg.Shared = &core.Shared{Sessions: f.Records(), Pairings: f.Pairings(), MCPClients: f.MCPClients(), Settings: f.Files()}
	return nil
}

// attachFleet puts the fleet under the built core c: the Router shares the Hub's executor slot
// (calls routed to whichever relay holds it, offers heard both ways) and the Events carry Tools'
// event stream and approval decisions to the other relays.
func (r *Relay) attachFleet(c *core.Core) error {
	if r.Fleet == nil {
		return nil
	}
	r.Router = r.Fleet.NewRouter(c.Hub)
	r.Router.AddOfferListener(c.OfferListener()) // the page's offer when it is on another relay
	c.Hub.AddOfferListener(r.Router)             // and this relay's page's, for the others
	c.Hub.UseFleet(r.Router)
	ev, err := r.Fleet.NewEvents(c.Tools)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	r.Events = ev
	c.Tools.UseFleet(ev)
	return nil
}

// Serve serves the relay until ctx ends (core.Core.Serve), then leaves the fleet.
func (r *Relay) Serve(ctx context.Context) error {
	defer r.closeFleet()
	return r.Core.Serve(ctx)
}

// closeFleet leaves the fleet, after the core's shutdown: the lease is released (another relay's
// page may take it at once), the others are told this relay leaves (after its approvals were
// settled by Tools.Close), the subscriptions end, and the connection closes.
func (r *Relay) closeFleet() {
	if r.Router != nil {
		r.Router.Close()
	}
	if r.Events != nil {
		r.Events.Close()
	}
	if r.Fleet != nil {
		r.Fleet.Close()
	}
}
