// Package relay assembles a serving relay: one Relay value whose parts are built in dependency
// order by New, then served by Serve until its context ends. The command (the relay binary's
// main) only reads flags and the environment into a Config and listens; everything the relay is
// made of is built here.
//
// # The parts, in the order New builds them
//
//	State         the host state directory (host token, pairings, keys, extensions; relay/hoststate)
//	Gate          the session gate, when Config.Gated (relay/server)
//	Server        the HTTP handler: the page's files (embedded, package public, or a directory),
//	              health, sessions (relay/server)
//	Hub           /channel and the executor slot (relay/hub)
//	Extensions    the extension runtime and its routes (relay/extensionhost)
//	Voice parts   the providers, agent settings and key store (relay/voice)
//	Tools         the assistant's catalogue, the typed turn and approvals (relay/assistant)
//	ExternalApps  the open external mini-apps added to the catalogue, their tokens (relay/externalapps)
//	Live          the /live door, with ExternalApps as the model's tools (relay/voice)
//	MCP           the /mcp door, ExternalApps to MCP clients with the State's bearers (relay/mcp)
//
//	Fleet         with Config.Fleet: the NATS connection, shared sessions and pairings, the
//	              executor lease and routing (Router, given the Hub), the event fan-out (Events,
//	              given Tools) (relay/fleet)
//
// Each part is given the parts before it. Where a part must tell one built after it, it does so
// through a small listener interface registered once both exist: the hub tells the catalogue and
// the external apps what the page offers (hub.OfferListener). A new door (an MCP server at /mcp,
// a fleet's shared state) is one more step in New, given the parts it needs.
package relay

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/public"
	"github.com/voicebox-go/voicebox/relay/assistant"
	"github.com/voicebox-go/voicebox/relay/extensionhost"
	"github.com/voicebox-go/voicebox/relay/extensionhost/wasmshelf"
	"github.com/voicebox-go/voicebox/relay/externalapps"
	"github.com/voicebox-go/voicebox/relay/fleet"
	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/hub"
	"github.com/voicebox-go/voicebox/relay/internal/durable"
	"github.com/voicebox-go/voicebox/relay/mcp"
	"github.com/voicebox-go/voicebox/relay/server"
	"github.com/voicebox-go/voicebox/relay/session"
	"github.com/voicebox-go/voicebox/relay/voice"
	"github.com/voicebox-go/voicebox/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Config is what a relay runs with, already read and checked by its caller (the command checks
// flags and the environment; see relay --help). Only Listener and StateDir are required.
type Config struct {
	// Listener is where the page and the API are served: a plain TCP listener, to which the relay
	// adds TLS when TLS or ACME says so. The relay closes it when Serve returns.
	Listener net.Listener
	// Challenges, with ACME, is where HTTP-01 challenges are answered (everything else there is
	// redirected to https); nil answers only TLS-ALPN-01 on Listener. The relay closes it.
	Challenges net.Listener
	// StateDir is the host state directory; it is made (0700) when missing.
	StateDir string
	// Public is the directory the page is served from, for development (edit and reload); ""
	// serves the page embedded in the binary (package public).
	Public string
	// Build is the version string /api/health and the help report.
	Build string
	// Gated turns the session gate on: the page and the API need a session (or the host token).
	// Without it any process on the machine can use them.
	Gated bool
	// Origin is the public origin the page is opened at (server.ParseOrigin's form), "" for none.
	Origin string
	// SessionLifetime is how long a gate session lasts; zero means session.DefaultLifetime.
	SessionLifetime time.Duration
	// HelloBound is how long a /channel connection that is not the page has to say hello; zero
	// means hub.DefaultHelloBound.
	HelloBound time.Duration
	// TrustedProxies are the peers whose forwarding headers are believed (server.Config).
	TrustedProxies []netip.Prefix
	// TLS, when set, serves TLS with its certificates. Exclusive with ACME.
	TLS *tls.Config
	// ACME, when its Host is set, serves TLS with certificates from an ACME CA, cached in the
	// state directory's ACMECacheDir.
	ACME ACME
	// WasmShelfDir is the WASM shelf's directory; "" means wasm-shelf in the state directory.
	WasmShelfDir string
	// WasmPlacement is where WebAssembly modules run: extensionhost.WasmInRelay ("" too) or
	// extensionhost.WasmInPage.
	WasmPlacement string
	// MiniApps is the external mini-app registry; nil means none. No app may share the page's
	// origin (SharesPageOrigin): the caller checks that before New.
	MiniApps *externalapps.Registry
	// VendorURLs overrides a live provider's vendor endpoint, by provider name (wss://, or ws://
	// on a loopback host only: the caller checks).
	VendorURLs map[string]string
	// Log receives the relay's log; nil discards.
	Log *slog.Logger
	// Console receives what the host reads at start (the address, the sign-in address) and the
	// extension approval codes; nil discards.
	Console io.Writer
	// Warnings receives what the host must be warned of at start (the gate is off), apart from
	// the Console's output; nil discards.
	Warnings io.Writer
	// Fleet, when its URL is set, makes this relay one of a fleet on NATS (relay/fleet): the
	// gate's sessions and tickets and the pairings are shared, calls reach the executor on
	// whichever relay holds it, and the event stream fans out. Its Log defaults to Log. Without
	// it the relay keeps everything in its state directory and memory, as alone.
	Fleet fleet.Config
}

// Relay is a relay's running parts, built by New. Its fields are for the doors New builds and
// for tests; replacing one after New changes nothing.
type Relay struct {
	cfg      Config
	log      *slog.Logger
	console  io.Writer
	warnings io.Writer
	tls      *tls.Config  // nil for plain HTTP
	acme     http.Handler // HTTP-01 challenges, with Config.Challenges
	scheme   string       // "http" or "https"
	base     string       // where the page is opened: the public origin, else the listener's
	stopping atomic.Bool

	State        *hoststate.Dir
	Gate         *server.Gate // nil when the gate is off
	Server       *server.Server
	Hub          *hub.Hub
	Extensions   *extensionhost.Runtime
	Tools        *assistant.Catalogue
	ExternalApps *externalapps.Model // the model's tools: Tools with the open external apps
	Live         *voice.Handler
	MCP          *mcp.Handler

	// The fleet's parts; nil for a relay alone.
	Fleet  *fleet.Fleet
	Router *fleet.Router
	Events *fleet.Events

	stopExtWatch func() // ends the fleet's extension reloads (Fleet.WatchExtensions)
}

// New builds a relay's parts in dependency order, registering their routes on Server. It
// serves nothing until Serve. On an error it has started nothing that needs stopping.
func New(cfg Config) (*Relay, error) {
	if cfg.Listener == nil {
		return nil, errors.New("relay: no listener")
	}
	r := &Relay{cfg: cfg, log: cfg.Log, console: cfg.Console, tls: cfg.TLS, scheme: "http"}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.console == nil {
		r.console = io.Discard
	}
	if r.warnings = cfg.Warnings; r.warnings == nil {
		r.warnings = io.Discard
	}
	if r.cfg.MiniApps == nil {
		r.cfg.MiniApps = externalapps.Empty()
	}
	if cfg.Log != nil {
		durable.SetLog(cfg.Log) // a torn record cut from the state directory is said in the relay's log
	}
	var err error
	if r.State, err = hoststate.Open(cfg.StateDir); err != nil {
		return nil, err
	}
	if root, err := fsroot.OpenOS(r.State.Path()); err == nil {
		durable.SweepTemps(root, "the state directory", r.log) // what a relay killed mid-write left
		root.Close()
	}
	if cfg.ACME.Host != "" {
		m, err := newACMEManager(cfg.ACME, r.State.Path())
		if err != nil {
			return nil, err
		}
		r.tls = acmeTLSConfig(m)
		if cfg.Challenges != nil {
			r.acme = m.HTTPHandler(nil)
		}
	}
	if r.tls != nil {
		r.scheme = "https"
	}
	r.base = cfg.Origin
	if r.base == "" {
		r.base = r.scheme + "://" + ReachableAddr(cfg.Listener.Addr())
	}
	sessions := session.Options{Lifetime: cfg.SessionLifetime}
	if cfg.Fleet.URL != "" {
		if err := r.joinFleet(); err != nil {
			return nil, err
		}
		sessions.Records = r.Fleet.Records()
		r.State.UsePairings(r.Fleet.Pairings())
		r.State.UseMCPClients(r.Fleet.MCPClients())
	}
	if cfg.Gated {
		r.Gate = server.NewGateFor(session.NewStore(sessions))
	}
	if err := r.buildServer(); err != nil {
		r.closeFleet()
		return nil, err
	}
	r.buildHub()
	if err := r.buildExtensions(); err != nil {
		r.closeFleet()
		return nil, err
	}
	vendors := r.voiceParts()
	r.Tools = assistant.New(assistant.Options{Root: r.Hub, Extensions: extensionhost.ForAssistant(r.Extensions), Log: r.log,
		Live: func() bool { return voice.Configured(vendors.Providers, vendors.Settings, vendors.Keys) }})
	r.Tools.Register(r.Server)
	r.buildExternalApps()
	offered := hub.OfferFunc(func(o hub.Offer) {
		r.Tools.SetPageTools(o.Tools)
		r.ExternalApps.SetReport(o.ExternalApps)
	})
	r.Hub.AddOfferListener(offered)
	// The page's live panels follow who holds the root and what changes in the extensions, on
	// the event stream the catalogue serves (in a fleet, every relay's: Events carries them).
	r.Hub.AddRootListener(hub.RootFunc(func(root hub.Root) { r.Tools.Publish("root", root) }))
	r.Extensions.Changed = func(what, id string) {
		r.Tools.Publish("extensions", map[string]string{"what": what, "id": id})
	}
	r.buildLive(vendors)
	if r.Fleet != nil {
		r.Router = r.Fleet.NewRouter(r.Hub)
		r.Router.AddOfferListener(offered) // the page's offer when it is on another relay
		r.Hub.AddOfferListener(r.Router)   // and this relay's page's, for the others
		r.Hub.UseFleet(r.Router)
		ev, err := r.Fleet.NewEvents(r.Tools)
		if err != nil {
			r.closeFleet()
			return nil, fmt.Errorf("fleet: %w", err)
		}
		r.Events = ev
		r.Tools.UseFleet(ev)
	}
	r.buildMCP()
	// New doors go here, each given the parts it needs.
	return r, nil
}

// joinFleet connects to the fleet's NATS; it returns at once even when NATS is away.
func (r *Relay) joinFleet() error {
	fc := r.cfg.Fleet
	if fc.Log == nil {
		fc.Log = r.log
	}
	f, err := fleet.Connect(fc)
	if err != nil {
		return err
	}
	r.Fleet = f
	r.log.Info("fleet: joining", "relay", f.ID())
	return nil
}

// closeFleet leaves the fleet: the lease is released (another relay's page may take it at once),
// the watches and subscriptions end, and the connection closes.
func (r *Relay) closeFleet() {
	if r.stopExtWatch != nil {
		r.stopExtWatch()
	}
	if r.Router != nil {
		r.Router.Close()
	}
	if r.Events != nil {
		r.Events.Close()
	}
	if r.Gate != nil {
		r.Gate.Store().Close()
	}
	if r.Fleet != nil {
		r.Fleet.Close()
	}
}

// buildMCP serves the model's view of the tools (ExternalApps) to MCP clients at /mcp, admitted
// by the bearers the host minted (State), with their routes.
func (r *Relay) buildMCP() {
	r.MCP = mcp.New(mcp.Options{Catalogue: r.ExternalApps, Clients: r.State, Attribute: assistant.WithMCPClient,
		PageOrigin: r.Server.PageOrigin, Build: r.cfg.Build, Log: r.log})
	r.Server.Handle("GET "+mcp.Path, r.MCP)
	r.Server.Handle("POST "+mcp.Path, r.MCP) // JSON-RPC: a JSON body, as every state-changing route
	// Ending a session (DELETE) carries no body; it is a method no page may send without a
	// preflight, and the bearer admits it.
	r.Server.HandleBody("DELETE "+mcp.Path, server.NoBody, r.MCP)
	r.MCP.RegisterClients(r.Server, r.State, r.State.CheckHostToken)
}

func (r *Relay) buildServer() error {
	var files fs.FS
	if r.cfg.Public == "" {
		files = public.Files()
		if !public.HasEngine(files) {
			r.log.Warn("this relay was built without the page's engine (" + public.Engine + "): the page will not start; build it with ./build.sh build, or serve a built page with --public")
		}
	}
	var err error
	r.Server, err = server.New(server.Config{Public: r.cfg.Public, Files: files, Build: r.cfg.Build, Log: r.log, HostToken: r.State.CheckHostToken,
		Gate: r.Gate, Origin: r.cfg.Origin, HSTS: r.tls != nil || len(r.cfg.TrustedProxies) > 0, Ready: r.ready,
		TrustedProxies: r.cfg.TrustedProxies, BootstrapBase: r.base, FrameOrigins: r.cfg.MiniApps.Origins(), Bearer: r.liveBearer})
	return err
}

// liveBearer reports whether bearer is a live MCP client's or a paired machine's
// (server.Config.Bearer: such a connection is not held to its address's bound).
func (r *Relay) liveBearer(bearer string) bool {
	if c, ok, err := r.State.LookupMCPClient(bearer); err == nil && ok && c.Live() {
		return true
	}
	_, ok, err := r.State.Lookup(bearer)
	return err == nil && ok
}

// ready is /api/ready's answer: a refusal once the shutdown began.
func (r *Relay) ready() error {
	if r.stopping.Load() {
		return refusal.New(refusal.RelayShuttingDown, "the relay is shutting down")
	}
	return nil
}

func (r *Relay) buildHub() {
	opts := hub.Options{HelloBound: r.cfg.HelloBound, Pairings: r.State, Log: r.log, PageOrigin: r.Server.PageOrigin}
	if r.Gate != nil {
		opts.PageSession, opts.SessionOf, opts.Sessions = r.Gate.Session, r.Gate.SessionID, r.Gate.Store()
		if r.Fleet != nil {
			opts.PageSessionUnavailable = func(req *http.Request) error { _, err := r.Gate.Check(req); return err }
		}
	}
	r.Hub = hub.New(opts)
	hub.Register(r.Server, r.Hub, r.State)
}

func (r *Relay) buildExtensions() error {
	shelf := r.cfg.WasmShelfDir
	if shelf == "" {
		shelf = wasmshelf.DefaultDir(r.State.Path())
	}
	var store extensionhost.Store = extensionhost.NewDirStore(r.State.Path())
	if r.Fleet != nil {
		store = r.Fleet.Extensions()
	}
	r.Extensions = &extensionhost.Runtime{Admissions: extensionhost.NewAdmissionsIn(r.State.Path(), store, nil), Fetcher: &extensionhost.Fetcher{},
		Ask: r.Hub.Ask, Console: r.console, Log: r.log, Publish: r.Hub.SetAdmitted, ShelfDir: shelf, WasmPlacement: r.cfg.WasmPlacement}
	if err := r.Extensions.Reload(); err != nil {
		if r.Fleet == nil || !fleet.Unavailable(err) {
			return fmt.Errorf("extensions: %w", err)
		}
		// NATS is away: nothing is loaded until it is back (WatchExtensions reloads then).
		r.log.Warn("extensions: the fleet's extension store is unreachable; none is loaded until NATS is back")
	}
	if r.Fleet != nil {
		stop, err := r.Fleet.WatchExtensions(func() {
			if err := r.Extensions.Reload(); err != nil {
				r.log.Warn("extensions: a reload after a change on another relay failed; the last admitted set stays", "err", err)
			}
		})
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		r.stopExtWatch = stop
	}
	r.Extensions.Register(r.Server, r.State.CheckHostToken)
	return nil
}

func (r *Relay) buildExternalApps() {
	var subject func(*http.Request) string
	if r.Gate != nil {
		subject = r.Gate.SessionID
	}
	externalapps.Register(r.Server, &externalapps.Minter{Registry: r.cfg.MiniApps, Issuer: r.base}, subject)
	r.ExternalApps = externalapps.NewModel(r.Tools, r.cfg.MiniApps, r.Hub, r.log)
	r.ExternalApps.Register(r.Server)
}

// voiceParts returns what the /live door and the assistant's offline mode share: the
// providers, the agent settings and the vendor keys (the last two kept in the state directory),
// in the Options the door is built with.
func (r *Relay) voiceParts() voice.Options {
	reg := voice.Providers()
	settings := voice.NewSettings(reg, r.State)
	if r.Fleet != nil {
		settings = voice.NewSharedSettings(reg, r.Fleet.Files())
	}
	// The vendor keys stay in this relay's state directory and environment, in a fleet too:
	// they never go to NATS.
	return voice.Options{Providers: reg, Settings: settings, Keys: voice.NewKeys(r.State, nil, voice.KeyEnvs(reg))}
}

func (r *Relay) buildLive(opts voice.Options) {
	opts.Catalogue, opts.BaseURLs, opts.PageOrigin, opts.Log = r.ExternalApps, r.cfg.VendorURLs, r.Server.PageOrigin, r.log
	if r.Gate != nil {
		opts.PageSession, opts.SessionOf, opts.Sessions = r.Gate.Session, r.Gate.SessionID, r.Gate.Store()
	}
	r.Live = voice.New(opts)
	voice.Register(r.Server, r.Live, r.State.CheckHostToken)
}

// URL is where the page is opened: the public origin, else the listener's address.
func (r *Relay) URL() string { return r.base }

// ReachableAddr is a listener's address as a browser on this machine can open it: an
// unspecified host (0.0.0.0, ::) becomes 127.0.0.1.
func ReachableAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
