package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/mcp"
)

type mcpTokenConfig struct {
	state  stateDirFlags
	revoke bool
	list   bool
}

func mcpTokenFlags(stderr io.Writer) (*flag.FlagSet, *mcpTokenConfig) {
	cfg := &mcpTokenConfig{}
	fs := flag.NewFlagSet("mcp-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.state.register(fs)
	fs.BoolVar(&cfg.revoke, "revoke", false, "revoke the bearer of the MCP client NAME (a running relay refuses it at the next request)")
	fs.BoolVar(&cfg.list, "list", false, "list the MCP clients holding a bearer (names and dates; bearers are never stored)")
	return fs, cfg
}

// runMCPToken mints, revokes or lists the bearers of MCP clients in the host state directory. A
// relay serving from the same directory reads the change at the client's next request.
func runMCPToken(args []string, stdout, stderr io.Writer) int {
	fs, cfg := mcpTokenFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.list == (fs.NArg() == 1) || fs.NArg() > 1 || (cfg.list && cfg.revoke) {
		fmt.Fprintln(stderr, "relay mcp-token: usage: relay mcp-token [--state-dir DIR] NAME | --revoke NAME | --list")
		return 2
	}
	state, err := cfg.state.open()
	if err != nil {
		fmt.Fprintf(stderr, "relay mcp-token: %v\n", err)
		return 1
	}
	switch {
	case cfg.list:
		cs, err := state.MCPClients()
		if err != nil {
			fmt.Fprintf(stderr, "relay mcp-token: %v\n", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tMINTED")
		for _, c := range cs {
			fmt.Fprintf(tw, "%s\t%s\n", c.Name, c.Created.Format(time.RFC3339))
		}
		tw.Flush()
		return 0
	case cfg.revoke:
		name := fs.Arg(0)
		if err := state.RevokeMCPClient(name); err != nil {
			fmt.Fprintf(stderr, "relay mcp-token: %q: %v\n", name, err)
			return 1
		}
		fmt.Fprintf(stdout, "revoked %s\n", name)
		return 0
	}
	name := fs.Arg(0)
	bearer, err := state.MintMCPClient(name)
	if err != nil {
		fmt.Fprintf(stderr, "relay mcp-token: %q: %v\n", name, err)
		return 1
	}
	// The bearer goes to stdout alone, so `relay mcp-token NAME > FILE` makes the bearer file.
	fmt.Fprintln(stdout, bearer)
	fmt.Fprintf(stderr, "minted a bearer for MCP client %s: keep it secret, it is shown only this once; send it as Authorization: Bearer to %s, or run `relay mcp --bearer-file FILE`\n", name, mcp.Path)
	return 0
}

type mcpBridgeConfig struct {
	relay, bearerFile string
}

func mcpBridgeFlags(stderr io.Writer) (*flag.FlagSet, *mcpBridgeConfig) {
	cfg := &mcpBridgeConfig{}
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.relay, "relay", fmt.Sprintf("http://127.0.0.1:%d", DefaultPort), "the running relay's `URL`")
	fs.StringVar(&cfg.bearerFile, "bearer-file", "", "`file` holding the bearer `relay mcp-token NAME` printed (required; $VOICEBOX_MCP_BEARER_FILE)")
	return fs, cfg
}

func runMCP(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return mcpUntil(ctx, args, &sdk.StdioTransport{}, stderr)
}

// mcpUntil runs the stdio bridge on local until the local client leaves or ctx ends.
func mcpUntil(ctx context.Context, args []string, local sdk.Transport, stderr io.Writer) int {
	fs, cfg := mcpBridgeFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bearerFile := orEnv(cfg.bearerFile, "VOICEBOX_MCP_BEARER_FILE")
	if fs.NArg() > 0 || bearerFile == "" {
		fmt.Fprintln(stderr, "relay mcp: usage: relay mcp [--relay URL] --bearer-file FILE")
		return 2
	}
	b, err := os.ReadFile(bearerFile)
	if err != nil {
		fmt.Fprintf(stderr, "relay mcp: %v\n", err)
		return 1
	}
	bearer := strings.TrimSpace(string(b))
	if !strings.HasPrefix(bearer, hoststate.MCPBearerPrefix) {
		fmt.Fprintf(stderr, "relay mcp: %s does not hold an MCP client's bearer (vbm_...); `relay mcp-token NAME` prints one\n", bearerFile)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	br := &mcp.Bridge{Endpoint: strings.TrimSuffix(cfg.relay, "/") + mcp.Path, Bearer: bearer, Build: build, Log: log}
	if err := br.Run(ctx, local); err != nil {
		fmt.Fprintf(stderr, "relay mcp: %v\n", err)
		return 1
	}
	return 0
}
