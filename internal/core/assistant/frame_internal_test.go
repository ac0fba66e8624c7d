package assistant

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAnEventFrameCarriesMarkupAsWritten: an event is encoded without the escapes json.Marshal
// writes for <, > and & (six bytes each), so the fleet's bound on an event frame
// (internal/door/fleet.MaxEventBytes, 256 KiB) meets a turn of 60,000 '<' at its own size, about
// 60 KB, not 360 KB, and the frame still says exactly the same JSON.
func TestAnEventFrameCarriesMarkupAsWritten(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("<", 60000) + "&>"
	action := json.RawMessage(`{"verb":"write_file","name":"a.html","content":"` + content + `"}`) // as Action.MarshalJSON writes it
	f := frame("turn", Turn{OK: true, TurnID: "turn-1", Action: action})
	const fleetBound = 256 << 10
	if len(f) > fleetBound/2 || !bytes.Contains(f, []byte(content)) {
		t.Fatalf("the frame of a %d-byte action is %d bytes", len(content), len(f))
	}
	data, ok := bytes.CutPrefix(bytes.TrimSuffix(f, []byte("\n\n")), []byte("event: turn\ndata: "))
	var back Turn
	if !ok || bytes.ContainsRune(data, '\n') || json.Unmarshal(data, &back) != nil {
		t.Fatalf("the frame is not one event of one JSON line: %.80q", f)
	}
	var a map[string]string
	if json.Unmarshal(back.Action, &a) != nil || a["content"] != content {
		t.Fatalf("the frame's action says %.80s", back.Action)
	}
}
