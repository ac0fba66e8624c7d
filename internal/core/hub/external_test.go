package hub

import (
	"context"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// TestExternalAppsReportFollowsTheSlot: the tools frame's externalApps member reaches
// the listeners beside the tools, and the report is dropped (nil) when the page loses the slot.
func TestExternalAppsReportFollowsTheSlot(t *testing.T) {
	t.Parallel()
	tools, apps := &toolsLog{}, &toolsLog{}
	r := startRelay(t, Options{}, server.Config{})
	r.hub.AddOfferListener(OfferFunc(func(o Offer) { tools.add(o.Tools); apps.add(o.ExternalApps) }))
	ws := r.dial(t, r.origin("127.0.0.1"), nil)
	hubtest.Serve(ws, nil)
	sendRoot(t, ws, RootOPFS, "Browser storage")
	r.waitRoot(t, connected)

	report := `{"apps":[{"id":"orders","live":true,"context":true,"tools":[]}]}`
	if err := ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"tools","tools":[],"externalApps":`+report+`}`)); err != nil {
		t.Fatal(err)
	}
	apps.waitLast(t, report)
	tools.waitLast(t, `[]`)
	// A frame without the member says no external app is open.
	if err := ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"tools","tools":[]}`)); err != nil {
		t.Fatal(err)
	}
	apps.waitLast(t, "nil")

	if err := ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"tools","tools":[],"externalApps":`+report+`}`)); err != nil {
		t.Fatal(err)
	}
	apps.waitLast(t, report)
	r.machine(t, r.pair(t, "box"), executor.New(fsroot.NewMemory(), executor.Options{}))
	apps.waitLast(t, "nil")
}
