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
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/mcp"
)

// mcpTokenCommand mints, revokes or lists the bearers of MCP clients in the host state
// directory, or with --nats (VOICEBOX_NATS) in the fleet's shared bearers, which every relay of
// the fleet reads. A relay serving from the same directory (or in the same fleet) reads the change
// at the client's next request.
var mcpTokenCommand = bearerCommand{
	name:       "mcp-token",
	revokeHelp: "revoke the bearer of the MCP client NAME (a running relay refuses it at the next request)",
	listHelp:   "list the MCP clients holding a bearer (names and dates; bearers are never stored)",
	created:    "MINTED",
	store: func(state *hoststate.Dir, f *fleet.Fleet) bearerStore {
		var clients hoststate.MCPClientStore = mcp.NewFileClients(filepath.Join(state.Path(), mcp.ClientsFile))
		if f != nil {
			clients = f.MCPClients()
		}
		return bearerStore{
			list: func() ([]bearerHolder, error) {
				cs, err := clients.List()
				hs := make([]bearerHolder, len(cs))
				for i, c := range cs {
					hs[i] = bearerHolder{c.Name, c.Created}
				}
				return hs, err
			},
			revoke: clients.Revoke,
			mint:   clients.Mint,
		}
	},
	minted: func(name string) string {
		return fmt.Sprintf("minted a bearer for MCP client %s: keep it secret, it is shown only this once; send it as Authorization: Bearer to %s, or run `relay mcp --bearer-file FILE`", name, mcp.Path)
	},
}

func runMCPToken(args []string, stdout, stderr io.Writer) int {
	return mcpTokenCommand.run(args, stdout, stderr)
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
	if os.Getenv("GOMAXPROCS") == "" { // an operator's setting wins
		runtime.GOMAXPROCS(mcp.BridgeProcs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdin, restoreIn := mcp.Polled(os.Stdin.Fd(), "/dev/stdin")
	defer restoreIn()
	stdout, restoreOut := mcp.Polled(os.Stdout.Fd(), "/dev/stdout")
	defer restoreOut()
	return mcpUntil(ctx, args, &mcp.LineTransport{In: stdin, Out: stdout}, stderr)
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
