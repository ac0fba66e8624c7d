// Package hubtest is a page in Go for the tests of the relay's /channel: a WebSocket to the relay
// that answers its call frames with a door over an executor and records the other frames it sent.
package hubtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// Dial opens the /channel of the relay at url (http://host:port) with header (nil: none) within
// patience; the socket is closed when the test ends.
func Dial(t testing.TB, url string, header http.Header, patience time.Duration) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/channel", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// Peer is a test executor on a socket.
type Peer struct {
	WS    *websocket.Conn
	Calls chan wire.Call // every call frame that arrived (the first 64 not yet taken)
	Ended chan error     // the read error, with its close status

	mu  sync.Mutex
	ctl []map[string]any
}

// Serve runs exec behind a door on ws (exec nil: calls are recorded, never answered).
func Serve(ws *websocket.Conn, exec channel.Executor) *Peer {
	p := &Peer{WS: ws, Calls: make(chan wire.Call, 64), Ended: make(chan error, 1)}
	var door *channel.Door
	if exec != nil {
		door = channel.NewDoor(exec, executor.BuiltinAdmitted(), channel.DoorOptions{})
	}
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				p.Ended <- err
				return
			}
			if c, err := wire.ParseCall(b); err == nil {
				select {
				case p.Calls <- c:
				default:
				}
				if door != nil {
					go func() {
						if a := door.Serve(context.Background(), b); a != nil {
							ws.Write(context.Background(), websocket.MessageText, a)
						}
					}()
				}
				continue
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			p.mu.Lock()
			p.ctl = append(p.ctl, m)
			p.mu.Unlock()
		}
	}()
	return p
}

// Controls returns the frames other than calls the relay sent, in order.
func (p *Peer) Controls() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.ctl...)
}

// SawControl reports whether the relay sent a frame of type typ.
func (p *Peer) SawControl(typ string) bool {
	for _, c := range p.Controls() {
		if c["type"] == typ {
			return true
		}
	}
	return false
}

// End waits up to patience for the socket to end and returns its close status.
func (p *Peer) End(t testing.TB, patience time.Duration) websocket.StatusCode {
	t.Helper()
	select {
	case err := <-p.Ended:
		return websocket.CloseStatus(err)
	case <-time.After(patience):
		t.Fatal("the socket was not closed")
		return 0
	}
}
