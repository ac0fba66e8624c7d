package extensionhost

import (
	"context"
	"encoding/json"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
)

// ForAssistant is rt as the assistant's catalogue calls it (assistant.Extensions): the listing
// the model may read (Listing.ForModel), calls, and proposals.
func ForAssistant(rt *Runtime) assistant.Extensions { return forAssistant{rt} }

type forAssistant struct{ rt *Runtime }

func (f forAssistant) ListExtensions() json.RawMessage {
	b, _ := json.Marshal(f.rt.ListExtensions().ForModel())
	return b
}

func (f forAssistant) CallExtension(ctx context.Context, id, tool string, args json.RawMessage) (json.RawMessage, error) {
	return f.rt.CallExtension(ctx, id, tool, args)
}

func (f forAssistant) Propose(raw []byte) (string, error) {
	d, err := f.rt.Stage(raw)
	if err != nil {
		return "", err
	}
	return d.ID, nil
}
