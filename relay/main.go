// Command relay is Voicebox's server: it serves the page, holds the /channel to whichever executor
// holds the workspace root (the page, or a paired machine environment), and keeps the host's state
// (host token, pairings); later the vendor keys too. The same binary runs a paired machine
// environment (relay env).
//
// Usage:
//
//	relay [serve] [flags]                               serve the page (the default command)
//	relay pair NAME | --revoke NAME | --list            pair a machine environment, revoke or list
//	relay env --relay URL --bearer-file FILE --root DIR run a paired machine environment on DIR
//	relay tool-check DECLARATION.json [ARGUMENTS.json]  check a mini-app tool declaration
//	relay extension-check DESCRIPTOR.json [--placement page|machine]  check an extension descriptor
//	relay sessions [list] | revoke ID | revoke --all    list or revoke the running relay's sessions
//	relay ticket                                        mint a one-time sign-in address on the running relay
//	relay check-app URL [--host ORIGIN]                 say which embedding headers an external mini-app lacks
//	relay help                                          print the commands, flags and environment variables
//
// Run `relay --help` for the flags and environment variables.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/voicebox-go/voicebox/relay/assistant"
	"github.com/voicebox-go/voicebox/relay/extcheck"
	"github.com/voicebox-go/voicebox/relay/extensionhost"
	"github.com/voicebox-go/voicebox/relay/externalapps"
	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/hub"
	"github.com/voicebox-go/voicebox/relay/server"
	"github.com/voicebox-go/voicebox/relay/session"
	"github.com/voicebox-go/voicebox/relay/toolcheck"
	"github.com/voicebox-go/voicebox/relay/voice"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// build is the version string, set at link time by build.sh (-X main.build=...).
var build = "dev"

// DefaultPort is the port the relay listens on when neither --addr nor PORT says otherwise.
const DefaultPort = 8787

// shutdownGrace bounds how long a graceful shutdown waits for requests in flight.
const shutdownGrace = 5 * time.Second

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

var commands []command

func init() {
	commands = []command{
		{"serve", "serve the page and the API (the default)", runServe},
		{"pair", "pair a machine environment and print its bearer once: pair NAME | pair --revoke NAME | pair --list", runPair},
		{"env", "run a paired machine environment: env --relay URL --bearer-file FILE --root DIR", runEnv},
		{"tool-check", "check a mini-app tool declaration (and arguments): tool-check DECLARATION.json [ARGUMENTS.json]", toolcheck.Main},
		{"extension-check", "check an extension descriptor: extension-check DESCRIPTOR.json [--placement page|machine]", extcheck.Main},
		{"approval-code", "show the outstanding extension approval codes: approval-code [--extensions-dir DIR]", runApprovalCode},
		{"sessions", "list or revoke the sessions of the running relay: sessions [list] | sessions revoke ID | sessions revoke --all", runSessions},
		{"ticket", "mint a one-time sign-in address on the running relay and print it: ticket [--extensions-dir DIR]", runTicket},
		{"check-app", "say which embedding headers an external mini-app lacks: check-app URL [--host ORIGIN]", runCheckApp},
		{"help", "print this help", func(_ []string, stdout, _ io.Writer) int { usage(stdout); return 0 }},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			usage(stdout)
			return 0
		}
		for _, c := range commands {
			if c.name == args[0] {
				return c.run(args[1:], stdout, stderr)
			}
		}
		if args[0] != "" && args[0][0] != '-' {
			fmt.Fprintf(stderr, "relay: unknown command %q; run `relay --help` for the list\n", args[0])
			return 2
		}
	}
	return runServe(args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "relay: Voicebox's server (build %s)\n\nUsage: relay [command] [flags]\n\nCommands:\n", build)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nFlags of serve:\n")
	fs, _ := serveFlags(io.Discard)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\nFlags of pair:\n")
	pfs, _ := pairFlags(io.Discard)
	pfs.SetOutput(w)
	pfs.PrintDefaults()
	fmt.Fprintf(w, "\nFlags of sessions:\n")
	sfs, _ := sessionsFlags(io.Discard)
	sfs.SetOutput(w)
	sfs.PrintDefaults()
	fmt.Fprintf(w, "\nFlags of env:\n")
	efs, _ := envFlags(io.Discard)
	efs.SetOutput(w)
	efs.PrintDefaults()
	fmt.Fprintf(w, `
Environment:
  PORT                     the port to listen on when --addr is not given (default %d; 0 takes a free port)
  VOICEBOX_PUBLIC_DIR      the directory the page is served from when --public is not given
  VOICEBOX_EXTENSIONS_DIR  the host state directory (host token, pairings) when --extensions-dir is
                           not given (default: the user's configuration directory + /voicebox)
  VOICEBOX_HELLO_BOUND_MS  milliseconds a /channel connection that is not the page has to send its
                           hello, when --hello-bound-ms is not given (default %d)
  VOICEBOX_LOOPBACK_AUTH   1 turns the session gate on: the page and /api/* need a session made from
                           the one-time bootstrap address printed at start (or the host token);
                           required to listen on anything but a loopback address
  VOICEBOX_ORIGIN          the public origin, when --origin is not given
  VOICEBOX_TLS_CERT        the TLS certificate file, when --tls-cert is not given
  VOICEBOX_TLS_KEY         the TLS key file, when --tls-key is not given
  VOICEBOX_SESSION_LIFETIME  how long a session lasts, when --session-lifetime is not given (default %v)
  VOICEBOX_TRUSTED_PROXY   the trusted proxies (CIDR[,CIDR...]), when --trusted-proxy is not given
  VOICEBOX_ACME_HOST       the host name to obtain certificates for, when --acme-host is not given
  VOICEBOX_ACME_EMAIL      the ACME contact address, when --acme-email is not given
  VOICEBOX_ACME_DIRECTORY  the ACME directory URL, when --acme-directory is not given
  VOICEBOX_ACME_HTTP_ADDR  where to answer HTTP-01 challenges, when --acme-http-addr is not given
  VOICEBOX_LOG_FORMAT      auto, json or text, when --log-format is not given
  MINI_APPS                the external mini-app registry as JSON, when --mini-apps is not given: an
                           object keyed by app id, each {name, description, url, origin, icon,
                           capabilities, audience, secret} (see the README, "External mini-apps")
  OPENAI_API_KEY           the OpenAI key for live voice (a key stored with PUT /api/keys wins)
  GEMINI_API_KEY           the Gemini key for live voice (a key stored with PUT /api/keys wins)
  VOICEBOX_LIVE_PROVIDER   the live provider (gemini or openai) a relay with no saved voice settings
                           starts with; LIVE_PROVIDER is read when it is unset (default gemini)
  VOICEBOX_OPENAI_URL      the OpenAI Realtime endpoint, when --openai-url is not given
  VOICEBOX_GEMINI_URL      the Gemini Live endpoint, when --gemini-url is not given

The sessions and ticket commands reach the relay serving the same --extensions-dir through its
control socket (%s in that directory) and authenticate with the host token.
`, DefaultPort, hub.DefaultHelloBound.Milliseconds(), session.DefaultLifetime, ControlSocketFile)
}

type serveConfig struct {
	addr       string
	public     string
	stateDir   string
	helloBound int
	origin     string
	tlsCert    string
	tlsKey     string
	lifetime   string
	trusted    string
	acme       acmeSettings
	acmeHTTP   string
	logFormat  string
	miniApps   string
	openaiURL  string
	geminiURL  string
}

func serveFlags(stderr io.Writer) (*flag.FlagSet, *serveConfig) {
	cfg := &serveConfig{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "", "`host:port` to listen on; any host but a loopback address needs VOICEBOX_LOOPBACK_AUTH=1 (default 127.0.0.1:$PORT)")
	fs.StringVar(&cfg.origin, "origin", "", "public `origin` the page is opened at, such as https://voicebox.example.com; the page, /channel and /live admit it besides loopback (default $VOICEBOX_ORIGIN)")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM certificate `file` to serve TLS with, together with --tls-key (default $VOICEBOX_TLS_CERT)")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM private key `file` of --tls-cert (default $VOICEBOX_TLS_KEY)")
	fs.StringVar(&cfg.acme.host, "acme-host", "", "DNS `name` to obtain TLS certificates for with ACME (Let's Encrypt), instead of --tls-cert; the certificates are cached in the state directory's acme/ (default $VOICEBOX_ACME_HOST)")
	fs.StringVar(&cfg.acme.email, "acme-email", "", "contact `address` given to the ACME CA (default $VOICEBOX_ACME_EMAIL)")
	fs.StringVar(&cfg.acme.directory, "acme-directory", "", "ACME directory `URL` (default $VOICEBOX_ACME_DIRECTORY, else Let's Encrypt's production CA)")
	fs.StringVar(&cfg.acmeHTTP, "acme-http-addr", "", "`host:port` (such as :80) on which to answer ACME HTTP-01 challenges and redirect everything else to https; without it only TLS-ALPN-01 is answered, which needs --addr on port 443 (default $VOICEBOX_ACME_HTTP_ADDR)")
	fs.StringVar(&cfg.lifetime, "session-lifetime", "", "`duration` a session lasts from its sign-in, such as 8h or 30m (default $VOICEBOX_SESSION_LIFETIME, else 24h)")
	fs.StringVar(&cfg.trusted, "trusted-proxy", "", "`CIDR[,CIDR...]` of reverse proxies whose Forwarded/X-Forwarded-* headers are believed; from any other peer they are ignored (default $VOICEBOX_TRUSTED_PROXY, else none)")
	fs.StringVar(&cfg.logFormat, "log-format", "", "`format` of the log on stderr: auto (text on a terminal, JSON otherwise), json or text (default $VOICEBOX_LOG_FORMAT, else auto)")
	fs.StringVar(&cfg.public, "public", "", "`directory` the page is served from (default $VOICEBOX_PUBLIC_DIR, else ./public)")
	stateDirFlag(fs, &cfg.stateDir)
	fs.StringVar(&cfg.miniApps, "mini-apps", "", "JSON `file` of the external mini-app registry (default: the JSON in $MINI_APPS; neither means none)")
	vendorFlags(fs, cfg)
	fs.IntVar(&cfg.helloBound, "hello-bound-ms", 0, "`milliseconds` a /channel connection that is not the page has to say hello (default $VOICEBOX_HELLO_BOUND_MS, else 5000)")
	return fs, cfg
}

func stateDirFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "extensions-dir", "", "host state `directory`: host token, pairings and extensions (default $VOICEBOX_EXTENSIONS_DIR, else the user's config dir + /voicebox)")
}

// openState opens the host state directory named by the flag, else the environment, else the
// per-user default.
func openState(flagDir string) (*hoststate.Dir, error) {
	dir := flagDir
	if dir == "" {
		dir = os.Getenv("VOICEBOX_EXTENSIONS_DIR")
	}
	if dir == "" {
		var err error
		if dir, err = hoststate.DefaultPath(); err != nil {
			return nil, err
		}
	}
	return hoststate.Open(dir)
}

func runServe(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(ctx, args, stdout, stderr)
}

// serveUntil parses the serve flags and serves until ctx ends.
func serveUntil(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, cfg := serveFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "relay serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	st, err := cfg.settle(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "relay serve: %v\n", err)
		return 2
	}
	log, tlsConfig := st.log, st.tlsConfig // ACME replaces tlsConfig below
	state, err := openState(cfg.stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "relay serve: %v\n", err)
		return 1
	}
	var challenges http.Handler
	if st.acme.host != "" {
		m, err := newACMEManager(st.acme, state.Path())
		if err != nil {
			fmt.Fprintf(stderr, "relay serve: %v\n", err)
			return 1
		}
		tlsConfig = acmeTLSConfig(m)
		if st.acmeHTTP != "" {
			challenges = m.HTTPHandler(nil)
		}
	}
	ln, err := net.Listen("tcp", st.addr)
	if err != nil {
		fmt.Fprintf(stderr, "relay serve: %v\n", err)
		return 1
	}
	ln = server.LimitConns(ln, server.ConnLimits{Exempt: trustedPeer(st.trusted), TLS: tlsConfig != nil, Log: log})
	listeners := []net.Listener{ln}
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
		ln = tls.NewListener(ln, tlsConfig)
		listeners[0] = ln
	}
	base := st.origin
	if base == "" {
		base = scheme + "://" + reachableAddr(ln.Addr())
	}
	if a, ok := sharesPageOrigin(st.miniApps, pageOrigins(st.origin, scheme, ln)); ok {
		fmt.Fprintf(stderr, "relay serve: mini-app %q: field \"origin\": %s is the page's own origin; framed there the app would reach everything the page holds\n", a.ID, a.Origin)
		return 2
	}
	var gate *server.Gate
	hubOpts := hub.Options{HelloBound: st.helloBound, Pairings: state, Log: log}
	if st.gated {
		gate = server.NewGateFor(session.NewStore(session.Options{Lifetime: st.lifetime}))
		hubOpts.PageSession = gate.Session
		hubOpts.SessionOf = gate.SessionID
		hubOpts.Sessions = gate.Store()
	}
	var stopping atomic.Bool
	ready := func() error {
		if stopping.Load() {
			return refusal.New(refusal.RelayShuttingDown, "the relay is shutting down")
		}
		return nil
	}
	srv, err := server.New(server.Config{Public: st.public, Build: build, Log: log, HostToken: state.CheckHostToken, Gate: gate,
		Origin: st.origin, HSTS: tlsConfig != nil || len(st.trusted) > 0, Ready: ready, TrustedProxies: st.trusted, BootstrapBase: base,
		FrameOrigins: st.miniApps.Origins()})
	if err != nil {
		fmt.Fprintf(stderr, "relay serve: %v (run from the checkout, or pass --public)\n", err)
		return 1
	}
	hubOpts.PageOrigin = srv.PageOrigin
	var tools *assistant.Catalogue
	hubOpts.OnPageTools = func(t json.RawMessage) { tools.SetPageTools(t) }
	var appsModel *externalapps.Model // the assistant's catalogue with the open external apps added
	hubOpts.OnExternalApps = func(r json.RawMessage) { appsModel.SetReport(r) }
	hb := hub.New(hubOpts)
	hub.Register(srv, hb, state)
	exts := &extensionhost.Runtime{Admissions: extensionhost.NewAdmissions(state.Path(), nil), Fetcher: &extensionhost.Fetcher{}, Ask: hb.Ask, Console: stdout, Log: log,
		Publish: hb.SetAdmitted}
	if err := exts.Reload(); err != nil {
		fmt.Fprintf(stderr, "relay serve: extensions: %v\n", err)
		return 1
	}
	exts.Register(srv, state.CheckHostToken)
	var lv *voice.Handler // made below, with the catalogue as its tools; read once serving
	tools = assistant.New(assistant.Options{Root: hb, Extensions: assistant.ExtensionsOf(exts), Log: log,
		Live: func() bool { return lv != nil && lv.Configured() }})
	tools.Register(srv)
	var subject func(*http.Request) string
	if gate != nil {
		subject = gate.SessionID
	}
	externalapps.Register(srv, &externalapps.Minter{Registry: st.miniApps, Issuer: base}, subject)
	appsModel = externalapps.NewModel(tools, st.miniApps, hb, log)
	appsModel.Register(srv)
	lv, err = liveVoice(cfg, state, srv, gate, log, appsModel)
	if err != nil {
		fmt.Fprintf(stderr, "relay serve: %v\n", err)
		return 2
	}
	if challenges != nil {
		cl, err := net.Listen("tcp", st.acmeHTTP)
		if err != nil {
			fmt.Fprintf(stderr, "relay serve: --acme-http-addr: %v\n", err)
			return 1
		}
		listeners = append(listeners, cl)
		// Only short GETs come here, so a whole-request bound (ReadTimeout) is safe.
		go (&http.Server{Handler: challenges, ReadHeaderTimeout: server.HeaderTimeout, ReadTimeout: server.BodyTimeout, IdleTimeout: server.IdleTimeout,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}).Serve(server.LimitConns(cl, server.ConnLimits{Exempt: trustedPeer(st.trusted), Log: log}))
	}
	if cl, err := listenControl(state.Path()); err != nil {
		log.Warn("no control socket: `relay sessions` and `relay ticket` cannot reach this relay", "err", err)
	} else {
		listeners = append(listeners, cl)
	}
	banner := func(w io.Writer) {
		if gate != nil {
			fmt.Fprintf(w, "loopback gate on: open %s/?%s=%s once to start a session (single use; `relay ticket` makes another)\n", base, server.BootstrapParam, gate.NewTicket())
		} else {
			fmt.Fprintf(stderr, "loopback gate off: any process on this machine, of any user, can use the page and the API (set VOICEBOX_LOOPBACK_AUTH=1 to require a session)\n")
		}
		if st.acme.host != "" {
			fmt.Fprintf(w, "certificates for %s come from the ACME CA on first use, cached in %s\n", st.acme.host, filepath.Join(state.Path(), ACMECacheDir))
		}
	}
	code := serve(ctx, ln, listeners[1:], scheme, srv, log, stdout, banner, func() { stopping.Store(true); lv.Close(); tools.Close(); hb.Close() })
	hb.Close()
	return code
}

// reachableAddr is a listener's address as a browser on this machine can open it: an unspecified
// host (0.0.0.0, ::) becomes 127.0.0.1.
func reachableAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// serve runs the HTTP server on ln (and on the extra listeners: the control socket) until ctx
// ends, then shuts it down gracefully. onStop runs when ctx ends, before the shutdown, so
// /api/ready turns 503 at once.
func serve(ctx context.Context, ln net.Listener, extra []net.Listener, scheme string, h *server.Server, log *slog.Logger, stdout io.Writer, banner func(io.Writer), onStop func()) int {
	fresh := &freshConns{}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: server.HeaderTimeout,
		IdleTimeout:       server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState:         fresh.track,
	}
	hs.RegisterOnShutdown(fresh.closeAll)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	for _, l := range extra {
		go hs.Serve(l)
	}
	fmt.Fprintf(stdout, "voicebox on %s://%s\n", scheme, ln.Addr())
	if banner != nil {
		banner(stdout)
	}
	select {
	case err := <-done:
		log.Error("server stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	if onStop != nil {
		onStop()
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown did not finish in time", "err", err)
		return 1
	}
	if err := h.Drain(shutdownCtx); err != nil {
		log.Warn("sockets still open when the shutdown's grace ended", "err", err)
		return 1
	}
	return 0
}

// trustedPeer reports whether a peer is one of the trusted proxies, which carry every client's
// connections and so are not held to the per-client connection bound.
func trustedPeer(trusted []netip.Prefix) func(netip.Addr) bool {
	return func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
}

func orEnv(flagValue, env string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(env)
}

// listenAddr resolves --addr and PORT to host:port. Anything but a loopback host is refused
// unless gated: the relay never serves a network without the session gate.
func listenAddr(flagAddr, envPort string, gated bool) (string, error) {
	addr := flagAddr
	if addr == "" {
		port := strconv.Itoa(DefaultPort)
		if envPort != "" {
			port = envPort
		}
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %q: %v", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if host != "localhost" && !gated {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("%s is not a loopback address: listening there without the session gate would open the relay to the network; set VOICEBOX_LOOPBACK_AUTH=1", host)
		}
	}
	return net.JoinHostPort(host, port), nil
}
