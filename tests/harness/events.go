//go:build !js

package harness

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// EventStream is a relay's event stream (GET /api/events) as a test read it: each event's name
// and data, in the order the relay sent them.
type EventStream struct {
	mu     sync.Mutex
	events [][2]string // name, data
}

// FollowEvents reads relay's event stream, as its own page would (its Origin), until the test
// ends.
func FollowEvents(t testing.TB, relay *Relay) *EventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, relay.URL+"/api/events", nil)
	req.Header.Set("Origin", relay.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &EventStream{}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		name := ""
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				name = n
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				s.mu.Lock()
				s.events = append(s.events, [2]string{name, d})
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// Find returns the data of the first event named name, at position from or later, that match
// accepts (nil accepts any), and its position; -1 when there is none yet.
func (s *EventStream) Find(from int, name string, match func(data string) bool) (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := from; i < len(s.events); i++ {
		if e := s.events[i]; e[0] == name && (match == nil || match(e[1])) {
			return e[1], i
		}
	}
	return "", -1
}

// Len is how many events were read so far.
func (s *EventStream) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}
