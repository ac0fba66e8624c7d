package outbound

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOnDemandStartsNoWriterForALastAlone: the answer to one call, queued by Last with nothing
// before it, starts no writer goroutine (Finish writes it); any other message starts one.
func TestOnDemandStartsNoWriterForALastAlone(t *testing.T) {
	for _, c := range []struct {
		name    string
		write   func(s *SSE)
		spawned bool
	}{
		{"last alone, then the SDK's flush", func(s *SSE) { s.Last([]byte("data: a\n\n")); s.Flush() }, false},
		{"an event", func(s *SSE) { s.Send([]byte("data: a\n\n")) }, true},
		{"a status", func(s *SSE) { s.WriteHeader(http.StatusOK) }, true},
		{"a lead", func(s *SSE) { s.Lead([]byte("data: a\n\n")) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s := NewSSE(rec, httptest.NewRequest(http.MethodPost, "/", nil), nil)
			s.ServeOnDemand(make(chan struct{}))
			c.write(s)
			if got := s.spawned.Load(); got != c.spawned {
				t.Fatalf("writer started: %v; want %v", got, c.spawned)
			}
			if why := s.Finish(); why != nil {
				t.Fatalf("Finish: %v", why)
			}
			if rec.Body.Len() == 0 && c.name != "a status" {
				t.Fatal("nothing was written")
			}
		})
	}
}
