package wsbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/wsbound"
)

// pair returns a client connection to a server that reads every message when reads is set, and
// none otherwise.
func pair(t *testing.T, reads bool) *websocket.Conn {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(-1)
		if !reads {
			<-r.Context().Done()
			return
		}
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// TestStalledPeerIsClosed: writes to a peer that never reads fill the socket's buffers, and then
// the bound closes the connection: the write under way fails, and so does the next one.
func TestStalledPeerIsClosed(t *testing.T) {
	t.Parallel()
	c := wsbound.New(pair(t, false), 100*time.Millisecond)
	big := make([]byte, 1<<20)
	var err error
	for err == nil {
		err = c.Write(websocket.MessageBinary, big)
	}
	if c.Write(websocket.MessageBinary, []byte{1}) == nil {
		t.Fatal("a write after the bound closed the connection succeeded")
	}
}

// TestConcurrentWritesThatProgress: writers at once, to a peer that reads, all succeed; the bound
// is kept by one timer shared by the writes under way. Run with -race.
func TestConcurrentWritesThatProgress(t *testing.T) {
	t.Parallel()
	c := wsbound.New(pair(t, true), 10*time.Second)
	frame := make([]byte, 960)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if err := c.Write(websocket.MessageText, frame); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
