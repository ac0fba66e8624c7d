package extensionhost

import (
	"fmt"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/wasmshelf"
)

// Door is the extensions as a door of the relay (core.Door): proposals, admissions and the
// ledger, the WASM shelf, remote MCP servers (the MCP host) and their views' policies; the
// routes under /api/extensions; the extension tools of the assistant's catalogue.
type Door struct {
	// ShelfDir is the WASM shelf's directory; "" means wasm-shelf in the state directory.
	ShelfDir string
	// WasmPlacement is where WebAssembly modules run: WasmInRelay ("" too) or WasmInPage.
	WasmPlacement string
	// Store keeps what every relay admitting extensions shares; nil keeps it in the state
	// directory (DirStore).
	Store Store
	// Watch, when set, calls reload whenever the Store changes elsewhere (another relay of a
	// fleet) until stop is called.
	Watch func(reload func()) (stop func(), err error)
	// Away reports whether err says the Store is unreachable for a while (a fleet's NATS is
	// away): then the relay starts with nothing loaded, and Watch reloads once it is back. Nil
	// means never.
	Away func(err error) bool

	// Runtime is the running set of extensions, once mounted.
	Runtime *Runtime
	stop    func()
}

// Name implements core.Door.
func (d *Door) Name() string { return "extensions" }

// StateFiles implements core.Door: the ledger, the pending approval codes, the audit log, the
// proposals, the admitted descriptors and their modules (named by an extension id, which starts
// with a lowercase letter or a digit, never a dot), and the WASM shelf.
func (d *Door) StateFiles() []string {
	return []string{LedgerFile, PendingFile, AuditFile, "proposals", "[a-z0-9]*.json", "[a-z0-9]*.wasm", "wasm-shelf"}
}

// Mount implements core.Door.
func (d *Door) Mount(c *core.Core) error {
	shelf := d.ShelfDir
	if shelf == "" {
		shelf = wasmshelf.DefaultDir(c.State.Path())
	}
	store := d.Store
	if store == nil {
		store = NewDirStore(c.State.Path())
	}
	d.Runtime = &Runtime{Admissions: NewAdmissionsIn(c.State.Path(), store, nil), Fetcher: &Fetcher{},
		Ask: c.Hub.Ask, Console: c.Console, Log: c.Log, Publish: c.Hub.SetAdmitted, ShelfDir: shelf, WasmPlacement: d.WasmPlacement}
	if err := d.Runtime.Reload(); err != nil {
		if d.Away == nil || !d.Away(err) {
			return err
		}
		// The store is away: nothing is loaded until it is back (Watch reloads then).
		c.Log.Warn("extensions: the shared extension store is unreachable; none is loaded until it is back")
	}
	if d.Watch != nil {
		stop, err := d.Watch(func() {
			if err := d.Runtime.Reload(); err != nil {
				c.Log.Warn("extensions: a reload after a change on another relay failed; the last admitted set stays", "err", err)
			}
		})
		if err != nil {
			return fmt.Errorf("watching the store: %w", err)
		}
		d.stop = stop
	}
	d.Runtime.Register(c.Server, c.State.CheckHostToken)
	// The page's Extensions panel follows every change on the event stream.
	d.Runtime.Changed = func(what, id string) {
		c.Tools.Publish("extensions", map[string]string{"what": what, "id": id})
	}
	c.Tools.UseExtensions(ForAssistant(d.Runtime))
	return nil
}

// Close implements core.Door.
func (d *Door) Close() {
	if d.stop != nil {
		d.stop()
	}
}
