package executor

import (
	"encoding/json"

	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// BuiltinDescriptor is the descriptor id the built-in file primitives are called under. Every
// call across /channel names an admitted descriptor; the built-ins are admitted on both ends
// with empty bounds.
const BuiltinDescriptor = "voicebox.builtin"

// BuiltinAdmitted returns the admitted set holding the built-in descriptor, for an executor door.
func BuiltinAdmitted() wire.AdmittedMap {
	return wire.AdmittedMap{BuiltinDescriptor: json.RawMessage(`{}`)}
}
