// Package workspace is the door that serves a folder of the relay's machine as a machine root
// in-process (VOICEBOX_WORKSPACE, `relay serve --workspace DIR`), for users of the original
// Voicebox, whose server acts on such a folder.
//
// It is a paired machine environment (internal/machine, what `relay env` runs) started by the
// relay itself: the same executor on the folder through the OS root (no name and no symbolic
// link reaches outside it), the same undo history in the folder's .voicebox/, the same temporary
// files swept at start, the same /channel hello and admitted set. It dials the core through
// memory with a pairing that lives only as long as the relay (core.PairInProcess), and holds
// the root as "workspace DIR-NAME" until a page or a machine takes it (the newest executor
// wins, as always). Unlike `relay env`, which stops when replaced, it takes the root back once
// nobody holds it: there is no person at a terminal to start it again.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/durable"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/machine"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// PairingPrefix starts the name the workspace holds the root as (GET /api/root's "name"): the
// folder's own name follows. The space keeps it apart from every name `relay pair` takes.
const PairingPrefix = "workspace "

// Door serves Dir as the machine root of this relay.
type Door struct {
	// Dir is the folder; it must exist and be a directory (a declaration, not a default: a
	// missing folder stops the relay at start rather than being made).
	Dir string

	root   *fsroot.OSRoot
	cancel context.CancelFunc
	done   chan struct{}
}

// Name implements core.Door.
func (d *Door) Name() string { return "workspace" }

// StateFiles implements core.Door: the workspace keeps nothing in the state directory (its
// history is in the folder, as a paired machine's is).
func (d *Door) StateFiles() []string { return nil }

// Mount opens the folder, sweeps what a relay killed mid-write left there, and starts the
// environment, which connects once the relay serves.
func (d *Door) Mount(c *core.Core) error {
	abs, err := filepath.Abs(d.Dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return fmt.Errorf("VOICEBOX_WORKSPACE (--workspace) %q is not a folder: give one that exists", d.Dir)
	}
	root, err := fsroot.OpenOS(abs)
	if err != nil {
		return err
	}
	d.root = root
	log := c.Log.With("door", "workspace")
	durable.SweepTemps(root, "the workspace", log)
	name := PairingPrefix + filepath.Base(abs)
	cfg := machine.Config{Relay: "http://127.0.0.1", Bearer: c.PairInProcess(name), Root: root, Log: log, Dial: c.DialInProcess}

	// free hears the slot empty, so a replaced workspace takes the root back.
	free := make(chan struct{}, 1)
	c.Hub.AddHoldingListener(hub.HoldingFunc(func(h hub.Holding) {
		if !h.Connected {
			select {
			case free <- struct{}{}:
			default:
			}
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.done = cancel, make(chan struct{})
	log.Info("workspace: serving the folder as the machine root", "dir", abs, "as", name)
	go func() {
		defer close(d.done)
		for {
			err := machine.Run(ctx, cfg)
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, machine.ErrReplaced) {
				log.Error("workspace: the relay refused its own workspace; it is not served", "err", err)
				return
			}
			log.Info("workspace: another executor took the root; the workspace takes it back when nobody holds it")
			select {
			case <-free: // a stale signal from before the replacement
			default:
			}
			if c.Hub.Holding().Connected {
				select {
				case <-free:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return nil
}

// Close stops the environment and closes the folder.
func (d *Door) Close() {
	if d.cancel != nil {
		d.cancel()
		<-d.done
	}
	if d.root != nil {
		d.root.Close()
	}
}

var _ core.Door = (*Door)(nil)
