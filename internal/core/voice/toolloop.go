package voice

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// NoTools is the tool.Catalogue of a relay that offers the model no tools: every call is refused
// unknown-tool. It is what a session gets when the relay has no catalogue.
type NoTools struct{}

// Declarations returns none.
func (NoTools) Declarations() []tool.Declaration { return nil }

// Instruction says the model has no tools.
func (NoTools) Instruction() string {
	return "You are Voicebox, a voice assistant. You have no tools in this session: say so when asked to act on files or apps, and never claim to have done anything."
}

// Call refuses every call.
func (NoTools) Call(_ context.Context, name string, _ json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(refusal.New(refusal.UnknownTool, "this relay offers no tools, so %q cannot run", name))
	return b
}

// OnChange never calls fn.
func (NoTools) OnChange(func()) func() { return func() {} }

// MaxToolResultBytes bounds a tool result as it is shown to the page (the model gets it whole;
// the catalogue bounds that).
const MaxToolResultBytes = 16 << 10

// answer runs call through cat and returns its one result. A call the provider could not read
// is refused without running; a catalogue that panics or answers something that is not a JSON
// object is refused exec-threw.
func answer(ctx context.Context, cat tool.Catalogue, call live.Call) (res live.ToolResult) {
	if call.Refused != nil {
		return live.RefusalResult(call, call.Refused)
	}
	defer func() {
		if v := recover(); v != nil {
			res = live.RefusalResult(call, refusal.New(refusal.ExecThrew, "the tool %s failed: %v", call.Name, v))
		}
	}()
	out := cat.Call(ctx, call.Name, call.Args)
	trimmed := bytes.TrimSpace(out)
	var obj map[string]json.RawMessage
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil {
		return live.RefusalResult(call, refusal.New(refusal.ExecThrew, "the tool %s gave no answer the model can read", call.Name))
	}
	return live.ToolResult{ID: call.ID, Name: call.Name, Result: trimmed}
}

// shown returns result as the page shows it: whole when small, else a note of its size.
func shown(result json.RawMessage) json.RawMessage {
	if len(result) <= MaxToolResultBytes {
		return result
	}
	return json.RawMessage(fmt.Sprintf(`{"note":"the result is %d bytes; the model has it whole"}`, len(result)))
}
