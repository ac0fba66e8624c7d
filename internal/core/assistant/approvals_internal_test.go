package assistant

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/outbound"
)

// TestADecisionAtTheDeadlineStands: when the user's decision takes the request just as its
// timer fires, the waiting call follows the decision the page was told was accepted, rather than
// answering timed out.
func TestADecisionAtTheDeadlineStands(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("the test never took the lock before the request's deadline")
		}
		ev := newEvents(slog.New(slog.DiscardHandler))
		ev.subscribe(outbound.NewSSE(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/events", nil), nil)) // a page listens, so the request waits for it
		p := newApprovals(ev)
		done := make(chan error, 1)
		go func() { done <- p.wait(context.Background(), "delete_file", "Delete a.txt", timeout) }()
		// Hold the lock from while the request waits until past its deadline, so the timer fires
		// while the decision has the request; then decide as decide does.
		var req *request
		for req == nil {
			p.mu.Lock()
			for _, r := range p.waiting {
				req = r
			}
			if req == nil {
				p.mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}
		if time.Until(req.Deadline) < timeout/2 {
			p.mu.Unlock() // too late to be sure the timer fires under the lock; try again
			<-done
			continue
		}
		time.Sleep(2 * timeout)
		delete(p.waiting, req.ID)
		p.mu.Unlock()
		req.decided <- true
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("an approval accepted at the deadline answered %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the call never answered")
		}
		return
	}
}
