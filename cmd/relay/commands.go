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
	"time"

	"github.com/voicebox-go/voicebox/internal/core/durable"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/machine"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// pairCommand pairs, revokes or lists machine environments in the host state directory, or with
// --nats (VOICEBOX_NATS) in the fleet's shared pairings, which every relay of the fleet reads. A
// relay serving from the same directory (or in the same fleet) reads the change at the next hello.
var pairCommand = bearerCommand{
	name:       "pair",
	revokeHelp: "revoke the pairing NAME (a running relay refuses it at once)",
	listHelp:   "list the paired environments (names and dates; bearers are never stored)",
	created:    "PAIRED",
	store: func(state *hoststate.Dir, f *fleet.Fleet) bearerStore {
		if f != nil {
			state.UsePairings(f.Pairings())
		}
		return bearerStore{
			list: func() ([]bearerHolder, error) {
				ps, err := state.List()
				hs := make([]bearerHolder, len(ps))
				for i, p := range ps {
					hs[i] = bearerHolder{p.Name, p.Created}
				}
				return hs, err
			},
			revoke: state.Revoke,
			mint:   state.Pair,
		}
	},
	minted: func(name string) string {
		return fmt.Sprintf("paired %s: keep the bearer above secret; it is shown only this once (run `relay env --bearer-file FILE` with it)", name)
	},
}

func runPair(args []string, stdout, stderr io.Writer) int {
	return pairCommand.run(args, stdout, stderr)
}

type envConfig struct {
	relay, bearerFile, root string
}

func envFlags(stderr io.Writer) (*flag.FlagSet, *envConfig) {
	cfg := &envConfig{}
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.relay, "relay", "", "the relay's `URL`, such as http://127.0.0.1:8787 (required)")
	fs.StringVar(&cfg.bearerFile, "bearer-file", "", "`file` holding the bearer `relay pair` printed (required)")
	fs.StringVar(&cfg.root, "root", "", "the `directory` calls execute on; nothing outside it is reachable (required)")
	return fs, cfg
}

func runEnv(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return envUntil(ctx, args, stdout, stderr, nil)
}

// envUntil runs the machine environment until ctx ends; onConnect (for tests) is called after
// each hello.
func envUntil(ctx context.Context, args []string, stdout, stderr io.Writer, onConnect func()) int {
	fs, cfg := envFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.relay == "" || cfg.bearerFile == "" || cfg.root == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "relay env: usage: relay env --relay URL --bearer-file FILE --root DIR")
		return 2
	}
	b, err := os.ReadFile(cfg.bearerFile)
	if err != nil {
		fmt.Fprintf(stderr, "relay env: %v\n", err)
		return 1
	}
	bearer := strings.TrimSpace(string(b))
	if !strings.HasPrefix(bearer, hoststate.BearerPrefix) {
		fmt.Fprintf(stderr, "relay env: %s does not hold a %s bearer\n", cfg.bearerFile, hoststate.BearerPrefix)
		return 1
	}
	root, err := fsroot.OpenOS(cfg.root)
	if err != nil {
		fmt.Fprintf(stderr, "relay env: %v\n", err)
		return 1
	}
	defer root.Close()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	durable.SweepTemps(root, "the workspace", log) // what an environment killed mid-write left
	fmt.Fprintf(stdout, "voicebox environment serving %s for %s\n", cfg.root, cfg.relay)
	err = machine.Run(ctx, machine.Config{Relay: cfg.relay, Bearer: bearer, Root: root, Log: log, OnConnect: onConnect})
	if err != nil {
		fmt.Fprintf(stderr, "relay env: %v\n", err)
		return 1
	}
	return 0
}

func approvalCodeFlags(stderr io.Writer) (*flag.FlagSet, *stateDirFlags, *fleet.Config) {
	var dir stateDirFlags
	var natsCfg fleet.Config
	fs := flag.NewFlagSet("approval-code", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir.register(fs)
	registerNATS(fs, &natsCfg)
	return fs, &dir, &natsCfg
}

// runApprovalCode prints the outstanding one-time extension approval codes (one per proposal)
// from the host state directory, for a person who missed them on the relay's console.
func runApprovalCode(args []string, stdout, stderr io.Writer) int {
	fs, dir, natsCfg := approvalCodeFlags(stderr)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return 2
	}
	state, err := dir.open()
	if err != nil {
		fmt.Fprintf(stderr, "relay approval-code: %v\n", err)
		return 1
	}
	nats, err := settleNATS(*natsCfg)
	if err != nil {
		fmt.Fprintf(stderr, "relay approval-code: %v\n", err)
		return 2
	}
	var codes []extensionhost.PendingCode
	if nats.URL != "" { // a fleet's codes, whichever relay printed them
		f, cerr := fleet.Connect(nats)
		if cerr != nil {
			fmt.Fprintf(stderr, "relay approval-code: %v\n", cerr)
			return 1
		}
		defer f.Close()
		codes, err = extensionhost.PendingCodesIn(f.Extensions(), time.Now())
	} else {
		codes, err = extensionhost.PendingCodes(state.Path(), time.Now())
	}
	if err != nil && fleet.Unavailable(err) {
		fmt.Fprintf(stderr, "relay approval-code: %v\n", err)
		return 1
	}
	if err != nil || len(codes) == 0 {
		fmt.Fprintln(stderr, "relay approval-code: no approval code is outstanding")
		return 1
	}
	for _, c := range codes {
		fmt.Fprintf(stdout, "%s  (extension %s, expires %s)\n", c.Code, c.ID, c.Expires.Format(time.RFC3339))
	}
	return 0
}
