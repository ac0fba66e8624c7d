package session

import (
	"fmt"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestHelloLimiterBounds(t *testing.T) {
	t.Parallel()
	l := NewHelloLimiter(HelloBounds{Max: 4, PerClient: 2, PerOrigin: 1})
	take := func(client, origin string) (func(), refusal.Rule) {
		release, r := l.Acquire(client, origin)
		if r != nil {
			if r.Why == "" {
				t.Fatalf("a refusal without a why")
			}
			return nil, r.Rule
		}
		return release, ""
	}
	a1, _ := take("10.0.0.1", "")
	take("10.0.0.1", "")
	if _, rule := take("10.0.0.1", ""); rule != refusal.TooManySockets {
		t.Fatalf("a client's third: %q", rule)
	}
	take("10.0.0.2", "http://evil.example")
	if _, rule := take("10.0.0.3", "http://evil.example"); rule != refusal.TooManySockets {
		t.Fatalf("an origin's second: %q", rule)
	}
	take("10.0.0.4", "")
	if _, rule := take("10.0.0.5", ""); rule != refusal.TooManySockets {
		t.Fatalf("the fifth overall: %q", rule)
	}
	a1()
	a1() // a second release does nothing
	if _, rule := take("10.0.0.5", ""); rule != "" {
		t.Fatalf("after a release: %q", rule)
	}
	if _, rule := take("10.0.0.6", ""); rule != refusal.TooManySockets {
		t.Fatalf("a double release freed two places: %q", rule)
	}
}

// TestHelloLimiterHammer: many goroutines acquire and release at once; the bounds hold at every
// moment and every place comes back.
func TestHelloLimiterHammer(t *testing.T) {
	t.Parallel()
	const max = 16
	l := NewHelloLimiter(HelloBounds{Max: max, PerClient: 4, PerOrigin: 3})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 500 {
				release, r := l.Acquire(fmt.Sprintf("10.0.0.%d", (g+i)%8), []string{"", "a", "b"}[i%3])
				l.mu.Lock()
				all := l.all
				l.mu.Unlock()
				if all > max {
					t.Errorf("%d places taken, over %d", all, max)
				}
				if r == nil {
					release()
				}
			}
		})
	}
	wg.Wait()
	if l.all != 0 || len(l.perClient) != 0 || len(l.perOrigin) != 0 {
		t.Fatalf("after every release: %d taken, %v, %v", l.all, l.perClient, l.perOrigin)
	}
}
