package mcphost

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// countedBudget is a request budget whose size the test sets while the session runs.
type countedBudget struct {
	mu        sync.Mutex
	used, max int
}

func (b *countedBudget) Take() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.max {
		return "", refusal.New(refusal.BudgetExhausted, "the extension's request budget is spent: %d of %d requests used", b.used, b.max)
	}
	b.used++
	return fmt.Sprintf("%d/%d", b.used, b.max), nil
}

func (b *countedBudget) Spent() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("%d/%d", b.used, b.max)
}

// leaveOne makes the budget hold exactly one more request than is spent.
func (b *countedBudget) leaveOne() {
	b.mu.Lock()
	b.max = b.used + 1
	b.mu.Unlock()
}

type quietHost struct{}

func (quietHost) Changed(string)                  {}
func (quietHost) Proposal(string) ([]byte, error) { return nil, nil }
func (quietHost) Stage([]byte) error              { return nil }

// TestTheBudgetSpentByAChangeIsNamedForTheChange: whether a tools/list_changed notification or
// the listing it asked for spends the last request of the budget depends only on timing; either
// way the session ends budget-exhausted with one wording that names the notifications. Here the
// notification takes the last request and its listing is refused: before, the session's why was
// the transport's "the extension's request budget is spent", and which of the two a flood ended
// with varied from run to run.
func TestTheBudgetSpentByAChangeIsNamedForTheChange(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "changer", Version: "1"}, nil)
	echo := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, echo)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var streams atomic.Int64 // notification streams the server has open
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			streams.Add(1)
			defer streams.Add(-1)
		}
		sdk.ServeHTTP(w, r)
	}))
	defer ts.Close()

	host := strings.TrimPrefix(ts.URL, "http://")
	raw := []byte(fmt.Sprintf(`{"id":"changer","name":"Changer","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":100,"maxBytes":4194304},"tools":[],"mcp":{"url":%q}}`, host, ts.URL))
	d, r := extensions.Parse(raw)
	if r != nil {
		t.Fatalf("the descriptor: %v", r)
	}
	budget := &countedBudget{max: 100}
	var background sync.WaitGroup
	s := New(Config{Descriptor: d, Raw: raw, Budget: budget, Host: quietHost{}, Base: http.DefaultTransport,
		Headers:        func(*url.URL) (http.Header, error) { return nil, nil },
		RequestTimeout: 10 * time.Second, MaxRedirects: 3, Redact: func(s string) string { return s },
		Background: &background, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer func() { s.Close(); background.Wait() }()
	go s.Connect()
	<-s.ready

	waitUntil(t, "the session up with its notification stream open", func() bool {
		st, _ := s.Status()
		return st.Connected && streams.Load() == 1
	})
	budget.leaveOne()
	srv.AddTool(&mcp.Tool{Name: "echo2", InputSchema: map[string]any{"type": "object"}}, echo)

	var st Status
	waitUntil(t, "the session ended", func() bool {
		st, _ = s.Status()
		return st.Refused != ""
	})
	if st.Refused != refusal.BudgetExhausted || !strings.Contains(st.Why, "list_changed") {
		t.Fatalf("the session ended with %s: %s; want budget-exhausted naming the tools/list_changed notifications", st.Refused, st.Why)
	}
}

// waitUntil polls cond until it holds, or fails the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
