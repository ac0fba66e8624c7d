package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// The page stops an app whose call passed a deadline, and only then: the cancel the worker posts
// says which it was.
func TestFramesCancelSaysWhetherADeadlinePassed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		expired bool
	}{
		{"the deadline passed", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now())
		}, true},
		{"the caller went away", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			posted := make(chan map[string]any, 2)
			f := newFrames(func(b []byte) {
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Errorf("posted %s: %v", b, err)
				}
				posted <- m
			})
			ctx, cancel := tt.ctx()
			defer cancel()
			if _, err := f.app("app_x").CallTool(ctx, "spin", json.RawMessage(`{}`)); err == nil {
				t.Fatal("a call whose context ended answered")
			}
			call, cancelMsg := <-posted, <-posted
			if call["type"] != "miniapp.call" || cancelMsg["type"] != "miniapp.cancel" || cancelMsg["callId"] != call["callId"] {
				t.Fatalf("posted %v then %v", call, cancelMsg)
			}
			if cancelMsg["expired"] != tt.expired {
				t.Fatalf("expired = %v, want %v", cancelMsg["expired"], tt.expired)
			}
		})
	}
}
