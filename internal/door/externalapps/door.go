package externalapps

import (
	"net/http"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/hub"
)

// Door is the external mini-apps as a door of the relay (core.Door): the registry's apps are
// framed by the page (their origins join its frame-src), their tokens are minted on the app
// routes, and the open apps' tools join the catalogue the model calls (Model wraps core.Model).
type Door struct {
	// Registry is the external mini-app registry; nil means none.
	Registry *Registry
	// Model is the catalogue with the open apps' tools, once mounted.
	Model *Model
}

// Name implements core.Door.
func (d *Door) Name() string { return "external-apps" }

// StateFiles implements core.Door: none (the registry comes from the command's flags).
func (d *Door) StateFiles() []string { return nil }

// FrameOrigins implements core.Framer: the registered apps' origins.
func (d *Door) FrameOrigins() []string { return d.registry().Origins() }

func (d *Door) registry() *Registry {
	if d.Registry == nil {
		d.Registry = Empty()
	}
	return d.Registry
}

// Mount implements core.Door.
func (d *Door) Mount(c *core.Core) error {
	var subject func(*http.Request) string
	if c.Gate != nil {
		subject = c.Gate.SessionID
	}
	Register(c.Server, &Minter{Registry: d.registry(), Issuer: c.URL()}, subject)
	d.Model = NewModel(c.Model, d.registry(), c.Hub, c.Log)
	d.Model.Register(c.Server)
	c.AddOfferListener(hub.OfferFunc(func(o hub.Offer) { d.Model.SetReport(o.ExternalApps) }))
	c.Model = d.Model
	return nil
}

// Close implements core.Door.
func (d *Door) Close() {}
