package hub

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
)

// readFrame reads the next frame of ws, within patience.
// readFrame reads the next frame on ws other than {"type":"holding"} (a page told it holds the
// slot, after the admitted set and before any call).
func readFrame(t *testing.T, ws *websocket.Conn) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if channel.ControlType(b) != "holding" {
			return b
		}
	}
}

func admittedFrame(ids ...string) []byte {
	set := map[string]channel.AdmittedEntry{}
	for _, id := range ids {
		set[id] = channel.AdmittedEntry{Bounds: json.RawMessage(`{}`), Primitives: []string{"read-file"}}
	}
	return channel.MarshalAdmitted(set)
}

func wantAdmitted(t *testing.T, frame []byte, ids ...string) {
	t.Helper()
	set, err := channel.ParseAdmitted(frame)
	if err != nil {
		t.Fatalf("got %s, want an admitted frame: %v", frame, err)
	}
	if len(set) != len(ids) {
		t.Fatalf("admitted %v, want %v", set, ids)
	}
	for _, id := range ids {
		if _, ok := set[id]; !ok {
			t.Fatalf("admitted %v, want %v", set, ids)
		}
	}
}

// TestAdmittedSetReachesTheExecutor: an executor gets the admitted set before anything else, then
// every change, in order with the calls; a newer executor starts from the latest set.
func TestAdmittedSetReachesTheExecutor(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	r.hub.SetAdmitted(admittedFrame("notes"))
	first := r.dial(t, r.origin("127.0.0.1"), nil)
	wantAdmitted(t, readFrame(t, first), "notes")
	r.waitRoot(t, connected)

	r.hub.SetAdmitted(admittedFrame("notes", "todo"))
	wantAdmitted(t, readFrame(t, first), "notes", "todo")

	r.hub.SetAdmitted(admittedFrame())
	done := make(chan map[string]any, 1)
	go func() { done <- r.call(t, "now", nil) }()
	wantAdmitted(t, readFrame(t, first))
	if call := readFrame(t, first); channel.ControlType(call) != "" {
		t.Fatalf("after the change came %s, want the call", call)
	}

	second := r.dial(t, r.origin("127.0.0.1"), nil)
	if ctl := readFrame(t, second); channel.ControlType(ctl) != "standby" {
		t.Fatalf("a page joining while another holds the slot got %s, want standby", ctl)
	}
	second.Write(context.Background(), websocket.MessageText, []byte(`{"type":"take"}`))
	wantAdmitted(t, readFrame(t, second))
	<-done // the first executor never answered; it was replaced, so the call settled closed
	if ctl := readFrame(t, first); channel.ControlType(ctl) != "standby" {
		t.Fatalf("the first executor got %s, want standby", ctl)
	}
}
