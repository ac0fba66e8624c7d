// Command relay is Voicebox's server: it serves the page, holds the /channel to whichever executor
// holds the workspace root (the page, or a paired machine environment), carries live voice
// sessions to the vendors, and keeps the host's state (host token, pairings, vendor keys,
// extensions). The same binary runs a paired machine environment (relay env) and the host's
// commands.
//
// This package reads flags and the environment and listens; the serving relay itself is
// assembled by package internal/relay.
//
// Usage:
//
//	relay [serve] [flags]                               serve the page (the default command)
//	relay pair NAME | --revoke NAME | --list            pair a machine environment, revoke or list
//	relay env --relay URL --bearer-file FILE --root DIR run a paired machine environment on DIR
//	relay tool-check DECLARATION.json [ARGUMENTS.json]  check a mini-app tool declaration
//	relay extension-check DESCRIPTOR.json [--placement page|machine]  check an extension descriptor
//	relay approval-code [--state-dir DIR] [--nats URL]   show the outstanding extension approval codes
//	relay sessions [list] | revoke ID | revoke --all    list or revoke the running relay's sessions
//	relay ticket                                        mint a one-time sign-in address on the running relay
//	relay check-app URL [--host ORIGIN]                 say which embedding headers an external mini-app lacks
//	relay mcp-token NAME | --revoke NAME | --list       mint a bearer for an MCP client, revoke or list
//	                                                    (with --nats: in the fleet's shared bearers)
//	relay mcp [--relay URL] --bearer-file FILE          serve a stdio MCP client through the relay's /mcp
//	relay help                                          print the commands, flags and environment variables
//
// Run `relay --help` for the flags and environment variables; docs/reference.md lists them too,
// rendered from this package's commands and environment tables by TestReferenceIsCurrent.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/voicebox-go/voicebox/cmd/relay/internal/checkapp"
	"github.com/voicebox-go/voicebox/cmd/relay/internal/extcheck"
	"github.com/voicebox-go/voicebox/cmd/relay/internal/toolcheck"
	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/relay"
)

// build is the version string, set at link time by build.sh (-X main.build=...).
var build = "dev"

// DefaultPort is the port the relay listens on when neither --addr nor PORT says otherwise.
const DefaultPort = 8787

type subcommand struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
	// flags is the command's flag set, for its help and docs/reference.md; nil when it takes none.
	flags func() *flag.FlagSet
}

var subcommands []subcommand

func init() {
	subcommands = []subcommand{
		{"serve", "serve the page and the API (the default)", runServe,
			func() *flag.FlagSet { fs, _ := serveFlags(io.Discard); return fs }},
		{"pair", "pair a machine environment and print its bearer once: pair NAME | pair --revoke NAME | pair --list", runPair,
			func() *flag.FlagSet { fs, _ := pairCommand.flags(io.Discard); return fs }},
		{"env", "run a paired machine environment: env --relay URL --bearer-file FILE --root DIR", runEnv,
			func() *flag.FlagSet { fs, _ := envFlags(io.Discard); return fs }},
		{"tool-check", "check a mini-app tool declaration (and arguments): tool-check DECLARATION.json [ARGUMENTS.json]", toolcheck.Main, nil},
		{"extension-check", "check an extension descriptor: extension-check DESCRIPTOR.json [--placement page|machine]", extcheck.Main,
			func() *flag.FlagSet { fs, _ := extcheck.Flags(io.Discard); return fs }},
		{"approval-code", "show the outstanding extension approval codes: approval-code [--state-dir DIR] [--nats URL]", runApprovalCode,
			func() *flag.FlagSet { fs, _, _ := approvalCodeFlags(io.Discard); return fs }},
		{"sessions", "list or revoke the sessions of the running relay: sessions [list] | sessions revoke ID | sessions revoke --all", runSessions,
			func() *flag.FlagSet { fs, _ := sessionsFlags(io.Discard); return fs }},
		{"ticket", "mint a one-time sign-in address on the running relay and print it: ticket [--state-dir DIR]", runTicket,
			func() *flag.FlagSet { fs, _ := ticketFlags(io.Discard); return fs }},
		{"mcp-token", "mint a bearer for an MCP client and print it once: mcp-token NAME | mcp-token --revoke NAME | mcp-token --list", runMCPToken,
			func() *flag.FlagSet { fs, _ := mcpTokenCommand.flags(io.Discard); return fs }},
		{"mcp", "serve a stdio MCP client through the running relay's /mcp: mcp [--relay URL] --bearer-file FILE", runMCP,
			func() *flag.FlagSet { fs, _ := mcpBridgeFlags(io.Discard); return fs }},
		{"check-app", "say which embedding headers an external mini-app lacks: check-app URL [--host ORIGIN]", runCheckApp,
			func() *flag.FlagSet { fs, _ := checkapp.Flags(io.Discard, checkAppDefaultHost); return fs }},
		{"help", "print this help", func(_ []string, stdout, _ io.Writer) int { usage(stdout); return 0 }, nil},
	}
}

func main() {
	if tunesCollector(os.Args[1:]) {
		core.TuneCollector()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// tunesCollector reports whether the command args names has its collector tuned
// (core.TuneCollector): every command but `relay mcp`. The bridge's live heap is small and it
// makes little garbage per message, so the 32 MiB the tuned collector lets its heap grow by are
// only fresh pages to fault in and clear, where Go's default reuses a few warm ones: at Go's
// default the bridge spent about a seventh less CPU per read (BENCHMARKS.md, "relay mcp made
// lean").
func tunesCollector(args []string) bool {
	return len(args) == 0 || args[0] != "mcp"
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			usage(stdout)
			return 0
		}
		for _, c := range subcommands {
			if c.name == args[0] {
				if asksForHelp(args[1:]) {
					commandUsage(stdout, c)
					return 0
				}
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

// asksForHelp reports whether a command's arguments ask for its help (-h, -help or --help before
// a "--"), which every command answers the same way, on stdout with exit status 0, as Go's own
// tools do, before its own flags are parsed.
func asksForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// commandUsage prints one command's summary and flags.
func commandUsage(w io.Writer, c subcommand) {
	fmt.Fprintf(w, "relay %s: %s\n", c.name, c.summary)
	if c.flags != nil {
		fmt.Fprintf(w, "\nFlags:\n")
		fs := c.flags()
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fmt.Fprintf(w, "\nrelay help lists every command, flag and environment variable.\n")
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "relay: Voicebox's server (build %s)\n\nUsage: relay [command] [flags]\n\nCommands:\n", build)
	for _, c := range subcommands {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	for _, c := range subcommands {
		if c.flags == nil {
			continue
		}
		fmt.Fprintf(w, "\nFlags of %s:\n", c.name)
		fs := c.flags()
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fmt.Fprintf(w, "\nEnvironment:\n")
	for _, v := range environment {
		fmt.Fprintf(w, "  %-25s %s", v.Name, v.Doc)
		if v.Flag != "" {
			fmt.Fprintf(w, " (--%s wins over it)", v.Flag)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, `
The sessions and ticket commands reach the relay serving the same --state-dir through its
control socket (%s in that directory) and authenticate with the host token.
`, relay.ControlSocketFile)
}

type serveConfig struct {
	addr       string
	public     string
	state      stateDirFlags
	helloBound int
	origin     string
	tlsCert    string
	tlsKey     string
	lifetime   string
	deployment string
	trusted    string
	acme       relay.ACME
	acmeHTTP   string
	logFormat  string
	miniApps   string
	openaiURL  string
	geminiURL  string
	nats       fleet.Config
	wasmShelf  string
	wasmPlace  string
	workspace  string
}

func serveFlags(stderr io.Writer) (*flag.FlagSet, *serveConfig) {
	cfg := &serveConfig{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "", "`host:port` to listen on; any host but a loopback address needs VOICEBOX_LOOPBACK_AUTH=1 (default 127.0.0.1:$PORT)")
	fs.StringVar(&cfg.origin, "origin", "", "public `origin` the page is opened at, such as https://voicebox.example.com; the page, /channel and /live admit it besides loopback (default $VOICEBOX_ORIGIN)")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM certificate `file` to serve TLS with, together with --tls-key (default $VOICEBOX_TLS_CERT)")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM private key `file` of --tls-cert (default $VOICEBOX_TLS_KEY)")
	fs.StringVar(&cfg.acme.Host, "acme-host", "", "DNS `name` to obtain TLS certificates for with ACME (Let's Encrypt), instead of --tls-cert; the certificates are cached in the state directory's acme/ (default $VOICEBOX_ACME_HOST)")
	fs.StringVar(&cfg.acme.Email, "acme-email", "", "contact `address` given to the ACME CA (default $VOICEBOX_ACME_EMAIL)")
	fs.StringVar(&cfg.acme.Directory, "acme-directory", "", "ACME directory `URL` (default $VOICEBOX_ACME_DIRECTORY, else Let's Encrypt's production CA)")
	fs.StringVar(&cfg.acmeHTTP, "acme-http-addr", "", "`host:port` (such as :80) on which to answer ACME HTTP-01 challenges and redirect everything else to https; without it only TLS-ALPN-01 is answered, which needs --addr on port 443 (default $VOICEBOX_ACME_HTTP_ADDR)")
	fs.StringVar(&cfg.lifetime, "session-lifetime", "", "`duration` a session lasts from its sign-in, such as 8h or 30m (default $VOICEBOX_SESSION_LIFETIME, else 24h)")
	fs.StringVar(&cfg.deployment, "deployment", "", "`name` of the deployment this relay is part of; the session cookie is named for it, so relays that name one share sign-ins and relays on one host that name two keep them apart (default $VOICEBOX_DEPLOYMENT, else the fleet's prefix with --nats, else this relay's port)")
	fs.StringVar(&cfg.trusted, "trusted-proxy", "", "`CIDR[,CIDR...]` of reverse proxies whose Forwarded/X-Forwarded-* headers are believed; from any other peer they are ignored (default $VOICEBOX_TRUSTED_PROXY, else none)")
	fs.StringVar(&cfg.logFormat, "log-format", "", "`format` of the log on stderr: auto (text on a terminal, JSON otherwise), json or text (default $VOICEBOX_LOG_FORMAT, else auto)")
	fs.StringVar(&cfg.public, "public", "", "`directory` the page is served from instead of the page built into this binary, for development (default $VOICEBOX_PUBLIC_DIR, else the built-in page)")
	cfg.state.register(fs)
	fs.StringVar(&cfg.miniApps, "mini-apps", "", "JSON `file` of the external mini-app registry (default: the JSON in $MINI_APPS; neither means none)")
	vendorFlags(fs, cfg)
	fs.StringVar(&cfg.wasmShelf, "wasm-shelf-dir", "", "`directory` of the WASM shelf: a manifest.json of digest-pinned modules (default $VOICEBOX_WASM_SHELF_DIR, else wasm-shelf in the state directory)")
	fs.StringVar(&cfg.wasmPlace, "wasm-placement", "", "where WebAssembly modules run: relay (on wazero) or page (in a Worker of the page that holds the workspace) (default $VOICEBOX_WASM_PLACEMENT, else relay)")
	fs.StringVar(&cfg.workspace, "workspace", "", "`directory` of this machine the assistant's tools act on, served in-process as a paired machine environment's folder would be (relay env), until a page or a machine takes the root (default $VOICEBOX_WORKSPACE, else none)")
	fs.IntVar(&cfg.helloBound, "hello-bound-ms", 0, "`milliseconds` a /channel connection that is not the page has to say hello (default $VOICEBOX_HELLO_BOUND_MS, else 5000)")
	registerNATS(fs, &cfg.nats)
	return fs, cfg
}

// registerNATS adds the flags that join a fleet (serve) or reach its pairings (pair).
func registerNATS(fs *flag.FlagSet, c *fleet.Config) {
	fs.StringVar(&c.URL, "nats", "", "NATS server `URL`s (comma-separated) of the fleet this relay is one of: sessions, pairings and settings shared in JetStream, calls routed to the executor's relay, events fanned out (default $VOICEBOX_NATS, else alone; see docs/scaling.md)")
	fs.StringVar(&c.Credentials, "nats-creds", "", "NATS credentials `file` (a user JWT and its seed) for --nats (default $VOICEBOX_NATS_CREDS)")
	fs.StringVar(&c.CA, "nats-ca", "", "PEM `file` of the CAs the NATS server's certificate is checked against (default $VOICEBOX_NATS_CA, else the system's)")
	fs.StringVar(&c.Cert, "nats-cert", "", "PEM client certificate `file` for a NATS server that verifies clients, with --nats-key (default $VOICEBOX_NATS_CERT)")
	fs.StringVar(&c.Key, "nats-key", "", "PEM private key `file` of --nats-cert (default $VOICEBOX_NATS_KEY)")
	fs.StringVar(&c.Prefix, "nats-prefix", "", "`name` starting the fleet's buckets and subjects, so fleets can share a NATS account (default $VOICEBOX_NATS_PREFIX, else voicebox)")
	fs.IntVar(&c.Replicas, "nats-replicas", 0, "`count` of NATS cluster servers that keep each of the fleet's buckets and streams: 3 on a three-node cluster (default $VOICEBOX_NATS_REPLICAS, else 1)")
	fs.StringVar(&c.RelayID, "relay-id", "", "`name` of this relay in its fleet, in leases and logs (default $VOICEBOX_RELAY_ID, else the host name and a random suffix)")
}

// stateDirFlags name the host state directory: --state-dir, or --extensions-dir, its old name,
// still taken as an alias (as is VOICEBOX_EXTENSIONS_DIR for VOICEBOX_STATE_DIR).
type stateDirFlags struct {
	dir, alias string
}

func (s *stateDirFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.dir, "state-dir", "", "host state `directory`: host token, pairings, vendor keys, agent settings, extensions, ACME certificates and the control socket (default $VOICEBOX_STATE_DIR, else the user's config dir + /voicebox)")
	fs.StringVar(&s.alias, "extensions-dir", "", "the old name of --state-dir, still taken (as is $VOICEBOX_EXTENSIONS_DIR for $VOICEBOX_STATE_DIR)")
}

// errStateDirConflict: the new and the old name of the state directory name different ones.
var errStateDirConflict = errors.New("--state-dir and --extensions-dir (its old name), or VOICEBOX_STATE_DIR and VOICEBOX_EXTENSIONS_DIR, name different directories; give one")

// path is the host state directory the flags name, else the environment, else the per-user
// default.
func (s *stateDirFlags) path() (string, error) {
	flagDir, err := oneOf(s.dir, s.alias)
	if err != nil {
		return "", err
	}
	envDir, err := oneOf(os.Getenv("VOICEBOX_STATE_DIR"), os.Getenv("VOICEBOX_EXTENSIONS_DIR"))
	if err != nil {
		return "", err
	}
	if dir := cmp.Or(flagDir, envDir); dir != "" {
		return dir, nil
	}
	return hoststate.DefaultPath()
}

// oneOf is the value of a name and its old alias, which may not disagree.
func oneOf(name, alias string) (string, error) {
	if name != "" && alias != "" && name != alias {
		return "", errStateDirConflict
	}
	return cmp.Or(name, alias), nil
}

// open opens the host state directory path names.
func (s *stateDirFlags) open() (*hoststate.Dir, error) {
	dir, err := s.path()
	if err != nil {
		return nil, err
	}
	return hoststate.Open(dir)
}

func runServe(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(ctx, args, stdout, stderr)
}

// serveUntil parses the serve flags, listens, and runs a relay.Relay until ctx ends. It exits 2
// on a usage error (before it touches anything), 1 when the relay cannot start or stop cleanly.
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
	if st.StateDir, err = cfg.state.path(); err != nil {
		fmt.Fprintf(stderr, "relay serve: %v\n", err)
		if errors.Is(err, errStateDirConflict) {
			return 2
		}
		return 1
	}
	ln, err := net.Listen("tcp", st.addr)
	if err != nil {
		fmt.Fprintf(stderr, "relay serve: %v\n", err)
		return 1
	}
	defer ln.Close()
	scheme := "http"
	if st.TLS != nil || st.ACME.Host != "" {
		scheme = "https"
	}
	if a, ok := sharesPageOrigin(st.MiniApps, pageOrigins(st.Origin, scheme, ln)); ok {
		fmt.Fprintf(stderr, "relay serve: mini-app %q: field \"origin\": %s is the page's own origin; framed there the app would reach everything the page holds\n", a.ID, a.Origin)
		return 2
	}
	if st.acmeHTTP != "" {
		cl, err := net.Listen("tcp", st.acmeHTTP)
		if err != nil {
			fmt.Fprintf(stderr, "relay serve: --acme-http-addr: %v\n", err)
			return 1
		}
		defer cl.Close()
		st.Challenges = cl
	}
	st.Listener, st.Console, st.Warnings, st.Build = ln, stdout, stderr, build
	r, err := relay.New(st.Config)
	if err != nil {
		fmt.Fprintf(stderr, "relay serve: %v\n", err)
		return 1
	}
	if err := r.Serve(ctx); err != nil {
		return 1
	}
	return 0
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
