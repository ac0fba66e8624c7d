package hub

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// toolsLog records one member of the offers a listener heard, in order.
type toolsLog struct {
	mu  sync.Mutex
	got []string
}

func (l *toolsLog) add(tools json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tools == nil {
		l.got = append(l.got, "nil")
		return
	}
	l.got = append(l.got, string(tools))
}

func (l *toolsLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) == 0 {
		return ""
	}
	return l.got[len(l.got)-1]
}

func (l *toolsLog) waitLast(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for l.last() != want {
		if time.Now().After(deadline) {
			t.Fatalf("the listener last got %.80q, want %.80q", l.last(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPageToolsFollowTheSlot(t *testing.T) {
	t.Parallel()
	log := &toolsLog{}
	r := startRelay(t, Options{}, server.Config{})
	r.hub.AddOfferListener(OfferFunc(func(o Offer) { log.add(o.Tools) }))
	ws := r.dial(t, r.origin("127.0.0.1"), nil)
	hubtest.Serve(ws, nil)
	sendRoot(t, ws, RootOPFS, "Browser storage")
	r.waitRoot(t, connected)

	send := func(ws *websocket.Conn, frame string) {
		t.Helper()
		if err := ws.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	// A frame larger than other control frames still counts.
	big := `[{"name":"app_00000000__t","description":"` + strings.Repeat("d", 8<<10) + `","parameters":{"type":"object"}}]`
	send(ws, `{"type":"tools","tools":`+big+`}`)
	log.waitLast(t, big)
	send(ws, `{"type":"tools","tools":"nope"}`) // malformed: ignored
	send(ws, `{"type":"tools","tools":[]}`)
	log.waitLast(t, `[]`)

	// A machine takes the slot: the page's tools are gone, and a machine cannot offer any.
	bearer := r.pair(t, "box")
	m := r.machine(t, bearer, executor.New(fsroot.NewMemory(), executor.Options{}))
	log.waitLast(t, "nil")
	send(m.WS, `{"type":"tools","tools":[{"name":"app_x"}]}`)
	ws.Write(context.Background(), websocket.MessageText, []byte(`{"type":"tools","tools":[{"name":"app_y"}]}`)) // closed, or not heard
	r.call(t, "now", nil)                                                                                        // the machine's frames were read by now
	if log.last() != "nil" {
		t.Fatalf("after the machine took the slot, the listener got %q", log.last())
	}
}
