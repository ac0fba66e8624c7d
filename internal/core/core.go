// Package core is the minimal relay: it serves the page, keeps the gate and its sessions, holds
// /channel (the hub, to whichever executor holds the workspace root) and carries /live to the
// voice vendors with the keys only the relay holds. Everything else a relay can do is a Door,
// mounted on the core from configuration: the core imports no door, and a relay with no doors is
// a tested configuration.
//
// # The parts, in the order New builds them
//
//	State    the host state directory (host token, pairings, vendor keys, settings; internal/core/hoststate)
//	Gate     the session gate, when Config.Gated (internal/core/server, internal/core/session)
//	Server   the HTTP handler: the page's files, health, sessions, the walls (internal/core/server)
//	Hub      /channel and the executor slot (internal/core/hub)
//	Tools    the assistant's catalogue: the built-in tools, the typed turn, approvals and the
//	         event stream (internal/core/assistant)
//	(doors)  each Door's Mount, in Config.Doors' order
//	Live     the /live door to the vendors, calling Model (internal/core/voice)
//
// # Doors
//
// A door owns its routes (registered on Server in Mount), its state files (StateFiles, inside
// the state directory) and its flags (the command reads them into the door's own options before
// New). It is given the core and nothing else: a door imports core packages, never another door.
// A door that adds tools to what the model calls wraps Model in Mount; a door mounted after it
// (an MCP server) sees the wrapper, and so does /live, built last.
package core

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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/core/durable"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/core/voice"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/public"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// Door is an optional part of the relay, mounted on the core by New.
type Door interface {
	// Name names the door in the log and in errors ("mcp", "extensions").
	Name() string
	// StateFiles are the names, relative to the state directory, of the files and folders the
	// door keeps there, or patterns (path.Match) of them; no two doors, and not the core, keep
	// the same one.
	StateFiles() []string
	// Mount builds the door on c: its routes on c.Server, its listeners on c.Hub and c.Tools. It
	// runs once, before the relay serves; on an error New closes the doors mounted before it.
	Mount(c *Core) error
	// Close ends what Mount started. It runs once, when the relay shuts down (after /live is
	// closed, before the requests in flight are given their grace), in the reverse of the order
	// of mounting.
	Close()
}

// Framer is a Door whose pages the page frames (external mini-apps): their origins join the
// page's frame-src, read once before the server is built.
type Framer interface {
	FrameOrigins() []string
}

// Shared are the core's stores when they are kept elsewhere than in this relay (a fleet's, on
// NATS). A nil field keeps that store in the state directory or memory, as alone.
type Shared struct {
	// Sessions keeps the gate's tickets and sessions; a page's session may then be unavailable
	// for a while (the hub answers so instead of refusing it).
	Sessions session.Records
	// Pairings keeps the paired machines' bearers.
	Pairings hoststate.PairingStore
	// MCPClients keeps the MCP clients' bearers, for the MCP door (internal/door/mcp), which
	// keeps them in the state directory when it is nil.
	MCPClients hoststate.MCPClientStore
	// Settings keeps the agent settings (the vendor keys never leave this relay).
	Settings hoststate.Files
}

// Config is what a core runs with, already read and checked by its caller (the command checks
// flags and the environment; see relay --help). Only Listener and StateDir are required.
type Config struct {
	// Listener is where the page and the API are served: a plain TCP listener, to which the core
	// adds TLS when TLS or ACME says so. The core closes it when Serve returns.
	Listener net.Listener
	// Challenges, with ACME, is where HTTP-01 challenges are answered (everything else there is
	// redirected to https); nil answers only TLS-ALPN-01 on Listener. The core closes it.
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
	// Deployment names the deployment this relay is part of; the gate's session cookie is named
	// for it (server.SessionCookieName), since a browser keeps one cookie of a name per host
	// whatever the port. The relays of a fleet name one (internal/relay names it for the fleet's
	// prefix when the operator names none), so a session is carried between them; "" names a
	// relay alone for the port it listens on, so two relays on one machine keep two sessions.
	Deployment string
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
	// VendorURLs overrides a live provider's vendor endpoint, by provider name (wss://, or ws://
	// on a loopback host only: the caller checks).
	VendorURLs map[string]string
	// Shared, when set, keeps the core's stores elsewhere (a fleet's); nil keeps them here.
	Shared *Shared
	// Doors are mounted in this order; none is the minimal relay.
	Doors []Door
	// Log receives the relay's log; nil discards.
	Log *slog.Logger
	// Console receives what the host reads at start (the address, the sign-in address) and what
	// doors print for the host (the extension approval codes); nil discards.
	Console io.Writer
	// Warnings receives what the host must be warned of at start (the gate is off), apart from
	// the Console's output; nil discards.
	Warnings io.Writer
}

// Core is the minimal relay's running parts, built by New; a Door is given it to mount on.
// Replacing a part after New changes nothing, except Model during a door's Mount.
type Core struct {
	cfg      Config
	tls      *tls.Config  // nil for plain HTTP
	acme     http.Handler // HTTP-01 challenges, with Config.Challenges
	scheme   string       // "http" or "https"
	base     string       // where the page is opened: the public origin, else the listener's
	stopping atomic.Bool
	mounted  []Door
	offers   offers
	inproc   *memListener   // executors of this process dial the server here (DialInProcess)
	local    *localPairings // their pairings, then the host's, as the hub reads them
	bearers  []func(string) bool

	// Log is the relay's log; Console what the host reads (never nil).
	Log     *slog.Logger
	Console io.Writer
	// Warnings is what the host must be warned of (never nil).
	Warnings io.Writer

	State *hoststate.Dir
	// Shared are the stores kept elsewhere (Config.Shared; never nil, a nil field keeps that
	// store here): a door whose store a fleet may share reads its own from it.
	Shared *Shared
	Gate   *server.Gate // nil when the gate is off
	Server *server.Server
	Hub    *hub.Hub
	Tools  *assistant.Tools
	// Model is the catalogue the live model (and a door serving models, such as MCP) calls:
	// Tools, wrapped by each door that adds tools, in mount order.
	Model tool.Catalogue
	Live  *voice.Handler
}

// New builds the core's parts in dependency order, mounts cfg.Doors on it, and builds /live
// last. It serves nothing until Serve. On an error it has started nothing that needs stopping.
func New(cfg Config) (*Core, error) {
	if cfg.Listener == nil {
		return nil, errors.New("relay: no listener")
	}
	c := &Core{cfg: cfg, Log: cfg.Log, Console: cfg.Console, Warnings: cfg.Warnings, tls: cfg.TLS, scheme: "http", inproc: newMemListener()}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Console == nil {
		c.Console = io.Discard
	}
	if c.Warnings == nil {
		c.Warnings = io.Discard
	}
	shared := cfg.Shared
	if shared == nil {
		shared = &Shared{}
	}
	c.Shared = shared
	if cfg.Log != nil {
		durable.SetLog(cfg.Log) // a torn record cut from the state directory is said in the relay's log
	}
	var err error
	if c.State, err = hoststate.Open(cfg.StateDir); err != nil {
		return nil, err
	}
	if root, err := fsroot.OpenOS(c.State.Path()); err == nil {
		durable.SweepTemps(root, "the state directory", c.Log) // what a relay killed mid-write left
		root.Close()
	}
	if shared.Pairings != nil {
		c.State.UsePairings(shared.Pairings)
	}
	if cfg.ACME.Host != "" {
		m, err := newACMEManager(cfg.ACME, c.State.Path())
		if err != nil {
			return nil, err
		}
		c.tls = acmeTLSConfig(m)
		if cfg.Challenges != nil {
			c.acme = m.HTTPHandler(nil)
		}
	}
	if c.tls != nil {
		c.scheme = "https"
	}
	c.base = cfg.Origin
	if c.base == "" {
		c.base = c.scheme + "://" + ReachableAddr(cfg.Listener.Addr())
	}
	if cfg.Gated {
		c.Gate = server.NewDeploymentGate(session.NewStore(session.Options{Lifetime: cfg.SessionLifetime, Records: shared.Sessions}), deployment(cfg))
		c.Log.Info("loopback gate on", "session_cookie", c.Gate.Cookie())
	}
	if err := c.buildServer(); err != nil {
		c.closeGate()
		return nil, err
	}
	c.buildHub(shared.Sessions != nil)
	vendors := c.voiceParts(shared.Settings)
	c.Tools = assistant.New(assistant.Options{Holder: c.Hub, Log: c.Log,
		Live: func() bool { return voice.Configured(vendors.Providers, vendors.Settings, vendors.Keys) }})
	c.Tools.Register(c.Server)
	c.Model = c.Tools
	c.Hub.AddOfferListener(&c.offers)
	c.AddOfferListener(hub.OfferFunc(func(o hub.Offer) { c.Tools.SetPageTools(o.Tools) }))
	// The page's live panels follow who holds the root on the event stream the catalogue serves.
	c.Hub.AddHoldingListener(hub.HoldingFunc(func(root hub.Holding) { c.Tools.Publish("root", root) }))
	for _, d := range cfg.Doors {
		if err := d.Mount(c); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", d.Name(), err)
		}
		c.mounted = append(c.mounted, d)
	}
	c.buildLive(vendors)
	return c, nil
}

// AddOfferListener has l hear what the page offers (its tools, its open external apps), from
// this relay's page or, in a fleet, from the page on another relay (OfferListener).
func (c *Core) AddOfferListener(l hub.OfferListener) { c.offers.add(l) }

// OfferListener hears every offer and passes it to each listener added with AddOfferListener:
// what a fleet's router gives the offers of a page on another relay.
func (c *Core) OfferListener() hub.OfferListener { return &c.offers }

// AddBearer has a connection that shows a bearer check accept it as a credential (such a
// connection is not held to its address's bound; server.Config.Bearer). For Mount.
func (c *Core) AddBearer(check func(bearer string) bool) { c.bearers = append(c.bearers, check) }

// URL is where the page is opened: the public origin, else the listener's address.
func (c *Core) URL() string { return c.base }

// Build is the version string the relay reports.
func (c *Core) Build() string { return c.cfg.Build }

// Stopping reports whether the shutdown began.
func (c *Core) Stopping() bool { return c.stopping.Load() }

// offers is a fan-out of offer listeners.
type offers struct {
	mu sync.Mutex
	ls []hub.OfferListener
}

func (o *offers) add(l hub.OfferListener) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ls = append(o.ls, l)
}

// PageOffered passes off to every listener, in the order they were added.
func (o *offers) PageOffered(off hub.Offer) {
	o.mu.Lock()
	ls := o.ls
	o.mu.Unlock()
	for _, l := range ls {
		l.PageOffered(off)
	}
}

// Close releases a core that was built but will not serve (an assembly that failed after New):
// what calls wait for (settleWaits), then the doors in the reverse of mounting, and the gate. Serve does
// the same at its shutdown, so a core is given to one or the other.
func (c *Core) Close() {
	c.settleWaits()
	c.closeDoors()
	c.closeGate()
}

// settleWaits ends what a call in flight may be waiting for, before the doors close: /live's
// sessions, the approvals still waiting (each call gets its answer: approval-timed-out, the relay
// is shutting down) and the page's channel (its calls in flight refused). A door's Close waits
// for its handlers (the MCP SDK's session Close waits for every call in flight), so a door closed
// first would wait for an approval's deadline.
func (c *Core) settleWaits() {
	if c.Live != nil {
		c.Live.Close()
	}
	c.Tools.Close()
	c.Hub.Close()
}

func (c *Core) closeDoors() {
	for i := len(c.mounted) - 1; i >= 0; i-- {
		c.mounted[i].Close()
	}
	c.mounted = nil
}

// deployment is the deployment cfg's gate names its cookie for: cfg.Deployment, or a relay alone
// named by its listening port.
func deployment(cfg Config) string {
	if cfg.Deployment != "" {
		return cfg.Deployment
	}
	if tcp, ok := cfg.Listener.Addr().(*net.TCPAddr); ok {
		return "relay-port-" + strconv.Itoa(tcp.Port)
	}
	return "relay-at-" + cfg.Listener.Addr().String()
}

func (c *Core) closeGate() {
	if c.Gate != nil {
		c.Gate.Store().Close()
	}
}

func (c *Core) buildServer() error {
	var files fs.FS
	if c.cfg.Public == "" {
		files = public.Files()
		if !public.HasEngine(files) {
			c.Log.Warn("this relay was built without the page's engine (" + public.Engine + "): the page will not start; build it with ./build.sh build, or serve a built page with --public")
		}
	}
	var frames []string
	for _, d := range c.cfg.Doors {
		if f, ok := d.(Framer); ok {
			frames = append(frames, f.FrameOrigins()...)
		}
	}
	var err error
	c.Server, err = server.New(server.Config{Public: c.cfg.Public, Files: files, Build: c.cfg.Build, Log: c.Log, HostToken: c.State.CheckHostToken,
		Gate: c.Gate, Origin: c.cfg.Origin, HSTS: c.tls != nil || len(c.cfg.TrustedProxies) > 0, Ready: c.ready,
		TrustedProxies: c.cfg.TrustedProxies, BootstrapBase: c.base, FrameOrigins: frames, Bearer: c.liveBearer})
	return err
}

// liveBearer reports whether bearer is a paired machine's, or one a door accepts (AddBearer).
func (c *Core) liveBearer(bearer string) bool {
	if _, ok, err := c.State.Lookup(bearer); err == nil && ok {
		return true
	}
	for _, check := range c.bearers {
		if check(bearer) {
			return true
		}
	}
	return false
}

// ready is /api/ready's answer: a refusal once the shutdown began.
func (c *Core) ready() error {
	if c.stopping.Load() {
		return refusal.New(refusal.RelayShuttingDown, "the relay is shutting down")
	}
	return nil
}

func (c *Core) buildHub(sharedSessions bool) {
	c.local = &localPairings{Pairings: c.State}
	opts := hub.Options{HelloBound: c.cfg.HelloBound, Pairings: c.local, Log: c.Log, PageOrigin: c.Server.PageOrigin}
	if c.Gate != nil {
		opts.PageSession, opts.SessionOf, opts.Sessions = c.Gate.Session, c.Gate.SessionID, c.Gate.Store()
		if sharedSessions {
			opts.PageSessionUnavailable = func(req *http.Request) error { _, err := c.Gate.Check(req); return err }
		}
	}
	c.Hub = hub.New(opts)
	hub.Register(c.Server, c.Hub, c.State)
}

// voiceParts returns what the /live door and the assistant's offline mode share: the
// providers, the agent settings and the vendor keys (the last two kept in the state directory,
// the settings in shared when given), in the Options the door is built with.
func (c *Core) voiceParts(shared hoststate.Files) voice.Options {
	reg := voice.Providers()
	settings := voice.NewSettings(reg, c.State)
	if shared != nil {
		settings = voice.NewSharedSettings(reg, shared)
	}
	// The vendor keys stay in this relay's state directory and environment, in a fleet too.
	return voice.Options{Providers: reg, Settings: settings, Keys: voice.NewKeys(c.State, nil, voice.KeyEnvs(reg))}
}

func (c *Core) buildLive(opts voice.Options) {
	opts.Catalogue, opts.BaseURLs, opts.PageOrigin, opts.Log = c.Model, c.cfg.VendorURLs, c.Server.PageOrigin, c.Log
	if c.Gate != nil {
		opts.PageSession, opts.SessionOf, opts.Sessions = c.Gate.Session, c.Gate.SessionID, c.Gate.Store()
	}
	c.Live = voice.New(opts)
	voice.Register(c.Server, c.Live, c.State.CheckHostToken)
}

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
