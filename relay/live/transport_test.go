package live_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"voicebox/relay/live"
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
