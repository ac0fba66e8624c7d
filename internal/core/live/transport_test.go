package live_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/live"
)

// A vendor endpoint that redirects must not get the key forwarded to wherever it points: the
// dial refuses to follow, and the second server never sees the header.
func TestDialFollowsNoRedirectWithTheKey(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("x-goog-api-key")+"|"+r.Header.Get("Authorization"))
		mu.Unlock()
		c, err := websocket.Accept(w, r, nil)
		if err == nil {
			c.CloseNow()
		}
	}))
	defer elsewhere.Close()
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/stolen", http.StatusFound)
	}))
	defer vendor.Close()

	for _, client := range []*http.Client{nil, {}} {
		tr := &live.WebSocketTransport{Client: client}
		h := http.Header{}
		h.Set("x-goog-api-key", testKey)
		h.Set("Authorization", "Bearer "+testKey)
		err := tr.Connect(context.Background(), "ws"+vendor.URL[len("http"):], live.ConnectOptions{Headers: h, OnEvent: func(live.TransportEvent) {}})
		if err == nil {
			tr.Close(1000, "")
			t.Errorf("Connect followed a redirect (client %v)", client)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) > 0 {
		t.Fatalf("the redirect target was reached with the headers %q", seen)
	}
}

// Close while a dial is still under way (a session ending during Gemini's fallback reconnect)
// leaves no connection open: the dial is abandoned, and the vendor sees its socket closed.
func TestCloseDuringADialLeavesNoConnection(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	gone := make(chan error, 1)
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			gone <- err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, _, err = c.Read(ctx)
		gone <- err
	}))
	defer vendor.Close()
	defer close(release)

	tr := &live.WebSocketTransport{}
	var mu sync.Mutex
	var events []live.TransportEventKind
	done := make(chan error, 1)
	go func() {
		done <- tr.Connect(context.Background(), "ws"+vendor.URL[len("http"):], live.ConnectOptions{OnEvent: func(e live.TransportEvent) {
			mu.Lock()
			events = append(events, e.Kind)
			mu.Unlock()
		}})
	}()
	select {
	case <-arrived:
	case <-time.After(bound):
		t.Fatal("the dial never reached the vendor")
	}
	tr.Close(1000, "session closed")
	release <- struct{}{}
	var err error
	select {
	case err = <-done:
	case <-time.After(bound):
		t.Fatal("Connect did not return")
	}
	if err == nil {
		t.Error("Connect reported an open connection after Close")
	}
	select {
	case err := <-gone:
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the vendor's socket stayed open (%v)", err)
		}
	case <-time.After(bound):
		t.Fatal("the vendor's socket stayed open after the session closed")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range events {
		if k == live.TransportOpened {
			t.Errorf("an abandoned dial reported the connection opened: %v", events)
		}
	}
}
