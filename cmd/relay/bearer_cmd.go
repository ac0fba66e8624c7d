package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
)

// bearerHolder is one name holding a bearer, as a bearer command lists it.
type bearerHolder struct {
	Name    string
	Created time.Time
}

// bearerCommand is a command that mints a bearer for a name and prints it once, revokes a name's
// bearer, or lists the names holding one: `relay pair` for machine environments and
// `relay mcp-token` for MCP clients. Both keep their bearers' hashes in the host state directory,
// or with --nats in the fleet's shared store.
type bearerCommand struct {
	name       string // the command's name, as typed after relay
	revokeHelp string // what --revoke says
	listHelp   string // what --list says
	created    string // the list's heading for when a bearer was made
	// store returns the store of these bearers: the state directory's, or the fleet's shared
	// one when f is not nil.
	store func(state *hoststate.Dir, f *fleet.Fleet) bearerStore
	// minted is what stderr says once a bearer for name went to stdout.
	minted func(name string) string
}

// bearerStore is what a bearer command does with one store of bearers.
type bearerStore struct {
	list   func() ([]bearerHolder, error)
	revoke func(name string) error
	mint   func(name string) (string, error)
}

type bearerConfig struct {
	state  stateDirFlags
	nats   fleet.Config
	revoke bool
	list   bool
}

func (c bearerCommand) flags(stderr io.Writer) (*flag.FlagSet, *bearerConfig) {
	cfg := &bearerConfig{}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.state.register(fs)
	fs.BoolVar(&cfg.revoke, "revoke", false, c.revokeHelp)
	fs.BoolVar(&cfg.list, "list", false, c.listHelp)
	registerNATS(fs, &cfg.nats)
	return fs, cfg
}

// run mints, revokes or lists as args say, and returns the exit code.
func (c bearerCommand) run(args []string, stdout, stderr io.Writer) int {
	fs, cfg := c.flags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.list == (fs.NArg() == 1) || fs.NArg() > 1 || (cfg.list && cfg.revoke) {
		fmt.Fprintf(stderr, "relay %[1]s: usage: relay %[1]s [--state-dir DIR] [--nats URL] NAME | --revoke NAME | --list\n", c.name)
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "relay %s: %v\n", c.name, err)
		return code
	}
	state, err := cfg.state.open()
	if err != nil {
		return fail(1, err)
	}
	nats, err := settleNATS(cfg.nats)
	if err != nil {
		return fail(2, err)
	}
	var f *fleet.Fleet
	if nats.URL != "" {
		if f, err = fleet.Connect(nats); err != nil {
			return fail(1, err)
		}
		defer f.Close()
	}
	store := c.store(state, f)
	name := fs.Arg(0)
	switch {
	case cfg.list:
		hs, err := store.list()
		if err != nil {
			return fail(1, err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "NAME\t%s\n", c.created)
		for _, h := range hs {
			fmt.Fprintf(tw, "%s\t%s\n", h.Name, h.Created.Format(time.RFC3339))
		}
		tw.Flush()
		return 0
	case cfg.revoke:
		if err := store.revoke(name); err != nil {
			return fail(1, fmt.Errorf("%q: %w", name, err))
		}
		fmt.Fprintf(stdout, "revoked %s\n", name)
		return 0
	}
	bearer, err := store.mint(name)
	if err != nil {
		return fail(1, fmt.Errorf("%q: %w", name, err))
	}
	// The bearer goes to stdout alone, so `relay COMMAND NAME > FILE` makes the bearer file.
	fmt.Fprintln(stdout, bearer)
	fmt.Fprintln(stderr, c.minted(name))
	return 0
}
